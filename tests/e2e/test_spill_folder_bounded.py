"""The spill folder stays bounded over a run: three `yes` under a 2 s timeout left 193 MB
(3 x 64 MiB) in <workspace>/.lathe/tmp, and nothing ever deleted a spill file. Each
result still names a file that exists when the model reads it: the one it was just
given, and the one before."""

from __future__ import annotations

import re
from pathlib import Path

from tests.e2e.test_calculator import run_against, workspace
from tests.fakes.openai_server import Call, Reply

from lathe.exec.output import SPILL_FOLDER_MAX_BYTES, SPILL_MAX_BYTES


def test_three_endless_outputs_leave_at_most_the_folder_bound(tmp_path, fake_openai) -> None:
    ws = workspace(tmp_path)
    floods = [Call("bash", {"command": f"yes {word}", "timeout": 2}) for word in "abc"]
    fake_openai.enqueue(*(Reply(calls=[flood]) for flood in floods), Reply("done"))

    result = run_against(fake_openai, ws, tmp_path, "--approval", "full", "flood it")

    assert result.returncode == 0, result.stderr[-2000:]
    # Each request carries the newest result whole (older ones may be pruned).
    outputs = [
        [m["content"] for m in body["messages"] if m["role"] == "tool"][-1]
        for body in fake_openai.chat_bodies()[1:]
    ]
    named = [Path(re.search(r"the full output is in (\S+)\.", o)[1]) for o in outputs]
    assert len(set(named)) == 3
    folder = ws / ".lathe" / "tmp"
    spills = sorted(folder.glob("*.log"))
    assert sum(p.stat().st_size for p in spills) <= SPILL_FOLDER_MAX_BYTES + 1024
    assert SPILL_FOLDER_MAX_BYTES < 3 * SPILL_MAX_BYTES
    assert named[1].exists() and named[2].exists()  # the latest results' files stay
    assert not named[0].exists()
