"""The sandboxes lathe can run commands in, by the name `permissions.sandbox.engine`
gives them. Each module is imported only when its sandbox is chosen; the container
sandbox also needs its `ContainerSpec` (the [container] table)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from lathe.exec.base import Executor, SandboxStatus
from lathe.exec.container import ContainerSpec

ENGINES = ("bubblewrap", "gvisor", "container")


def configured_sandbox(config: Any) -> tuple[str, ContainerSpec | None]:
    """The sandbox a `lathe.config.schema.Config` chooses (`permissions.sandbox.engine`),
    and for the container sandbox the spec its [container] table gives."""
    engine = config.permissions.sandbox.engine
    if engine != "container":
        return engine, None
    table = config.container
    spec = ContainerSpec(
        engine=table.engine, image=table.image, rootfs=table.rootfs,
        engine_args=tuple(table.engine_args),
    )  # fmt: skip
    return engine, spec


@functools.lru_cache(maxsize=8)
def sandbox_status(engine: str, container: ContainerSpec | None = None) -> SandboxStatus:
    """Whether `engine` can start commands here, probed once per process."""
    if engine == "container":
        from lathe.exec.container import check_container

        return check_container(container or ContainerSpec())
    if engine == "gvisor":
        from lathe.exec.gvisor import check_gvisor

        return check_gvisor()
    from lathe.exec.bwrap import check_bubblewrap

    return check_bubblewrap()


def sandboxed_executor(
    engine: str, workspace: Path, container: ContainerSpec | None = None, **options: Any
) -> Executor:
    """The executor of `engine` for `workspace`; `options` are the keyword arguments
    every sandbox takes (network, deny_read, deny_write, status, hide_env, ...)."""
    if engine == "container":
        from lathe.exec.container import ContainerExecutor

        return ContainerExecutor(workspace, container or ContainerSpec(), **options)
    if engine == "gvisor":
        from lathe.exec.gvisor import GvisorExecutor

        return GvisorExecutor(workspace, **options)
    from lathe.exec.bwrap import BubblewrapExecutor

    return BubblewrapExecutor(workspace, **options)
