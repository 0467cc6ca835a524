"""Run llama-server for a local model: one managed by this lathe process, or one kept
warm across runs by `lathe local start`.

A managed server lives exactly as long as the lathe process that started it: `stop()`
runs on context exit and at interpreter exit, and on Linux the kernel sends it SIGTERM
if lathe dies without running either. A warm server is detached and recorded in
`LATHE_HOME/local/server.json`; later runs reuse it when it serves the model they want.

Errors: a server that exits or stops answering raises `lathe.errors.Transport` carrying
the tail of its log, so the retry policy and the user see the same cause. A port the
user chose that is already taken raises `UsageError`.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import functools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, NamedTuple

from lathe.atomic_write import write_atomic
from lathe.errors import Transport, UsageError
from lathe.exec.supervision import pid_alive
from lathe.local.install import is_verified, require_server
from lathe.local.machine import usable_cores, usable_cpus
from lathe.local.models import LocalModel, get_model, local_dir, model_path

HOST = "127.0.0.1"
TEMPLATE = Path(__file__).parent / "templates" / "qwen2.5-coder-tools.jinja"
_LOG_TAIL_LINES = 25
_BIND_FAILURE = ("couldn't bind", "Address already in use")
_CRASH_CODES = (-signal.SIGILL, -signal.SIGSEGV, -signal.SIGBUS)
_REPLACE_AFTER_S = 5.0
"""How long `lathe local start` waits for a recorded server's /health before it stops
that server as hung: longer than `status` waits, since a busy machine answers slowly."""


@dataclass(frozen=True)
class ServerOptions:
    ctx_size: int = 8192
    """Context window in tokens, of each slot."""
    parallel: int = 1
    """Slots: conversations served at once, each with its own window and prompt cache
    (`lathe batch --workers N` against one warm server). Their tokens share each forward
    pass, so N conversations go faster together than one after another."""
    threads: int | None = None
    """Generation threads; None picks them when the server starts (`auto_threads`)."""
    chat_template: Literal["lathe", "stock"] | Path = "lathe"
    """"lathe": lathe's template that makes the model's ```json calls parse as tool
    calls; "stock": the model's own template (for JSON-schema action mode); or a file."""
    repack: bool | None = None
    """llama.cpp's weight repacking (its AMX and AVX kernels). None: on, unless this
    llama-server is known to crash with it, as it does under hypervisors that report
    AMX but fault on its instructions; then lathe retries with `--no-repack` and
    remembers that for this binary."""
    extra_args: tuple[str, ...] = field(default_factory=tuple)


MAX_AUTO_THREADS = 8
_IDLE_SAMPLE_S = 0.3


def _cpu_times(cpus: set[int]) -> tuple[int, int] | None:
    """(idle, total) jiffies summed over `cpus`, from /proc/stat; None where there is none."""
    try:
        lines = Path("/proc/stat").read_text().splitlines()
    except OSError:
        return None
    idle = total = 0
    for line in lines:
        name, *fields = line.split()
        if not (name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus):
            continue
        values = [int(v) for v in fields[:8]]
        idle += values[3] + values[4]  # idle + iowait
        total += sum(values)
    return (idle, total) if total else None


def _idle_share(cpus: set[int]) -> float | None:
    """The share of `cpus` idle over a short sample, or None when it cannot be measured."""
    before = _cpu_times(cpus)
    if before is None:
        return None
    time.sleep(_IDLE_SAMPLE_S)
    after = _cpu_times(cpus)
    if after is None or after[1] <= before[1]:
        return None
    return (after[0] - before[0]) / (after[1] - before[1])


def auto_threads() -> int:
    """The cores this process may use that nothing else is busy on, at least one.

    Measured on 2 cores (1.5B, llama-bench): idle, 2 threads generate 8.9 tokens/s and 1
    thread 3.6; with one core busy elsewhere, 2 threads fall to 2.2 while 1 keeps 4.0,
    because llama.cpp's threads wait for each other at every step. So count the cores
    idle right now (a short /proc/stat sample; the load average lags by minutes). Past 8
    threads memory bandwidth, not cores, is the limit.
    """
    cpus = usable_cpus()
    cores = usable_cores()
    idle_share = _idle_share(cpus) if cpus else None
    if idle_share is not None:
        busy = round(cores * (1 - idle_share))
    else:
        busy = round(os.getloadavg()[0]) if hasattr(os, "getloadavg") else 0
    return max(1, min(MAX_AUTO_THREADS, cores - busy))


def _log_tail(path: Path | None, lines: int = _LOG_TAIL_LINES) -> str:
    if path is None:
        return "(no log)"
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 16384))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return "(log unreadable)"
    return "\n".join(text.splitlines()[-lines:]) or "(log empty)"


def _repack_record() -> Path:
    return local_dir() / "no-repack.txt"


def _crashes_with_repack() -> set[str]:
    try:
        return set(_repack_record().read_text().splitlines())
    except OSError:
        return set()


def _remember_repack_crash(binary: Path) -> None:
    record = _repack_record()
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text("".join(f"{b}\n" for b in sorted({*_crashes_with_repack(), str(binary)})))


def _free_port(host: str = HOST) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def port_in_use(port: int, host: str = HOST) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError as exc:
            return exc.errno in (errno.EADDRINUSE, errno.EACCES)
    return False


def _health(base: str, timeout: float = 2.0) -> tuple[int, str]:
    """(HTTP status, body) of GET /health; (0, reason) when nothing answers, or the
    answer breaks off (a server dying as it writes it)."""
    import http.client

    try:
        with urllib.request.urlopen(f"{base}/health", timeout=timeout) as resp:
            return resp.status, resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        return 0, str(exc)


def _die_with_parent() -> Callable[[], None] | None:
    """A preexec hook setting PR_SET_PDEATHSIG: the kernel sends the server SIGTERM when
    the thread that spawned it dies, so even a kill -9 of lathe cannot leave it running.
    libc is loaded here, before the fork; the hook itself only calls prctl."""
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return lambda: prctl(1, signal.SIGTERM)


def _terminate(pid: int, timeout: float) -> None:
    """Stop the process group led by `pid` the way lathe stops any group: SIGTERM, up to
    `timeout` seconds, then SIGKILL (`lathe.exec.supervision.stop_group`). A stopped
    group (kill -STOP) is continued first, or SIGTERM would wait until the SIGKILL."""
    from lathe.exec.supervision import signal_group, stop_group

    signal_group(pid, signal.SIGCONT)
    stop_group(pid, grace=timeout, gone=lambda: not pid_alive(pid))


class LocalServer:
    """One llama-server process serving one GGUF file on 127.0.0.1.

    `start()` picks a free port (unless one is given), launches the server and waits for
    `/health` to answer ok; `stop()` ends it and its process group. Use it as a context
    manager, or rely on the atexit hook installed by `start()` (unless `detach`).
    """

    def __init__(
        self,
        model: Path,
        *,
        alias: str,
        binary: Path | None = None,
        port: int | None = None,
        options: ServerOptions | None = None,
        log_path: Path | None = None,
    ) -> None:
        self.model = Path(model)
        self.alias = alias
        self.binary = binary
        self.options = options or ServerOptions()
        self.log_path = log_path
        self._own_log = log_path is None
        self.port = port
        self._requested_port = port
        self._proc: subprocess.Popen[bytes] | None = None
        self._repack = self.options.repack

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible endpoint, e.g. http://127.0.0.1:41234/v1."""
        return f"{self._root}/v1"

    @property
    def _root(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @functools.cached_property
    def threads(self) -> int:
        """Chosen once: a respawn (port taken, repack crash) keeps the same count."""
        return self.options.threads or auto_threads()

    def command(self) -> list[str]:
        assert self.binary is not None and self.port is not None
        opts = self.options
        cmd = [
            str(self.binary),
            "--model",
            str(self.model),
            "--host",
            HOST,
            "--port",
            str(self.port),
            "--alias",
            self.alias,
            "--jinja",
            "--ctx-size",
            str(opts.ctx_size * opts.parallel),  # llama-server divides it among the slots
            "--threads",
            str(self.threads),
            "--parallel",
            str(opts.parallel),
            "--no-webui",
        ]
        if opts.chat_template == "lathe":
            cmd += ["--chat-template-file", str(TEMPLATE)]
        elif isinstance(opts.chat_template, Path):
            cmd += ["--chat-template-file", str(opts.chat_template)]
        if self._repack is False:
            cmd.append("--no-repack")
        return [*cmd, *opts.extra_args]

    def start(self, timeout: float = 180.0, *, detach: bool = False) -> None:
        """Launch and wait until healthy. `detach`: outlive this process (warm server)."""
        if self._proc is not None:
            return
        if self.binary is None:
            self.binary = require_server()
        if not self.model.is_file():
            raise UsageError(f"Model file {self.model} does not exist; run `lathe local install`.")
        if self._requested_port is not None and port_in_use(self._requested_port):
            raise UsageError(
                f"Port {self._requested_port} on {HOST} is already in use; choose another "
                "port or stop the program listening on it."
            )
        if self._repack is None and str(self.binary) in _crashes_with_repack():
            self._repack = False
        # A port found free can be taken before the server binds it: pick again then.
        # A crash by signal while loading, with repacking on, is retried without it.
        # Anything else that ends the wait (Ctrl-C too) stops the server: a detached one
        # is recorded only once it is healthy, so nothing else would ever stop it.
        attempts = 0
        while True:
            attempts += 1
            if self._requested_port is None:
                self.port = _free_port()
            try:
                self._spawn(detach)
                self._wait_healthy(timeout)
                return
            except Transport:
                code = self._proc.poll() if self._proc else None
                bind_failed = any(s in _log_tail(self.log_path) for s in _BIND_FAILURE)
                self._kill()
                if code in _CRASH_CODES and self._repack is None:
                    self._repack = False
                    _remember_repack_crash(self.binary)
                    continue
                if not bind_failed or self._requested_port is not None or attempts >= 3:
                    raise
            except BaseException:
                self._kill()
                raise

    def _spawn(self, detach: bool) -> None:
        if self.log_path is None:
            self.log_path = local_dir() / "logs" / f"server-{self.alias}-{self.port}.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        preexec = None
        if (
            not detach
            and sys.platform.startswith("linux")
            and threading.current_thread() is threading.main_thread()
        ):
            preexec = _die_with_parent()
        with self.log_path.open("wb") as log:
            try:
                self._proc = subprocess.Popen(
                    self.command(),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=preexec,
                )
            except OSError as exc:  # a bad interpreter line, a binary for another machine
                fix = (
                    "set LATHE_LLAMA_SERVER to a working llama-server, or unset it"
                    if os.environ.get("LATHE_LLAMA_SERVER")
                    else "run `lathe local install` to build it again"
                )
                raise UsageError(
                    f"could not run llama-server {self.binary} ({exc.strerror or exc}); {fix}."
                ) from None
        if not detach:
            atexit.register(self.stop)

    def _wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while True:
            self.check_alive()
            status, body = _health(self._root)
            if status == 200:
                return
            last = f"HTTP {status}: {body.strip()[:200]}" if status else body
            if time.monotonic() > deadline:
                raise Transport(
                    f"The local model server did not become ready within {timeout:.0f}s "
                    f"(last /health answer: {last}). Last lines of {self.log_path}:\n"
                    f"{_log_tail(self.log_path)}"
                )
            time.sleep(0.2)

    def check_alive(self) -> None:
        """Raise `Transport` (with the log's tail) if the server process has exited."""
        if self._proc is None:
            raise Transport("The local model server is not running.")
        code = self._proc.poll()
        if code is not None:
            raise Transport(
                f"The local model server (pid {self._proc.pid}) exited with code {code}. "
                f"Last lines of {self.log_path}:\n{_log_tail(self.log_path)}"
            )

    def ensure_running(self) -> None:
        """`check_alive`, then check that it still answers /health."""
        self.check_alive()
        status, body = _health(self._root)
        if status != 200:
            # A server on its way out stops answering before it exits; prefer that cause.
            assert self._proc is not None
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=1.0)
            self.check_alive()
            raise Transport(
                f"The local model server on port {self.port} is not answering "
                f"({body.strip()[:200] or status}). Last lines of {self.log_path}:\n"
                f"{_log_tail(self.log_path)}"
            )

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            _terminate(proc.pid, 10.0)
            # Stopped by us, so its log holds nothing anyone will ask about; a server
            # that died by itself keeps its log, which the error message names.
            if self._own_log and self.log_path is not None:
                self.log_path.unlink(missing_ok=True)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)

    def stop(self) -> None:
        """End the server and its process group; safe to call twice."""
        atexit.unregister(self.stop)
        self._kill()

    def __enter__(self) -> LocalServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# ------------------------------------------------------------------- the warm server


@dataclass(frozen=True)
class WarmServer:
    pid: int
    port: int
    model: str
    """The local model's short name, e.g. "1.5b"."""
    wire_id: str
    model_path: str
    binary: str
    log: str
    started: float
    threads: int | None = None
    """Generation threads it runs with (None: a record from before lathe kept them)."""
    parallel: int = 1
    """Its slots (`ServerOptions.parallel`)."""
    ctx_size: int | None = None
    """The context window of each slot (`ServerOptions.ctx_size`); None: a record from
    before lathe kept it."""
    chat_template: str | None = None
    """`ServerOptions.chat_template`: "lathe", "stock" or a file's path; None: unknown."""

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    def answers(self, timeout: float = 2.0) -> bool:
        """Whether it answers /health within `timeout`: a stopped or hung server does not."""
        return _health(f"http://{HOST}:{self.port}", timeout)[0] == 200


Replaced = Literal["other model", "other port", "not answering"]
"""Why `start_warm` stopped the recorded server before starting another."""


def _whole(low: int, high: int | None = None) -> Callable[[object], bool]:
    return lambda v: type(v) is int and v >= low and (high is None or v <= high)


def _text(value: object) -> bool:
    return isinstance(value, str)


_RECORD_FIELDS: dict[str, tuple[str, Callable[[object], bool]]] = {
    "pid": ("a process id", _whole(1)),  # 0 and -1 are groups to kill(), not processes
    "port": ("a port", _whole(1, 65535)),
    "model": ("a string", _text),
    "wire_id": ("a string", _text),
    "model_path": ("a string", _text),
    "binary": ("a string", _text),
    "log": ("a string", _text),
    "started": ("a time", lambda v: type(v) in (int, float)),
    "threads": ("a thread count", lambda v: v is None or _whole(1)(v)),
    "parallel": ("a slot count", _whole(1)),
    "ctx_size": ("a context size", lambda v: v is None or _whole(1)(v)),
    "chat_template": ("a string", lambda v: v is None or _text(v)),
}
"""What each field of server.json must hold, as the reason says it when it does not."""


def _load_record(data: bytes) -> WarmServer:
    """The warm server `data` records; ValueError saying why when it records none.

    Read what can be read: a field this lathe does not know (another version wrote it)
    is left out, and an optional one it cannot read keeps its default, so a live server
    such a record names is still found and stopped. A required field missing or of the
    wrong type fails: a record naming no process, or one lathe could not tell its
    server by, is no record."""
    try:
        record = json.loads(data)
    except ValueError:
        raise ValueError("not JSON") from None
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    values: dict[str, Any] = {}  # each checked against its field below
    for spec in fields(WarmServer):
        required = spec.default is MISSING and spec.default_factory is MISSING
        if spec.name not in record:
            if required:
                raise ValueError(f"no {spec.name}")
            continue
        value = record[spec.name]
        kind, fits = _RECORD_FIELDS[spec.name]
        if fits(value):
            values[spec.name] = value
        elif required:
            raise ValueError(f"{spec.name} is {json.dumps(value)[:40]}, not {kind}")
    return WarmServer(**values)


def _state_file() -> Path:
    return local_dir() / "server.json"


def _read_record() -> WarmServer | None:
    """The recorded warm server, alive or not; None when there is no record, and when it
    cannot be read, which is removed: it names no server lathe could reach or stop."""
    path = _state_file()
    try:
        return _load_record(path.read_bytes())
    except OSError:
        return None
    except ValueError:
        path.unlink(missing_ok=True)
        return None


def forget_unreadable_record() -> tuple[Path, str] | None:
    """Remove the record when it holds no warm server lathe can read, and return it with
    why (for the terminal to say); None when there is no record or it reads."""
    path = _state_file()
    try:
        _load_record(path.read_bytes())
    except OSError:
        return None
    except ValueError as exc:
        path.unlink(missing_ok=True)
        return path, str(exc)
    return None


def recorded_warm() -> WarmServer | None:
    """The recorded warm server while its process lives and is that server, answering or
    not (`WarmServer.answers`); else None, and the stale or unreadable record is removed."""
    path = _state_file()
    warm = _read_record()
    if warm is None:
        return None
    if pid_alive(warm.pid) and _is_our_server(warm):
        return warm
    path.unlink(missing_ok=True)
    return None


def read_warm() -> WarmServer | None:
    """The recorded warm server if it is alive and answering, else None."""
    warm = recorded_warm()
    return warm if warm is not None and warm.answers() else None


def start_warm(
    model_name: str,
    *,
    options: ServerOptions | None = None,
    port: int | None = None,
    binary: Path | None = None,
    on_replaced: Callable[[WarmServer, Replaced], None] | None = None,
) -> tuple[WarmServer, bool]:
    """Start a detached server for the model, or reuse the live one serving it.

    Returns (server, reused). The recorded server is stopped first when it serves
    another model or port, or does not answer, and `on_replaced` told so: it is never
    left running unrecorded.
    """
    model = get_model(model_name)
    current = recorded_warm()
    if current is not None:
        why: Replaced
        if current.model != model.name:
            why = "other model"
        elif port not in (None, current.port):
            why = "other port"
        elif not current.answers(timeout=_REPLACE_AFTER_S):
            why = "not answering"
        else:
            return current, True
        stop_warm()
        if on_replaced is not None:
            on_replaced(current, why)
    path = require_model(model)
    log = local_dir() / "logs" / "warm-server.log"
    server = LocalServer(
        path, alias=model.wire_id, binary=binary, port=port, options=options, log_path=log
    )
    server.start(detach=True)
    try:
        assert server.pid is not None and server.port is not None and server.binary is not None
        warm = WarmServer(
            pid=server.pid,
            port=server.port,
            model=model.name,
            wire_id=model.wire_id,
            model_path=str(path),
            binary=str(server.binary),
            log=str(log),
            started=time.time(),
            threads=server.threads,
            parallel=server.options.parallel,
            ctx_size=server.options.ctx_size,
            chat_template=str(server.options.chat_template),
        )
        # Whole or not at all: a record cut short would name no server, leaving it running.
        write_atomic(_state_file(), (json.dumps(asdict(warm), indent=2) + "\n").encode())
    except BaseException:
        server.stop()  # unrecorded, nothing would ever stop it
        raise
    return warm, False


Stopped = Literal["stopped", "exited", "pid reused"]
"""What `stop_warm` found: the server, which it stopped; or a stale record, the server
having exited, its pid free or now another program's (left running)."""


class WarmStop(NamedTuple):
    server: WarmServer
    """The record, which is removed in every case."""
    how: Stopped


def stop_warm() -> WarmStop | None:
    """Stop the recorded warm server and remove its record; None when there is none (an
    unreadable record is removed)."""
    path = _state_file()
    warm = _read_record()
    if warm is None:
        return None
    how: Stopped = "exited"
    if pid_alive(warm.pid):
        if _is_our_server(warm):
            _terminate(warm.pid, 10.0)
            how = "stopped"
        else:
            how = "pid reused"
    path.unlink(missing_ok=True)
    return WarmStop(warm, how)


def _is_our_server(warm: WarmServer) -> bool:
    """Guard against killing an unrelated process that reused a stale pid: the process
    must still have the recorded model path in its command line."""
    try:
        argv = Path(f"/proc/{warm.pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return True  # no /proc: trust the record
    return warm.model_path.encode() in argv


# ------------------------------------------------------------------- for the CLI


class LocalEndpoint(NamedTuple):
    base_url: str
    model: str
    """The wire model id to send."""
    owned: bool
    """True when this process started the server (it stops at exit)."""
    ctx_size: int
    """The server's context window of each slot, in tokens: a warm server's own, which
    can differ from the one asked for. The run's budget is this window."""


_managed: dict[str, LocalServer] = {}


def require_model(model: LocalModel) -> Path:
    """The model's file, or a `UsageError` saying how to install it: what a run says, and
    `lathe doctor` with it."""
    path = model_path(model)
    if not is_verified(path, model.size, model.sha256):
        raise UsageError(
            f"The local {model.name} model is not installed. Run `lathe local install "
            f"--model {model.name}` once (it downloads the model and builds llama-server)."
        )
    return path


def ensure_local_server(model_name: str, *, options: ServerOptions | None = None) -> LocalEndpoint:
    """An endpoint serving `model_name` ("local", "local/1.5b", "0.5b", ...): the warm
    server when it serves that model, whatever its options, else one started now with
    `options` and stopped at exit. The endpoint's `ctx_size` is the server's."""
    model = get_model(model_name)
    path = require_model(model)
    options = options or ServerOptions()
    warm = read_warm()
    if warm is not None and warm.model == model.name:
        ctx_size = warm.ctx_size or options.ctx_size
        return LocalEndpoint(warm.base_url, warm.wire_id, owned=False, ctx_size=ctx_size)
    server = _managed.get(model.name)
    if server is None or server._proc is None or server._proc.poll() is not None:
        server = LocalServer(path, alias=model.wire_id, options=options)
        server.start()
        _managed[model.name] = server
    return LocalEndpoint(
        server.base_url, model.wire_id, owned=True, ctx_size=server.options.ctx_size
    )


def managed_server(model_name: str) -> LocalServer | None:
    """The server `ensure_local_server` started in this process for the model, if any —
    for `ensure_running()` checks and early `stop()`."""
    return _managed.get(get_model(model_name).name)
