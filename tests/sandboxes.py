"""Skipping a test whose sandbox cannot run here, except where it must.

CI installs bubblewrap and gVisor and sets LATHE_REQUIRE_SANDBOXES=1: there a sandbox
that cannot start fails its tests (with the probe's reason) instead of skipping them,
so a broken install cannot pass as green."""

from __future__ import annotations

import os

import pytest

from lathe.exec.base import SandboxStatus

REQUIRED = os.environ.get("LATHE_REQUIRE_SANDBOXES") == "1"


def needs(status: SandboxStatus, what: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(
        not status.available and not REQUIRED, reason=f"{what} cannot run here: {status.message}"
    )
