"""The verify check runs the model's code: where the approval mode wants a sandbox and
none starts, a headless run must not run it unsandboxed while its notice says commands
are refused. Reproduced with the real CLI: a run with no `bwrap` on PATH ran a
check.py the model had written, which copied a file from outside the workspace, and
ended `verified`."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_rules_hold_at_the_edges import _lathe, _path_without_bwrap
from tests.fakes.openai_server import Call, Reply
from tests.sandboxes import needs

from lathe.exec.bwrap import check_bubblewrap


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "check.py").write_text("print('ok')\n")
    return ws


def _model_rewrites_the_check(fake_openai, secret: Path, copied: Path) -> None:
    """The model replaces check.py by code that copies `secret`, outside the workspace,
    to `copied`, and says it is done."""
    payload = f"open({str(copied)!r}, 'w').write(open({str(secret)!r}).read())\nprint('ok')\n"
    fake_openai.enqueue(
        Reply(calls=[Call("read", {"path": "check.py"})]),
        Reply(calls=[Call("write", {"path": "check.py", "content": payload})]),
        Reply("Done."),
    )


def _outside(tmp_path: Path) -> tuple[Path, Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "token"
    secret.write_text("the-secret\n")
    return secret, outside / "copied"


def _end(result) -> dict:
    events = [json.loads(line) for line in result.stdout.splitlines()]
    return next(e for e in events if e["type"] == "run_finished")


def test_a_headless_check_that_would_run_unsandboxed_stops_before_the_model(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    secret, copied = _outside(tmp_path)
    _model_rewrites_the_check(fake_openai, secret, copied)

    result = _lathe(
        fake_openai, ws, tmp_path, "--approval", "auto", "--verify", "python check.py",
        path=_path_without_bwrap(tmp_path),
    )  # fmt: skip

    assert result.returncode == 2, result.stderr
    assert fake_openai.chat_bodies() == []
    assert not copied.exists()
    stopped = [line for line in result.stderr.splitlines() if line.startswith("lathe: ")]
    assert len(stopped) == 1, result.stderr
    assert "unsandboxed" in stopped[0] and "--approval full" in stopped[0], stopped[0]
    assert "bubblewrap" in stopped[0], stopped[0]


def test_approval_full_still_runs_the_check_unsandboxed(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    secret, copied = _outside(tmp_path)
    _model_rewrites_the_check(fake_openai, secret, copied)

    result = _lathe(
        fake_openai, ws, tmp_path, "--approval", "full", "--verify", "python check.py",
        path=_path_without_bwrap(tmp_path),
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert _end(result)["status"] == "verified"
    assert copied.read_text() == "the-secret\n"  # what full mode means


@needs(check_bubblewrap(), "bubblewrap")
def test_with_a_sandbox_the_check_runs_in_it_as_before(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    secret, copied = _outside(tmp_path)
    _model_rewrites_the_check(fake_openai, secret, copied)
    fake_openai.enqueue(*[Reply("Done.")] * 4)  # the failed check sends the model back

    result = _lathe(fake_openai, ws, tmp_path, "--approval", "auto", "--verify", "python check.py")

    assert result.returncode == 1, result.stderr  # the run went ahead, its check failing
    assert _end(result)["status"] != "verified"  # the sandbox kept the copy from working
    assert not copied.exists()
