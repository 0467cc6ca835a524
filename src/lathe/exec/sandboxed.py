"""What every sandbox executor shares (`BubblewrapExecutor`, `GvisorExecutor`,
`ContainerExecutor`): the rules a command runs under, the probe of the sandbox on first
use, and what happens to a path a command creates under an edit-denied name.

A sandbox can mount only what exists, so a protected or edit-denied path that a command
creates can be created but not kept: after each command it is moved aside, under the
spill folder, and the output says where. Moved, not deleted: nothing is lost. So is
what a command makes, or puts back in another's place, of what runs on the host later
in a home folder the workspace holds (`view.HOME_PROTECTED`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import shutil
import stat
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path

from lathe.exec.base import ExecResult, ExecutorUnavailable, SandboxStatus
from lathe.exec.output import make_spill_folder
from lathe.exec.view import HOME_PROTECTED, SandboxView, home_in_workspace, sandbox_view
from lathe.patterns import compiled


def path_the_sandbox_searches() -> str:
    """Where a sandbox looks for a command's program, and what that place must hold: the
    advice of a probe that started the sandbox but found no program in it."""
    return (
        f"the folders of PATH ({os.environ.get('PATH', '')}), which must include one the "
        "sandbox shows (/usr/bin, or a tool folder of yours) holding sh and bash"
    )


class SandboxedExecutor(ABC):
    """An `Executor` (see `lathe.exec.base`) whose commands run in a sandbox.

    `network`: the host's network, else none. `deny_read`: patterns (the dialect of
    `lathe.patterns`: ".env", "secrets/") whose matches anywhere in the workspace are
    hidden; `deny_write`: the same, shown read-only. `read_only`: workspace entries shown
    read-only (pass () to let commands commit). `extra_read_only`: more folders shown
    read-only. `hide_git`: hide the repository itself (when a denied file is in its
    history, `git show` would reveal it). `env`, `hide_env`, `keep_env`: the command's
    environment, as for `LocalExecutor`. `status`: the probe's answer, when known.

    A subclass probes its sandbox (`_check`) and runs one command in it (`_run`); the
    probe runs on first use, and when the sandbox cannot start `run` raises
    `ExecutorUnavailable` with the reason and the fix: nothing runs unsandboxed instead.
    """

    set_aside_dir: Path | None = None
    """Where what a command creates under a protected name is moved (a folder for each
    command in it); None: `set-aside` in the spill folder. A subagent's lies outside its
    own folder, which goes when it ends."""

    def __init__(
        self,
        workspace: Path,
        *,
        network: bool = False,
        deny_read: Sequence[str] = (),
        deny_write: Sequence[str] = (),
        read_only: Sequence[str] = (".git", ".lathe"),
        extra_read_only: Sequence[Path] = (),
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
        self.env = dict(env or {})
        self.hide_env = tuple(hide_env)
        self.keep_env = tuple(keep_env)
        self._status = status

    @abstractmethod
    def _check(self) -> SandboxStatus:
        """Whether the sandbox starts here: a probe that starts one."""

    @abstractmethod
    async def _run(
        self, command: str, cwd: Path, timeout: float, max_output_bytes: int, spill_dir: Path
    ) -> ExecResult:
        """`command` in the sandbox; the probe has passed."""

    @property
    def status(self) -> SandboxStatus:
        if self._status is None:
            self._status = self._check()
        return self._status

    def view(self, cwd: Path) -> SandboxView:
        """What a command in `cwd` sees now (`lathe.exec.view`)."""
        return sandbox_view(
            self.workspace, cwd, network=self.network, read_only=self.read_only,
            deny_read=self.deny_read, deny_write=self.deny_write,
            extra_read_only=self.extra_read_only, hide_git=self.hide_git,
        )  # fmt: skip

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
            self._status = await asyncio.to_thread(self._check)
        if not self._status.available:
            raise ExecutorUnavailable(self._status.message)
        # Made before the command: the sandbox keeps `.lathe` read-only only if it
        # exists, and a spill folder made during the command would pass for the
        # command's own creation, to be moved aside.
        with contextlib.suppress(OSError):  # a spill says why it could not be made
            make_spill_folder(spill_dir)
        guarded = compiled(self.deny_write)
        before = set(guarded.existing(self.workspace))
        home = home_in_workspace(self.workspace)
        kept = {} if home is None else {p: _placed(p, home) for p in _protected(home)}
        result = await self._run(command, cwd, timeout, max_output_bytes, spill_dir)
        created = [path for path in guarded.existing(self.workspace) if path not in before]
        # What runs on the host later, made, or put in place of the one shown read-only.
        created += [p for p, was in kept.items() if _placed(p, home) not in (None, was)]
        created = [p for p in created if not any(p != q and p.is_relative_to(q) for q in created)]
        if not created:
            return result
        note = _set_aside(self.workspace, created, self.set_aside_dir or spill_dir / "set-aside")
        return dataclasses.replace(result, output=result.output + note)


def _protected(home: Path) -> list[Path]:
    """The home folder's entries that run on the host later (`view.HOME_PROTECTED`),
    where the workspace shows them."""
    return [home / name for name in HOME_PROTECTED]


def _placed(path: Path, home: Path) -> tuple[tuple[int, int], ...] | None:
    """What holds `path`, one of `_protected(home)`, in place: the folders between the
    home folder and it, and `path` itself when it is a link; None when nothing is there.
    An entry there is shown read-only and cannot be replaced, but a link can, and a
    folder above it moved away (`mv .config x; mkdir -p .config/git`). A file the user
    edits on the host meanwhile keeps all of these, even when saved as a new file."""
    try:
        own = path.lstat()
        above = [folder.lstat() for folder in path.parents if folder.is_relative_to(home)]
    except OSError:
        return None
    held = [*above, own] if stat.S_ISLNK(own.st_mode) else above
    return tuple((info.st_dev, info.st_ino) for info in held)


def _set_aside(workspace: Path, created: Sequence[Path], aside: Path) -> str:
    """Move what a command created under a protected or edit-denied name out of the way
    (a sandbox can mount only what exists, so such a path can be created but not kept),
    into a folder in `aside`, and say so in the output. Moved, not deleted: nothing the
    command wrote is lost."""
    folder = aside / time.strftime("%Y%m%d-%H%M%S")
    moved, failed = [], []
    for path in created:
        relative = path.relative_to(workspace)
        target = folder / relative
        try:
            make_spill_folder(target.parent)  # under `.lathe/tmp`: with its .gitignore
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
