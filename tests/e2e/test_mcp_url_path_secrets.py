"""End to end: a key written in an MCP server URL's path (`/mcp/sk-ak-.../sse`, as some
hosted servers hand them out) is a secret like the URL's password: masked in what the
terminal, the model and the session get when an error quotes the URL, and turned into a
`${VAR}` by `lathe mcp import`."""

from __future__ import annotations

import http.server
import threading
import tomllib
from collections.abc import Iterator

import pytest
from tests.e2e.test_mcp import run, tool_results, user_config, workspace
from tests.fakes.openai_server import Call, Reply
from tests.ui.test_mcp_cmd import lathe

KEY = "sk-ak-abcdef0123456789abcdef"


class _NotFound(http.server.BaseHTTPRequestHandler):
    def _answer(self) -> None:
        self.send_error(404)

    do_GET = do_POST = do_DELETE = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def not_found_url() -> Iterator[str]:
    """A URL on a local server that answers 404 to everything, the key in its path."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/mcp/{KEY}/sse"
    server.shutdown()
    server.server_close()


def test_a_key_in_the_url_path_is_masked_where_the_failed_start_is_reported(
    tmp_path, fake_openai, not_found_url, monkeypatch
):
    # "warning: MCP server zap failed to start: HTTPStatusError: ... for url
    # 'http://.../mcp/sk-ak-abcdef0123456789abcdef/sse'", and the same in the tool
    # result, the session's .jsonl and its .log.
    ws = workspace(tmp_path)
    # Config files refuse the key itself, so it comes from the environment, as users write it.
    monkeypatch.setenv("ZAP_KEY", KEY)
    user_config(tmp_path, {"zap": {"url": not_found_url.replace(KEY, "${ZAP_KEY}")}})
    fake_openai.enqueue(
        Reply(calls=[Call("mcp_resource", {"server": "zap", "uri": "x://y"})]), Reply("Done.")
    )

    result = run(fake_openai, tmp_path, ws)

    assert result.returncode == 0, result.stderr
    assert "MCP server zap failed to start" in result.stderr
    assert KEY not in result.stdout + result.stderr
    [answer] = tool_results(fake_openai.chat_bodies()[-1])
    assert "failed to start" in answer and KEY not in answer
    assert KEY[:3] + "…" + KEY[-4:] in answer  # masked, not dropped
    written = [p for p in (tmp_path / "home").rglob("*") if p.is_file()]
    assert [p for p in written if p.suffix == ".jsonl"]
    assert not [p for p in written if KEY in p.read_text(errors="replace")]

    tested = lathe("mcp", "test", "zap", "-C", str(ws), tmp_path=tmp_path)
    assert tested.returncode == 1 and "zap" in tested.stdout + tested.stderr
    assert KEY not in tested.stdout + tested.stderr


def test_import_turns_a_key_in_a_url_path_into_a_reference(tmp_path):
    # The token was copied into lathe's config word for word.
    codex = tmp_path / "codex.toml"
    codex.write_text(
        f'[mcp_servers.zap]\nurl = "https://actions.example.com/mcp/{KEY}/sse"\n'
        f'[mcp_servers.remote]\ncommand = "npx"\n'
        f'args = ["mcp-remote", "https://actions.example.com/mcp/{KEY}/sse"]\n'
        '[mcp_servers.plain]\nurl = "https://mcp.example.com/v2/mcp"\n'
    )

    result = lathe("mcp", "import", str(codex), tmp_path=tmp_path)

    assert result.returncode == 0, result.stderr
    written = (tmp_path / "config.toml").read_text()
    assert KEY not in written
    servers = tomllib.loads(written)["mcp"]["servers"]
    assert servers["zap"]["url"] == "https://actions.example.com/mcp/${ZAP_URL_KEY}/sse"
    assert servers["remote"]["args"] == [
        "mcp-remote", "https://actions.example.com/mcp/${REMOTE_ARG_1_KEY}/sse"
    ]  # fmt: skip
    assert servers["plain"]["url"] == "https://mcp.example.com/v2/mcp"
    assert "export ZAP_URL_KEY " in result.stdout and "export REMOTE_ARG_1_KEY " in result.stdout
    assert KEY not in result.stdout + result.stderr
