"""End to end: what the files code run on the host (a hook, an MCP server) and the
verify check run is read from a command by its program. A hook `ruff format src/app`
made every edit under a CLI package's folder (src/app/__main__.py) a protected path
nobody can approve; a server `python -m server.py` or `bash -C s.sh` left its script
unprotected; a check `python -m mycheck` emptied by the model ended plain `verified`."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest
from tests.e2e.test_calculator import run_against
from tests.e2e.test_fake_fixes import _finished
from tests.e2e.test_mcp import run, workspace
from tests.fakes.openai_server import Call, Reply

CORE = "def one():\n    return 1\n"


def test_a_hook_formatting_a_package_folder_does_not_protect_it(tmp_path, fake_openai):
    # At 2a37730 the edit was "Denied: ... is a protected path ... nobody can approve it":
    # src/app holds __main__.py, and a folder was taken as a script whatever the program.
    ws = tmp_path / "ws"
    (ws / "src" / "app").mkdir(parents=True)
    for name, text in (("__init__.py", ""), ("__main__.py", "print('app')\n"), ("core.py", CORE)):
        (ws / "src" / "app" / name).write_text(text)
    user = tmp_path / "user.toml"
    user.write_text(
        "[[hooks.post_tool]]\n"
        'command = "ruff format src/app; git -C src/app commit --dry-run -m wip"\n'
        'tools = ["edit"]\n'
    )
    (ws / "wip.py").write_text("")
    edit = Call(
        "edit", {"path": "src/app/core.py", "old_string": "return 1", "new_string": "return 2"}
    )
    wip = Call("write", {"path": "wip.py", "content": "x = 1\n"})
    read = Call("read", {"path": "wip.py"})
    fake_openai.enqueue(Reply(calls=[read]), Reply(calls=[edit, wip]), Reply("Done."))

    result = run_against(fake_openai, ws, tmp_path, "--json", "go",
                         env_extra={"LATHE_CONFIG": str(user)})  # fmt: skip

    assert result.returncode == 0, result.stderr[-2000:]
    finished = [
        e for e in map(json.loads, result.stdout.splitlines()) if e["type"] == "tool_finished"
    ]
    outputs = [e.get("output") for e in finished]
    assert [e["is_error"] for e in finished] == [False, False, False], outputs
    assert "return 2" in (ws / "src" / "app" / "core.py").read_text()
    assert (ws / "wip.py").read_text() == "x = 1\n"


def test_a_servers_script_is_protected_when_an_option_seems_to_name_it_otherwise(
    tmp_path, fake_openai
):
    # `python -m server.py` imports server.py before it fails; `bash -C s.sh` runs s.sh
    # (-C is noclobber); `python -m pkg.nosuch` runs pkg/__init__.py. Each named nothing.
    ws = workspace(tmp_path)
    files = {"server.py": "raise SystemExit(0)\n", "s.sh": "exit 0\n",
             "pkg/__init__.py": "raise SystemExit(0)\n"}  # fmt: skip
    for name, text in files.items():
        (ws / name).parent.mkdir(exist_ok=True)
        (ws / name).write_text(text)
    servers = {
        "dotted": {"command": sys.executable, "args": ["-m", "server.py"]},
        "noclobber": {"command": "bash", "args": ["-C", "s.sh"]},
        "nosuch": {"command": sys.executable, "args": ["-m", "pkg.nosuch"]},
    }
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    writes = [Call("write", {"path": name, "content": "PLANTED = 1\n"}) for name in files]
    fake_openai.enqueue(Reply(calls=[Call("read", {"path": n}) for n in files]),
                        Reply(calls=writes), Reply("Done."))  # fmt: skip

    result = run(fake_openai, tmp_path, ws, "--trust-project-mcp", "--json")

    assert result.returncode == 0, result.stderr
    finished = [
        e for e in map(json.loads, result.stdout.splitlines()) if e["type"] == "tool_finished"
    ]
    for name, event in zip(files, finished[len(files) :], strict=True):
        assert event["is_error"] and "is a protected path" in event["output"], (name, event)
    for name, text in files.items():
        assert (ws / name).read_text() == text, name


CHECK = "import sys\nfrom calc import add\nsys.exit(0 if add(2, 3) == 5 else 1)\n"
# Stands in for uv: `uv --directory DIR run FILE` runs FILE with Python in DIR.
FAKE_UV = '#!/bin/sh\ncd "$2" && shift 3 && exec "{python}" "$@"\n'


@pytest.mark.parametrize(
    ("verify", "check"),
    [
        ("python3 -m mycheck", "mycheck.py"),
        ("python3 run.py --script=mycheck.py", "mycheck.py"),
        ("uv --directory sub run s.py", "sub/s.py"),
    ],
)
def test_the_checks_own_file_is_watched_however_the_command_names_it(
    tmp_path, fake_openai, verify, check
):
    # Overwriting mycheck.py with `pass` ended `verified` with an empty reason.
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (ws / "mycheck.py").write_text(CHECK)
    (ws / "sub" / "s.py").write_text("import sys\nsys.path.insert(0, '..')\n" + CHECK)
    (ws / "run.py").write_text(
        "import runpy, sys\nrunpy.run_path(sys.argv[1].partition('=')[2], run_name='__main__')\n"
    )
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "uv").write_text(FAKE_UV.format(python=sys.executable))
    (bin_ / "uv").chmod(stat.S_IRWXU)
    path = f"{bin_}{os.pathsep}{os.environ['PATH']}"
    fake_openai.enqueue(
        Reply(calls=[Call("read", {"path": check})]),
        Reply(calls=[Call("write", {"path": check, "content": "pass\n"})]),
        Reply("Done."),
    )

    done = run_against(fake_openai, ws, tmp_path, "--json", "--approval", "full",
                       "--verify", verify, "Fix add", env_extra={"PATH": path})  # fmt: skip

    finished = _finished(done)
    assert finished["status"] == "verified", done.stderr[-2000:]
    assert f"its own files changed since it first ran: {check}" in finished["reason"], finished


def test_fake_uv_runs_the_script_in_its_folder(tmp_path):
    # The stand-in does what the test relies on: a failing check fails through it.
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "uv").write_text(FAKE_UV.format(python=sys.executable))
    (tmp_path / "bin" / "uv").chmod(stat.S_IRWXU)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "s.py").write_text("raise SystemExit(3)\n")
    done = subprocess.run([str(tmp_path / "bin" / "uv"), "--directory", "sub", "run", "s.py"],
                          cwd=tmp_path)  # fmt: skip
    assert done.returncode == 3
