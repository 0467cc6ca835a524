"""`@path` in an interactive message attaches the file's first 200 KB. A 3 GB log was
read whole first (memory past 1.6 GB, the screen frozen for 15 s) and then cut."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from lathe.policy.gate import Mode, Policy
from lathe.policy.rules import RuleSet
from lathe.ui.interactive.input import expand_references


def _policy(workspace: Path) -> Policy:
    return Policy(Mode.ASK, RuleSet.from_strings(), workspace, workspace, sandboxed=False)


def test_a_huge_file_is_read_only_as_far_as_it_is_attached(tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    with big.open("wb") as log:
        log.write(b"line one\n" * 1000)
        log.truncate(3 * 1024**3)  # sparse: no disk, but 3 GB to read

    policy = _policy(tmp_path)
    tracemalloc.start()
    try:
        message, attached, problems = expand_references("look at @big.log", tmp_path, policy)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert peak < 5 * 1024**2, f"{peak:,} bytes held to attach 200 KB"
    assert attached == ["big.log"] and problems == []
    assert "line one" in message and "the file is longer" in message


def test_a_named_pipe_is_not_read(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / "pipe")
    message, attached, problems = expand_references("see @pipe", tmp_path, _policy(tmp_path))
    assert attached == [] and message == "see @pipe"
    assert problems == ["@pipe is not a file in the workspace; not attached"]
