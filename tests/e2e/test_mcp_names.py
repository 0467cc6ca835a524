"""End to end: two servers whose tools clean up to one lathe name (`a` + `_x` and `a_` +
`x` are both `mcp__a___x`) each keep a name of their own, through `lathe run` and
`lathe mcp list`, and the user is told. The servers are the SDK-built fake server
(tests/fakes/mcp_server.py) with one more tool, named on the command line."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.e2e.test_mcp import lathe, run, tool_results, user_config, workspace
from tests.fakes.openai_server import Call, Reply

FAKES = Path(__file__).resolve().parents[1] / "fakes"
# The fake server, plus a tool named argv[1] that answers with the server's label argv[2].
NAMED_TOOL = f"""
import sys
sys.path.insert(0, {str(FAKES)!r})
from mcp_server import build

server = build(None, 0)
label = sys.argv[2]
server.add_tool(lambda: f"answered by {{label}}", name=sys.argv[1])
server.run()
"""


def servers(tmp_path: Path) -> dict[str, dict]:
    script = tmp_path / "named_tool.py"
    script.write_text(NAMED_TOOL)
    return {
        "a": {"command": sys.executable, "args": [str(script), "_x", "a"]},
        "a_": {"command": sys.executable, "args": [str(script), "x", "a_"]},
    }


def test_tools_of_two_servers_that_map_to_one_name_are_both_callable(tmp_path, fake_openai):
    # Both were mcp__a___x: a_'s tool was never offered and a call reached a alone.
    ws = workspace(tmp_path)
    user_config(tmp_path, servers(tmp_path))
    offered: list[str] = []

    def respond(body: dict):
        if not offered:
            offered.extend(
                t["function"]["name"]
                for t in body["tools"]
                if t["function"]["name"].startswith("mcp__a___x")
            )
            return Reply(calls=[Call(name, {}, id=f"c{i}") for i, name in enumerate(offered)])
        return Reply("Done.")

    fake_openai.responder = respond

    result = run(fake_openai, tmp_path, ws)

    assert result.returncode == 0, result.stderr
    assert len(offered) == 2 and "mcp__a___x" in offered, offered
    answers = tool_results(fake_openai.chat_bodies()[-1])
    assert sorted(answers) == ["answered by a", "answered by a_"], answers
    assert answers[offered.index("mcp__a___x")] == "answered by a"  # the first declared
    [warning] = [line for line in result.stderr.splitlines() if "both have" in line]
    assert warning.startswith("lathe: ") and "a and a_" in warning, result.stderr


def test_list_shows_each_servers_tool_under_its_own_name(tmp_path):
    (tmp_path / "ws").mkdir()
    user_config(tmp_path, servers(tmp_path))

    result = lathe("mcp", "list", "-C", str(tmp_path / "ws"), tmp_path=tmp_path)

    assert result.returncode == 0, result.stderr
    names = [w for w in result.stdout.split() if w.startswith("mcp__a___x")]
    assert len(names) == 2 and len(set(names)) == 2, result.stdout
    [warning] = [line for line in result.stderr.splitlines() if "both have" in line]
    assert warning.startswith("lathe: ") and "a and a_" in warning, result.stderr
