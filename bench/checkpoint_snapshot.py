"""Time checkpoint snapshots on a workspace of ~2,000 small files.

    python bench/checkpoint_snapshot.py [--files 2000] [--repeat 10]

Prints the first snapshot (creates the shadow repo and stores every file), a repeated
snapshot with nothing changed, one after a single-file change, and an undo of a turn
that touched ten files. Everything lives in a temporary directory.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from lathe.checkpoint import Checkpoints


def make_workspace(root: Path, count: int) -> None:
    for i in range(count):
        path = root / f"pkg{i % 40:02d}" / f"module_{i:05d}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"# file {i}\nVALUE = {i}\n\ndef f():\n    return VALUE * 2\n")
    (root / ".gitignore").write_text("__pycache__/\n*.pyc\n")


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        workspace, home = Path(tmp, "ws"), Path(tmp, "home")
        workspace.mkdir()
        make_workspace(workspace, args.files)
        cp = Checkpoints(workspace, home)

        first = timed(lambda: cp.snapshot("first"))
        unchanged = [timed(lambda: cp.snapshot("again")) for _ in range(args.repeat)]
        one_change = []
        for i in range(args.repeat):
            (workspace / "pkg00" / "module_00000.py").write_text(f"VALUE = {i}\n")
            one_change.append(timed(lambda: cp.snapshot("changed")))

        cp.before_turn(1)
        for i in range(10):
            (workspace / f"pkg{i:02d}" / f"module_{i:05d}.py").write_text("edited\n")
        after = timed(lambda: cp.after_turn(1))
        undo = timed(cp.undo)
        listing = timed(cp.list)

    print(f"workspace: {args.files} files")
    print(f"first snapshot (init + store all):   {first:8.1f} ms")
    print(f"unchanged snapshot, median of {args.repeat}:  {statistics.median(unchanged):8.1f} ms")
    print(f"one file changed, median of {args.repeat}:    {statistics.median(one_change):8.1f} ms")
    print(f"after_turn with 10 files changed:    {after:8.1f} ms")
    print(f"undo of that turn:                   {undo:8.1f} ms")
    print(f"list ({args.repeat * 1 + 4} checkpoints or fewer):    {listing:8.1f} ms")


if __name__ == "__main__":
    main()
