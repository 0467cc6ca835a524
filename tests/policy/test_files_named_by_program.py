"""What `rules.files_named` reads from a command depends on its program: `-m` and a
folder run as a script are Python's (a launcher: python, python3.X, a path to one, `uv
run`), a move to a folder is a program's that is known to take one (uv's
`--directory`, git's and make's `-C`), and what they name is added to each word looked
up as a path, never in its place."""

from __future__ import annotations

from pathlib import Path

import pytest

from lathe.config.schema import HookCommand, HooksConfig
from lathe.hooks.command import files_hooks_run
from lathe.policy.rules import files_named


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    for name in (
        "src/app/__init__.py", "src/app/__main__.py", "src/app/core.py", "wip.py",
        "unit.py", "s.sh", "server.py", "pkg/__init__.py", "pkg/mod.py", "sub/s.py",
        "tools/fmt.py",
    ):  # fmt: skip
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text("")
    return ws


@pytest.mark.parametrize(
    "command",
    [
        # A CLI package's layout: src/app/__main__.py. These had protected all of src/app,
        # so a hook `ruff format src/app` made every edit there "nobody can approve it".
        "ruff format src/app",
        "mypy src/app",
        "pytest -q src/app",
        "git -C src add app",
        "uvx ruff format src/app",
        "uv run ruff check src/app",
        "python tools/fmt.py src/app",
        # `-m` is Python's only: a commit message, a pytest marker.
        "git commit -m wip",
        "git commit -mwip",
        "pytest -m unit",
        "uv run pytest -m unit",
        "python -c pass -m unit",
        "make -C src app",
    ],
)
def test_a_program_that_is_not_python_runs_no_folder_and_no_module(ws, command):
    named = files_named(command.split(), ws, ws)
    assert not {"/src/app", "/wip.py", "/unit.py", "/src/app/__main__.py"} & set(named), named


@pytest.mark.parametrize(
    ("command", "named"),
    [
        ("python src/app", ["/src/app"]),
        ("python3.11 -u src/app", ["/src/app"]),
        ("/usr/bin/python3 -X dev src/app", ["/src/app"]),
        ("uv run src/app", ["/src/app"]),
        ("uv run python -m pkg.mod", ["/pkg/__init__.py", "/pkg/mod.py"]),
        ("uv --directory src run python -m app", ["/src/app"]),
        ("env PYTHONPATH=. python3 -m wip", ["/wip.py"]),
        ("python -Wignore -m unit", ["/unit.py"]),
        ("python -um unit", ["/unit.py"]),
        ("uvx python -m unit", ["/unit.py"]),
        ("pipx run python -m unit", ["/unit.py"]),
        ("git -C sub commit -m wip", []),
        # A plain word is still looked up as a path, whatever the program.
        ("git commit -m wip.py", ["/wip.py"]),
    ],
)
def test_a_python_launcher_runs_its_module_and_its_folder(ws, command, named):
    assert files_named(command.split(), ws, ws) == named


@pytest.mark.parametrize(
    ("command", "named"),
    [
        # Python imports server.py, running its top level, before it fails on `py`.
        ("python -m server.py", ["/server.py"]),
        # bash's -C is noclobber: s.sh is the script.
        ("bash -C s.sh", ["/s.sh"]),
        ("sh -C s.sh", ["/s.sh"]),
        # Python runs pkg/__init__.py before it finds no pkg.nosuch.
        ("python -m pkg.nosuch", ["/pkg/__init__.py"]),
        # The folder a move names is looked in besides the first, not instead of it.
        ("uv --directory sub run server.py", ["/server.py"]),
        ("uv --directory sub run s.py", ["/sub/s.py"]),
        ("git -C sub add s.sh", ["/s.sh"]),
    ],
)
def test_what_a_word_names_as_a_path_is_named_besides(ws, command, named):
    assert files_named(command.split(), ws, ws) == named


def test_each_command_of_a_hook_is_read_with_its_own_program(ws):
    # The words after `&&` are another command's: `python` there is its program.
    hooks = HooksConfig(
        post_tool=[
            HookCommand(command="ruff format src/app && python -m pkg.mod"),
            HookCommand(command="git commit -m wip; python3 src/app"),
        ]
    )
    assert files_hooks_run(hooks, ws) == ("/pkg/__init__.py", "/pkg/mod.py", "/src/app")


def test_words_no_path_can_be_made_of_name_nothing(ws):
    # `~someone` with no such user raised from Path.expanduser.
    words = ["python", "-m", "~x", "~nosuchuser/s.py", "--a=~nosuchuser", "a\0b"]
    assert files_named(words, ws, ws) == []
    assert files_named(["uv", "--directory", "~nosuchuser", "run", "s.py"], ws, ws) == []
