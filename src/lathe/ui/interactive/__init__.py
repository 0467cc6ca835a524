"""The interactive terminal face (`lathe` with no subcommand).

app.py runs the session (prompt, turns, interrupts, approvals); render.py turns agent
events into terminal output; input.py is the prompt_toolkit input line; commands.py the
slash commands; approval.py reads approval answers and previews diffs (the seam is
lathe.policy.gate.Approver, which InteractiveApp implements); links.py ties in sessions and
checkpoints. Nothing here is imported by `lathe --version`: rich and prompt_toolkit are
imported inside functions.
"""
