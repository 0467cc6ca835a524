"""What `--approval full` does not protect, in words shown to users as they are.

Kept apart from the guard (`policy/command.py`, which parses with tree-sitter) so that
`lathe --help` and the first-run notice can say it without importing the guard.
"""

from __future__ import annotations

# What `--approval full` leaves unprotected: the guard's deny list is all that stands
# there, and everything here passes it. Each phrase is shown to users as it is.
FULL_MODE_GAPS: tuple[str, ...] = (
    "anything only known at run time: variables, command output, downloads",
    "commands other programs run that lathe does not follow (ssh, make, tmux send-keys)",
    "code a program reads from a file or downloads at run time",
    "writes by compiled programs and by scripts in languages lathe does not parse",
    "Python, Perl, Ruby, Node or PHP code that builds its paths or commands at run time",
    "deleting or overwriting files inside the workspace",
    "what other modes ask about: sudo, force pushes, hard resets, installs, piped downloads",
    "programs writing their own files outside the workspace (installs, caches, settings)",
    "other tools writing to a path you name outside the workspace (curl -o, tar -C, sort -o)",
    "permission changes outside the workspace, except chmod/chown -R on system paths",
    "scheduling programs to run later (crontab, systemd units, at)",
    "stopping other processes by PID or name (kill 1234, pkill -f server)",
    "reading any file you can read, secrets included",
    "network access: uploads, remote commands, whatever a server sends back",
    "script files over 64 KB, or past 32 files or 8 levels deep in one command",
    "exhausting CPU, memory or disk space",
)
