"""Subagents: children of a run that work on a part of its task in their own workspace."""
