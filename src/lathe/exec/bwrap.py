"""Run the `bash` tool's commands inside a bubblewrap sandbox.

Inside: the system (/usr, /etc, /opt, ...) and the user's tool directories read-only,
the workspace read-write except `.git` and `.lathe` (read-only unless allowed), a private
/tmp, a minimal /dev and a fresh /proc, no network unless asked for, a new PID namespace,
no capabilities, and the sandbox dies with lathe. The rest of the home directory is not
there at all, so secrets in it (~/.ssh, ~/.aws) cannot be read and nothing outside the
workspace can be written. Paths denied for reading are masked wherever they are in the
workspace: a file becomes an unreadable empty file, a directory an empty one. Paths denied
for editing are mounted read-only, so no command can change them or create files under
them. Both are matched when the command starts (`lathe.patterns`), so a file created
later escapes them.

Process handling (process group, timeout, output capping) is `LocalExecutor`'s, without
its supervisor: bwrap is the new PID namespace's init, so every process a command starts
dies when the command ends or times out, and `--die-with-parent` ends them with lathe.
This module only builds the argv in front of `bash -c`. When bubblewrap is missing or
cannot start, `run` raises `ExecutorUnavailable` with the probe's message: the caller asks or
refuses, it never falls back to running the command unsandboxed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lathe.exec.base import ExecResult, ExecutorUnavailable
from lathe.exec.local import LocalExecutor
from lathe.patterns import compiled

# Read-only from the home directory, so the usual toolchains work: interpreters and
# their packages, and git's identity. Credentials (~/.ssh, ~/.aws, ~/.netrc) stay out.
HOME_TOOLS = (
    ".pyenv", ".local", ".cargo", ".rustup", ".nvm", ".volta", ".bun", ".deno", ".gitconfig",
    ".config/git",
)  # fmt: skip
_SYSTEM_DIRS = ("/usr", "/etc", "/opt", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ENV_PREFIXES = ("VIRTUAL_ENV", "CONDA_PREFIX")
# Binding these read-only would undo the sandbox's own root or its private /tmp.
_NEVER_BOUND = frozenset({Path("/"), Path("/tmp")})
_PROBE_TIMEOUT_S = 15.0
_INSTALL_HINT = (
    "Install it with `sudo apt-get install bubblewrap` (Debian/Ubuntu), "
    "`sudo dnf install bubblewrap` (Fedora) or `sudo pacman -S bubblewrap` (Arch)."
)
_USERNS_HINT = (
    "bubblewrap needs user namespaces. Enable them with "
    "`sudo sysctl -w kernel.unprivileged_userns_clone=1` (Debian) or, on Ubuntu 23.10 and "
    "later, `sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` (or install an "
    "AppArmor profile that allows bwrap); in a container, allow namespaces (e.g. Docker's "
    "`--security-opt seccomp=unconfined --security-opt apparmor=unconfined`)."
)


@dataclass(frozen=True)
class SandboxStatus:
    available: bool
    message: str  # what is wrong and how to fix it; a short confirmation when available
    bwrap: str | None = None  # the bubblewrap binary found


@functools.lru_cache(maxsize=4)
def sandbox_status(bwrap: str = "bwrap") -> SandboxStatus:
    """`check_bubblewrap`, probed once per process: whether this machine can sandbox."""
    return check_bubblewrap(bwrap)


def check_bubblewrap(bwrap: str = "bwrap") -> SandboxStatus:
    """Start a trivial command in the same kind of sandbox `BubblewrapExecutor` builds."""
    found = shutil.which(bwrap)
    if found is None:
        return SandboxStatus(
            False,
            f"Commands cannot be sandboxed: bubblewrap ({bwrap!r}) is not installed or not "
            f"on PATH. {_INSTALL_HINT}",
        )
    with tempfile.TemporaryDirectory(prefix="lathe-probe-") as workspace:
        argv = sandbox_argv(found, Path(workspace), Path(workspace), network=False)
        try:
            probe = subprocess.run(
                [*argv, "true"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=_PROBE_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return SandboxStatus(False, f"Commands cannot be sandboxed: {found} failed: {exc}")
    if probe.returncode == 0:
        return SandboxStatus(True, f"sandboxed with {found}", found)
    error = probe.stderr.decode("utf-8", "replace").strip() or f"exit code {probe.returncode}"
    return SandboxStatus(
        False,
        f"Commands cannot be sandboxed: {found} is installed but could not start a sandbox "
        f"here ({error}). {_diagnosis(error)}",
        found,
    )


def _diagnosis(error: str) -> str:
    lowered = error.lower()
    if any(s in lowered for s in ("namespace", "uid map", "operation not permitted")):
        return _USERNS_HINT
    if "setuid" in lowered or "capabilit" in lowered:
        return (
            "The bwrap binary's setuid/capability setup is broken; reinstall it with "
            "`sudo apt-get install --reinstall bubblewrap`. " + _USERNS_HINT
        )
    return _USERNS_HINT


def sandbox_argv(
    bwrap: str,
    workspace: Path,
    cwd: Path,
    *,
    network: bool,
    read_only: Sequence[str] = (".git", ".lathe"),
    deny_read: Sequence[str] = (),
    deny_write: Sequence[str] = (),
    home: Path | None = None,
    extra_read_only: Sequence[Path] = (),
    hide_git: bool = False,
) -> list[str]:
    """The bwrap argv up to (not including) the command to run.

    `deny_read` and `deny_write` are patterns in the dialect of `lathe.patterns`, matched
    against every file and folder in the workspace when the command starts."""
    workspace = Path(os.path.abspath(workspace))
    argv = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc"]
    argv += ["--unshare-uts", "--unshare-cgroup-try", "--cap-drop", "ALL"]
    if not network:
        argv.append("--unshare-net")
    for directory in _SYSTEM_DIRS:
        path = Path(directory)
        if path.is_symlink():
            argv += ["--symlink", os.readlink(path), directory]
        elif path.exists():
            argv += ["--ro-bind", directory, directory]
    # The private /tmp first: a tool directory under /tmp (a virtualenv, say) is bound
    # on top of it, not hidden by it.
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for path in tool_paths(home or Path.home(), extra_read_only):
        argv += ["--ro-bind", str(path), str(path)]
    argv += ["--bind", str(workspace), str(workspace)]
    kept = [workspace / name for name in read_only]
    kept += compiled(tuple(deny_write)).existing(workspace)
    for path in dict.fromkeys(_mounted(p, workspace, inside_only=True) for p in kept):
        if path is not None:
            argv += ["--ro-bind", str(path), str(path)]
    hidden = compiled(tuple(deny_read)).existing(workspace)
    if hide_git:
        hidden.append(workspace / ".git")
    argv += _masks([p for p in dict.fromkeys(_mounted(p, workspace) for p in hidden) if p])
    # Directories bwrap created to hold the mounts above must not be writable either.
    argv += ["--remount-ro", "/", "--setenv", "TMPDIR", "/tmp", "--chdir", str(cwd)]
    return [*argv, "--"]


def tool_paths(home: Path, extra: Sequence[Path] = ()) -> list[Path]:
    """The directories outside the system ones that commands see read-only: this
    Python's prefixes, the home directory's toolchains, every PATH entry."""
    candidates = [Path(sys.base_prefix), Path(sys.prefix), *extra]
    candidates += [home / name for name in HOME_TOOLS]
    candidates += [Path(os.environ[v]) for v in _ENV_PREFIXES if os.environ.get(v)]
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if entry:
            # A virtualenv's bin/ needs the rest of the virtualenv (pyvenv.cfg, lib/).
            path = Path(entry)
            candidates.append(path.parent if (path.parent / "pyvenv.cfg").is_file() else path)
    system = tuple(Path(d) for d in _SYSTEM_DIRS)
    chosen: list[Path] = []
    for path in sorted({Path(os.path.abspath(p)) for p in candidates}, key=lambda p: len(p.parts)):
        if not path.exists() or any(path.is_relative_to(s) for s in system):
            continue
        if any(path.is_relative_to(c) for c in chosen) or path in _NEVER_BOUND:
            continue
        chosen.append(path)
    return chosen


def _mounted(path: Path, workspace: Path, *, inside_only: bool = False) -> Path | None:
    """What a mount over `path` must cover: the path itself, or for a symlink the file
    it leads to (a mount onto a link lands on its target, and a masked link must hide
    what it shows). None when there is nothing there, or, with `inside_only`, when the
    target lies outside the workspace: a read-only bind of it would show it."""
    if not path.is_symlink():
        return path if path.exists() else None
    target = path.resolve()
    if not target.exists() or (inside_only and not target.is_relative_to(workspace)):
        return None
    return target


def _masks(paths: Sequence[Path]) -> list[str]:
    argv: list[str] = []
    for path in paths:
        if path.is_dir():
            argv += ["--perms", "0000", "--tmpfs", str(path), "--remount-ro", str(path)]
        else:
            argv += ["--ro-bind", str(_unreadable_file()), str(path)]
    return argv


def _set_aside(workspace: Path, created: Sequence[Path], spill_dir: Path) -> str:
    """Move what a command created under a protected or edit-denied name out of the way
    (bwrap can mount only what exists, so such a path can be created but not kept), and
    say so in the output. Moved, not deleted: nothing the command wrote is lost."""
    folder = spill_dir / "set-aside" / time.strftime("%Y%m%d-%H%M%S")
    moved, failed = [], []
    for path in created:
        relative = path.relative_to(workspace)
        target = folder / relative
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(path), str(target))
        except OSError as exc:
            failed.append(f"{relative} ({exc.strerror or exc})")
        else:
            moved.append(str(relative))
    lines = []
    if moved:
        lines.append(
            f"[lathe: this command created {', '.join(moved)}, which may change only with "
            f"the user's approval (a protected path, or one an edit rule denies), so lathe "
            f"moved it to {folder}]"
        )
    if failed:
        lines.append(f"[lathe: could not move away {', '.join(failed)}]")
    return "\n" + "\n".join(lines) + "\n"


@functools.lru_cache(maxsize=1)
def _unreadable_file() -> Path:
    """An empty file nobody may open; without capabilities not even root inside."""
    path = Path(tempfile.mkdtemp(prefix="lathe-mask-")) / "denied"
    path.touch(mode=0)
    path.chmod(0)
    return path


class BubblewrapExecutor:
    """An `Executor` (see `lathe.exec.base`) that runs every command in a bwrap sandbox.

    `deny_read`: patterns (the dialect of `lathe.patterns`: ".env", "secrets/") whose
    matches anywhere in the workspace are hidden inside the sandbox; `deny_write`: the
    same, mounted read-only. `read_only`: workspace entries mounted read-only (pass () to
    let commands commit). `hide_git`: hide the repository itself (when a denied file is
    in its history, `git show` would reveal it).
    The sandbox is probed on first use; when it cannot start, `run` raises
    `ExecutorUnavailable` with the reason and the fix.
    """

    def __init__(
        self,
        workspace: Path,
        *,
        network: bool = False,
        deny_read: Sequence[str] = (),
        deny_write: Sequence[str] = (),
        read_only: Sequence[str] = (".git", ".lathe"),
        extra_read_only: Sequence[Path] = (),
        bwrap: str = "bwrap",
        env: Mapping[str, str] | None = None,
        status: SandboxStatus | None = None,
        hide_env: Sequence[str] = (),
        keep_env: Sequence[str] = (),
        hide_git: bool = False,
    ) -> None:
        self.workspace = Path(os.path.abspath(workspace))
        self.network = network
        self.deny_read = tuple(deny_read)
        self.deny_write = tuple(deny_write)
        self.read_only = tuple(read_only)
        self.extra_read_only = tuple(extra_read_only)
        self.hide_git = hide_git
        self._bwrap = bwrap
        self._status = status
        # No supervisor: the PID namespace already holds the whole tree, ends with the
        # command, and --die-with-parent ends it with lathe.
        self._local = LocalExecutor(
            self._argv, env=env, hide_env=hide_env, keep_env=keep_env, supervise=False
        )

    @property
    def status(self) -> SandboxStatus:
        if self._status is None:
            self._status = check_bubblewrap(self._bwrap)
        return self._status

    def _argv(self, command: str, cwd: Path) -> list[str]:
        prefix = sandbox_argv(
            self.status.bwrap or self._bwrap, self.workspace, cwd, network=self.network,
            read_only=self.read_only, deny_read=self.deny_read, deny_write=self.deny_write,
            extra_read_only=self.extra_read_only, hide_git=self.hide_git,
        )  # fmt: skip
        return [*prefix, "bash", "-c", command]

    async def run(
        self,
        command: str,
        *,
        cwd: Path,
        timeout: float,
        max_output_bytes: int,
        spill_dir: Path,
    ) -> ExecResult:
        if self._status is None:  # the probe starts a process: keep it off the event loop
            self._status = await asyncio.to_thread(check_bubblewrap, self._bwrap)
        if not self._status.available:
            raise ExecutorUnavailable(self._status.message)
        guarded = compiled(self.deny_write)
        before = set(guarded.existing(self.workspace))
        result = await self._local.run(
            command, cwd=cwd, timeout=timeout, max_output_bytes=max_output_bytes,
            spill_dir=spill_dir,
        )  # fmt: skip
        created = [path for path in guarded.existing(self.workspace) if path not in before]
        if not created:
            return result
        note = _set_aside(self.workspace, created, spill_dir)
        return dataclasses.replace(result, output=result.output + note)
