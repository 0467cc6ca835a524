"""Run the `bash` tool's commands inside a bubblewrap sandbox.

What a command sees is `lathe.exec.view`'s, rendered as bwrap mounts. Inside: the system
(/usr, /etc, /opt, ...) and the user's tool directories read-only, the workspace read-
write except `.git` and `.lathe` (read-only unless allowed), a private /tmp, a minimal
/dev and a fresh /proc, no network unless asked for, a new PID namespace, no
capabilities, and the sandbox dies with lathe. The rest of the home directory is not
there at all, so secrets in it (~/.ssh, ~/.aws) cannot be read and nothing outside the
workspace can be written. Paths denied for reading are masked wherever they are in the
workspace: a file becomes an unreadable empty file, a directory an empty one. Paths
denied for editing are mounted read-only, so no command can change them or create files
under them. Both are matched when the command starts (`lathe.patterns`), so a file
created later escapes them.

Process handling (process group, timeout, output capping) is `LocalExecutor`'s, without
its supervisor: bwrap is the new PID namespace's init, so every process a command starts
dies when the command ends or times out, and `--die-with-parent` ends them with lathe.
The command runs in `local.census_argv`'s wrapper, which counts what it left running for
the note saying it was stopped. This module only builds the argv in front of it. When
bubblewrap is missing or cannot start, `run` raises `ExecutorUnavailable` with the probe's
message: the caller asks or refuses, it never falls back to running the command
unsandboxed.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from lathe.exec.base import ExecResult, SandboxStatus
from lathe.exec.local import LocalExecutor, census_argv
from lathe.exec.sandboxed import SandboxedExecutor, path_the_sandbox_searches
from lathe.exec.view import SandboxView, sandbox_view, unreadable_file

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


def check_bubblewrap(bwrap: str = "bwrap") -> SandboxStatus:
    """Start a trivial command in the same kind of sandbox `BubblewrapExecutor` builds,
    in the census wrapper every command runs in: `true` alone passed without the `sh`
    and `bash` each command needs, and every command failed."""
    found = shutil.which(bwrap)
    if found is None:
        return SandboxStatus(
            False,
            f"Commands cannot be sandboxed: bubblewrap ({bwrap!r}) is not installed or not "
            f"on PATH. {_INSTALL_HINT}",
        )
    with tempfile.TemporaryDirectory(prefix="lathe-probe-") as workspace:
        argv = bwrap_argv(found, sandbox_view(Path(workspace), Path(workspace), network=False))
        try:
            probe = subprocess.run(
                [*argv, *census_argv("true")],
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
    advice = _diagnosis(error)
    return SandboxStatus(
        False,
        f"Commands cannot be sandboxed: {found} is installed but could not start a sandbox "
        f"here ({error})." + (f" {advice}" if advice else ""),
        found,
    )


def _diagnosis(error: str) -> str:
    """What to do about bwrap's `error`; "" when it names no cause lathe knows, since its
    own words say more than a guess: every failure was once blamed on user namespaces,
    a program missing inside the sandbox too."""
    lowered = error.lower()
    if "execvp" in lowered:
        return (
            "bwrap started the sandbox but could not run the program in it: it looks for it "
            f"in {path_the_sandbox_searches()}."
        )
    if any(s in lowered for s in ("namespace", "uid map", "operation not permitted")):
        return _USERNS_HINT
    if "setuid" in lowered or "capabilit" in lowered:
        return (
            "The bwrap binary's setuid/capability setup is broken; reinstall it with "
            "`sudo apt-get install --reinstall bubblewrap`. " + _USERNS_HINT
        )
    return ""


def bwrap_argv(bwrap: str, view: SandboxView) -> list[str]:
    """`view` as bwrap mounts: the argv up to (not including) the command to run."""
    argv = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc"]
    argv += ["--unshare-uts", "--unshare-cgroup-try", "--cap-drop", "ALL"]
    if not view.network:
        argv.append("--unshare-net")
    for directory, link in view.system:
        if link is not None:
            argv += ["--symlink", link, directory]
        else:
            argv += ["--ro-bind", directory, directory]
    # The private /tmp first: a tool directory under /tmp (a virtualenv, say) is bound
    # on top of it, not hidden by it.
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for path in view.tools:
        argv += ["--ro-bind", str(path), str(path)]
    for path in view.covered:  # before the workspace, which may lie inside
        argv += ["--tmpfs", str(path)]
    argv += ["--bind", str(view.workspace), str(view.workspace)]
    for path in view.read_only:
        argv += ["--ro-bind", str(path), str(path)]
    # A git config shown without its credentials, and what is hidden, after the
    # workspace: started in ~, its bind brought the real config back over the copy.
    for path, copy in view.copies:
        argv += ["--ro-bind", str(copy), str(path)]
    for path in view.hidden:
        if path.is_dir():
            argv += ["--perms", "0000", "--tmpfs", str(path), "--remount-ro", str(path)]
        else:
            argv += ["--ro-bind", str(unreadable_file()), str(path)]
    # Directories bwrap created to hold the mounts above must not be writable either.
    argv += ["--remount-ro", "/", "--setenv", "TMPDIR", "/tmp", "--chdir", str(view.cwd)]
    return [*argv, "--"]


class BubblewrapExecutor(SandboxedExecutor):
    """A `SandboxedExecutor` that runs every command in a bwrap sandbox; `bwrap` is the
    program to run."""

    def __init__(self, workspace: Path, *, bwrap: str = "bwrap", **rules: Any) -> None:
        super().__init__(workspace, **rules)
        self._bwrap = bwrap
        # No supervisor: the PID namespace already holds the whole tree, ends with the
        # command, and --die-with-parent ends it with lathe.
        self._local = LocalExecutor(
            self._argv, env=self.env, hide_env=self.hide_env, keep_env=self.keep_env,
            supervise=False, census=True,
        )  # fmt: skip

    def _check(self) -> SandboxStatus:
        return check_bubblewrap(self._bwrap)

    def _argv(self, command: str, cwd: Path) -> list[str]:
        prefix = bwrap_argv(self.status.binary or self._bwrap, self.view(cwd))
        return [*prefix, *census_argv(command)]

    async def _run(
        self, command: str, cwd: Path, timeout: float, max_output_bytes: int, spill_dir: Path
    ) -> ExecResult:
        return await self._local.run(
            command, cwd=cwd, timeout=timeout, max_output_bytes=max_output_bytes,
            spill_dir=spill_dir,
        )  # fmt: skip
