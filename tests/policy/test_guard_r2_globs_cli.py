"""The second glob hunt's findings through the real CLI (`lathe run --approval full`
against the scripted fake model): everyday globs and cleanups ran again under a read
rule, a copy into a glob-named folder met the edit rule, and `dd if=`/`xargs -a` met
the read rule. Each failed before its fix."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_rules_hold_at_the_edges import _lathe, _tool_results
from tests.fakes.openai_server import Call, Reply
from tests.policy.test_guard_trap_redirect_glob_cli import SECRET, _run, _workspace


def _results(fake_openai, ws: Path, tmp_path: Path, commands: list[str], *args: str) -> list:
    """Run each command as one bash call; the tool results, one per command."""
    fake_openai.enqueue(
        *(Reply(calls=[Call("bash", {"command": command})]) for command in commands),
        Reply("Done."),
    )
    result = _lathe(fake_openai, ws, tmp_path, *args)
    assert result.returncode == 0, result.stderr
    finished = _tool_results(result)
    assert len(finished) == len(commands), finished
    return finished


def test_everyday_globs_and_cleanups_run_under_a_read_rule(tmp_path, fake_openai) -> None:
    ws = _workspace(tmp_path)
    (ws / "src" / "__pycache__").mkdir()
    (ws / "src" / "__pycache__" / "a.pyc").write_text("")
    (ws / "src" / "b.pyc").write_text("")
    commands = [
        "grep -n y *",
        "wc -l *",
        "find . -name '*.py' -exec grep -l y {} +",
        "find . -name '*.pyc' -delete",
        "rm -rf */__pycache__",
    ]
    finished = _results(
        fake_openai, ws, tmp_path, commands, "--approval", "full", "--deny", "read(.env)"
    )
    for command, event in zip(commands, finished, strict=True):
        assert not event["is_error"], (command, event)
    assert not (ws / "src" / "__pycache__").exists()
    assert not (ws / "src" / "b.pyc").exists()
    assert (ws / ".env").read_text() == SECRET + "\n"


def test_a_cleanup_beside_an_edit_rule_runs_and_one_reaching_it_does_not(
    tmp_path, fake_openai
) -> None:
    ws = _workspace(tmp_path)
    for folder in ("src", "tests"):
        (ws / folder / "__pycache__").mkdir()
        (ws / folder / "__pycache__" / "x.pyc").write_text("")
    (ws / "src" / "build").mkdir()
    commands = ["rm -rf */build", "find . -name __pycache__ -exec rm -rf {} +"]
    finished = _results(
        fake_openai, ws, tmp_path, commands, "--approval", "full", "--deny", "edit(tests/**)"
    )
    assert not finished[0]["is_error"], finished[0]
    assert finished[1]["is_error"], finished[1]
    assert not (ws / "src" / "build").exists()
    assert (ws / "tests" / "__pycache__" / "x.pyc").exists()


def test_a_copy_into_a_glob_named_folder_is_refused(tmp_path, fake_openai) -> None:
    ws = _workspace(tmp_path)
    commands = ["cp src/a.py t*/", "cp -t t* src/a.py", "cp src/a.py [t]ests/"]
    _run(fake_openai, ws, tmp_path, commands, "--approval", "full", "--deny", "edit(tests/**)")
    assert not (ws / "tests" / "a.py").exists()


def test_input_files_of_dd_and_xargs_meet_a_read_rule(tmp_path, fake_openai) -> None:
    ws = _workspace(tmp_path)
    commands = ["dd if=.env", "xargs -a .env echo", "xargs --arg-file=.env echo"]
    finished = _run(
        fake_openai, ws, tmp_path, commands, "--approval", "full", "--deny", "read(.env)"
    )
    assert not any("s3cr3t" in str(event) for event in finished)
