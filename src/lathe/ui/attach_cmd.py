"""`lathe attach URL SESSION`: this terminal on a session a `lathe serve` runs.

What the session did so far is replayed, then its live events are drawn as the
interactive session draws its own (`interactive.render.Renderer`). A typed line is sent
as a message (drawn when its turn starts, and noted when it waits behind a running
one); while an approval is pending, `y` / `a` / `n [reason]` answer it, and `v` shows
the whole change it is for (a long one is drawn as its start and end);
`/abort` stops the run; Ctrl-D (or `/quit`) detaches and leaves the session running;
`/help` lists these. Any other `/word` line is refused, never sent (`//` sends a line
that begins with `/`), as in the interactive session.
A session that stops being served (deleted, or gone after a restart) ends attach with
exit 1, saying how to serve it again.
Everything goes through `lathe.client`, the same client any program would use.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path
from typing import Any

import click

from lathe.errors import UsageError
from lathe.ui.options import LatheCommand


@click.command("attach", cls=LatheCommand)
@click.argument("url")
@click.argument("session_id")
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="File holding the server's token (default: serve/token in lathe's data dir).",
)
def attach_command(url: str, session_id: str, token_file: Path | None) -> None:
    """Attach this terminal to session SESSION_ID of the lathe server at URL: its
    transcript and live events, messages, and approvals (y once, a always, n deny)."""
    from lathe.client import LatheClient, ServiceError

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise click.UsageError("lathe attach needs a terminal")
    token = _token(token_file)
    client = LatheClient(url, token)
    try:
        info = _served(client, session_id)
    except ServiceError as exc:
        said = str(exc)
        if exc.status == 404 and not _answers(client):  # no session route: not lathe's root
            said = f"no lathe server answered at {url} (HTTP 404); {_root_hint(url)}"
        if exc.status == 401:
            where = token_file or "serve/token in lathe's data dir"
            said += f"; the token in {where} is not this server's: give its token file"
        raise SystemExit(_fail(said)) from None
    except Exception as exc:  # httpx's transport errors: nothing listens there
        raise SystemExit(_fail(f"cannot reach {url}: {exc}")) from None
    try:
        ended = asyncio.run(_Attached(client, info).main())
    finally:
        client.close()
    if ended is not None:
        raise SystemExit(_fail(ended))


def _served(client: Any, given: str) -> Any:
    """The served session `given` names: its id, or a prefix of one (as `sessions show`
    and `--resume` take), looked up only when the id itself is not served."""
    from lathe.client import ServiceError

    try:
        return client.session(given)
    except ServiceError as exc:
        if exc.status != 404:
            raise
        matches = [s.id for s in client.sessions() if s.id.startswith(given)]
        if len(matches) > 1:
            raise UsageError(
                f"session prefix {given!r} is ambiguous here: it matches "
                f"{', '.join(matches[:10])}; give more characters"
            ) from None
        if not matches:
            raise
        return client.session(matches[0])


def _answers(client: Any) -> bool:
    """Whether a lathe server answers at the client's URL (its health route)."""
    try:
        client.health()
    except Exception:  # a 404 from another server, or a path under lathe's root
        return False
    return True


def _root_hint(url: str) -> str:
    """What URL to give instead: the one without the API's `/v1...` path."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    segments = parts.path.split("/")
    if "v1" in segments:
        root = "/".join(segments[: segments.index("v1")])
        return f"give its root URL: {parts.scheme}://{parts.netloc}{root}"
    return "give the URL `lathe serve` printed (http://HOST:PORT)"


def _fail(message: str) -> int:
    click.echo(f"lathe: {message}", err=True)
    return 1


def _token(token_file: Path | None) -> str:
    from lathe.home import lathe_home
    from lathe.service.server import default_token_file

    path = token_file or default_token_file(lathe_home())
    try:
        return path.read_text().strip()
    except OSError:
        raise click.UsageError(
            f"no token in {path}; give the server's --token-file with --token-file"
        ) from None


_RECONNECT_S = 2.0  # between tries to reach a server that went away
_COMMANDS = {
    "/abort": "stop the run",
    "/help": "list these",
    "/quit": "detach; the session goes on (Ctrl-D too)",
    "/exit": "the same as /quit",
}
_KEYS = (
    "Enter sends · y/a/n answer an approval (v shows a change whole) · /abort · /help · "
    "Ctrl-D detaches"
)


class _Attached:
    def __init__(self, client: Any, info: Any) -> None:
        self.client = client
        self.info = info
        # The approvals waiting for an answer, oldest first: a typed answer goes to the
        # first (two calls of one reply can wait at once).
        self.pending: dict[str, dict[str, Any]] = {}
        # Why attaching ended by itself (the session is no longer served): then the
        # prompt closes, and this is said instead of "the session goes on".
        self.ended: str | None = None
        self._prompt: Any = None

    async def main(self) -> str | None:
        """Attached until Ctrl-D (None) or until the session cannot be followed any more
        (why, in one line)."""
        from prompt_toolkit import PromptSession
        from prompt_toolkit.patch_stdout import patch_stdout

        from lathe.client import ServiceError
        from lathe.ui.interactive.render import Glyphs, Renderer, Status, make_console, unicode_ok

        with patch_stdout(raw=True):
            status = Status(model=self.info.model, glyphs=Glyphs.pick(unicode_ok()))
            self.renderer = Renderer(make_console(sys.stdout), status)
            self.renderer.note(
                f"attached to {self.info.id} · {self.info.model} · {self.info.workspace}", "bold"
            )
            self.renderer.note(_KEYS)
            loop = asyncio.get_running_loop()
            stop = threading.Event()
            reader = threading.Thread(target=self._follow, args=(loop, stop), daemon=True)
            reader.start()
            # The typed line goes: the session's own echo of it (its run's start, or the
            # queued note) is the one copy on screen.
            prompt: PromptSession[str] = PromptSession(erase_when_done=True)
            self._prompt = prompt
            try:
                while self.ended is None:
                    try:
                        text = await prompt.prompt_async("> ")
                    except (EOFError, KeyboardInterrupt):
                        break
                    if self.ended is not None:  # the line was typed as attaching ended
                        break
                    try:
                        if not await asyncio.to_thread(self._handle, text.strip()):
                            break
                    except ServiceError as exc:  # the session is no longer served
                        self._end(exc)
            finally:
                stop.set()
        if self.ended is None:
            click.echo(
                f"detached; the session goes on: lathe attach {self.client.url} {self.info.id}"
            )
        return self.ended

    def _end(self, error: Any) -> None:
        """On the loop: the session cannot be followed any more (`error`, a
        ServiceError); close the prompt and keep why."""
        if self.ended is not None:
            return
        if error.status == 404:
            import shlex

            sid = self.info.id
            self.ended = (
                f"session {sid} is no longer served at {self.client.url} (it was stopped; "
                f"its file stays): serve it again with POST /v1/sessions/{sid}/resume and "
                f"attach again, or go on with it on that machine: "
                f"lathe -C {shlex.quote(self.info.workspace)} --resume {sid}"
            )
        else:
            self.ended = f"the session's stream stopped: {error}"
        if self._prompt is not None and self._prompt.app.is_running:
            self._prompt.app.exit(exception=EOFError())

    def _follow(self, loop: asyncio.AbstractEventLoop, stop: threading.Event) -> None:
        """Reads the stream in this thread; draws each event on the loop's. A server
        that went away is waited for, however long, and followed from the last event
        drawn once it is back (after about 12 s attach had stopped for good, and the
        runs after went undrawn)."""
        from lathe.client import ServiceError

        last, away = 0, False
        while not stop.is_set():
            try:
                for event in self.client.events(self.info.id, after=last):
                    if stop.is_set():
                        return
                    if away:
                        loop.call_soon_threadsafe(self.renderer.note, "reconnected", "green")
                        away = False
                    last = event.id
                    loop.call_soon_threadsafe(self._draw, event.data)
            except ServiceError as exc:  # the session was stopped, or a restart lost it
                loop.call_soon_threadsafe(self._end, exc)
                return
            except Exception as exc:  # the server went away: say so once, keep the prompt
                if not away and not stop.is_set():
                    said = f"the stream stopped: {exc}; reconnecting (Ctrl-D detaches)"
                    loop.call_soon_threadsafe(self.renderer.error, said)
                away = True
            stop.wait(_RECONNECT_S)

    def _draw(self, data: dict[str, Any]) -> None:
        from lathe.events import event_adapter

        kind = data.get("type")
        if kind == "run_started":
            self.renderer.user_echo(str(data.get("task", "")))
            self.renderer.status.begin()
        elif kind == "approval_requested":
            self.pending[str(data["approval_id"])] = data
            preview = str(data.get("preview") or "")
            self.renderer.note(
                f"approve: {data['tool']} {_what(data)}  ({data['reason']})", "yellow"
            )
            cut = preview.startswith("--- ") and self.renderer.diff(preview)
            whole = " · v whole change" if cut else ""
            self.renderer.note(f"allow? y once · a always · n [reason] deny{whole}", "bold")
        elif kind == "approval_resolved":
            self.pending.pop(str(data.get("approval_id")), None)
            self.renderer.note(f"  approval: {data['choice']} ({data.get('by', 'user')})")
            if self.pending:  # what the next answer goes to
                waiting = next(iter(self.pending.values()))
                self.renderer.note(f"next: {waiting['tool']} {_what(waiting)}", "yellow")
        else:
            try:
                event = event_adapter().validate_python(data)
            except ValueError:  # a newer server's event: nothing to draw
                return
            self.renderer(event)
            if kind == "run_finished":
                self.renderer.status.end()

    def _handle(self, text: str) -> bool:
        """Act on one typed line; False to detach. Raises the ServiceError of a session
        no longer served."""
        from lathe.client import ServiceError
        from lathe.ui.interactive.approval import parse_answer

        try:
            if self.pending and text.strip().lower() in ("v", "view") and self._show_whole():
                return True
            if self.pending and (answer := parse_answer(text)) is not None:
                choice, reason = answer
                oldest = next(iter(self.pending))
                self.client.answer(self.info.id, oldest, choice, reason)
            elif text.startswith("/") and not text.startswith("//"):
                return self._command(text)
            elif text:
                message = text.removeprefix("/")  # "//etc/hosts ..." sends "/etc/hosts ..."
                if self.client.send(self.info.id, message):
                    self.renderer.note(f"queued for the next turn: {message}")
        except ServiceError as exc:
            if exc.status == 404 and not self._served():
                raise
            self.renderer.error(str(exc))
        return True

    def _show_whole(self) -> bool:
        """Print the whole change the oldest pending approval is for (its start and end
        were shown); False when it is for no change (a command)."""
        preview = str(next(iter(self.pending.values())).get("preview") or "")
        if not preview.startswith("--- "):
            return False
        self.renderer.diff(preview, limit=None)
        return True

    def _command(self, line: str) -> bool:
        """A `/word` line: one of attach's commands, or refused; never a message (the
        model had got "/clear", which attach does not have). False to detach."""
        name, _, argument = line.partition(" ")
        name = name.lower()
        if name not in _COMMANDS:
            self.renderer.error(
                f"unknown command {name}: lathe attach has {', '.join(_COMMANDS)}; "
                f"start a message with // to send one beginning with /"
            )
        elif argument.strip():
            self.renderer.error(
                f"{name} takes no arguments, not {argument.strip()!r}: type {name} alone"
            )
        elif name in ("/quit", "/exit"):
            return False
        elif name == "/abort":
            self.client.abort(self.info.id)
        else:
            for command, meaning in _COMMANDS.items():
                self.renderer.note(f"{command:<7} {meaning}")
            self.renderer.note(_KEYS)
        return True

    def _served(self) -> bool:
        """Whether the session is still served (a 404 can be an approval answered
        already)."""
        from lathe.client import ServiceError

        try:
            self.client.session(self.info.id)
        except ServiceError as exc:
            return exc.status != 404
        return True


def _what(request: dict[str, Any]) -> str:
    """The path a change is to, or the command (its preview) an approval is for."""
    preview = str(request.get("preview") or "")
    return str(request["arguments"].get("path", "")) if preview.startswith("--- ") else preview
