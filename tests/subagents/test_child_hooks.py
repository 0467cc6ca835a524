"""Which hooks a subagent runs, through the real CLI against the fake server: the tool
hooks guard a child's calls as they do the user's run's, but the run's start and stop
hooks are the user's run's alone."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakes.openai_server import Call, Reply
from tests.subagents.test_task_tool import Script, _project, _run, _task


def test_start_and_stop_hooks_run_once_for_the_users_run_not_for_each_child(
    tmp_path: Path, fake_openai
) -> None:
    # A stop hook meant for "the run finished" fired once per child and once more, and
    # a session_start hook (an `npm install`) ran again for every child.
    ws = _project(tmp_path)
    log = tmp_path / "hooks.log"
    (ws / ".lathe").mkdir()
    (ws / ".lathe" / "config.toml").write_text(
        "".join(
            f"[[hooks.{kind}]]\ncommand = '''cat >> {log}; echo >> {log}'''\n"
            for kind in ("session_start", "pre_tool", "stop")
        )
    )
    fake_openai.responder = Script(
        parent=[Reply(calls=[_task("a", "[child a] read")]), Reply("done")],
        children={"[child a]": [Reply(calls=[Call("read", {"path": "a.py"})]), Reply("read")]},
    )

    result = _run(fake_openai, ws, tmp_path, "--trust-project", "--approval", "full", "go")

    assert result.returncode == 0, result.stderr[-3000:]
    events = [json.loads(line)["event"] for line in log.read_text().splitlines() if line]
    assert events.count("session_start") == 1 and events.count("stop") == 1, events
    assert events.count("pre_tool") == 2, events  # the parent's task call, the child's read
