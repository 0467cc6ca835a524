"""The workspace files a command names however it names them (`rules.files_named`): a
module run with `-m`, a script in the folder `--directory` moves to, an option's
`=FILE`, a package folder run as a script."""

from __future__ import annotations

from pathlib import Path

import pytest

from lathe.policy.rules import files_named


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    for name in (
        "pserv.py", "pkg/__init__.py", "pkg/mod.py", "pkg/inner/__init__.py",
        "pkg/inner/__main__.py", "sub/s.py", "opt.py", "pkgdir/__main__.py", "lib/x.py",
        "src/app/__init__.py", "src/app/main.py",
    ):  # fmt: skip
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text("")
    return ws


@pytest.mark.parametrize(
    ("words", "named"),
    [
        (["python", "-m", "pserv"], ["/pserv.py"]),
        (["python", "-mpserv"], ["/pserv.py"]),
        (["uv", "run", "--module", "pserv"], ["/pserv.py"]),
        # Importing pkg.mod runs pkg/__init__.py first; a package run is all of it.
        (["python", "-m", "pkg.mod"], ["/pkg/__init__.py", "/pkg/mod.py"]),
        (["python", "-m", "pkg.inner"], ["/pkg/__init__.py", "/pkg/inner"]),
        (["uv", "--directory", "sub", "run", "s.py"], ["/sub/s.py"]),
        (["uv", "run", "--directory=sub", "s.py"], ["/sub/s.py"]),
        (["uv", "--directory", "src", "run", "-m", "app.main"],
         ["/src/app/__init__.py", "/src/app/main.py"]),
        (["python", "--script=opt.py"], ["/opt.py"]),
        (["python", "pkgdir"], ["/pkgdir"]),
        # A folder that Python cannot run is not named: `ruff check lib` is no script.
        (["ruff", "check", "lib"], []),
        (["git", "commit", "-m", "fix the server"], []),
        (["python", "-m", "missing"], []),
        (["python", "-m", "../pserv"], []),
    ],
)  # fmt: skip
def test_each_way_of_naming_a_file_a_command_runs(ws, words, named):
    assert files_named(words, ws, ws) == named


def test_a_module_is_found_in_the_workspace_too_when_the_command_runs_elsewhere(ws, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert files_named(["python", "-m", "pserv"], elsewhere, ws) == ["/pserv.py"]


def test_a_folder_named_from_outside_the_workspace_names_nothing(ws, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "s.py").write_text("")
    assert files_named(["uv", "--directory", str(outside), "run", "s.py"], ws, ws) == []
    assert files_named(["uv", "--directory", str(ws / "sub"), "run", "s.py"], ws, ws) == [
        "/sub/s.py"
    ]


def test_the_workspace_run_as_a_package_names_its_main_not_every_file(ws):
    (ws / "__main__.py").write_text("")
    assert files_named(["python", "."], ws, ws) == ["/__main__.py"]
