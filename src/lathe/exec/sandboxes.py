"""The sandboxes lathe can run commands in, by the name `permissions.sandbox.engine`
gives them. Each module is imported only when its sandbox is chosen."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from lathe.exec.base import Executor, SandboxStatus

ENGINES = ("bubblewrap", "gvisor")


@functools.lru_cache(maxsize=len(ENGINES))
def sandbox_status(engine: str) -> SandboxStatus:
    """Whether `engine` can start commands here, probed once per process."""
    if engine == "gvisor":
        from lathe.exec.gvisor import check_gvisor

        return check_gvisor()
    from lathe.exec.bwrap import check_bubblewrap

    return check_bubblewrap()


def sandboxed_executor(engine: str, workspace: Path, **options: Any) -> Executor:
    """The executor of `engine` for `workspace`; `options` are the keyword arguments
    both executors take (network, deny_read, deny_write, status, hide_env, ...)."""
    if engine == "gvisor":
        from lathe.exec.gvisor import GvisorExecutor

        return GvisorExecutor(workspace, **options)
    from lathe.exec.bwrap import BubblewrapExecutor

    return BubblewrapExecutor(workspace, **options)
