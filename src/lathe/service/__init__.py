"""The service: many concurrent, isolated sessions over HTTP and SSE (`lathe serve`).

A face like the terminal and `lathe run`: it builds each session's run the same way
(`ui.setup.prepare` → `ui.safety.build_safety` → `ui.wiring.build_agent`) and consumes
the same events. `journal.py` numbers and keeps a session's events for SSE replay,
`approvals.py` is the remote, durable approver, `limits.py` the bounds the sessions
share, `live.py` one served session, `manager.py` the set of them and their registry,
`app.py` the FastAPI routes, `server.py` token, address and uvicorn, `static/` the web
page, and `mcp_server.py` lathe as an MCP server (`lathe mcp serve`).
"""
