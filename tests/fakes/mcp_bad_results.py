"""An MCP server over stdio, written without the SDK (whose server never sends a
malformed result), whose tool calls answer results the protocol does not allow.

    python tests/fakes/mcp_bad_results.py STARTS_FILE

Each start appends the process id to STARTS_FILE, so a test counts the starts. Tools:
`nullresult` answers `"result": null`; `weirdcontent` answers content parts of an
unknown type and a text part whose text is a number; `echo(text)` answers `echo: TEXT`.
"""

import json
import os
import sys

TOOLS = [
    {"name": name, "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}
    for name in ("nullresult", "weirdcontent", "echo")
]


def main() -> None:
    with open(sys.argv[1], "a", encoding="utf-8") as starts:
        starts.write(f"{os.getpid()}\n")
    for line in sys.stdin:
        request = json.loads(line)
        method, message_id = request.get("method"), request.get("id")
        params = request.get("params") or {}
        if message_id is None:
            continue  # a notification
        answer = {"jsonrpc": "2.0", "id": message_id}
        if method == "initialize":
            answer["result"] = {
                "protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "bad", "version": "1"},
            }  # fmt: skip
        elif method == "tools/list":
            answer["result"] = {"tools": TOOLS}
        elif method == "tools/call" and params["name"] == "nullresult":
            answer["result"] = None
        elif method == "tools/call" and params["name"] == "weirdcontent":
            parts = [{"type": "hologram", "data": "x"}, {"type": "text", "text": 123}]
            answer["result"] = {"content": parts}
        elif method == "tools/call":
            text = (params.get("arguments") or {}).get("text")
            answer["result"] = {"content": [{"type": "text", "text": f"echo: {text}"}]}
        elif method == "ping":
            answer["result"] = {}
        else:
            answer["error"] = {"code": -32601, "message": "Method not found"}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
