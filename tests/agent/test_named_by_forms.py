"""The files a verify command names are found as `rules.files_named` finds those a hook
or a server runs (`check_files.named_by` reads each command with it): a module run with
`-m`, a script in the folder `uv --directory` moves to, an option's `=FILE`. The check's
own files are those it runs, not the packages it imports them through: a fix in the
project's `pkg/__init__.py` is no change to the check."""

from __future__ import annotations

from pathlib import Path

import pytest

from lathe.agent.check_files import named_by


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    for name in (
        "mycheck.py", "sub/s.py", "pkg/__init__.py", "pkg/check.py", "app/__init__.py",
        "app/__main__.py", "app/core.py", "ci/check.sh", "unit.py",
    ):  # fmt: skip
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text("")
    return ws


@pytest.mark.parametrize(
    ("command", "named"),
    [
        ("python -m mycheck", ["mycheck.py"]),
        ("python3 -mmycheck", ["mycheck.py"]),
        ("uv --directory sub run s.py", ["sub/s.py"]),
        ("python run.py --script=mycheck.py", ["mycheck.py"]),
        ("python -m pkg.check", ["pkg/check.py"]),
        ("cd pkg && python -m check", ["pkg/check.py"]),
        # A package run is its __main__.py, not every module of the project.
        ("python -m app", ["app/__main__.py"]),
        ("python app", ["app/__main__.py"]),
        # As before: a script, make's Makefile, the word `pytest -m` does not run.
        ("sh ci/check.sh", ["ci/check.sh"]),
        ("pytest -m unit app", []),
        ("python -c 'import $X' -m unit", []),
    ],
)
def test_the_files_a_check_runs_are_named_however_it_names_them(ws, command, named):
    assert named_by(command, ws) == named
