"""Code a reply shows is no edit of the check's own files: those the verify command
names, read as `check_files.named_by` reads it, and a command runner's (a Makefile),
whichever command runs the runner."""

from __future__ import annotations

from pathlib import Path

from lathe.agent.reply_code import workspace_edits

SCRIPT = "from calc import add\n\nassert add(2, 3) == 5\nassert add(1, 1) == 2\nprint('ok')\n"
SHOWN = "Fix:\n```python\nassert add(2, 3) == -1\nassert add(1, 1) == 2\nprint('ok')\n```"
CALC = "def add(a, b):\n    total = a - b\n    return total\n"
CALC_SHOWN = "Fix:\n```python\ndef add(a, b):\n    total = a + b\n    return total\n```"


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_the_script_the_verify_command_runs_is_left_out(tmp_path):
    _write(tmp_path, {"check.py": SCRIPT})

    assert workspace_edits(tmp_path, SHOWN, check="python check.py") == []
    assert workspace_edits(tmp_path, SHOWN, check="sh -c 'python ./check.py'") == []


def test_a_script_named_from_another_folder_is_left_out(tmp_path):
    _write(tmp_path, {"ci/verify.py": SCRIPT})

    assert workspace_edits(tmp_path, SHOWN, check="cd ci && python verify.py") == []


def test_another_check_leaves_the_script_a_candidate(tmp_path):
    _write(tmp_path, {"check.py": SCRIPT})

    edits = workspace_edits(tmp_path, SHOWN, check="python other.py")

    assert [e.path for e in edits] == ["check.py"]


def test_a_runners_file_is_left_out_whatever_runs_it(tmp_path):
    makefile = "test:\n\tpython -m pytest -q\n\nlint:\n\truff check .\n"
    shown = "```make\ntest:\n\tpython -m pytest -q || true\n\nlint:\n\truff check .\n```"
    _write(tmp_path, {"Makefile": makefile, "sub/justfile": makefile, "ci.sh": "make test\n"})

    assert workspace_edits(tmp_path, shown, check="make test") == []
    assert workspace_edits(tmp_path, shown, check="sh ci.sh") == []
    assert workspace_edits(tmp_path, shown) == []


def test_the_code_under_test_is_still_changed(tmp_path):
    _write(tmp_path, {"calc.py": CALC, "check.py": SCRIPT})

    edits = workspace_edits(tmp_path, CALC_SHOWN, check="python check.py")

    assert [e.path for e in edits] == ["calc.py"]
    assert "a + b" in edits[0].new_string
