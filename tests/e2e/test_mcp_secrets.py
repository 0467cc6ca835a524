"""End to end: which values an MCP server's settings take from the environment are
masked in what the model reads, and how `${VAR}` references expand for the server
(`python -m lathe run` with the scripted fake model and the SDK-built fake server)."""

from __future__ import annotations

import json

from tests.e2e.test_mcp import (
    received,
    run,
    stdio_server,
    tool_results,
    user_config,
    workspace,
)
from tests.fakes.openai_server import Call, Reply


def test_only_secrets_of_started_servers_are_masked_not_every_value_they_take(
    tmp_path, fake_openai, monkeypatch
):
    # `"NODE_ENV": "${NODE_ENV}"` of a .mcp.json server nobody trusted made every
    # "development" in the code read `…`, and the model's edit of it failed for ever.
    secret = "zq7f3k9x2m4w8v1p6r5t"
    monkeypatch.setenv("NODE_ENV", "development")
    monkeypatch.setenv("DOCS_SERVICE_CODE", secret)
    ws = workspace(tmp_path)
    (ws / "config.js").write_text('export const debug = process.env.NODE_ENV === "development";\n')
    docs = {"command": "npx", "args": ["-y", "x"], "env": {"NODE_ENV": "${NODE_ENV}"}}
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"docs": docs}}))
    mine = stdio_server(
        tmp_path, env={"NODE_ENV": "${NODE_ENV}", "SERVICE_AUTH": "${DOCS_SERVICE_CODE}"}
    )
    user_config(tmp_path, {"srv": mine})
    edit = {"path": "config.js", "old_string": '"development"', "new_string": '"dev"'}
    fake_openai.enqueue(
        Reply(calls=[Call("read", {"path": "config.js"})]),
        Reply(calls=[Call("edit", edit)]),
        Reply(calls=[Call("mcp__srv__getenv", {"name": "SERVICE_AUTH"})]),
        Reply(calls=[Call("mcp__srv__getenv", {"name": "NODE_ENV"})]),
        Reply("Done."),
    )

    result = run(fake_openai, tmp_path, ws)

    assert result.returncode == 0, result.stderr
    bodies = fake_openai.chat_bodies()
    assert '=== "development"' in tool_results(bodies[1])[0]
    assert (ws / "config.js").read_text().endswith('=== "dev";\n'), tool_results(bodies[2])
    assert [c["name"] for c in received(tmp_path)] == ["getenv", "getenv"]
    # A started server's secret is still masked, the same server's NODE_ENV not.
    masked = tool_results(bodies[3])[-1]
    assert secret not in masked and "…" in masked
    assert tool_results(bodies[4])[-1] == "development"


def test_a_reference_with_a_default_expands_to_it_when_the_variable_is_unset(
    tmp_path, fake_openai, monkeypatch
):
    # `"MODE": "${MODE:-prod}"`, Claude Code's syntax, reached the server as it was written.
    monkeypatch.delenv("MODE", raising=False)
    monkeypatch.setenv("LEVEL", "debug")
    monkeypatch.setenv("EMPTY", "")
    ws = workspace(tmp_path)
    settings = {"MODE": "${MODE:-prod}", "LEVEL": "${LEVEL:-info}", "SHOWN": "${EMPTY:-fallback}"}
    server = stdio_server(tmp_path, env=settings)
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": server}}))
    fake_openai.enqueue(
        Reply(calls=[Call("mcp__proj__getenv", {"name": name}) for name in settings]),
        Reply("Done."),
    )

    result = run(fake_openai, tmp_path, ws, "--trust-project-mcp")

    assert result.returncode == 0, result.stderr
    assert tool_results(fake_openai.chat_bodies()[-1]) == ["prod", "debug", "fallback"]


def test_settings_of_mcp_servers_are_hidden_from_commands_only_when_secret(
    tmp_path, fake_openai, monkeypatch
):
    # An untrusted .mcp.json naming `${HOME}` and `${NODE_ENV}` emptied both for every
    # command the model ran: builds and tests that read them broke.
    secret = "zq7f3k9x2m4w8v1p6r5t"
    monkeypatch.setenv("NODE_ENV", "development")
    monkeypatch.setenv("DOCS_SERVICE_CODE", secret)
    ws = workspace(tmp_path)
    docs = {"command": "npx", "args": ["${HOME}"], "env": {"NODE_ENV": "${NODE_ENV}"}}
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"docs": docs}}))
    mine = stdio_server(
        tmp_path, env={"NODE_ENV": "${NODE_ENV}", "SERVICE_AUTH": "${DOCS_SERVICE_CODE}"}
    )
    user_config(tmp_path, {"srv": mine})
    probe = 'echo "node=$NODE_ENV home=${HOME:+set} code=${DOCS_SERVICE_CODE:-hidden}"'
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": probe})]), Reply("Done."))

    result = run(fake_openai, tmp_path, ws, "--approval", "full")

    assert result.returncode == 0, result.stderr
    said = tool_results(fake_openai.chat_bodies()[-1])[-1]
    assert "node=development home=set code=hidden" in said, said


def test_a_secret_an_argument_or_a_bearer_header_takes_is_kept_from_commands_and_masked(
    tmp_path, fake_openai, monkeypatch
):
    # `--token ${GH_ARG_4}` (what `lathe mcp import` writes for an argument's secret)
    # reached every command, and a "Bearer <token>" value was never masked: it holds a
    # space, so it was taken for a phrase.
    token = "ghp_" + "k3" * 18
    monkeypatch.setenv("GH_ARG_4", "hunter2pw")
    monkeypatch.setenv("GH_AUTH", f"Bearer {token}")
    ws = workspace(tmp_path)
    mine = stdio_server(tmp_path, "--token", "${GH_ARG_4}", env={"AUTH_HEADER": "${GH_AUTH}"})
    user_config(tmp_path, {"srv": mine})
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": 'echo "arg=${GH_ARG_4:-hidden}"'})]),
        Reply(calls=[Call("mcp__srv__getenv", {"name": "AUTH_HEADER"})]),
        Reply("Done."),
    )

    result = run(fake_openai, tmp_path, ws, "--approval", "full")

    assert result.returncode == 0, result.stderr
    said = tool_results(fake_openai.chat_bodies()[1])[-1]
    assert "arg=hidden" in said, said
    echoed = tool_results(fake_openai.chat_bodies()[2])[-1]
    assert token not in echoed and "Bearer" in echoed, echoed
