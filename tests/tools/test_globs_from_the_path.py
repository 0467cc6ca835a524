"""A glob holding a slash, given with a `path`, is matched from that path: rg matched it
from the workspace root (where it ran), so `glob sub/*.py in pkg` found nothing while
`pkg/sub/*.py` found the file; grep's `glob` argument likewise. Output paths stay
relative to the workspace, and ignore rules, hidden files, read rules and the project
first order hold as before.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tests.e2e.test_run_edges import lathe_run
from tests.fakes.openai_server import Call, Reply
from tests.tools.helpers import call

from lathe.tools.base import ToolContext
from lathe.tools.glob import GlobTool
from lathe.tools.grep import GrepTool

grep, glob = GrepTool(), GlobTool()


def _tree(root: Path) -> None:
    files = {
        "pkg/sub/mod.py": "TODO = 1\n",
        "pkg/top.py": "TODO = 2\n",
        "pkg/sub/.hidden.py": "TODO = 3\n",
        "pkg/sub/ignored/skipped.py": "TODO = 4\n",
        "pkg/.gitignore": "ignored/\n",
        "sub/root.py": "TODO = 5\n",  # matches sub/*.py from the root, not from pkg
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_slash_globs_match_from_the_path_in_a_run(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    _tree(ws)
    fake_openai.enqueue(
        Reply(calls=[Call("glob", {"pattern": "sub/*.py", "path": "pkg"})]),
        Reply(calls=[Call("grep", {"pattern": "TODO", "path": "pkg", "glob": "sub/*.py"})]),
        Reply("Found them."),
    )
    done = lathe_run(fake_openai, ws, tmp_path, "Find the TODOs")
    assert done.returncode == 0, done.stderr
    last = fake_openai.chat_bodies()[-1]["messages"]
    listed, matched = [m["content"] for m in last if m["role"] == "tool"]
    assert sorted(listed.splitlines()) == ["pkg/sub/.hidden.py", "pkg/sub/mod.py"]
    assert sorted(matched.splitlines()) == [
        "pkg/sub/.hidden.py:1:TODO = 3",
        "pkg/sub/mod.py:1:TODO = 1",
    ]


async def test_glob_from_a_path_keeps_its_other_rules(ctx: ToolContext) -> None:
    _tree(ctx.workspace)
    out = await call(glob, ctx, pattern="**/*.py", path="pkg")
    assert sorted(out.content.splitlines()) == [
        "pkg/sub/.hidden.py",
        "pkg/sub/mod.py",
        "pkg/top.py",
    ]
    out = await call(glob, ctx, pattern="/sub/*.py", path="pkg/")
    assert sorted(out.content.splitlines()) == ["pkg/sub/.hidden.py", "pkg/sub/mod.py"]
    out = await call(glob, ctx, pattern="sub/*.py")  # from the workspace root, as before
    assert out.content == "sub/root.py"
    guarded = dataclasses.replace(ctx, deny_read=("pkg/sub/mod.py",))
    out = await call(glob, guarded, pattern="sub/*.py", path="pkg")
    assert out.content == "pkg/sub/.hidden.py"


async def test_grep_from_a_path_keeps_paths_relative_to_the_workspace(ctx: ToolContext) -> None:
    _tree(ctx.workspace)
    (ctx.workspace / "pkg" / "sub" / "blob.bin").write_bytes(b"TODO\0\1\2")
    out = await call(grep, ctx, pattern="TODO", path="pkg", glob="sub/*.py", context=1)
    assert sorted(out.content.splitlines()) == [
        "--",
        "pkg/sub/.hidden.py:1:TODO = 3",
        "pkg/sub/mod.py:1:TODO = 1",
    ]
    out = await call(grep, ctx, pattern="TODO", path="pkg", glob="sub/*.bin")
    assert out.content.startswith("[Also matched in 1 file holding a NUL byte")
    assert "pkg/sub/blob.bin" in out.content
    out = await call(grep, ctx, pattern="TODO = 2", path="pkg")
    assert out.content == "pkg/top.py:1:TODO = 2"


async def test_folders_of_dependencies_below_a_path_are_named_from_the_workspace(
    ctx: ToolContext,
) -> None:
    app = ctx.workspace / "app"
    (app / "src").mkdir(parents=True)
    (app / "src" / "main.js").write_text("useState()\n")
    for n in range(300):
        lib = app / "node_modules" / f"pkg{n}" / "src"
        lib.mkdir(parents=True)
        (lib / "index.js").write_text("useState()\n")
    out = await call(glob, ctx, pattern="src/*.js", path="app")
    assert out.content == "app/src/main.js"
    out = await call(glob, ctx, pattern="**/src/*.js", path="app")
    assert out.content.splitlines()[0] == "app/src/main.js"
    assert 'path="app/node_modules"' in out.content
    out = await call(grep, ctx, pattern="useState", path="app")
    assert out.content.splitlines()[0] == "app/src/main.js:1:useState()"
    assert 'path="app/node_modules"' in out.content


def test_rgs_messages_from_inside_a_path_name_paths_from_the_workspace() -> None:
    # rg as root reads every folder, so its message is given as rg writes it unprivileged.
    from lathe.tools.grep import RgResult, _named_from

    inside = RgResult(2, "", "rg: ./locked: Permission denied (os error 13)\n", cut=False)
    assert _named_from("pkg/", inside).stderr == (
        "rg: pkg/locked: Permission denied (os error 13)\n"
    )
