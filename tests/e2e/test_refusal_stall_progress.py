"""What counts as a change between refusals, through `lathe run` against the fake model.

A refused edit of a test file, each followed by a command that appended to app.py,
ended the run `stuck`, "refused (in 6 turns without a change in between)", while app.py
had changed five times: only an edit or a write counted as a change. A command that
only looks still does not.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_run_edges import lathe_run
from tests.fakes.openai_server import Call, Reply


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "tests").mkdir(parents=True)
    (ws / "app.py").write_text("value = 1\n")
    (ws / "tests" / "test_app.py").write_text("def test_v():\n    assert 1 == 2\n")
    return ws


def _rounds(command: str) -> list[Reply]:
    """A refused edit of the test file, then `command`, eight times over; then done."""
    replies = []
    for n in range(8):
        edit = {"path": "tests/test_app.py", "old_string": "1 == 2", "new_string": f"{n} == {n}"}
        replies.append(Reply(calls=[Call("edit", edit)]))
        replies.append(Reply(calls=[Call("bash", {"command": command.format(n=n)})]))
    return [*replies, Reply("Done.")]


def _run(fake_openai, tmp_path: Path, command: str) -> tuple[dict, Path]:
    ws = _workspace(tmp_path)
    fake_openai.enqueue(*_rounds(command))
    done = lathe_run(
        fake_openai, ws, tmp_path, "--approval", "full", "--deny", "edit(tests/**)",
        "--max-turns", "40", "--json", "Make the test pass",
    )  # fmt: skip
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert events, done.stderr[-3000:]
    return events[-1], ws


def test_a_command_that_changes_files_between_refusals_is_progress(tmp_path, fake_openai):
    end, ws = _run(fake_openai, tmp_path, "echo '# step {n}' >> app.py")

    assert end["type"] == "run_finished"
    assert end["status"] == "unverified", end
    assert (ws / "app.py").read_text().count("# step") == 8


def test_a_command_that_only_looks_between_refusals_is_not(tmp_path, fake_openai):
    end, _ = _run(fake_openai, tmp_path, "cat app.py; ls tests #{n}")

    assert end["type"] == "run_finished"
    assert end["status"] == "stuck", end
    assert "refused" in end["reason"], end
