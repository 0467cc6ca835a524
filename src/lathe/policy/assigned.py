"""The variables a builtin sets by naming them in its words (`read IFS`, `printf -v
PATH ...`, `getopts o NAME`), for the walker to follow the ones that change what a
command line runs."""

from __future__ import annotations

# Per builtin: its options that take a value, and those whose value is a name it sets.
_OPTIONS: dict[str, tuple[str, str]] = {
    "read": ("adinNptu", "a"),
    "mapfile": ("dnOsuCc", ""),
    "readarray": ("dnOsuCc", ""),
    "printf": ("v", "v"),
    "wait": ("p", "p"),
    "getopts": ("", ""),
}


def names_set(base: str, values: list[str | None]) -> list[str | None]:
    """The names `base values...` assigns (None: a word only run time knows, which may
    be any name). For a builtin not described here (let, declare, export, unset...),
    every word, as `let IFS=4` and `declare "IFS=,"` may set one."""
    if base not in _OPTIONS:
        return values
    takes_value, names = _OPTIONS[base]
    found: list[str | None] = []
    operands: list[str | None] = []
    i = 0
    while i < len(values):
        value = values[i]
        i += 1
        if value is None and not operands and names:  # `printf "$O" IFS ,`: maybe -v
            found.append(None)
        if value is None or operands or not value.startswith("-") or value in ("-", "--"):
            operands.append(value)
            continue
        for at, letter in enumerate(value[1:], start=1):
            if letter in takes_value:
                given: str | None = value[at + 1 :]
                if not given:
                    given = values[i] if i < len(values) else ""
                    i += 1
                if letter in names:
                    found.append(given)
                break
    if base == "getopts":
        return operands[1:2]
    if base in ("read", "mapfile", "readarray"):
        found += operands
    return found
