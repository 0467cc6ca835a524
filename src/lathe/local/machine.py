"""What this machine offers the llama.cpp build and server: the CPUs this process may
use, and the memory available now."""

from __future__ import annotations

import os
from pathlib import Path


def usable_cpus() -> set[int]:
    """The CPUs this process may run on; empty where the platform does not say."""
    return os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()


def usable_cores() -> int:
    """How many CPUs this process may use, at least one."""
    return len(usable_cpus()) or os.cpu_count() or 1


def available_memory() -> int | None:
    """Bytes of memory available now (Linux's MemAvailable), or None where unknown."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None
