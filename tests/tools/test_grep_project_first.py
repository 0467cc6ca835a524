"""grep and glob give the project's own files before folders of dependencies or build
output, at the tool level where the byte cap can be made small: a search cut holding
dependency lines searches the project again without them (rg's order is its own, so the
project's lines may be past the cut). The CLI test is tests/e2e/test_search_project_first.py.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tests.tools.helpers import call

from lathe.tools import vendored
from lathe.tools.base import ToolContext
from lathe.tools.glob import GlobTool
from lathe.tools.grep import GrepTool

grep, glob = GrepTool(), GlobTool()


def _tree(root: Path, packages: int = 100) -> None:
    (root / "src").mkdir()
    (root / "src" / "app.js").write_text("const [a, setA] = useState(0);\n")
    (root / "build").write_text("useState in a script named build\n")  # a file, not a folder
    for n in range(packages):
        lib = root / "node_modules" / f"pkg{n}"
        lib.mkdir(parents=True)
        (lib / "index.js").write_text("export function useState(x) { return x }\n")


async def test_a_search_cut_by_bytes_keeps_the_projects_lines_first(ctx: ToolContext) -> None:
    _tree(ctx.workspace)
    small = dataclasses.replace(ctx, limits=dataclasses.replace(ctx.limits, output_max_bytes=2000))
    out = await call(grep, small, pattern="useState")
    lines = out.content.split("\n\n[")[0].splitlines()
    assert sorted(lines[:2]) == [
        "build:1:useState in a script named build",
        "src/app.js:1:const [a, setA] = useState(0);",
    ]
    assert all(line.startswith("node_modules/pkg") for line in lines[2:])
    assert f"then {len(lines) - 2} of more than " in out.content
    assert (
        "in folders of dependencies or build output (node_modules). To search only there, "
        'give one as path, e.g. path="node_modules".' in out.content
    )


async def test_context_lines_stay_with_their_group(ctx: ToolContext) -> None:
    (ctx.workspace / "src").mkdir()
    (ctx.workspace / "src" / "a.py").write_text("x = 1\nneedle = 2\n")
    (ctx.workspace / ".venv").mkdir()
    (ctx.workspace / ".venv" / "b.py").write_text("y = 1\nneedle = 3\n")
    out = await call(grep, ctx, pattern="needle", context=1)
    assert out.content == (
        "src/a.py-1-x = 1\nsrc/a.py:2:needle = 2\n--\n.venv/b.py-1-y = 1\n.venv/b.py:2:needle = 3"
    )


async def test_glob_lists_the_project_first_and_names_the_folders(ctx: ToolContext) -> None:
    _tree(ctx.workspace, packages=250)
    (ctx.workspace / "packages" / "ui" / "node_modules" / "x").mkdir(parents=True)
    (ctx.workspace / "packages" / "ui" / "node_modules" / "x" / "y.js").write_text("\n")
    out = await call(glob, ctx, pattern="*.js")
    assert out.content.splitlines()[0] == "src/app.js"
    assert out.content.endswith(
        "[Showing 200 of 252 files: the project's own first (1), then the 199 newest of "
        "251 in folders of dependencies or build output (node_modules, "
        "packages/ui/node_modules). To list only those, give one as path, e.g. "
        'path="node_modules". Narrow the pattern or give a path.]'
    )


def test_a_folder_is_judged_below_the_folder_searched() -> None:
    assert vendored.inside("node_modules/react/index.js")
    assert vendored.inside("src/vendor/lib.go")
    assert not vendored.inside("build")  # a file named like such a folder
    below = vendored.prefix("node_modules/react")
    assert not vendored.inside("node_modules/react/index.js", below)
    assert vendored.inside("node_modules/react/node_modules/x/i.js", below)
    assert not vendored.inside("node_modules/x/i.js", vendored.prefix("node_modules/x/i.js"))
    assert vendored.named_in("node_modules/**/*.js")
    assert not vendored.named_in("*.js")
