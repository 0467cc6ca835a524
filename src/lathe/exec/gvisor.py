"""Run the `bash` tool's commands inside gVisor (`runsc`): a kernel of its own in user
space between the command and the host's, for users who want a stronger boundary than
bubblewrap's namespaces.

The command sees the same file system as in the bubblewrap sandbox (`lathe.exec.view`):
the system and the toolchains read-only, the workspace writable except `.git` and
`.lathe`, denied paths masked, edit-denied ones read-only, a private /tmp; no network
unless asked for (then the host's), no capabilities. Each command is one OCI bundle run
by `runsc run`: a root of our own (empty but for the system directories' symlinks,
read-only) with every directory bound at its own path, so the workspace is really the
host's folder and what the command writes there stays.

Process handling is `LocalExecutor`'s under its supervisor: runsc starts its sandbox and
file proxy in sessions of their own, which a process group cannot reach but the
supervisor, a subreaper, does. Inside, every process belongs to the sandbox and ends
with it; the command runs in `local.census_argv`'s wrapper, which counts what it left
running for the note saying it was stopped (the supervisor sees only runsc's own). When
runsc is missing or cannot start a sandbox, `run` raises `ExecutorUnavailable` with the
probe's message; nothing ever runs unsandboxed instead.

Known limit of older runsc releases (Debian's 20221219 among them): `statx` with
`AT_NO_AUTOMOUNT` fails with EINVAL, so `ls -l` and `stat` report "Invalid argument";
plain `ls`, Python, git and test runners work.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lathe.exec.base import ExecResult, SandboxStatus
from lathe.exec.local import LocalExecutor, census_argv
from lathe.exec.sandboxed import SandboxedExecutor, path_the_sandbox_searches
from lathe.exec.scratch import scratch_folder
from lathe.exec.view import SandboxView, sandbox_view, unreadable_file

_PROBE_TIMEOUT_S = 30.0
_INSTALL_HINT = (
    "Install it with `sudo apt-get install runsc` (Debian/Ubuntu) or from "
    "https://gvisor.dev/docs/user_guide/install/, or choose the bubblewrap sandbox "
    "(`--sandbox bubblewrap`)."
)
_NAMESPACES = ("pid", "network", "ipc", "uts", "mount")


def check_gvisor(runsc: str = "runsc") -> SandboxStatus:
    """Start `true` in the same kind of sandbox `GvisorExecutor` builds, in the census
    wrapper and with the PATH every command runs with: `bash -c true` under the default
    PATH passed without the `sh` each command needs, and every command failed."""
    found = shutil.which(runsc)
    if found is None:
        return SandboxStatus(
            False,
            f"Commands cannot run under gVisor: runsc ({runsc!r}) is not installed or not "
            f"on PATH. {_INSTALL_HINT}",
        )
    folder = scratch_folder("probe", reachable=True)
    try:
        workspace = folder / "workspace"
        workspace.mkdir()
        bundle = _write_bundle(
            folder / "bundle",
            sandbox_view(workspace, workspace, network=False),
            census_argv("true"),
            {"PATH": os.environ.get("PATH", os.defpath)},
        )
        try:
            probe = subprocess.run(
                _runsc_argv(found, bundle, network=False, scratch=folder),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=_PROBE_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return SandboxStatus(False, f"Commands cannot run under gVisor: {found} failed: {exc}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if probe.returncode == 0:
        return SandboxStatus(True, f"sandboxed with gVisor ({found})", found)
    lines = probe.stderr.decode("utf-8", "replace").strip().splitlines()
    error = lines[-1] if lines else f"exit code {probe.returncode}"
    if "error finding executable" in error:  # the sandbox started: not a matter of root
        advice = f"runsc looks for the program in {path_the_sandbox_searches()}"
    else:
        advice = "runsc needs root, or a release that supports --rootless"
    return SandboxStatus(
        False,
        f"Commands cannot run under gVisor: {found} is installed but could not start a "
        f"sandbox here ({error}). {advice}; or choose the bubblewrap sandbox "
        "(`--sandbox bubblewrap`).",
        found,
    )


class GvisorExecutor(SandboxedExecutor):
    """A `SandboxedExecutor` that runs every command under gVisor; `runsc` is the
    program to run."""

    def __init__(self, workspace: Path, *, runsc: str = "runsc", **rules: Any) -> None:
        super().__init__(workspace, **rules)
        self._runsc = runsc
        # What the supervised executor runs is runsc; the "command" it is handed is the
        # bundle folder, which holds the real command (see `_argv`).
        self._local = LocalExecutor(
            self._argv, env=self.env, hide_env=self.hide_env, keep_env=self.keep_env,
            supervise=True, census=True,
        )  # fmt: skip

    def _check(self) -> SandboxStatus:
        return check_gvisor(self._runsc)

    async def _run(
        self, command: str, cwd: Path, timeout: float, max_output_bytes: int, spill_dir: Path
    ) -> ExecResult:
        scratch = scratch_folder("gvisor", reachable=True)
        try:
            bundle = _write_bundle(
                scratch, self.view(cwd), census_argv(command), self._local.environment()
            )
            return await self._local.run(
                str(bundle), cwd=cwd, timeout=timeout, max_output_bytes=max_output_bytes,
                spill_dir=spill_dir,
            )  # fmt: skip
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _argv(self, bundle: str, cwd: Path) -> list[str]:
        runsc = self.status.binary or self._runsc
        # The bundle is the command's scratch folder itself (`_run`).
        return _runsc_argv(runsc, Path(bundle), network=self.network, scratch=Path(bundle))


def _runsc_argv(runsc: str, bundle: Path, *, network: bool, scratch: Path) -> list[str]:
    """runsc running the bundle as a container of its own; its state lives in the
    bundle's folder and its temp files in `scratch`, the folder made for the command
    (`scratch_folder`), removed after it. runsc writes to TMPDIR after dropping root,
    and failed every command with a TMPDIR inside a private folder (pam_tmpdir's)."""
    return [
        "/usr/bin/env",
        f"TMPDIR={scratch}",
        runsc,
        f"--root={bundle / 'state'}",
        f"--network={'host' if network else 'none'}",
        "--ignore-cgroups",
        "run",
        f"--bundle={bundle}",
        f"lathe-{uuid.uuid4().hex[:16]}",
    ]


def _write_bundle(folder: Path, view: SandboxView, argv: list[str], env: Mapping[str, str]) -> Path:
    """An OCI bundle in `folder` that runs `argv` in `view`."""
    root = folder / "root"
    root.mkdir(parents=True)
    for directory, link in view.system:
        if link is not None:
            (root / directory.lstrip("/")).symlink_to(link)
    spec = {
        "ociVersion": "1.0.0",
        "process": {
            "terminal": False,
            "user": {"uid": os.getuid(), "gid": os.getgid()},
            "args": argv,
            "env": [f"{k}={v}" for k, v in {**env, "TMPDIR": "/tmp"}.items()],
            "cwd": str(view.cwd),
            "capabilities": {
                k: [] for k in ("bounding", "effective", "permitted", "inheritable", "ambient")
            },
            "noNewPrivileges": True,
        },
        "root": {"path": str(root), "readonly": True},
        "hostname": "lathe",
        "mounts": _mounts(view),
        # The host's network is runsc's --network=host; a namespace of its own would
        # leave the command without one.
        "linux": {
            "namespaces": [
                {"type": kind} for kind in _NAMESPACES if kind != "network" or not view.network
            ]
        },
    }
    (folder / "config.json").write_text(json.dumps(spec), encoding="utf-8")
    return folder


def _mounts(view: SandboxView) -> list[dict[str, Any]]:
    def bind(path: Path | str, *, writable: bool = False, source: Path | None = None):
        options = ["rbind", "rw" if writable else "ro"]
        return {"destination": str(path), "type": "bind", "source": str(source or path),
                "options": options}  # fmt: skip

    mounts: list[dict[str, Any]] = [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs"},
    ]
    mounts += [bind(directory) for directory, link in view.system if link is None]
    mounts += [bind(path) for path in view.tools]
    mounts += [{"destination": str(p), "type": "tmpfs", "source": "tmpfs"} for p in view.covered]
    mounts.append(bind(view.workspace, writable=True))
    mounts += [bind(path) for path in view.read_only]
    # After the workspace, which may hold the config (started in ~) and had brought the
    # real one back over the copy.
    mounts += [bind(path, source=copy) for path, copy in view.copies]
    for path in view.hidden:
        if path.is_dir():
            mounts.append({"destination": str(path), "type": "tmpfs", "source": "tmpfs",
                           "options": ["ro", "mode=000"]})  # fmt: skip
        else:
            mounts.append(bind(path, source=unreadable_file()))
    return mounts
