"""End to end: permission rules naming MCP tools are judged once the run knows the
servers' tools, through `python -m lathe run` with the SDK-built fake server
(tests/fakes/mcp_server.py, whose tools include `echo`) and the scripted fake model. A
misspelt deny had let the model's call run, with no word said."""

from __future__ import annotations

import sys

import pytest
from tests.e2e.test_mcp import received, run, stdio_server, tool_results, user_config, workspace
from tests.fakes.openai_server import Call, Reply


@pytest.mark.parametrize(
    ("rule", "meant"),
    [
        ("mcp__FK__echo", "'mcp__fk__echo'"),  # the server's name in the wrong case
        ("mcp__fk__ECHO", "'mcp__fk__echo'"),
        ("mcp__fk__ech", "'mcp__fk__echo'"),  # a near miss of a tool the server has
        ("mcp__fk", "'mcp__fk__*'"),  # the server alone: every tool of it
        ("mcp__fk__echo(*)", "write 'mcp__fk__echo'"),  # a pattern, which nothing matches
    ],
)
def test_a_deny_rule_that_misses_an_mcp_tool_stops_the_run(tmp_path, fake_openai, rule, meant):
    ws = workspace(tmp_path)
    user_config(tmp_path, {"fk": stdio_server(tmp_path)})
    fake_openai.enqueue(Reply(calls=[Call("mcp__fk__echo", {"text": "ran"})]), Reply("Done."))

    result = run(fake_openai, tmp_path, ws, "--deny", rule)

    assert result.returncode == 2, result.stdout + result.stderr
    said = [line for line in result.stderr.splitlines() if rule in line]
    assert len(said) == 1 and meant in said[0], result.stderr
    assert received(tmp_path) == [] and fake_openai.chat_bodies() == []


def test_a_pattern_on_an_mcp_tool_in_a_config_file_is_refused_naming_the_file(
    tmp_path, fake_openai
):
    ws = workspace(tmp_path)
    user_config(tmp_path, {"fk": stdio_server(tmp_path)})
    config = tmp_path / "config.toml"
    config.write_text('[permissions]\ndeny = ["mcp__fk__*(secret*)"]\n' + config.read_text())

    result = run(fake_openai, tmp_path, ws)

    assert result.returncode == 2
    assert "permissions.deny[0]" in result.stderr and "'mcp__fk__*'" in result.stderr
    assert fake_openai.chat_bodies() == []


@pytest.mark.parametrize(
    "rule",
    [
        "mcp__fk__delete_everything",  # a tool the configured server lacks
        "mcp__gh__echo",  # a server that is not configured at all
    ],
)
def test_a_rule_naming_an_mcp_tool_the_run_lacks_is_a_warning(tmp_path, fake_openai, rule):
    ws = workspace(tmp_path)
    user_config(tmp_path, {"fk": stdio_server(tmp_path)})
    fake_openai.enqueue(Reply(calls=[Call("mcp__fk__echo", {"text": "ran"})]), Reply("Done."))

    result = run(fake_openai, tmp_path, ws, "--deny", rule)

    assert result.returncode == 0, result.stderr
    warned = [line for line in result.stderr.splitlines() if rule in line]
    assert len(warned) == 1 and "matches nothing" in warned[0], result.stderr
    assert tool_results(fake_openai.chat_bodies()[1]) == ["echo: ran"]


def test_rules_naming_a_server_that_failed_to_start_are_no_error(tmp_path, fake_openai):
    # Its tools are not known, so no rule naming one can be judged a near miss.
    ws = workspace(tmp_path)
    user_config(
        tmp_path, {"fk": {"command": sys.executable, "args": ["-c", "raise SystemExit(1)"]}}
    )
    fake_openai.enqueue(Reply("No tools."))

    result = run(fake_openai, tmp_path, ws, "--deny", "mcp__fk__ech", "--deny", "mcp__fk__echo")

    assert result.returncode == 0, result.stderr
    assert "MCP server fk failed to start" in result.stderr
    assert "did you mean" not in result.stderr


def test_globs_and_exact_names_of_mcp_tools_still_hold(tmp_path, fake_openai):
    ws = workspace(tmp_path)
    user_config(tmp_path, {"fk": stdio_server(tmp_path, exclude_tools=["picture"])})
    fake_openai.enqueue(
        Reply(
            calls=[Call("mcp__fk__echo", {"text": "no"}), Call("mcp__fk__add", {"a": 1, "b": 2})]
        ),
        Reply("Denied."),
    )

    # mcp__fk__picture is a tool the server has, that its filter leaves out: no near miss.
    result = run(
        fake_openai, tmp_path, ws,
        "--deny", "mcp__fk__e*", "--deny", "mcp__fk__add", "--deny", "mcp__fk__picture",
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert "matches nothing" not in result.stderr and "did you mean" not in result.stderr
    refused = tool_results(fake_openai.chat_bodies()[1])
    assert "mcp__fk__e*" in refused[0] and "mcp__fk__add" in refused[1]
    assert received(tmp_path) == []


def test_a_near_miss_against_a_cached_tool_list_is_a_warning(tmp_path, fake_openai):
    # The tools a server offered last time come from a cache; a newer release may have
    # the tool a rule names. Refused, the run never started the server, so the cache
    # was never refreshed and every run was refused for good.
    ws = workspace(tmp_path)
    user_config(tmp_path, {"fk": stdio_server(tmp_path)})
    fake_openai.enqueue(Reply("Listed."))
    assert run(fake_openai, tmp_path, ws).returncode == 0  # the list is cached now
    [cache] = (tmp_path / "home" / "mcp-tools").glob("fk-*.json")
    cache.write_text(cache.read_text().replace('"echo"', '"echo_v1"'))
    fake_openai.enqueue(Reply("Done."))

    result = run(fake_openai, tmp_path, ws, "--deny", "mcp__fk__echo")

    assert result.returncode == 0, result.stderr
    warned = [line for line in result.stderr.splitlines() if "mcp__fk__echo" in line]
    assert len(warned) == 1 and "as last listed" in warned[0], result.stderr
