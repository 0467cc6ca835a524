"""End to end: a call naming no tool, in a run whose MCP tools are deferred behind
`tool_search`, is answered with the tools the model was shown and the names nearest the
one it wrote, not with every deferred tool's name."""

from __future__ import annotations

from tests.e2e.test_mcp import run, stdio_server, tool_results, user_config, workspace
from tests.fakes.openai_server import Call, Reply


def test_a_mistyped_name_gets_the_shown_tools_and_the_nearest_names(tmp_path, fake_openai):
    # "there is no tool named ... Tools: read, edit, ..." listed every deferred tool,
    # ~26 KB a mistake with 3,000 of them: more than the whole first request.
    ws = workspace(tmp_path)
    user_config(tmp_path, {"many": stdio_server(tmp_path, "--many", "300")})
    fake_openai.enqueue(
        Reply(calls=[Call("mcp__many__tol_299", {}), Call("raed", {"path": "a.txt"})]),
        Reply("Sorry."),
    )

    result = run(fake_openai, tmp_path, ws, "-c", "models.m.provider=openai",
                 "-c", "models.m.context_window=10000")  # fmt: skip

    assert result.returncode == 0, result.stderr
    bodies = fake_openai.chat_bodies()
    shown = [t["function"]["name"] for t in bodies[0]["tools"]]
    assert "tool_search" in shown and "mcp__many__tool_299" not in shown
    mistyped, other = tool_results(bodies[1])
    assert mistyped.startswith("Error: there is no tool named 'mcp__many__tol_299'"), mistyped
    assert "Did you mean mcp__many__tool_299" in mistyped, mistyped
    assert "tool_search" in mistyped and "read" in mistyped
    assert "mcp__many__tool_100" not in mistyped and len(mistyped) < 1_000, mistyped
    assert "Did you mean read?" in other and len(other) < 1_000, other
