"""`lathe mcp list|test|import` through the real command line, with the SDK-built fake
server (tests/fakes/mcp_server.py) as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import psutil
from tests.fakes.user_config import user_config_file

FAKE_SERVER = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py")


def lathe(*args: str, tmp_path: Path, env: dict[str, str] | None = None):
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    environ |= {
        "LATHE_HOME": str(tmp_path / "home"),
        "LATHE_CONFIG": user_config_file(tmp_path / "config.toml"),
    }
    return subprocess.run(
        [sys.executable, "-m", "lathe", *args], cwd=tmp_path, env=environ | (env or {}),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_list_starts_trusted_servers_only_and_stops_them(tmp_path):
    pid_file = tmp_path / "user.pid"
    (tmp_path / "config.toml").write_text(
        "[mcp.servers.mine]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(FAKE_SERVER)}, '--pid-file', {json.dumps(str(pid_file))}]\n"
    )
    ws = tmp_path / "ws"
    ws.mkdir()
    project_pid = tmp_path / "project.pid"
    (ws / ".mcp.json").write_text(
        json.dumps(
            {"mcpServers": {"proj": {"command": sys.executable,
                                     "args": [FAKE_SERVER, "--pid-file", str(project_pid)]}}}
        )
    )  # fmt: skip

    result = lathe("mcp", "list", "-C", str(ws), tmp_path=tmp_path)

    assert result.returncode == 0, result.stderr
    rows = {
        line.split("\t")[0]: line.split("\t") for line in result.stdout.splitlines() if "\t" in line
    }
    assert rows["mine"][1:3] == ["stdio", "user"] and rows["mine"][3].startswith("ok")
    assert rows["mine"][4] == "8" and int(rows["mine"][5].replace(",", "")) > 100
    assert rows["proj"][2] == "untrusted" and "not started" in rows["proj"][3]
    assert rows["proj"][6].startswith(".mcp.json ")
    assert "mcp__mine__echo" in result.stdout and "mine resources: note://hello" in result.stdout
    assert "--trust-project-mcp" in result.stderr
    assert not project_pid.exists()
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 1
    while psutil.pid_exists(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE

    trusted = lathe("mcp", "list", "-C", str(ws), "--trust-project-mcp", tmp_path=tmp_path)
    proj = next(line for line in trusted.stdout.splitlines() if line.startswith("proj\t"))
    assert "\ttrusted\tok" in proj
    assert project_pid.exists()


def test_test_reports_a_server_that_cannot_start(tmp_path):
    (tmp_path / "config.toml").write_text(
        '[mcp.servers.broken]\ncommand = "/nonexistent/server"\nstartup_timeout_s = 5\n'
    )

    result = lathe("mcp", "test", "broken", tmp_path=tmp_path)

    assert result.returncode == 1
    assert result.stdout == (
        "broken: failed: MCP server broken cannot start: command '/nonexistent/server' "
        "does not exist\n"
    )
    missing = lathe("mcp", "test", "nope", tmp_path=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr.startswith("lathe: there is no MCP server named 'nope'")


def test_test_with_a_relative_workspace_starts_the_server(tmp_path):
    # `-C ws` was joined to itself as the server's cwd: "No such file ... 'ws/ws'".
    (tmp_path / "config.toml").write_text(
        f"[mcp.servers.srv]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(FAKE_SERVER)}]\n"
    )
    (tmp_path / "ws").mkdir()

    result = lathe("mcp", "test", "srv", "-C", "ws", tmp_path=tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("srv: ok"), result.stdout


def test_import_a_codex_config_without_copying_its_secrets(tmp_path):
    codex = tmp_path / "codex.toml"
    codex.write_text(
        '[mcp_servers.github]\ncommand = "npx"\n'
        'args = ["-y", "@modelcontextprotocol/server-github"]\n'
        'env = { GITHUB_TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789" }\n'
        "startup_timeout_sec = 45\n\n"
        '[mcp_servers.docs]\nurl = "https://mcp.example.com/mcp"\n'
        'bearer_token_env_var = "DOCS_TOKEN"\n'
        'enabled_tools = ["search_*"]\n'
    )
    (tmp_path / "config.toml").write_text('# mine\nmodel = "gpt-4o"\n')

    result = lathe("mcp", "import", str(codex), tmp_path=tmp_path)

    assert result.returncode == 0, result.stderr
    written = (tmp_path / "config.toml").read_text()
    assert f"to {tmp_path / 'config.toml'}" in result.stdout
    assert "ghp_" not in written and written.startswith("# mine\n")
    assert "export GITHUB_TOKEN" in result.stdout
    servers = tomllib.loads(written)["mcp"]["servers"]
    assert servers["github"] == {
        "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
        "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}, "startup_timeout_s": 45.0,
    }  # fmt: skip
    assert servers["docs"]["headers"] == {"Authorization": "Bearer ${DOCS_TOKEN}"}
    assert servers["docs"]["include_tools"] == ["search_*"]
    assert servers["docs"]["transport"] == "streamable-http"
    shown = lathe("config", "show", tmp_path=tmp_path, env={"DOCS_TOKEN": "s3cr3t-value"})
    assert shown.returncode == 0, shown.stderr
    assert "Bearer ${DOCS_TOKEN}" in shown.stdout and "s3cr3t-value" not in shown.stdout

    again = lathe("mcp", "import", str(codex), tmp_path=tmp_path)
    assert "skipped github" in again.stderr
    assert "export GITHUB_TOKEN" not in again.stdout  # nothing of it was written this time


def test_import_replaces_a_secret_written_in_a_servers_arguments_too(tmp_path):
    # Only env and headers were looked at: a token in args was copied as it was.
    token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    codex = tmp_path / "codex.toml"
    codex.write_text(
        '[mcp_servers.github]\ncommand = "npx"\n'
        f'args = ["-y", "server-github", "--token", "{token}", "--key={token}"]\n'
        f'env = {{ GITHUB_TOKEN = "{token}" }}\n'
        '[mcp_servers.other]\ncommand = "srv"\n'
        'args = ["--api-key", "sk-live-0123456789abcdefghijklmn"]\n'
    )

    result = lathe("mcp", "import", str(codex), tmp_path=tmp_path)

    assert result.returncode == 0, result.stderr
    written = (tmp_path / "config.toml").read_text()
    assert token not in written and "sk-live" not in written
    servers = tomllib.loads(written)["mcp"]["servers"]
    assert servers["github"]["args"] == [
        "-y", "server-github", "--token", "${GITHUB_TOKEN}", "--key=${GITHUB_TOKEN}"
    ]  # fmt: skip
    [variable] = [a[2:-1] for a in servers["other"]["args"] if a.startswith("${")]
    assert f"export {variable}" in result.stdout


def test_import_a_gemini_settings_file_into_the_project(tmp_path):
    gemini = tmp_path / "settings.json"
    gemini.write_text(
        json.dumps(
            {"mcpServers": {
                "local": {"command": "uvx", "args": ["tool-server"], "env": {"KEY": "$API_KEY"},
                          "timeout": 30000, "trust": True, "excludeTools": ["drop_*"]},
                "remote": {"httpUrl": "https://example.com/mcp", "headers": {"X-Org": "acme"}},
            }}
        )
    )  # fmt: skip
    ws = tmp_path / "ws"
    ws.mkdir()

    result = lathe("mcp", "import", str(gemini), "--project", "-C", str(ws), tmp_path=tmp_path)

    assert result.returncode == 0, result.stderr
    target = ws / ".lathe" / "config.toml"
    assert str(target) in result.stdout
    servers = tomllib.loads(target.read_text())["mcp"]["servers"]
    assert servers["local"] == {
        "command": "uvx", "args": ["tool-server"], "env": {"KEY": "${API_KEY}"},
        "tool_timeout_s": 30.0, "exclude_tools": ["drop_*"],
    }  # fmt: skip
    assert servers["remote"]["transport"] == "streamable-http"


def test_a_long_path_in_a_servers_env_is_no_secret(tmp_path):
    # `DB_PATH = "/home/alice/projects/app2/data.sqlite"` was refused as a secret, and
    # every lathe command failed until it was moved into an exported variable.
    (tmp_path / "config.toml").write_text(
        "[mcp.servers.db]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(FAKE_SERVER)}]\n"
        'env = { DB_PATH = "/home/alice/projects/app2/data.sqlite" }\n'
    )
    ws = tmp_path / "ws"
    ws.mkdir()

    result = lathe("mcp", "list", "-C", str(ws), tmp_path=tmp_path)

    assert result.returncode == 0, result.stderr
    assert "mcp__db__echo" in result.stdout


def test_a_secret_a_server_prints_on_stderr_is_masked_in_its_log(tmp_path):
    # The tool results were masked, but the server's own log kept the token as printed.
    token = "tok-abcdef123456789xyz0"
    (tmp_path / "config.toml").write_text(
        "[mcp.servers.chatty]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(FAKE_SERVER)}, '--say-env', 'API_TOKEN']\n"
        'env = { API_TOKEN = "${MY_API_TOKEN}" }\n'
    )
    ws = tmp_path / "ws"
    ws.mkdir()

    result = lathe("mcp", "list", "-C", str(ws), tmp_path=tmp_path, env={"MY_API_TOKEN": token})

    assert result.returncode == 0, result.stderr
    log = tmp_path / "home" / "logs" / "mcp-chatty.log"
    deadline = time.monotonic() + 5
    while "starting with" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "starting with API_TOKEN=" in log.read_text()
    assert token not in log.read_text()
    assert os.stat(log).st_mode & 0o077 == 0


def test_two_tools_whose_names_clean_up_alike_both_stay_reachable(tmp_path):
    # `a.b` and `a_b` both became mcp__twins__a_b: one of them could not be called.
    (tmp_path / "config.toml").write_text(
        "[mcp.servers.twins]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(FAKE_SERVER)}, '--twins']\n"
    )
    ws = tmp_path / "ws"
    ws.mkdir()

    result = lathe("mcp", "list", "-C", str(ws), tmp_path=tmp_path)

    assert result.returncode == 0, result.stderr
    names = [word for word in result.stdout.split() if word.startswith("mcp__twins__a_b")]
    assert len(set(names)) == 2, names


def test_a_server_that_fails_at_start_points_at_what_it_printed(tmp_path):
    # "failed to start: MCPError: Connection closed", and not a word of where the cause
    # was written.
    crash = "import sys; print('boom at start: no DATABASE_URL', file=sys.stderr); sys.exit(1)"
    (tmp_path / "config.toml").write_text(
        "[mcp.servers.broken]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = ['-c', {json.dumps(crash)}]\n"
    )
    ws = tmp_path / "ws"
    ws.mkdir()

    result = lathe("mcp", "test", "broken", "-C", str(ws), tmp_path=tmp_path)

    assert result.returncode == 1
    log = tmp_path / "home" / "logs" / "mcp-broken.log"
    assert str(log) in result.stdout + result.stderr
    assert "boom at start: no DATABASE_URL" in log.read_text()


def test_import_takes_the_secrets_out_of_a_servers_url(tmp_path):
    # The env secret became ${VAR}, but a key in the url was copied into the config.
    codex = tmp_path / "codex.toml"
    codex.write_text(
        "[mcp_servers.search]\n"
        'url = "https://bob:pw-0123456789@example.com/mcp?api_key=abcdef1234567890abcdef&x=1"\n'
    )

    result = lathe("mcp", "import", str(codex), tmp_path=tmp_path)

    assert result.returncode == 0, result.stderr
    written = (tmp_path / "config.toml").read_text()
    assert "abcdef1234567890abcdef" not in written and "pw-0123456789" not in written
    url = tomllib.loads(written)["mcp"]["servers"]["search"]["url"]
    assert url == "https://bob:${SEARCH_URL_PASSWORD}@example.com/mcp?api_key=${SEARCH_API_KEY}&x=1"
    assert "export SEARCH_API_KEY" in result.stdout and "SEARCH_URL_PASSWORD" in result.stdout


def test_a_server_lathe_cannot_start_for_an_unset_variable_says_so_plainly(tmp_path):
    # "failed to start: UsageError: ... what it printed is in <a log that was never made>".
    (tmp_path / "config.toml").write_text(
        "[mcp.servers.gh]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(FAKE_SERVER)}]\n"
        'env = { GITHUB_TOKEN = "${GITHUB_TOKEN_NOT_SET_HERE}" }\n'
    )
    ws = tmp_path / "ws"
    ws.mkdir()

    result = lathe("mcp", "test", "gh", "-C", str(ws), tmp_path=tmp_path)

    said = result.stdout + result.stderr
    assert result.returncode != 0
    assert "GITHUB_TOKEN_NOT_SET_HERE" in said
    assert "UsageError" not in said and "what it printed" not in said


def test_list_names_only_the_tools_a_run_offers(tmp_path):
    # `a`'s excluded `_x` was still named, so `a_`'s `x` was listed under a hashed name
    # with a clash warning, though a run calls it plain mcp__a___x.
    server = tmp_path / "server.py"
    server.write_text(
        "import sys\n"
        "from mcp.server.mcpserver import MCPServer\n"
        "server = MCPServer('one-tool')\n"
        "@server.tool(name=sys.argv[1])\n"
        "def only() -> str:\n"
        "    return 'ok'\n"
        "server.run()\n"
    )
    (tmp_path / "config.toml").write_text(
        "[mcp.servers.a]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(server))}, '_x']\n"
        "exclude_tools = ['_x']\n"
        "[mcp.servers.a_]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(server))}, 'x']\n"
    )
    ws = tmp_path / "ws"
    ws.mkdir()

    result = lathe("mcp", "list", "-C", str(ws), tmp_path=tmp_path)

    assert result.returncode == 0, result.stderr
    named = [word for word in result.stdout.split() if word.startswith("mcp__")]
    assert named == ["mcp__a___x"], result.stdout
    assert "both have a tool" not in result.stdout + result.stderr


def test_a_command_path_that_cannot_run_is_named_with_the_reason(tmp_path):
    # Each was "failed to start: MCPError: Connection closed", the reason only in the log.
    ws = tmp_path / "ws"
    (ws / "bin").mkdir(parents=True)
    (ws / "bin" / "plain").write_text("#!/bin/sh\n")
    (tmp_path / "config.toml").write_text(
        '[mcp.servers.gone]\ncommand = "./bin/server"\n'
        '[mcp.servers.plain]\ncommand = "bin/plain"\n'
        '[mcp.servers.folder]\ncommand = "./bin"\n'
        # Relative to the server's own cwd, where it is started.
        '[mcp.servers.there]\ncommand = "./plain"\ncwd = "bin"\n'
    )
    expected = {
        "gone": f"command './bin/server' ({ws / 'bin' / 'server'}) does not exist",
        "plain": f"command 'bin/plain' ({ws / 'bin' / 'plain'}) is not executable",
        "folder": f"command './bin' ({ws / 'bin'}) is a directory",
        "there": f"command './plain' ({ws / 'bin' / 'plain'}) is not executable",
    }

    for name, problem in expected.items():
        result = lathe("mcp", "test", name, "-C", str(ws), tmp_path=tmp_path)

        assert result.returncode == 1
        assert result.stdout == f"{name}: failed: MCP server {name} cannot start: {problem}\n"


def test_what_test_and_list_print_of_a_failing_server_keeps_its_url_secret(tmp_path):
    # The 404's URL was printed whole, the token in its query string with it.
    token = "tok_Q9w8e7r6t5y4u3i2o1p0LKJHGFDSA"
    port_file = tmp_path / "port"
    server = subprocess.Popen(
        [sys.executable, FAKE_SERVER, "--transport", "streamable-http", "--port-file",
         str(port_file)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not port_file.exists():
            assert server.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        (tmp_path / "config.toml").write_text(
            "[mcp.servers.web]\n"
            f'url = "http://127.0.0.1:{port_file.read_text()}/wrongpath?token=${{TOK}}"\n'
        )
        ws = tmp_path / "ws"
        ws.mkdir()

        for command in ("test", "list"):
            args = ("mcp", command, *(["web"] if command == "test" else []), "-C", str(ws))
            result = lathe(*args, tmp_path=tmp_path, env={"TOK": token})

            said = result.stdout + result.stderr
            assert "404 Not Found" in said, said
            assert token not in said and token[:6] not in said, said
    finally:
        server.terminate()
        server.wait(10)


def test_list_says_why_the_only_declared_server_was_left_out(tmp_path):
    """A .mcp.json whose one server stores its key in the URL: `mcp list` said only "no
    MCP servers", hiding the notice that names the file and the fix."""
    key = "sk-proj-Zx81mQ0aLr7TnW3vYc5uHk2ePd9s"
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".mcp.json").write_text(
        json.dumps(
            {"mcpServers": {"r": {"type": "http", "url": f"https://x.example/m?token={key}"}}}
        )
    )

    result = lathe("mcp", "list", "-C", str(ws), tmp_path=tmp_path)

    assert "no MCP servers" in result.stdout
    assert "mcpServers.r.url" in result.stderr and "query parameter 'token'" in result.stderr
    assert key not in result.stdout + result.stderr
