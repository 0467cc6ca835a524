"""Paths the model gives are confined to the workspace: `..`, absolute paths, symlinks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.tools.helpers import call, call_error, snapshot

from lathe.errors import ToolError
from lathe.tools.base import ToolContext
from lathe.tools.edit import EditTool
from lathe.tools.glob import GlobTool
from lathe.tools.grep import GrepTool
from lathe.tools.ls import ls
from lathe.tools.paths import display_path, resolve_path
from lathe.tools.read import ReadTool
from lathe.tools.write import WriteTool


def _outside_message(given: str, root: Path, via: str = "") -> str:
    return (
        f"{given} is outside the workspace {root}{via}; file tools can only touch files "
        f"inside it. Use a path relative to the workspace."
    )


def test_relative_paths_resolve_against_the_workspace(workspace: Path) -> None:
    assert resolve_path(workspace, "src/a.py") == workspace.resolve() / "src" / "a.py"
    assert resolve_path(workspace, "src/../b.py") == workspace.resolve() / "b.py"
    assert resolve_path(workspace, ".") == workspace.resolve()
    assert resolve_path(workspace, "") == workspace.resolve()


def test_absolute_path_inside_is_allowed(workspace: Path) -> None:
    inside = str(workspace / "new" / "file.txt")
    assert resolve_path(workspace, inside) == workspace.resolve() / "new" / "file.txt"


def test_dotdot_escape_is_refused_with_a_message_naming_the_workspace(workspace: Path) -> None:
    with pytest.raises(ToolError) as info:
        resolve_path(workspace, "../outside/secret.txt")
    assert str(info.value) == _outside_message("../outside/secret.txt", workspace.resolve())


def test_absolute_path_outside_is_refused(workspace: Path, outside: Path) -> None:
    given = str(outside / "secret.txt")
    with pytest.raises(ToolError) as info:
        resolve_path(workspace, given)
    assert str(info.value) == _outside_message(given, workspace.resolve())


def test_symlink_pointing_out_is_refused_and_says_where_it_leads(
    workspace: Path, outside: Path
) -> None:
    (workspace / "link").symlink_to(outside)
    with pytest.raises(ToolError) as info:
        resolve_path(workspace, "link/secret.txt")
    target = (outside / "secret.txt").resolve()
    assert str(info.value) == _outside_message(
        "link/secret.txt", workspace.resolve(), f" (it resolves to {target})"
    )


def test_symlink_inside_the_workspace_is_followed(workspace: Path) -> None:
    (workspace / "real").mkdir()
    (workspace / "alias").symlink_to(workspace / "real")
    assert resolve_path(workspace, "alias/x.py") == workspace.resolve() / "real" / "x.py"


def test_home_relative_path_is_not_a_workspace_path(workspace: Path) -> None:
    with pytest.raises(ToolError, match="is outside the workspace"):
        resolve_path(workspace, "~/.ssh/id_rsa")


def test_nul_byte_in_a_path_is_a_clear_error(workspace: Path) -> None:
    with pytest.raises(ToolError, match="is not a valid path"):
        resolve_path(workspace, "a\x00b")


def test_extra_roots_admit_only_themselves(workspace: Path, tmp_path: Path) -> None:
    spill = tmp_path / "spill"
    spill.mkdir()
    assert resolve_path(workspace, str(spill / "x.log"), extra_roots=(spill,)) == (
        spill.resolve() / "x.log"
    )
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve_path(workspace, str(tmp_path / "other.log"), extra_roots=(spill,))


def test_display_path_is_relative_inside_the_workspace(workspace: Path) -> None:
    assert display_path(workspace, workspace.resolve() / "a" / "b.py") == "a/b.py"
    assert display_path(workspace, workspace.resolve()) == "."


async def test_read_tool_does_not_read_outside(ctx: ToolContext, outside: Path) -> None:
    (ctx.workspace / "link").symlink_to(outside / "secret.txt")
    for given in ("../outside/secret.txt", str(outside / "secret.txt"), "link"):
        error = await call_error(ReadTool(), ctx, path=given)
        assert "outside the workspace" in error
        assert "TOP SECRET" not in error


async def test_write_and_edit_change_nothing_outside(ctx: ToolContext, outside: Path) -> None:
    (ctx.workspace / "out").symlink_to(outside)
    before = snapshot(outside)
    for given in ("../outside/secret.txt", "out/secret.txt", "out/new.txt"):
        error = await call_error(WriteTool(), ctx, path=given, content="pwned\n")
        assert "outside the workspace" in error
        error = await call_error(EditTool(), ctx, path=given, old_string="TOP", new_string="pwned")
        assert "outside the workspace" in error
    assert snapshot(outside) == before
    assert sorted(os.listdir(outside)) == ["secret.txt"]


async def test_search_and_list_tools_stay_inside(ctx: ToolContext, outside: Path) -> None:
    for tool, args in (
        (ls, {"path": ".."}),
        (GrepTool(), {"pattern": "SECRET", "path": "../outside"}),
        (GlobTool(), {"pattern": "*.txt", "path": str(outside)}),
    ):
        error = await call_error(tool, ctx, **args)
        assert "outside the workspace" in error
        assert "secret.txt" not in error.replace(str(outside), "")


async def test_grep_does_not_follow_a_symlink_out_of_the_workspace(
    ctx: ToolContext, outside: Path
) -> None:
    (ctx.workspace / "out").symlink_to(outside)
    (ctx.workspace / "mine.txt").write_text("no secrets here\n")
    out = await call(GrepTool(), ctx, pattern="SECRET")
    assert "TOP SECRET" not in out.content
    assert out.content.startswith("No matches")
