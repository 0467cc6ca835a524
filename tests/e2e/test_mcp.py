"""End to end: MCP servers written with the SDK (tests/fakes/mcp_server.py), run by
`python -m lathe run` over stdio and streamable HTTP, their tools called by the scripted
fake model; the assertions read what the fake model and the MCP server received."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from tests.fakes.openai_server import Call, Reply
from tests.fakes.user_config import user_config_file

FAKE_SERVER = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py")


def lathe(*args: str, tmp_path: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update(
        OPENAI_API_KEY="sk-test",
        LATHE_HOME=str(tmp_path / "home"),
        LATHE_CONFIG=user_config_file(tmp_path / "config.toml"),
    )
    return subprocess.run(
        [sys.executable, "-m", "lathe", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run(server, tmp_path: Path, ws: Path, *args: str) -> subprocess.CompletedProcess:
    return lathe(
        "run", "--model", "m", "--base-url", server.base_url, "-C", str(ws), *args,
        "use the tools", tmp_path=tmp_path,
    )  # fmt: skip


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


def stdio_server(tmp_path: Path, *extra: str, **settings) -> dict:
    return {
        "command": sys.executable,
        "args": [
            FAKE_SERVER, "--pid-file", str(tmp_path / "server.pid"),
            "--calls", str(tmp_path / "calls.jsonl"), *extra,
        ],
        **settings,
    }  # fmt: skip


def user_config(tmp_path: Path, servers: dict[str, dict]) -> None:
    lines = []
    for name, server in servers.items():
        lines.append(f"[mcp.servers.{name}]")
        lines += [f"{key} = {toml_value(value)}" for key, value in server.items()]
    (tmp_path / "config.toml").write_text("\n".join(lines) + "\n")


def toml_value(value) -> str:
    if isinstance(value, dict):
        return (
            "{ " + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
        )
    return json.dumps(value)


def received(tmp_path: Path) -> list[dict]:
    calls = tmp_path / "calls.jsonl"
    return [json.loads(line) for line in calls.read_text().splitlines()] if calls.exists() else []


def tool_results(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def tool_names(body: dict) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools", [])]


def assert_server_gone(tmp_path: Path) -> None:
    pid = int((tmp_path / "server.pid").read_text())
    deadline = time.monotonic() + 1
    while psutil.pid_exists(pid) and time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.05)
    alive = psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    assert not alive, f"the MCP server (pid {pid}) outlived lathe"


def test_a_stdio_server_tool_is_called_end_to_end(tmp_path, fake_openai):
    ws = workspace(tmp_path)
    user_config(tmp_path, {"srv": stdio_server(tmp_path)})
    fake_openai.enqueue(
        Reply(calls=[Call("mcp__srv__echo", {"text": "hello"})]),
        Reply(calls=[Call("mcp__srv__picture", {})]),
        Reply("The server said hello."),
    )

    result = run(fake_openai, tmp_path, ws)

    assert result.returncode == 0, result.stderr
    bodies = fake_openai.chat_bodies()
    first = {t["function"]["name"]: t["function"] for t in bodies[0]["tools"]}
    assert first["mcp__srv__echo"]["parameters"]["properties"]["text"]["type"] == "string"
    assert "mcp_resource" in first and "tool_search" not in first
    assert tool_results(bodies[1]) == ["echo: hello"]
    image_line = tool_results(bodies[2])[1]
    assert "image/png" in image_line and "saved to" in image_line
    saved = Path(image_line.split("saved to ")[1].rstrip("]"))
    assert saved.read_bytes().startswith(b"\x89PNG")
    assert received(tmp_path)[0] == {"name": "echo", "arguments": {"text": "hello"}}
    assert_server_gone(tmp_path)


def test_a_crash_mid_call_is_an_error_result_and_the_next_call_restarts_it(tmp_path, fake_openai):
    ws = workspace(tmp_path)
    user_config(tmp_path, {"srv": stdio_server(tmp_path)})
    fake_openai.enqueue(
        Reply(calls=[Call("mcp__srv__crash", {})]),
        Reply(calls=[Call("mcp__srv__echo", {"text": "again"})]),
        Reply("Recovered."),
    )

    result = run(fake_openai, tmp_path, ws)

    assert result.returncode == 0, result.stderr
    bodies = fake_openai.chat_bodies()
    crashed = tool_results(bodies[1])[0]
    assert "MCP server srv" in crashed and "crash" in crashed
    assert "next call starts it again" in crashed
    assert tool_results(bodies[2])[1] == "echo: again"
    assert [c["name"] for c in received(tmp_path)] == ["crash", "echo"]
    assert_server_gone(tmp_path)


def test_a_server_error_of_code_32000_is_its_answer_not_a_crash(tmp_path, fake_openai):
    # -32000 is also the code the SDK gives a lost connection: lathe took the server's
    # own error for a crash, lost its message and restarted a healthy server each time.
    ws = workspace(tmp_path)
    user_config(tmp_path, {"srv": stdio_server(tmp_path)})
    fake_openai.enqueue(
        Reply(calls=[Call("mcp__srv__refuse", {"why": "no such table"})]),
        Reply(calls=[Call("mcp__srv__echo", {"text": "still here"})]),
        Reply("Done."),
    )

    result = run(fake_openai, tmp_path, ws)

    assert result.returncode == 0, result.stderr
    bodies = fake_openai.chat_bodies()
    refused = tool_results(bodies[1])[0]
    assert "refused on purpose: no such table" in refused and "crashed" not in refused
    assert tool_results(bodies[2])[1] == "echo: still here"


def test_a_tool_error_and_bad_arguments_reach_the_model(tmp_path, fake_openai):
    ws = workspace(tmp_path)
    user_config(tmp_path, {"srv": stdio_server(tmp_path)})
    fake_openai.enqueue(
        Reply(
            calls=[Call("mcp__srv__fail", {"why": "testing"}), Call("mcp__srv__add", {"a": "x"})]
        ),
        Reply("Both failed."),
    )

    result = run(fake_openai, tmp_path, ws)

    assert result.returncode == 0, result.stderr
    failed, invalid = tool_results(fake_openai.chat_bodies()[1])
    assert "Error from MCP server srv" in failed and "failed on purpose: testing" in failed
    assert "invalid arguments for mcp__srv__add" in invalid
    assert '"required": ["a", "b"]' in invalid  # the schema comes with the error
    assert [c["name"] for c in received(tmp_path)] == ["fail"]  # add never reached it


def test_a_server_that_never_answers_the_handshake_gives_an_error_result(tmp_path, fake_openai):
    ws = workspace(tmp_path)
    hang = tmp_path / "hang"
    user_config(tmp_path, {"srv": stdio_server(tmp_path, "--hang-if", str(hang))})
    fake_openai.enqueue(Reply("Listed."))
    assert run(fake_openai, tmp_path, ws).returncode == 0  # lists and caches its tools
    hang.touch()
    user_config(
        tmp_path, {"srv": stdio_server(tmp_path, "--hang-if", str(hang), startup_timeout_s=2)}
    )
    fake_openai.enqueue(
        Reply(calls=[Call("mcp__srv__echo", {"text": "hi"})]),
        Reply("The server is down; carrying on."),
    )

    result = run(fake_openai, tmp_path, ws, "--json")

    assert result.returncode == 0, result.stderr
    answer = tool_results(fake_openai.chat_bodies()[-1])[0]
    assert "MCP server srv did not start and answer the handshake within 2 s" in answer
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert "carrying on" in "".join(e["text"] for e in events if e["type"] == "text_delta")
    # The call costs its startup timeout and the hung server's stop, not a graceful
    # close the handshake never reaches (that took 12.5 s here).
    [call] = [e for e in events if e["type"] == "tool_finished"]
    assert call["duration_ms"] < 10_000
    assert_server_gone(tmp_path)


def test_a_secret_a_server_takes_from_the_environment_is_masked_in_what_it_echoes(
    tmp_path, fake_openai, monkeypatch
):
    """The variable's name does not look like a secret; the config's ${VAR} says it is."""
    secret = "zq7f3k9x2m4w8v1p6r5t"
    monkeypatch.setenv("DOCS_SERVICE_CODE", secret)
    ws = workspace(tmp_path)
    server = stdio_server(tmp_path, env={"SERVICE_AUTH": "${DOCS_SERVICE_CODE}"})
    user_config(tmp_path, {"srv": server})
    fake_openai.enqueue(
        Reply(calls=[Call("mcp__srv__getenv", {"name": "SERVICE_AUTH"})]), Reply("Seen.")
    )

    result = run(fake_openai, tmp_path, ws, "--json")

    assert result.returncode == 0, result.stderr
    assert received(tmp_path) == [{"name": "getenv", "arguments": {"name": "SERVICE_AUTH"}}]
    [answer] = tool_results(fake_openai.chat_bodies()[-1])
    assert secret not in answer and "…" in answer  # masked, not dropped
    assert secret not in result.stdout + result.stderr
    home = tmp_path / "home"
    written = [p for p in home.rglob("*") if p.is_file()]
    assert not [p for p in written if secret in p.read_text(errors="replace")]


def test_garbage_on_stdout_does_not_break_the_server(tmp_path, fake_openai):
    ws = workspace(tmp_path)
    user_config(tmp_path, {"srv": stdio_server(tmp_path, "--garbage")})
    fake_openai.enqueue(Reply(calls=[Call("mcp__srv__add", {"a": 2, "b": 3})]), Reply("5."))

    result = run(fake_openai, tmp_path, ws)

    assert result.returncode == 0, result.stderr
    assert tool_results(fake_openai.chat_bodies()[1]) == ["5"]


def test_deny_rules_hold_for_mcp_tools(tmp_path, fake_openai):
    ws = workspace(tmp_path)
    user_config(tmp_path, {"srv": stdio_server(tmp_path)})
    fake_openai.enqueue(
        Reply(calls=[Call("mcp__srv__echo", {"text": "no"})]),
        # A rule over the server's tools covers its resources too, in read-only mode too.
        Reply(calls=[Call("mcp_resource", {"server": "srv", "uri": "note://hello"})]),
        Reply("Denied."),
    )

    result = run(fake_openai, tmp_path, ws, "--deny", "mcp__srv__*", "--approval", "read-only")

    assert result.returncode == 0, result.stderr
    bodies = fake_openai.chat_bodies()
    for refused in (tool_results(bodies[1])[0], tool_results(bodies[2])[-1]):
        assert "mcp__srv__*" in refused
    assert "hello" not in tool_results(bodies[2])[-1]
    assert received(tmp_path) == []


def test_two_hundred_tools_are_deferred_and_still_callable(tmp_path, fake_openai):
    ws = workspace(tmp_path)
    user_config(tmp_path, {"many": stdio_server(tmp_path, "--many", "200")})
    fake_openai.enqueue(
        Reply(calls=[Call("tool_search", {"query": "records of kind 7"})]),
        Reply(calls=[Call("mcp__many__tool_7", {"query": "owners", "limit": 2})]),
        Reply(calls=[Call("mcp__many__tool_9", {"limit": "many"})]),
        Reply("Found them."),
    )
    # A 128k window: the listing (22 KB) fits the tenth MCP schemas may take, so each tool
    # comes with its first sentence (the 32k assumed for an unknown model: names only).
    window = ["-c", "models.m.provider=openai", "-c", "models.m.context_window=128000"]

    result = run(fake_openai, tmp_path, ws, *window)

    assert result.returncode == 0, result.stderr
    bodies = fake_openai.chat_bodies()
    names = tool_names(bodies[0])
    assert "tool_search" in names and not [n for n in names if n.startswith("mcp__many__")]
    search = next(t for t in bodies[0]["tools"] if t["function"]["name"] == "tool_search")
    assert "mcp__many__tool_199: Look up records of kind 199" in search["function"]["description"]
    found = json.loads(tool_results(bodies[1])[0])
    assert found[0]["name"] == "mcp__many__tool_7"
    assert found[0]["parameters"]["properties"]["query"]["type"] == "string"
    assert tool_results(bodies[2])[1] == "tool_7 answered 'owners' (limit 2)"
    mismatch = tool_results(bodies[3])[2]
    assert "invalid arguments for mcp__many__tool_9" in mismatch and '"query"' in mismatch
    assert [c["name"] for c in received(tmp_path)] == ["tool_7"]


def test_an_untrusted_mcp_json_is_not_started_until_trusted(tmp_path, fake_openai):
    ws = workspace(tmp_path)
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": stdio_server(tmp_path)}}))
    fake_openai.enqueue(Reply("No MCP tools here."))

    untrusted = run(fake_openai, tmp_path, ws)

    assert untrusted.returncode == 0, untrusted.stderr
    assert "MCP server proj from" in untrusted.stderr and "--trust-project-mcp" in untrusted.stderr
    assert not [n for n in tool_names(fake_openai.chat_bodies()[0]) if n.startswith("mcp")]
    assert not (tmp_path / "server.pid").exists()

    fake_openai.enqueue(Reply(calls=[Call("mcp__proj__echo", {"text": "ok"})]), Reply("Done."))
    trusted = run(fake_openai, tmp_path, ws, "--trust-project-mcp")
    assert trusted.returncode == 0, trusted.stderr
    assert tool_results(fake_openai.chat_bodies()[-1]) == ["echo: ok"]

    fake_openai.enqueue(Reply(calls=[Call("mcp__proj__echo", {"text": "again"})]), Reply("."))
    remembered = run(fake_openai, tmp_path, ws)
    assert tool_results(fake_openai.chat_bodies()[-1]) == ["echo: again"], remembered.stderr
    assert_server_gone(tmp_path)


@pytest.fixture(params=["streamable-http", "sse"])
def http_server(tmp_path, request):
    """A server on 127.0.0.1 over streamable HTTP, or the legacy SSE transport (which
    lathe reaches by falling back from streamable HTTP: the config says "auto"). It
    binds a port of the system's choosing and writes it down: a port found free here
    and bound later by the server can be taken meanwhile by another test's listener."""
    port_file = tmp_path / "mcp-port"
    process = subprocess.Popen(
        [sys.executable, FAKE_SERVER, "--transport", request.param,
         "--port-file", str(port_file), "--calls", str(tmp_path / "calls.jsonl")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not port_file.exists():
        assert process.poll() is None, "the fake MCP server exited before listening"
        assert time.monotonic() < deadline, "the fake MCP server did not listen within 60 s"
        time.sleep(0.05)
    port = int(port_file.read_text())
    yield f"http://127.0.0.1:{port}/{'mcp' if request.param == 'streamable-http' else 'sse'}"
    process.terminate()
    process.wait(10)


def test_a_streamable_http_server_tool_is_called_end_to_end(tmp_path, fake_openai, http_server):
    ws = workspace(tmp_path)
    user_config(tmp_path, {"web": {"url": http_server, "headers": {"X-Team": "${TEAM}"}}})
    fake_openai.enqueue(
        Reply(calls=[Call("mcp__web__add", {"a": 40, "b": 2})]),
        Reply(calls=[Call("mcp_resource", {"server": "web", "uri": "note://hello"})]),
        Reply("42."),
    )
    os.environ["TEAM"] = "core"
    try:
        result = run(fake_openai, tmp_path, ws)
    finally:
        del os.environ["TEAM"]

    assert result.returncode == 0, result.stderr
    bodies = fake_openai.chat_bodies()
    assert tool_results(bodies[1]) == ["42"]
    assert tool_results(bodies[2])[1] == "hello from the note resource"
    assert received(tmp_path) == [{"name": "add", "arguments": {"a": 40, "b": 2}}]


def test_ctrl_c_during_a_call_leaves_no_server_behind(tmp_path, fake_openai):
    ws = workspace(tmp_path)
    user_config(tmp_path, {"srv": stdio_server(tmp_path)})
    fake_openai.enqueue(Reply(calls=[Call("mcp__srv__slow", {"seconds": 60})]), Reply("."))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env |= {
        "OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home"),
        "LATHE_CONFIG": user_config_file(tmp_path / "config.toml"),
    }  # fmt: skip
    lathe_run = subprocess.Popen(
        [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url",
         fake_openai.base_url, "-C", str(ws), "wait for it"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not received(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert received(tmp_path) == [{"name": "slow", "arguments": {"seconds": 60}}]

    lathe_run.send_signal(signal.SIGINT)
    _, stderr = lathe_run.communicate(timeout=30)

    assert lathe_run.returncode == 130, stderr
    assert_server_gone(tmp_path)


@pytest.mark.waits
def test_a_call_past_its_timeout_is_an_error_result_and_the_server_restarts(tmp_path, fake_openai):
    ws = workspace(tmp_path)
    user_config(tmp_path, {"srv": stdio_server(tmp_path, tool_timeout_s=2)})
    fake_openai.enqueue(
        Reply(calls=[Call("mcp__srv__slow", {"seconds": 30})]),
        Reply(calls=[Call("mcp__srv__echo", {"text": "after"})]),
        Reply("Went on."),
    )

    result = run(fake_openai, tmp_path, ws)

    assert result.returncode == 0, result.stderr
    bodies = fake_openai.chat_bodies()
    timed_out = tool_results(bodies[1])[0]
    assert "MCP server srv did not answer within 2 s while running slow" in timed_out
    assert tool_results(bodies[2])[1] == "echo: after"


def test_only_tools_the_server_marks_read_only_run_in_read_only_mode(tmp_path, fake_openai):
    ws = workspace(tmp_path)
    user_config(tmp_path, {"srv": stdio_server(tmp_path)})
    fake_openai.enqueue(
        Reply(
            calls=[Call("mcp__srv__add", {"a": 1, "b": 1}), Call("mcp__srv__echo", {"text": "x"})]
        ),
        Reply("One ran."),
    )

    result = run(fake_openai, tmp_path, ws, "--approval", "read-only")

    assert result.returncode == 0, result.stderr
    added, echoed = tool_results(fake_openai.chat_bodies()[1])
    assert added == "2"
    assert "read-only" in echoed and "echo:" not in echoed
    assert [c["name"] for c in received(tmp_path)] == ["add"]


def test_what_a_server_prints_or_returns_reaches_the_terminal_without_escapes_or_tracebacks(
    tmp_path, fake_openai
):
    # Lines on a server's stdout that were not JSON-RPC printed a traceback each on
    # lathe's stderr (a token the server printed, in clear), and a result's escape
    # sequences (OSC 52 writes the clipboard) went raw into the progress line.
    ws = workspace(tmp_path)
    user_config(tmp_path, {"srv": stdio_server(tmp_path, "--garbage")})
    sneaky = "\x1b]52;c;aGk=\x07\x1b[2J hi"
    fake_openai.enqueue(Reply(calls=[Call("mcp__srv__echo", {"text": sneaky})]), Reply("Ok."))

    result = run(fake_openai, tmp_path, ws)

    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr
    assert "Traceback" not in result.stderr and "not json" not in result.stderr
    assert "echo: \\x1b]52;c;aGk=\\x07\\x1b[2J hi" in result.stderr  # shown, not acted on
    log = (tmp_path / "home" / "logs" / "mcp-srv.log").read_text()
    assert "Failed to parse JSONRPC message" in log and "Traceback" not in log


def test_the_script_a_trusted_server_runs_cannot_be_changed_without_approval(tmp_path, fake_openai):
    # The model edited the project server's own script (an ordinary file then), and its
    # next call started the edited script on the host, outside the sandbox.
    ws = workspace(tmp_path)
    (ws / "tools").mkdir()
    (ws / "tools" / "server.py").write_text(Path(FAKE_SERVER).read_text())
    server = {"command": sys.executable, "args": ["tools/server.py"]}
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": server}}))
    fake_openai.enqueue(Reply("Hi."))
    assert run(fake_openai, tmp_path, ws, "--trust-project-mcp").returncode == 0

    planted = "import pathlib; pathlib.Path('PLANTED').write_text('x')\n"
    first = Path(FAKE_SERVER).read_text().splitlines()[0]
    fake_openai.enqueue(
        Reply(calls=[Call("edit", {"path": "tools/server.py", "old_string": first,
                                   "new_string": planted + first})]),
        Reply(calls=[Call("bash", {"command": "echo '# changed' >> tools/server.py"})]),
        Reply("Done."),
    )  # fmt: skip
    result = run(fake_openai, tmp_path, ws, "--json")

    assert result.returncode == 0, result.stderr
    finished = [
        e for e in map(json.loads, result.stdout.splitlines()) if e["type"] == "tool_finished"
    ]
    edit, bash = finished
    assert edit["is_error"] and "tools/server.py is a protected path" in edit["output"], edit
    assert bash["details"]["exit_code"] != 0, bash  # the sandbox shows the file read-only
    assert (ws / "tools" / "server.py").read_text() == Path(FAKE_SERVER).read_text()


def test_what_a_server_started_stops_with_lathe(tmp_path, fake_openai):
    # A server that exits when its stdin closes left its own helper (node under npx, a
    # browser) running after a normal `lathe run`: only a server that lingered had its
    # tree killed.
    ws = workspace(tmp_path)
    helper_file = tmp_path / "helper.pid"
    user_config(tmp_path, {"srv": stdio_server(tmp_path, "--helper-pid-file", str(helper_file))})
    fake_openai.enqueue(Reply(calls=[Call("mcp__srv__echo", {"text": "hi"})]), Reply("Done."))

    result = run(fake_openai, tmp_path, ws)

    assert result.returncode == 0, result.stderr
    helper = int(helper_file.read_text())
    deadline = time.monotonic() + 5
    while psutil.pid_exists(helper) and time.monotonic() < deadline:
        if psutil.Process(helper).status() == psutil.STATUS_ZOMBIE:
            break
        time.sleep(0.05)
    alive = psutil.pid_exists(helper) and psutil.Process(helper).status() != psutil.STATUS_ZOMBIE
    if alive:
        os.kill(helper, signal.SIGKILL)
    assert not alive, "the server's helper outlived lathe"
    assert_server_gone(tmp_path)


def test_a_server_command_path_that_cannot_run_says_why_in_the_runs_warning(tmp_path, fake_openai):
    # "failed to start: MCPError: Connection closed; what it printed is in ..."
    ws = workspace(tmp_path)
    user_config(tmp_path, {"abs": {"command": str(tmp_path / "no" / "server")}})
    fake_openai.enqueue(Reply("No tools."))

    result = run(fake_openai, tmp_path, ws)

    assert result.returncode == 0, result.stderr
    said = [line for line in result.stderr.splitlines() if "MCP server abs" in line]
    assert len(said) == 1, result.stderr
    assert f"{tmp_path / 'no' / 'server'}' does not exist" in said[0]
    assert "Connection closed" not in said[0]
