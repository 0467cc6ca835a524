"""`--lathe-arg` gives every task's `lathe run` more options, never one the batch sets
itself: `-C` had every task's agent edit the user's folder while the batch scored
untouched copies, and `--model` ran another model than the manifest records. Nor may a
`-c` give a config key the batch sets or records: `-c model=other` ran another model too,
and `-c agent.max_turns=1` won over --max-turns (`-c` wins over every flag)."""

from __future__ import annotations

import pytest
from tests.batch.tasks import make_task, run_batch


@pytest.mark.parametrize(
    ("given", "named"),
    [(["-C", "{victim}"], "-C/--cwd"), (["--cwd={victim}"], "-C/--cwd"),
     (["--json"], "--json"), (["--verify", "true"], "--verify"),
     (["--continue"], "--continue"), (["--resume", "abc"], "--resume"),
     (["-m", "other"], "--model/-m"), (["--base-url", "http://127.0.0.1:9/v1"], "--base-url"),
     (["--max-turns", "3"], "--max-turns"), (["--attempts", "2"], "--attempts"),
     (["--max-cost", "1"], "--max-cost"), (["--timeout", "5m"], "--timeout"),
     (["-c", "memory.tools=true"], "-c memory.tools"),
     (["-c", "agent.verify_timeout_s=1"], "-c agent.verify_timeout_s"),
     (["-c", "model=other"], "-c model"),
     (["-c", "base_url=http://127.0.0.1:9/v1"], "-c base_url"),
     (["-c", "agent.max_turns=1"], "-c agent.max_turns"),
     (["-cagent.attempts=2"], "-c agent.attempts"),
     (["-c", "agent.verify=true"], "-c agent.verify"),
     (["-c", "agent.max_cost_usd=1"], "-c agent.max_cost_usd"),
     (["-c", "agent.timeout=5m"], "-c agent.timeout"),
     (["-c", ' "agent" . max_turns = 1'], "-c agent.max_turns"),
     (["-c", "agent={{max_turns = 1}}"], "-c agent.max_turns"),
     (["a task of its own"], "a task")],
    ids=lambda value: value if isinstance(value, str) else None,
)  # fmt: skip
def test_an_option_the_batch_sets_itself_is_refused(tmp_path, fake_openai, given, named):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "calc.py").write_text("keep me\n")
    make_task(tmp_path / "tasks", "t1")
    extra = [f"--lathe-arg={arg.format(victim=victim)}" for arg in given]

    done = run_batch(tmp_path, tmp_path / "tasks", tmp_path / "run", fake_openai, *extra)

    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("lathe: --lathe-arg: "), done.stderr
    assert f"{named} " in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert fake_openai.chat_bodies() == []
    assert (victim / "calc.py").read_text() == "keep me\n"
