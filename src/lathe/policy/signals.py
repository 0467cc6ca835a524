"""Signals that reach every process or lathe itself: `kill -9 -1`, `kill $PPID`,
`pkill -u me`, `pkill python`, `killall5`.

Commands run in their own session and process group, so `kill 0` only reaches the
command's own group and is allowed; `kill -1` reaches every process the user may signal,
lathe included. lathe runs as a Python program named `lathe`, so a pkill or killall
pattern that matches those names would stop it too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from lathe.policy.shell_words import Word

# What `pkill PATTERN` (process names) and `pkill -f PATTERN` (command lines) see of lathe.
_LATHE_NAMES = ("lathe", "python3", "python")
_LATHE_COMMAND_LINES = ("python3 -m lathe run", "/usr/bin/python3 /usr/local/bin/lathe run")
_PKILL_VALUES = "ugUGPstFeq"
_PKILL_LONG = frozenset({"--signal", "--euid", "--uid", "--group", "--pgroup", "--parent",
                         "--session", "--terminal", "--pidfile", "--ns", "--nslist"})  # fmt: skip
_KILLALL_VALUES = "sunoyZ"
_SIGNAL_NAMES = frozenset(
    {"HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL", "USR1", "SEGV",
     "USR2", "PIPE", "ALRM", "TERM", "STKFLT", "CHLD", "CONT", "STOP", "TSTP", "TTIN",
     "TTOU", "URG", "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "IO", "PWR", "SYS"}
)  # fmt: skip
_KILLALL_LONG = frozenset({"--signal", "--user", "--older-than", "--younger-than", "--context"})


def every_process(pid: str) -> str | None:
    """Why signalling `pid` (as kill(2) takes it) is refused, or None."""
    if pid == "-1":
        return "signals every process you may signal, lathe included"
    if pid == "1":
        return "signals init (PID 1)"
    if pid == "ppid":
        return "signals the process that started the command: lathe itself"
    return None


def kill(args: Sequence[Word]) -> list[str]:
    """Reasons `kill args...` is refused (empty if it is not)."""
    i = 0
    signal = "TERM"
    if args and args[0].value in ("-s", "-n") and len(args) > 1:
        signal, i = args[1].value or "?", 2
    elif args and args[0].value in ("-l", "-L", "--list", "--table"):
        return []
    elif args and (args[0].value or "").startswith("-") and args[0].value != "--":
        signal, i = (args[0].value or "-?")[1:], 1
    if i < len(args) and args[i].value == "--":
        i += 1
    if signal in ("0", "s 0"):
        return []  # signal 0 only checks the process exists
    reasons = []
    for word in args[i:]:
        pid = "ppid" if word.text in ("$PPID", "${PPID}", '"$PPID"') else word.value
        why = every_process(pid or "")
        if why:
            reasons.append(f"kill {word.text} {why}")
    return reasons


def by_name(base: str, args: Sequence[Word]) -> str | None:
    """Why `pkill`/`killall`/`killall5` is refused, or None."""
    if base == "killall5":
        return "killall5 signals every process on the machine"
    pkill = base == "pkill"
    values, longs = (_PKILL_VALUES, _PKILL_LONG) if pkill else (_KILLALL_VALUES, _KILLALL_LONG)
    patterns: list[str | None] = []
    users = full = regex = False
    i = 0
    while i < len(args):
        value = args[i].value
        if value is None:
            patterns.append(None)
        elif value.startswith("--"):
            name = value.split("=", 1)[0]
            users = users or name in ("--user", "--euid", "--uid", "--group")
            full = full or name == "--full"
            regex = regex or name == "--regexp"
            i += name in longs and "=" not in value
        elif value.startswith("-") and len(value) > 1 and not _is_signal(value[1:]):
            letter = value[1]
            users = users or letter in "uUgG"
            full = full or (pkill and "f" in value and letter not in values)
            regex = regex or (base == "killall" and letter == "r")
            i += letter in values and len(value) == 2
        elif not value.startswith("-"):
            patterns.append(value)
        i += 1
    if not patterns:
        return f"{base} signals every process of a user" if users else None
    for pattern in patterns:
        if pattern is None:
            continue
        if _matches_lathe(pattern, pkill or regex, full):
            return f"{base} {pattern} would stop lathe itself (and every process it matches)"
    return None


def _matches_lathe(pattern: str, is_regex: bool, full: bool) -> bool:
    if not is_regex:
        return pattern in _LATHE_NAMES
    subjects = _LATHE_COMMAND_LINES if full else _LATHE_NAMES
    try:
        return any(re.search(pattern, s) for s in subjects)
    except re.error:
        return False


def _is_signal(text: str) -> bool:
    name = text.upper().removeprefix("SIG")
    return text.isdigit() or name in _SIGNAL_NAMES or name.startswith("RTM")
