"""grep and glob list the project's own files before dependency folders, through the
real CLI: in a workspace with no .gitignore and 100,000 files under node_modules,
`grep useState` gave 200 node_modules lines and never src/app.js, and `glob *.js` the
"200 newest of 100001", all node_modules. A few hundred files are enough to cut both.
"""

from __future__ import annotations

import os

from tests.e2e.test_run_edges import lathe_run
from tests.fakes.openai_server import Call, Reply

_PACKAGES = 300


def _workspace(tmp_path):
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.js").write_text(
        "import {useState} from 'react';\nconst [a, setA] = useState(0);\n"
    )
    os.utime(ws / "src" / "app.js", (1_000_000, 1_000_000))  # older than every package
    for n in range(_PACKAGES):
        lib = ws / "node_modules" / f"pkg{n}" / "lib"
        lib.mkdir(parents=True)
        (lib / "index.js").write_text("export function useState(x) { return x }\n")
    return ws


def _results(server) -> list[str]:
    last = server.chat_bodies()[-1]["messages"]
    return [m["content"] for m in last if m["role"] == "tool"]


def test_grep_and_glob_list_the_projects_files_before_node_modules(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(
        Reply(calls=[Call("grep", {"pattern": "useState"})]),
        Reply(calls=[Call("glob", {"pattern": "*.js"})]),
        Reply("Found it."),
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Find useState")
    assert done.returncode == 0, done.stderr
    grep, glob = _results(fake_openai)

    lines = grep.split("\n\n[")[0].splitlines()
    assert lines[:2] == [
        "src/app.js:1:import {useState} from 'react';",
        "src/app.js:2:const [a, setA] = useState(0);",
    ]
    assert len(lines) == 200
    assert all(line.startswith("node_modules/pkg") for line in lines[2:])
    assert grep.endswith(
        "[Output cut at 200 lines: the project's own matches first, then 198 of 300 in "
        "folders of dependencies or build output (node_modules). To search "
        'only there, give one as path, e.g. path="node_modules". Narrow the search: a '
        "more specific pattern, a path, or a glob.]"
    )

    files = glob.split("\n\n[")[0].splitlines()
    assert files[0] == "src/app.js"
    assert len(files) == 200
    assert glob.endswith(
        "[Showing 200 of 301 files: the project's own first (1), then the 199 newest of "
        "300 in folders of dependencies or build output (node_modules). To list only "
        'those, give one as path, e.g. path="node_modules". Narrow the pattern or give a '
        "path.]"
    )


def test_a_dependency_folder_given_as_the_path_is_searched_as_asked(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(
        Reply(calls=[Call("grep", {"pattern": "useState", "path": "node_modules/pkg7"})]),
        Reply(calls=[Call("glob", {"pattern": "index.js", "path": "node_modules"})]),
        Reply(calls=[Call("grep", {"pattern": "useState", "glob": "node_modules/pkg1/**"})]),
        Reply("Found it."),
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Find useState")
    assert done.returncode == 0, done.stderr
    in_package, in_folder, by_glob = _results(fake_openai)
    assert in_package == "node_modules/pkg7/lib/index.js:1:export function useState(x) { return x }"
    assert len(in_folder.split("\n\n[")[0].splitlines()) == 200
    assert in_folder.endswith(
        "[Showing the 200 newest of 300 files. Narrow the pattern or give a path.]"
    )
    assert by_glob == ("node_modules/pkg1/lib/index.js:1:export function useState(x) { return x }")
