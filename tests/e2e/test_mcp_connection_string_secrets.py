"""End to end: the password of a connection string an MCP server takes in `env` or in
`args` — filled from a variable (`postgresql://app:${PGPW}@db/x`) or written in the
file — is a secret: masked in what the model, the terminal and the session get, and the
variable that fills it is kept from commands, as a whole-URL `${DATABASE_URL}` was."""

from __future__ import annotations

import json
import sys

from tests.e2e.test_mcp import FAKE_SERVER, run, tool_results, user_config, workspace
from tests.fakes.openai_server import Call, Reply

PASSWORD = "Vq3pZ8rLw2"
ARG_PASSWORD = "Kx7mN4sTb9"
LITERAL = "hunter2pass"
JSON_LITERAL = "Jn5wQ1eRt6"


def test_a_connection_strings_password_is_masked_and_its_variable_kept_from_commands(
    tmp_path, fake_openai, monkeypatch
):
    # A tool returning os.environ['CONN2'] showed `postgresql://app:<password>@db/x` to
    # the model, the terminal and the session, and `env` in the sandbox showed PGPW.
    monkeypatch.setenv("HUNT_PGPW", PASSWORD)
    monkeypatch.setenv("HUNT_PGPW2", ARG_PASSWORD)
    ws = workspace(tmp_path)
    # The fake server with its first argument as ARG_URL, so a tool can echo an argument.
    wrapper = tmp_path / "argsrv.py"
    wrapper.write_text(
        "import os, runpy, sys\n"
        "os.environ['ARG_URL'] = sys.argv.pop(1)\n"
        f"runpy.run_path({FAKE_SERVER!r}, run_name='__main__')\n"
    )
    server = {
        "command": sys.executable,
        "args": [str(wrapper), "postgresql://app:${HUNT_PGPW2}@db/y"],
        "env": {
            "CONN2": "postgresql://app:${HUNT_PGPW}@db/x",
            "CONN3": f"postgresql://u:{LITERAL}@h/db",
        },
    }
    user_config(tmp_path, {"srv": server})
    listed = {"command": sys.executable, "args": [FAKE_SERVER],
              "env": {"CONN4": f"mysql://root:{JSON_LITERAL}@localhost:3306/app"}}  # fmt: skip
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": listed}}))
    probe = 'echo "pw=${HUNT_PGPW:-hidden} pw2=${HUNT_PGPW2:-hidden}"'
    fake_openai.enqueue(
        Reply(calls=[Call("mcp__srv__getenv", {"name": name})
                     for name in ("CONN2", "ARG_URL", "CONN3")]),
        Reply(calls=[Call("mcp__proj__getenv", {"name": "CONN4"})]),
        Reply(calls=[Call("bash", {"command": probe})]),
        Reply("Done."),
    )  # fmt: skip

    result = run(fake_openai, tmp_path, ws, "--approval", "full", "--trust-project-mcp")

    assert result.returncode == 0, result.stderr
    bodies = fake_openai.chat_bodies()
    conn2, arg_url, conn3 = tool_results(bodies[1])
    [conn4] = tool_results(bodies[2])[-1:]
    secrets = (PASSWORD, ARG_PASSWORD, LITERAL, JSON_LITERAL)
    for said in (conn2, arg_url, conn3, conn4):
        assert "…" in said and not any(s in said for s in secrets), said
    said = tool_results(bodies[3])[-1]
    assert "pw=hidden pw2=hidden" in said, said
    assert not any(s in result.stdout + result.stderr for s in secrets)
    written = [p for p in (tmp_path / "home").rglob("*") if p.is_file()]
    assert [p for p in written if p.suffix == ".jsonl"]
    leaked = [p for p in written if any(s in p.read_text(errors="replace") for s in secrets)]
    assert not leaked, leaked
