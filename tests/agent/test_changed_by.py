"""The files a call may change, named before it runs (`check_files.changed_by`): the
verify gate compares their content to tell a change taken back from one that stays."""

from __future__ import annotations

from pathlib import Path

import pytest

from lathe.agent.check_files import changed_by
from lathe.tools.bash import BashTool
from lathe.tools.edit import EditTool
from lathe.tools.read import ReadTool


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "calc.py").write_text("x = 1\n")
    return Path(tmp_path.resolve())


@pytest.mark.parametrize(
    ("command", "named"),
    [
        ("sed -i 's/a/b/' calc.py", ["calc.py"]),
        ("cd src && echo x > new.py; cat new.py", ["src/new.py"]),
        ("cp calc.py calc.bak && mv calc.bak calc.py", ["calc.bak", "calc.py"]),
        ("python -m pytest -q 2>&1 | tail -3 && git diff", []),
        ("sh -c 'tee out.txt < calc.py'", ["out.txt"]),
        ("cp calc.py src", ["src/calc.py"]),
    ],
)
def test_a_command_names_the_files_it_changes(ws: Path, command: str, named: list[str]):
    changed = changed_by(BashTool(), {"command": command}, ws)
    assert changed is not None
    assert sorted(path.relative_to(ws).as_posix() for path in changed) == sorted(named)


@pytest.mark.parametrize(
    "command",
    [
        "python fix.py",  # a program: any file
        "sed -i 's/a/b/' $FILE",  # a word known only at run time
        "rm -rf src",  # a folder's content
        "sed -i 's/a/b/' src/*.py",  # a pattern
        "cp -a src lib",
        "rsync -r src/ lib/",
        "ln -s src lib",
        "git checkout calc.py",
    ],
)
def test_a_command_whose_changes_cannot_be_named_gives_none(ws: Path, command: str):
    assert changed_by(BashTool(), {"command": command}, ws) is None


def test_a_file_tool_names_its_path_and_a_reading_one_none(ws: Path):
    edit = {"path": "calc.py", "old_string": "1", "new_string": "2"}
    assert changed_by(EditTool(), edit, ws) == [ws / "calc.py"]
    assert changed_by(EditTool(), {}, ws) is None  # arguments that do not parse
    assert changed_by(ReadTool(), {"path": "calc.py"}, ws) == []
    assert changed_by(None, {}, ws) == []  # no such tool: the call fails
