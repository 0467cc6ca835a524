"""What lathe's own verify check writes is the run's, so `--attempts` puts it back when
it starts over; each reproduced with the real CLI against the fake server.

Before, the checks the verify gate ran (the baseline and each "done") were recorded as
no one's: the start-over took the files they wrote for the user's, kept them and said
so. Attempt 1's code that wrote `{}` over the user's tracked settings.json when the
check ran it stayed `{}` through a verified attempt 2 ("kept files changed meanwhile:
settings.json"); a report the check itself writes was "kept" the same way. A file the
user edits during the run is still theirs, even when a check runs after the edit.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from tests.checkpoint.helpers import bash, lathe, run
from tests.fakes.openai_server import Reply

from lathe.checkpoint import Checkpoints

# The check runs calc.sh, which the model rewrites; it also appends to a log of its own.
VERIFY = "echo ran >> check.log && sh calc.sh"
USER_DATA = '{"important": "user data"}\n'


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "calc.sh").write_text("exit 1\n")
    (ws / "settings.json").write_text(USER_DATA)
    return ws


def _write_calc(script: str) -> Reply:
    return Reply(calls=[bash(f"printf '%s' {shlex.quote(script)} > calc.sh")])


def _attempt_started(result) -> dict:
    events = [json.loads(line) for line in result.stdout.splitlines()]
    [started] = [e for e in events if e["type"] == "attempt_started"]
    return started


def test_what_the_check_ran_wrote_is_put_back_when_the_run_starts_over(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(
        # Attempt 1: code that, when the check runs it, overwrites the user's file.
        _write_calc("echo '{}' > settings.json\nexit 1\n"),
        Reply("Done."), Reply("Done."), Reply("Done."),  # stuck
        _write_calc("exit 0\n"),  # attempt 2 fixes it
        Reply("Fixed."),
    )  # fmt: skip

    result = run(fake_openai, ws, tmp_path, "--json", "--verify", VERIFY, "--attempts", "2", "go")

    assert result.returncode == 0, result.stderr
    started = _attempt_started(result)
    assert (started["previous_status"], started["kept"]) == ("stuck", [])
    assert (ws / "settings.json").read_text() == USER_DATA
    # The log the checks wrote: attempt 1's lines went with the rest of attempt 1.
    assert (ws / "check.log").read_text() == "ran\n" * 2  # attempt 2's baseline and check


def test_a_check_is_recorded_as_lathes_but_undo_passes_over_it(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(
        _write_calc("exit 0\n"), Reply("Fixed."),
    )  # fmt: skip

    result = run(fake_openai, ws, tmp_path, "--verify", VERIFY, "--attempts", "2", "go")

    assert result.returncode == 0, result.stderr
    kinds = [(c.kind, c.label) for c in Checkpoints(ws, tmp_path / "home").list()]
    assert kinds[0] == ("check", "after the verify check"), kinds
    assert ("check", "after the baseline check") in kinds, kinds
    undone = lathe(tmp_path, "undo", "-C", str(ws))
    assert undone.returncode == 0, undone.stderr
    assert (ws / "calc.sh").read_text() == "exit 1\n"  # the turn, not a check


def test_a_file_the_user_edits_before_a_check_is_still_kept(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    requests = []

    def script(body):
        requests.append(body)
        match len(requests):
            case 1:
                return _write_calc("exit 1\n# tried\n")
            case 2:  # while the model "thinks", before the check its reply starts
                (ws / "settings.json").write_text("USER EDIT during the run\n")
                return Reply("Done.")
        return Reply("Done.")

    fake_openai.responder = script
    result = run(
        fake_openai, ws, tmp_path, "--json", "--verify", VERIFY, "--attempts", "2",
        "--max-turns", "2", "go",
    )  # fmt: skip

    assert result.returncode == 1, result.stderr
    assert (ws / "settings.json").read_text() == "USER EDIT during the run\n"
    assert _attempt_started(result)["kept"] == ["settings.json"]
