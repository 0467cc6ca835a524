"""`lathe serve`: the token, the address, and uvicorn running the app.

The token: `--token-file PATH` holds it; when PATH does not exist a new one is written
there (mode 0600) and printed once. The default PATH is `LATHE_HOME/serve/token`.
Only a loopback address is bound unless `--allow-remote` says otherwise.
"""

from __future__ import annotations

import asyncio
import errno
import os
import secrets
import socket
from collections.abc import Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from lathe.errors import UsageError
from lathe.net import is_loopback_address


def default_token_file(home: Path) -> Path:
    return home / "serve" / "token"


def read_or_create_token(path: Path) -> tuple[str, bool]:
    """The token in `path`, or a new one written there (0600); whether it is new. A
    token must be printable ASCII: HTTP does not say how a header's other bytes read
    (the server takes them as latin-1), and browsers and httpx refuse to send them, so
    such a token would never match; it is refused here rather than at every request."""
    try:
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "it is not UTF-8 text"
        raise UsageError(f"cannot read the token file {path}: {why}") from None
    else:
        if not token:
            raise UsageError(f"the token file {path} is empty; put a token in it or remove it")
        if not (token.isascii() and token.isprintable()):
            raise UsageError(
                f"the token in {path} holds characters other than printable ASCII, which "
                "HTTP headers do not carry reliably; use letters, digits and punctuation "
                "(or remove the file for a new token)"
            )
        return token, False
    token = secrets.token_urlsafe(32)
    made = False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        made = True
        try:
            line = f"{token}\n".encode()
            if os.write(fd, line) != len(line):  # a disk that filled part way
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        finally:
            os.close(fd)
    except OSError as exc:
        if made:  # an empty or cut file would stop every later start ("is empty")
            path.unlink(missing_ok=True)
        where = f" ({exc.filename})" if exc.filename and exc.filename != str(path) else ""
        raise UsageError(
            f"cannot create the token file {path}: {exc.strerror or exc}{where}; give a "
            "--token-file in a folder lathe can write"
        ) from None
    return token, True


def _hold_data_folder(home: Path):
    """The lock that makes this the one server of `home`'s data: two would each restore
    and run the same sessions, and each accept the same workspace. The kernel drops it
    when the process ends, kill -9 included."""
    from lathe.file_lock import FileLock

    folder = home / "serve"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        lock = FileLock(folder / "server.lock")
        holder = lock.try_acquire(record=f"{os.getpid()}\n")
    except OSError as exc:
        raise UsageError(f"cannot use the data folder {folder}: {exc.strerror}") from None
    if holder is not None:
        pid = holder.split()[0] if holder.split() else "?"
        raise UsageError(
            f"another `lathe serve` (pid {pid}) already serves the data in {home}; stop it, "
            "or give this one a LATHE_HOME of its own"
        )
    return lock


def check_host(host: str, allow_remote: bool) -> None:
    """A `--host` the server may bind: one that resolves, and, without `allow_remote`,
    only to this machine (a name is judged by what it resolves to)."""
    try:
        found = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise UsageError(
            f"--host {host}: no such host ({getattr(exc, 'strerror', None) or exc}); give "
            "an address such as 127.0.0.1"
        ) from None
    local = all(is_loopback_address(info[4][0]) for info in found)
    if not allow_remote and not local:
        raise UsageError(
            f"--host {host} is reachable from other machines, and anyone who gets the token "
            "could run commands here; bind 127.0.0.1, or pass --allow-remote if you mean it "
            "(behind TLS)"
        )


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(
    *,
    host: str,
    port: int,
    token_file: Path | None,
    allow_remote: bool,
    max_commands: int | None,
    say: Callable[[str], None],
    announce: Callable[[str], None],
) -> int:
    """Run the server until it is stopped (SIGINT, SIGTERM); the exit code. `say` tells
    the person (stderr); `announce` gets the URL alone, once listening (stdout), for a
    program that started the server."""
    import uvicorn

    from lathe.home import lathe_home
    from lathe.service.app import create_app
    from lathe.service.manager import server_manager

    check_host(host, allow_remote)
    manager = server_manager(max_commands)  # refused config: before a token is made
    home = lathe_home()
    one_server = _hold_data_folder(home)
    token_path = token_file or default_token_file(home)
    token, new = read_or_create_token(token_path)

    loops: list[asyncio.AbstractEventLoop] = []

    @asynccontextmanager
    async def lifespan(app):
        loops.append(asyncio.get_running_loop())
        await manager.restore()
        for problem in manager.problems:
            say(f"lathe: warning: a session could not be restored: {problem}")
        async with app.state.mcp.run():  # the /mcp transport's task group
            yield
        await manager.close()

    app = create_app(manager, token)
    app.router.lifespan_context = lifespan
    sock = bind(host, port)
    address = sock.getsockname()
    shown = f"[{address[0]}]" if ":" in address[0] else address[0]
    url = f"http://{shown}:{address[1]}"
    say(f"lathe: serving on {url}/ (token in {token_path})")
    if new:
        say(f"lathe: the new token (shown once): {token}")
    announce(url)

    class Server(uvicorn.Server):
        """Shutdown waits (a little) for the /mcp calls in progress to answer: once it
        begins, their response streams end (sse-starlette ends them at the signal)."""

        answering = False

        def handle_exit(self, sig: int, frame: Any) -> None:
            if loops and not self.answering and app.state.mcp.calls_in_progress:
                self.answering = True  # a second signal goes straight on
                loops[0].call_soon_threadsafe(asyncio.ensure_future, self._then_exit(sig, frame))
                return
            super().handle_exit(sig, frame)

        async def _then_exit(self, sig: int, frame: Any) -> None:
            try:
                await app.state.mcp.cut_short(within_s=4.0)
                await asyncio.sleep(0.2)  # the answers leave through the transport
            finally:
                super().handle_exit(sig, frame)

    server = Server(
        uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=5)
    )
    try:
        asyncio.run(server.serve(sockets=[sock]))
    finally:
        one_server.release()
    return 0
