"""lathe's MCP client: servers from config and `.mcp.json`, their lifecycle, and their
tools as lathe `Tool`s (`mcp__NAME__TOOL`). Named `mcptools` so that nothing here can
shadow the official `mcp` SDK, which is imported only inside the functions that use it.
"""
