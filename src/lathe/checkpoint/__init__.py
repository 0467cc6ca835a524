"""Checkpoints and undo: every state of the workspace between agent turns, recoverable.

    cp = Checkpoints(workspace, lathe_home())
    cp.before_turn(turn)      # before a turn's tools run
    cp.after_turn(turn)       # after them
    cp.undo() / cp.restore(n) / cp.list()

See `store.py` for the contract and `shadow.py` for how the user's repository is kept
out of reach.
"""

from __future__ import annotations

from lathe.checkpoint.model import Checkpoint, FileChange, RestoreReport
from lathe.checkpoint.store import Checkpoints, find_workspace

__all__ = ["Checkpoint", "Checkpoints", "FileChange", "RestoreReport", "find_workspace"]
