"""Run the `bash` tool's commands in a container (`--sandbox container`): docker or
podman, so the toolchain can differ from the host's.

One long-lived container per executor (a run, or a child of one), started at the first
command and removed by `aclose` at the end: `ENGINE run -i --rm` of the configured image
(or, with podman, a root folder mounted with an overlay, so the container's writes never
reach it) holding a keeper process, then `ENGINE exec` for each command. The keeper's
stdin is a pipe only lathe holds, through the engine's client: when lathe ends however
it ends, even by SIGKILL, the kernel closes lathe's end, the keeper reads end-of-file
and exits, and with it the container, everything running in it and (`--rm`) its files.
The workspace is bound at its own path and writable, except what `lathe.exec.view` keeps
read-only; paths denied for reading are masked (a folder as an empty tmpfs with mode
000, a file by an unreadable empty file); /tmp is a tmpfs; no network unless asked for
(then the host's); no capabilities, no new privileges; the command runs as lathe's uid
and gid, with only lathe's non-interactive settings in its environment (never the host's
variables, which name host paths and may hold secrets). Deny patterns are matched before
each command; when what they match changed, the container is started again with the new
mounts (they cannot change under a running container). Every mount is a `--mount`
option, which takes any path (`--volume SRC:DST` split one with a colon).

Commands run one at a time. When one ends, times out or is cancelled, every process in
the container but its keeper is killed (`kill -KILL -1` as the same user), so nothing a
command starts outlives it, its timeout or lathe; the engine's own client is stopped as
a process group by `LocalExecutor`. When the engine is missing or cannot start the
container, `run` raises `ExecutorUnavailable` with the engine's own words; nothing runs
elsewhere instead.

`container_argv` and `exec_argv` build the command lines; tests hold them to a contract
where no engine works.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import os
import select
import shlex
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lathe.exec.base import ExecResult, ExecutorUnavailable, SandboxStatus
from lathe.exec.local import NONINTERACTIVE_ENV, LocalExecutor
from lathe.exec.sandboxed import SandboxedExecutor
from lathe.exec.view import SandboxView, unreadable_file

_START_TIMEOUT_S = 120.0
_CLIENT_EXIT_S = 10.0
_READY = b"lathe-keeper-ready"
# The container's first process. It says it runs, then lives until its stdin ends (lathe
# is gone: see the module) and reaps what commands leave meanwhile: orphans become its
# children, and the shell's wait for `cat` takes any child that ends. `kill -KILL -1`
# after each command kills `cat` too (a death by signal): it is started again.
_KEEPER = (
    "sh", "-c",
    f"echo {_READY.decode()}; exec >/dev/null 2>&1; "
    "while :; do cat; [ $? -gt 128 ] || exit 0; done",
)  # fmt: skip


@dataclass(frozen=True)
class ContainerSpec:
    """What the container runs: `engine` ("docker" or "podman"), `image`, or `rootfs`
    (podman only: a folder used as the root through an overlay), and `engine_args`,
    global options given before every engine command (e.g. podman's `--runtime runsc`)."""

    engine: str = "docker"
    image: str | None = None
    rootfs: str | None = None
    engine_args: tuple[str, ...] = ()

    def root(self) -> list[str]:
        """What `ENGINE run` takes as the container's root: the image, or the root
        folder through an overlay."""
        return ["--rootfs", f"{self.rootfs}:O"] if self.rootfs is not None else [str(self.image)]

    def problem(self) -> str | None:
        """What makes this spec unusable, in words; None when it can be tried."""
        if self.engine not in ("docker", "podman"):
            return f"container.engine {self.engine!r} is neither docker nor podman"
        if (self.image is None) == (self.rootfs is None):
            return (
                'give the container\'s image (container.image, e.g. "python:3.12") or, '
                "with podman, a root folder (container.rootfs); exactly one of them"
            )
        if self.rootfs is not None and self.engine != "podman":
            return "container.rootfs needs podman (docker runs images only)"
        return None


def container_argv(spec: ContainerSpec, name: str, view: SandboxView) -> list[str]:
    """The engine command that starts the container `name` showing `view`."""
    argv = [spec.engine, *spec.engine_args, "run", "--interactive", "--rm", "--name", name]
    argv += ["--label", "lathe=1"]  # what `ENGINE ps --filter label=lathe` finds if one leaks
    if spec.engine == "podman" and os.geteuid() != 0:
        argv.append("--userns=keep-id")  # rootless: the workspace's owner inside, too
    argv += ["--network", "host" if view.network else "none"]
    argv += ["--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
    argv += ["--user", f"{os.getuid()}:{os.getgid()}", "--tmpfs", "/tmp"]
    argv += _bind(view.workspace, view.workspace)
    for path in view.read_only:
        argv += _bind(path, path, "ro")
    for path in view.hidden:
        if path.is_dir():
            argv += _mount("type=tmpfs", f"destination={path}", "tmpfs-mode=000", "ro")
        else:
            argv += _bind(unreadable_file(), path, "ro")
    argv += ["--workdir", str(view.workspace)]
    root = spec.root()
    return [*argv, *root, *_KEEPER]


def _bind(source: Path, destination: Path, *options: str) -> list[str]:
    return _mount("type=bind", f"source={source}", f"destination={destination}", *options)


def _mount(*fields: str) -> list[str]:
    """A `--mount` option. Both engines read its value as one CSV line, so a field with
    a comma or a quote is quoted; `--volume` and `--tmpfs` split paths on their colons,
    and no quoting gets one through."""
    line = io.StringIO()
    csv.writer(line, lineterminator="").writerow(fields)
    return ["--mount", line.getvalue()]


def exec_argv(
    spec: ContainerSpec, name: str, command: str, cwd: Path, env: Mapping[str, str]
) -> list[str]:
    """The engine command that runs `command` with `bash -c` in `cwd` inside `name`."""
    argv = [spec.engine, *spec.engine_args, "exec", "--workdir", str(cwd)]
    for key, value in env.items():
        argv += ["--env", f"{key}={value}"]
    return [*argv, name, "bash", "-c", command]


def check_container(spec: ContainerSpec) -> SandboxStatus:
    """Whether `spec`'s engine can start its container here: a run of `true` in it."""
    problem = spec.problem()
    if problem is not None:
        return SandboxStatus(False, f"Commands cannot run in a container: {problem}.")
    found = shutil.which(spec.engine)
    if found is None:
        return SandboxStatus(
            False,
            f"Commands cannot run in a container: {spec.engine} is not installed or not on "
            f"PATH. Install it (e.g. `sudo apt-get install {_package(spec.engine)}`) or "
            "choose another sandbox (`--sandbox bubblewrap`).",
        )
    argv = [spec.engine, *spec.engine_args, "run", "--rm", "--network", "none", *spec.root()]
    argv.append("true")
    try:
        probe = subprocess.run(
            [found, *argv[1:]], stdin=subprocess.DEVNULL, capture_output=True,
            timeout=_START_TIMEOUT_S, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return SandboxStatus(False, f"Commands cannot run in a container: {found} failed: {exc}")
    if probe.returncode == 0:
        return SandboxStatus(True, f"in a container ({spec.engine})", found)
    return SandboxStatus(
        False,
        f"Commands cannot run in a container: {spec.engine} could not start one here "
        f"({_last_line(probe.stderr)}). Check that its daemon or runtime works "
        f"(`{shlex.join(argv)}`), or choose another sandbox.",
        found,
    )


class ContainerExecutor(SandboxedExecutor):
    """A `SandboxedExecutor` running every command in one container of `spec`. Of the
    host-side options, `env` is added to each command's environment; `hide_env`,
    `keep_env` and `extra_read_only` do not apply (the host's environment and folders
    stay out). Call `aclose` at the end of the run to remove the container."""

    def __init__(self, workspace: Path, spec: ContainerSpec, **rules: Any) -> None:
        super().__init__(workspace, **rules)
        self.spec = spec
        self.name = f"lathe-{uuid.uuid4().hex[:12]}"
        self._command_env = {**NONINTERACTIVE_ENV, "TMPDIR": "/tmp", **self.env}
        self._launched = False  # a start was begun: the container may exist
        self._started = False
        self._client: subprocess.Popen[bytes] | None = None  # `ENGINE run`, attached
        self._mounted: tuple[tuple[Path, ...], tuple[Path, ...]] = ((), ())
        self._one_at_a_time = asyncio.Lock()
        # The engine's client only: the command lives in the container, which
        # `_stop_strays` clears.
        self._local = LocalExecutor(self._exec_argv, env={}, supervise=False)

    def _check(self) -> SandboxStatus:
        return check_container(self.spec)

    async def run(
        self,
        command: str,
        *,
        cwd: Path,
        timeout: float,
        max_output_bytes: int,
        spill_dir: Path,
    ) -> ExecResult:
        async with self._one_at_a_time:
            return await super().run(
                command, cwd=cwd, timeout=timeout, max_output_bytes=max_output_bytes,
                spill_dir=spill_dir,
            )  # fmt: skip

    async def _run(
        self, command: str, cwd: Path, timeout: float, max_output_bytes: int, spill_dir: Path
    ) -> ExecResult:
        view = await asyncio.to_thread(self.view, self.workspace)
        if self._started and self._mounted != (view.read_only, view.hidden):
            await self.aclose()  # a path to protect or hide came or went: new mounts
        if not self._started:
            await self.aclose()  # what a start cut short or timed out left: its client too
            await asyncio.to_thread(self._start, view)
        try:
            return await self._local.run(
                command, cwd=cwd, timeout=timeout, max_output_bytes=max_output_bytes,
                spill_dir=spill_dir,
            )  # fmt: skip
        finally:
            await asyncio.shield(asyncio.to_thread(self._stop_strays))

    async def aclose(self) -> None:
        """Remove the container (and with it anything still running in it), also one
        whose start was cut short (its `run` may still have created it)."""
        if self._launched:
            self._launched = self._started = False
            await asyncio.to_thread(self._remove)

    def _start(self, view: SandboxView) -> None:
        self._launched = True
        with tempfile.TemporaryFile() as errors:
            try:
                client = subprocess.Popen(
                    container_argv(self.spec, self.name, view), stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE, stderr=errors, start_new_session=True,
                )  # fmt: skip
            except OSError as exc:
                raise ExecutorUnavailable(
                    f"cannot start {self.spec.engine}: {exc.strerror or exc}"
                ) from exc
            self._client = client
            ready = _ready(client, time.monotonic() + _START_TIMEOUT_S)
            if ready is None:
                raise ExecutorUnavailable(
                    f"the container did not start within {_START_TIMEOUT_S:.0f} s (a slow "
                    f"image pull?); start it once by hand (`{self.spec.engine} run`), or "
                    "choose another sandbox"
                )
            if not ready:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    client.wait(_CLIENT_EXIT_S)  # its last words are written before it exits
                errors.seek(0)
                raise ExecutorUnavailable(
                    f"the container could not start ({_last_line(errors.read())}); "
                    f"check `{self.spec.engine} run` with this image, or choose another sandbox"
                )
        self._started = True
        self._mounted = (view.read_only, view.hidden)

    def _remove(self) -> None:
        """Remove the container, then let its client go: closing the keeper's stdin
        also ends a container the engine could not remove."""
        self._engine("rm", "--force", "--time", "0", self.name)
        client, self._client = self._client, None
        if client is None:
            return
        for pipe in (client.stdin, client.stdout):
            if pipe is not None:
                pipe.close()
        try:
            client.wait(_CLIENT_EXIT_S)
        except subprocess.TimeoutExpired:
            client.kill()
            client.wait()

    def _exec_argv(self, command: str, cwd: Path) -> list[str]:
        return exec_argv(self.spec, self.name, command, cwd, self._command_env)

    def _stop_strays(self) -> None:
        """Kill every process of the command's user in the container but its keeper."""
        if self._started:
            self._engine("exec", self.name, "sh", "-c", "kill -KILL -1 2>/dev/null; true")

    def _engine(self, *args: str) -> None:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            subprocess.run(
                [self.spec.engine, *self.spec.engine_args, *args], stdin=subprocess.DEVNULL,
                capture_output=True, timeout=_START_TIMEOUT_S, check=False,
            )  # fmt: skip


def _ready(client: subprocess.Popen[bytes], deadline: float) -> bool | None:
    """Whether the keeper said it runs (True) or the client ended first (False); None
    when `deadline` passed. Reads its stdout up to the keeper's word, which is all the
    keeper ever writes there."""
    assert client.stdout is not None
    seen = b""
    while _READY not in seen:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        if select.select([client.stdout], [], [], remaining)[0]:
            chunk = os.read(client.stdout.fileno(), 4096)
            if not chunk:
                return False
            seen = seen[-len(_READY) :] + chunk
    return True


def _last_line(stderr: bytes) -> str:
    """The engine's own message: its last line that is not a pointer to --help."""
    lines = [
        line.strip()
        for line in stderr.decode("utf-8", "replace").splitlines()
        if line.strip() and not line.strip().startswith("Run '")
    ]
    return lines[-1] if lines else "no message"


def _package(engine: str) -> str:
    return "docker.io" if engine == "docker" else engine
