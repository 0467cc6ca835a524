"""`lathe attach` given the API's URL (`.../v1`) instead of the server's: it said only
`lathe: Not Found (HTTP 404)`."""

from __future__ import annotations

from tests.service.test_attach_stopped_session import attached


def test_attach_to_the_api_url_says_no_lathe_server_answered_and_gives_the_root_url(
    served, fake_openai, tmp_path
):
    _, _, terminal = attached(served, fake_openai, tmp_path, f"{served.url}/v1")
    try:
        screen = terminal.wait_for(r"attach exited \d+", timeout=30)
    finally:
        terminal.close()
    assert "attach exited 0" not in screen, screen
    [said] = [line for line in screen.splitlines() if line.startswith("lathe: ")]
    assert "no lathe server answered" in said and f"{served.url}/v1" in said, said
    assert said.endswith(f"give its root URL: {served.url}"), said
