"""A real MCP server built with the SDK, run as a subprocess by the tests.

    python tests/fakes/mcp_server.py [--transport stdio|streamable-http|sse] [--port-file F]
        [--pid-file F] [--calls F] [--many N] [--hang-if F] [--garbage] [--say-env NAME]
        [--helper-pid-file F]

Tools: `echo(text)`, `getenv(name)`, `add(a, b)` (read-only), `fail(why)` (an isError result),
`refuse(why)` (a JSON-RPC error of code -32000),
`crash()` (the process exits mid-call), `picture()` (a PNG), `shout(text)` (structured
content only), `slow(seconds)`; `--many N` adds N more (`tool_0`...), each with a
schema of a few properties. A resource `note://hello` and a prompt `greet`.
`--pid-file` gets the process id at start; `--calls` gets one JSON line per tool call
(name and arguments), so a test asserts what the server received. `--hang-if F`: when
F exists at start, the server reads its input and never answers (not even the
handshake). `--garbage`: lines that are not JSON-RPC are printed on stdout first.
`--say-env NAME`: the variable's value is printed on stderr at start (a server that logs
its configuration, secrets included). `--twins`: tools `a.b` and `a_b` besides.
`--helper-pid-file F`: a helper process it starts (as `npx` starts node, or a browser
server its browser), in a session of its own, writes its pid to F and sleeps.
`--newer-if F`: when F exists at start, the server is a newer release whose `add(a, b, c)`
takes a third integer and is no longer marked read-only.
`--raw-tools F`: the server speaks JSON-RPC itself, without the SDK (whose server refuses
to send a malformed list), over stdio: it lists the tools of the JSON file F as they are
written, and a call of any of them answers `NAME: ARGUMENTS`. `--same-cursor`: each page
of its list names the same next page; `--new-cursor`: each page names a new next page,
giving the same tools again, without end.
"""

import argparse
import base64
import json
import os
import sys
import time
from pathlib import Path

# One red pixel.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", default="stdio")
    parser.add_argument("--port-file", help="over HTTP: where to write the port it listens on")
    parser.add_argument("--pid-file")
    parser.add_argument("--calls")
    parser.add_argument("--many", type=int, default=0)
    parser.add_argument("--hang-if")
    parser.add_argument("--garbage", action="store_true")
    parser.add_argument("--say-env")
    parser.add_argument("--twins", action="store_true")
    parser.add_argument("--helper-pid-file")
    parser.add_argument("--token", help="taken and ignored, as a real server's key would be")
    parser.add_argument("--newer-if")
    parser.add_argument("--raw-tools")
    parser.add_argument("--same-cursor", action="store_true")
    parser.add_argument("--new-cursor", action="store_true")
    args = parser.parse_args()
    if args.helper_pid_file:
        import subprocess

        helper = subprocess.Popen(["sleep", "300"], start_new_session=True)
        Path(args.helper_pid_file).write_text(str(helper.pid))
    if args.say_env:
        print(f"starting with {args.say_env}={os.environ.get(args.say_env)}", file=sys.stderr)
    if args.pid_file:
        Path(args.pid_file).write_text(str(os.getpid()))
    if args.hang_if and Path(args.hang_if).exists():
        for _ in sys.stdin:  # swallow the handshake, answer nothing
            pass
        time.sleep(3600)
    if args.raw_tools:
        cursor = "same" if args.same_cursor else "new" if args.new_cursor else None
        serve_raw(json.loads(Path(args.raw_tools).read_text()), args.calls, cursor)
        return
    if args.garbage:
        print("starting the fake server...", flush=True)
        print("{not json at all", flush=True)
    newer = bool(args.newer_if and Path(args.newer_if).exists())
    server = build(args.calls, args.many, twins=args.twins, newer=newer)
    if args.transport == "stdio":
        server.run()
    else:
        serve_http(server, args.transport, Path(args.port_file))


def serve_raw(tools, calls_file: str | None, cursor: str | None) -> None:
    """Answer JSON-RPC requests on stdin, a line each, as a server written without the
    SDK might (its discovery probe is a method it does not know: the client falls back
    to the handshake)."""

    def send(message_id, result=None, error=None) -> None:
        reply = {"jsonrpc": "2.0", "id": message_id}
        reply |= {"error": error} if error else {"result": result}
        print(json.dumps(reply), flush=True)

    pages = 0
    for line in sys.stdin:
        request = json.loads(line)
        method, message_id = request.get("method"), request.get("id")
        params = request.get("params") or {}
        if message_id is None:
            continue  # a notification
        if method == "initialize":
            send(message_id, {
                "protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw", "version": "1"},
            })  # fmt: skip
        elif method == "tools/list":
            pages += 1
            named = {"same": "again", "new": f"page-{pages}"}.get(cursor or "")
            send(message_id, {"tools": tools} | ({"nextCursor": named} if named else {}))
        elif method == "tools/call":
            name, arguments = params["name"], params.get("arguments") or {}
            if calls_file:
                with open(calls_file, "a", encoding="utf-8") as out:
                    out.write(json.dumps({"name": name, "arguments": arguments}) + "\n")
            text = f"{name}: {json.dumps(arguments)}"
            send(message_id, {"content": [{"type": "text", "text": text}]})
        elif method == "ping":
            send(message_id, {})
        else:
            send(message_id, error={"code": -32601, "message": "Method not found"})


def serve_http(server, transport: str, port_file: Path) -> None:
    """Serve over HTTP on a port the system picks, bound before it is written to
    `port_file`: a port chosen free and bound later could be taken meanwhile by another
    test's server, which the test would then talk to."""
    import socket

    import anyio
    import uvicorn

    app = server.streamable_http_app() if transport == "streamable-http" else server.sse_app()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    written = port_file.with_suffix(".tmp")
    written.write_text(str(listener.getsockname()[1]))
    written.replace(port_file)  # whole or absent: the test polls for it
    anyio.run(uvicorn.Server(uvicorn.Config(app, log_level="warning")).serve, [listener])


def build(calls_file: str | None, many: int, *, twins: bool = False, newer: bool = False):
    # The SDK costs ~1.3 CPU-s to import; a server told to hang never needs it.
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.server.mcpserver.utilities.types import Image
    from mcp.types import ToolAnnotations

    server = MCPServer("fake")

    def record(name: str, arguments: dict) -> None:
        if calls_file:
            with open(calls_file, "a", encoding="utf-8") as out:
                out.write(json.dumps({"name": name, "arguments": arguments}) + "\n")

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back, prefixed with 'echo: '."""
        record("echo", {"text": text})
        return f"echo: {text}"

    @server.tool()
    def getenv(name: str) -> str:
        """The value of one of the server's environment variables."""
        record("getenv", {"name": name})
        return os.environ.get(name, "(not set)")

    if newer:

        @server.tool()
        def add(a: int, b: int, c: int) -> int:
            """Add three integers, and write the sum to the server's ledger."""
            record("add", {"a": a, "b": b, "c": c})
            return a + b + c

    else:

        @server.tool(annotations=ToolAnnotations(read_only_hint=True))
        def add(a: int, b: int) -> int:
            """Add two integers."""
            record("add", {"a": a, "b": b})
            return a + b

    @server.tool()
    def fail(why: str) -> str:
        """Always fails with the reason given."""
        record("fail", {"why": why})
        raise ToolError(f"failed on purpose: {why}")

    @server.tool()
    def refuse(why: str) -> str:
        """Answer with a JSON-RPC error of code -32000 (the code the SDK also uses for a
        lost connection), and go on serving."""
        from mcp import MCPError

        record("refuse", {"why": why})
        raise MCPError(code=-32000, message=f"refused on purpose: {why}")

    @server.tool()
    def crash() -> str:
        """Exit the server process in the middle of the call."""
        record("crash", {})
        os._exit(3)

    @server.tool()
    def picture() -> Image:
        """Return a one-pixel PNG image."""
        record("picture", {})
        return Image(data=PNG, format="png")

    @server.tool()
    def slow(seconds: float) -> str:
        """Sleep, then answer."""
        record("slow", {"seconds": seconds})
        time.sleep(seconds)
        return "woke up"

    if twins:  # two names a model API would see as one once cleaned up

        @server.tool(name="a.b")
        def dotted() -> str:
            """The dotted twin."""
            return "dotted"

        @server.tool(name="a_b")
        def underscored() -> str:
            """The underscored twin."""
            return "underscored"

    @server.resource("note://hello")
    def hello_note() -> str:
        """A short note."""
        return "hello from the note resource"

    @server.prompt()
    def greet(name: str) -> str:
        """Greet someone."""
        return f"Say hello to {name}."

    def numbered(index: int):
        def lookup(query: str, limit: int = 10, verbose: bool = False, tag: str = "") -> str:
            record(f"tool_{index}", {"query": query, "limit": limit})
            return f"tool_{index} answered {query!r} (limit {limit})"

        return lookup

    for index in range(many):
        server.add_tool(
            numbered(index),
            name=f"tool_{index}",
            description=f"Look up records of kind {index} in the fake catalogue. Returns "
            f"matching rows, one a line, with their ids, titles and owners.",
        )
    return server


if __name__ == "__main__":
    main()
