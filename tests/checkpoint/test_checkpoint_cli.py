"""`lathe undo` and `lathe checkpoints list|restore` through click's CliRunner."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from tests.checkpoint.helpers import files, shell, write

from lathe.checkpoint import Checkpoints
from lathe.ui.checkpoints_cmd import checkpoints_group, undo_command


@pytest.fixture
def cli() -> click.Group:
    # The lead attaches the commands to the real `lathe` group the same way.
    group = click.Group("lathe")
    group.add_command(undo_command)
    group.add_command(checkpoints_group)
    return group


def turn(cp: Checkpoints, n: int, ws: Path, script: str) -> None:
    cp.before_turn(n)
    shell(ws, script)
    cp.after_turn(n)


def test_undo_prints_what_it_restored(cli: click.Group, cp: Checkpoints, ws: Path) -> None:
    write(ws, "f", "f\n")
    write(ws, "a", "a\n")
    turn(cp, 1, ws, "rm f; echo x > g; echo b > a")

    result = CliRunner().invoke(cli, ["undo", "-C", str(ws)])

    assert result.exit_code == 0, result.output
    assert 'Restored the workspace to "before turn 1"' in result.stdout
    assert "reverted   a" in result.stdout
    assert "recreated  f" in result.stdout
    assert "deleted    g" in result.stdout
    assert (
        "The state before this undo is checkpoint #2: `lathe checkpoints restore 2` brings it"
        in result.stdout
    )
    assert result.stderr == ""
    assert files(ws) == {"f": b"f\n", "a": b"a\n"}


def test_undo_warns_about_kept_files_and_force_overwrites(
    cli: click.Group, cp: Checkpoints, ws: Path
) -> None:
    write(ws, "a", "a\n")
    write(ws, "b", "b\n")
    turn(cp, 1, ws, "echo agent > a; echo agent > b")
    write(ws, "b", "user\n")

    kept = CliRunner().invoke(cli, ["undo", "-C", str(ws)])
    assert kept.exit_code == 0, kept.output
    assert "kept 1 file you changed" in kept.stderr
    assert "--force" in kept.stderr
    assert "  b" in kept.stderr
    assert (ws / "b").read_text() == "user\n"

    forced = CliRunner().invoke(cli, ["undo", "-C", str(ws), "--force"])
    assert forced.exit_code == 0, forced.output
    assert "Overwrote 1 file you" in forced.stderr
    assert files(ws) == {"a": b"a\n", "b": b"b\n"}


def test_undo_with_nothing_to_undo_exits_2(cli: click.Group, ws: Path, home: Path) -> None:
    result = CliRunner().invoke(cli, ["undo", "-C", str(ws)])

    assert result.exit_code == 2
    assert "lathe: no checkpoints for" in result.stderr
    assert "-C DIR" in result.stderr
    assert not (home / "checkpoints").exists()  # asking created nothing


def test_list_and_restore(cli: click.Group, cp: Checkpoints, ws: Path) -> None:
    write(ws, "a", "0\n")
    turn(cp, 1, ws, "echo 1 > a; echo b > b")
    turn(cp, 2, ws, "echo 2 > a")

    listing = CliRunner().invoke(cli, ["checkpoints", "list", "-C", str(ws)])
    assert listing.exit_code == 0, listing.output
    rows = [line.split("\t") for line in listing.stdout.splitlines()]  # piped: no heading
    assert [(n, kind, label, changes) for n, _time, kind, label, changes in rows] == [
        ("#3", "after", "after turn 2", "M a"),
        ("#2", "after", "after turn 1", "M a, A b"),
        ("#1", "before", "before turn 1", "(first checkpoint)"),
    ]

    restored = CliRunner().invoke(cli, ["checkpoints", "restore", "#1", "-C", str(ws)])
    assert restored.exit_code == 0, restored.output
    assert 'Restored the workspace to "before turn 1"' in restored.stdout
    assert "`lathe undo` brings it back" in restored.stdout
    assert files(ws) == {"a": b"0\n"}


def test_restore_out_of_range_exits_2(cli: click.Group, cp: Checkpoints, ws: Path) -> None:
    write(ws, "a", "a\n")
    cp.before_turn(1)

    result = CliRunner().invoke(cli, ["checkpoints", "restore", "7", "-C", str(ws)])

    assert result.exit_code == 2
    assert "no checkpoint #7" in result.stderr and "choose 1 to 1" in result.stderr


def test_commands_find_the_workspace_from_a_subdirectory(
    cli: click.Group, cp: Checkpoints, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(ws, "sub/a", "a\n")
    turn(cp, 1, ws, "echo b > sub/a")
    monkeypatch.chdir(ws / "sub")

    result = CliRunner().invoke(cli, ["undo"])

    assert result.exit_code == 0, result.output
    assert (ws / "sub" / "a").read_text() == "a\n"


def test_empty_list(cli: click.Group, ws: Path, home: Path) -> None:
    result = CliRunner().invoke(cli, ["checkpoints", "list", "-C", str(ws)])

    assert result.exit_code == 0
    assert result.stdout == ""  # piped: nothing a script could take for a checkpoint
    assert result.stderr == f"lathe: no checkpoints for {ws.resolve()} yet.\n"
