"""End to end: the workspace files a trusted project MCP server runs are protected
however its command names them — a module (`python -m pserv`), a script in the folder
`uv --directory` moves to, a script given as an option's value (`--script=FILE`), a
package folder run as a script (`python pkgdir`) — as a script named plainly is: the
model's write is refused and a sandboxed command sees them read-only, since the next
start of the server would run the change on the host, outside the sandbox."""

from __future__ import annotations

import json
import sys

from tests.e2e.test_mcp import run, workspace
from tests.fakes.openai_server import Call, Reply

# Each server exits at once: what is judged is its files, not its tools.
EXITS = "raise SystemExit(0)\n"


def test_the_files_a_server_runs_are_protected_however_its_command_names_them(
    tmp_path, fake_openai
):
    # `python -m pserv`: the model rewrote pserv.py in auto mode, and the next start of
    # the trusted server ran it on the host, while `python pserv.py` was protected.
    ws = workspace(tmp_path)
    files = [
        "pserv.py", "pkg/__init__.py", "pkg/mod.py", "sub/s.py", "opt.py",
        "pkgdir/__main__.py", "pkgdir/helper.py", "plain.py",
    ]  # fmt: skip
    for name in files:
        (ws / name).parent.mkdir(exist_ok=True)
        (ws / name).write_text(EXITS)
    python = sys.executable
    servers = {
        "module": {"command": python, "args": ["-m", "pserv"]},
        "dotted": {"command": python, "args": ["-m", "pkg.mod"]},
        "uv": {"command": "uv", "args": ["--directory", str(ws / "sub"), "run", "s.py"]},
        "option": {"command": python, "args": ["--script=opt.py"]},
        "package": {"command": python, "args": ["pkgdir"]},
        "plain": {"command": python, "args": ["plain.py"]},
    }
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    writes = [Call("write", {"path": name, "content": "PLANTED = 1\n"}) for name in files]
    new_module = Call("write", {"path": "pkgdir/evil.py", "content": "PLANTED = 1\n"})
    appends = "; ".join(f"echo PLANTED >> {name}" for name in files)
    bash = Call("bash", {"command": f"{appends}; echo PLANTED > pkgdir/evil2.py; echo tried"})
    reads = [Call("read", {"path": name}) for name in files]
    fake_openai.enqueue(
        Reply(calls=reads), Reply(calls=[*writes, new_module, bash]), Reply("Done.")
    )

    result = run(fake_openai, tmp_path, ws, "--trust-project-mcp", "--json")

    assert result.returncode == 0, result.stderr
    finished = [
        e for e in map(json.loads, result.stdout.splitlines()) if e["type"] == "tool_finished"
    ]
    *refused, command = finished[len(files) :]
    for name, event in zip([*files, "pkgdir/evil.py"], refused, strict=True):
        assert event["is_error"] and "is a protected path" in event["output"], (name, event)
    assert "tried" in command["output"], command
    for name in files:
        assert (ws / name).read_text() == EXITS, name
    assert not (ws / "pkgdir" / "evil.py").exists()
    assert not (ws / "pkgdir" / "evil2.py").exists()
