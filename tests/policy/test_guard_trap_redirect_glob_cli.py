"""The hunt's items through the real CLI (`lathe run` against the scripted fake model):
the trap here; `_run` and the workspace serve the other test_guard_trap_redirect_glob_*
files. Each command ran, or showed the secret, before its fix."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_rules_hold_at_the_edges import _lathe, _tool_results
from tests.fakes.openai_server import Call, Reply

SECRET = "API_TOKEN=s3cr3t-value"


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "tests").mkdir()
    (ws / "src" / "a.py").write_text("y = 1\n")
    (ws / "tests" / "test_a.py").write_text("x = 1\n")
    (ws / ".env").write_text(SECRET + "\n")
    (ws / "clean.sh").write_text("rm -rf src\n")
    (ws / "st.sh").write_text("echo fine\n")
    return ws


def _run(fake_openai, ws: Path, tmp_path: Path, commands: list[str], *args: str) -> list[dict]:
    """Run each command as one bash call; the tool results, each checked refused."""
    fake_openai.enqueue(
        *(Reply(calls=[Call("bash", {"command": command})]) for command in commands),
        Reply("Done."),
    )
    result = _lathe(fake_openai, ws, tmp_path, *args)
    assert result.returncode == 0, result.stderr
    finished = _tool_results(result)
    assert len(finished) == len(commands), finished
    for command, event in zip(commands, finished, strict=True):
        assert event["is_error"], (command, event)
    return finished


def test_a_trap_after_double_dash_meets_the_rules(tmp_path, fake_openai) -> None:
    ws = _workspace(tmp_path)
    victim = tmp_path / "victim"
    victim.mkdir()
    _run(
        fake_openai, ws, tmp_path, [f"trap -- 'rm -rf {victim}' EXIT"],
        "--approval", "full", "--deny", "bash(rm:*)",
    )  # fmt: skip
    assert victim.is_dir()
