"""`lathe serve`: run the service (see `lathe.service`)."""

from __future__ import annotations

from pathlib import Path

import click

from lathe.ui.options import LatheCommand


@click.command("serve", cls=LatheCommand)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0: any free one; the URL is printed).")  # fmt: skip
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="File holding the bearer token; created with a new token when missing "
    "(default: serve/token in lathe's data dir).",
)
@click.option("--allow-remote", is_flag=True,
              help="Allow listening on an address other machines can reach.")  # fmt: skip
@click.option("--max-commands", type=click.IntRange(min=1),
              help="Commands running at once across all sessions (default: serve.max_commands, "
              "else the core count).")  # fmt: skip
def serve_command(
    host: str, port: int, token_file: Path | None, allow_remote: bool, max_commands: int | None
) -> None:
    """Serve sessions over HTTP and SSE, with a web page at /.

    Every request under /v1 needs `Authorization: Bearer TOKEN`. The API is described
    at /v1/openapi.json; each session's events stream from /v1/sessions/ID/events.
    """
    from lathe.service.server import serve

    raise SystemExit(
        serve(
            host=host,
            port=port,
            token_file=token_file,
            allow_remote=allow_remote,
            max_commands=max_commands,
            say=lambda line: click.echo(line, err=True),
            announce=click.echo,
        )
    )
