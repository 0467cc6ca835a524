"""git config keys that make git run a program, and the `git config` calls that set them.

`git config core.hooksPath /tmp/h` (or core.fsmonitor, core.sshCommand, an alias, a
filter...) plants a program that git runs later, outside anything the guard sees; so
setting one of these keys persistently, in any scope, is refused. For one command,
`git -c core.pager=less log` is the way, and the walker judges that value as a command.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence

from lathe.policy.shell_words import Word

# `git` options before the subcommand that take the next word.
GLOBAL_VALUE_OPTIONS = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env"}
)
# Keys as git compares them: section and name case-insensitively, the subsection (`*`)
# as written.
_RUNS_PROGRAM = re.compile(
    r"core\.(hookspath|fsmonitor|sshcommand|pager|editor|askpass|gitproxy"
    r"|alternaterefscommand)"
    r"|sequence\.editor|diff\.external|diff\.[^.]+\.(textconv|command)"
    r"|merge\.[^.]+\.driver|(mergetool|difftool)\.[^.]+\.cmd|filter\.[^.]+\.(clean|smudge|process)"
    r"|alias\..+|pager\..+|credential(\.[^.]+)?\.helper|gpg(\.[^.]+)?\.program"
    r"|uploadpack\.packobjectshook|remote\.[^.]+\.(uploadpack|receivepack)"
    r"|protocol(\.[^.]+)?\.allow|include\.path|includeif\..+\.path|init\.templatedir"
    r"|submodule\.[^.]+\.update|web\.browser|browser\.[^.]+\.cmd|man\.[^.]+\.cmd"
    r"|sendemail\.(smtpserver|tocmd|cccmd)",
)
# Keys whose value is itself a command line, run by `git -c KEY=VALUE ...` right away.
_COMMAND_VALUE = re.compile(
    r"core\.(fsmonitor|sshcommand|pager|editor|askpass)|sequence\.editor|diff\.external"
    r"|alias\..+|pager\..+|credential(\.[^.]+)?\.helper|gpg(\.[^.]+)?\.program"
    r"|filter\.[^.]+\.(clean|smudge|process)|diff\.[^.]+\.(textconv|command)"
)
_READS = frozenset(
    {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--get-colorbool",
     "-l", "--list", "--unset", "--unset-all", "--remove-section", "--rename-section", "-e",
     "--edit", "--show-origin", "--show-scope", "--name-only"}
)  # fmt: skip
_VALUE_OPTIONS = frozenset(
    {"-f", "--file", "--blob", "--type", "--default", "--comment", "--value", "-t"}
)
_SUBCOMMANDS = frozenset({"list", "get", "set", "unset", "rename-section", "remove-section",
                          "edit"})  # fmt: skip


def _normal(key: str) -> str:
    first, _, rest = key.partition(".")
    middle, _, last = rest.rpartition(".")
    if not middle:
        return f"{first.lower()}.{last.lower()}"
    return f"{first.lower()}.{middle}.{last.lower()}"


def runs_program(key: str) -> bool:
    return _RUNS_PROGRAM.fullmatch(_normal(key)) is not None


# Variables through which the environment sets any key of git's config, as `-c` does.
_CONFIG_VARIABLE = re.compile(r"GIT_CONFIG_(PARAMETERS|COUNT|KEY_\d+|VALUE_\d+)")


def set_by_environment(assigned: Sequence[str]) -> bool:
    """Whether the variables a command sets give git config keys (`GIT_CONFIG_COUNT`,
    `GIT_CONFIG_KEY_0`, ..., `GIT_CONFIG_PARAMETERS`)."""
    return any(_CONFIG_VARIABLE.fullmatch(name) for name in assigned)


def from_environment(environment: Mapping[str, Word]) -> tuple[list[tuple[str, Word]], bool]:
    """The (key, value) pairs variables set for git's config — `GIT_CONFIG_COUNT` with
    `GIT_CONFIG_KEY_<n>`/`GIT_CONFIG_VALUE_<n>`, `GIT_CONFIG_PARAMETERS` (`'key=value'
    ...`) — and whether some could not be read (a value known only at run time)."""
    pairs: list[tuple[str, Word]] = []
    unknown = False
    parameters = environment.get("GIT_CONFIG_PARAMETERS")
    if parameters is not None:
        try:
            items = shlex.split(parameters.value) if parameters.value is not None else None
        except ValueError:
            items = None
        if items is None:
            unknown = True
        for item in items or ():
            key, _, value = item.partition("=")
            pairs.append((key, Word(item, value)))
    count = environment.get("GIT_CONFIG_COUNT")
    if count is not None:
        if count.value is None or not count.value.strip().isdigit():
            return pairs, True
        for n in range(min(int(count.value), 100)):
            key, value = (
                environment.get(f"GIT_CONFIG_KEY_{n}"),
                environment.get(f"GIT_CONFIG_VALUE_{n}"),
            )
            if key is None or value is None:
                continue  # git itself refuses a missing pair
            if key.value is None:
                unknown = True
                continue
            pairs.append((key.value, value))
    return pairs, unknown


def value_is_command(key: str) -> bool:
    return _COMMAND_VALUE.fullmatch(_normal(key)) is not None


def key_set(args: Sequence[str]) -> str | None:
    """The key `git config args...` writes, or None when it only reads or unsets."""
    positional: list[str] = []
    mode = "legacy"
    i = 0
    while i < len(args):
        value = args[i]
        if value in _READS:
            return None
        if value in _VALUE_OPTIONS:
            i += 2
            continue
        if value.startswith("-"):
            i += 1
            continue
        if not positional and mode == "legacy" and value in _SUBCOMMANDS:
            if value != "set":
                return None
            mode = "set"
        else:
            positional.append(value)
        i += 1
    if len(positional) >= 2 or (mode == "set" and positional):
        return positional[0]
    return None
