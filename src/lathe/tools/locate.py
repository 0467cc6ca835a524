"""Where else in the workspace a piece of text occurs.

Small models often get a change right and the file wrong (they edit the test that
calls a function instead of the module that defines it). Naming the file that really
holds the text turns a dead end into the next step.
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import TYPE_CHECKING

from lathe.tools.paths import display_path

if TYPE_CHECKING:
    import ast

_TIMEOUT_S = 10.0
_MAX_READ = 20  # files rg lists that are read to see where the text lies in them

WORD_CHARS = frozenset(string.ascii_letters + string.digits + "_")


def cut_side(text: str, start: int, end: int) -> str:
    """ "starts" when `text[start:end]` begins inside a word of `text` (ASCII letters,
    digits, _), "ends" when it ends inside one, else "": an edit of it would change
    part of a word."""
    if start > 0 and text[start - 1] in WORD_CHARS and text[start] in WORD_CHARS:
        return "starts"
    if end < len(text) and text[end] in WORD_CHARS and text[end - 1] in WORD_CHARS:
        return "ends"
    return ""


def files_containing(
    workspace: Path, text: str, *, besides: Path, unreadable: tuple[str, ...] = (), limit: int = 3
) -> list[tuple[str, int]]:
    """Up to `limit` other files holding `text` exactly, as (display path, first line),
    sorted; [] when there are more than `limit` (the hint would not narrow anything) or
    ripgrep cannot run. A file holding `text` only where it begins or ends inside a
    word (`a = 1` in `a = 10`) does not count: edit would refuse that change."""
    from lathe.tools.grep import RG_COMMON, readable_paths, rg_lines, strip_dot

    if not text.strip():
        return []
    listing = rg_lines(
        [
            *RG_COMMON,
            "--files-with-matches",
            "--fixed-strings",
            "--multiline",
            "--glob=!.lathe",
            "-e",
            text,
            ".",
        ],
        cwd=workspace,
        timeout_s=_TIMEOUT_S,
    )
    if listing is None:
        return []
    skip = besides.resolve()
    listing = readable_paths(sorted(strip_dot(name) for name in listing), unreadable)
    others = [path for name in listing if (path := (workspace / name).resolve()) != skip]
    if len(others) > _MAX_READ:
        return []
    found = []
    for path in others:
        try:
            content = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        index = _first_whole(content, text)
        if index >= 0:
            found.append((display_path(workspace, path), content.count("\n", 0, index) + 1))
    return found if len(found) <= limit else []


def _first_whole(content: str, text: str) -> int:
    """Where `text` first occurs in `content` without beginning or ending inside a
    word, or -1."""
    index = content.find(text)
    while index != -1 and cut_side(content, index, index + len(text)):
        index = content.find(text, index + 1)
    return index


def elsewhere_note(
    workspace: Path,
    text: str,
    *,
    besides: Path,
    unreadable: tuple[str, ...],
    unchangeable: tuple[str, ...] = (),
    what: str,
) -> str:
    """A sentence naming the other files that hold `text`, or "" when none do. Files an
    edit rule forbids (`unchangeable`: the tests, usually) are never suggested: when
    only they hold it, the sentence says so and names the code they use instead."""
    from lathe.policy.rules import matches_any

    found = files_containing(workspace, text, besides=besides, unreadable=unreadable)
    changeable = [(name, line) for name, line in found if not matches_any(name, unchangeable)]
    if changeable:
        places = ", ".join(f"{name} (line {line})" for name, line in changeable)
        return f"The {what} does occur in {places}: did you mean that file?"
    if not found:
        return ""
    names = ", ".join(name for name, _ in found)
    used = code_used_by([workspace / name for name, _ in found], workspace, text, unchangeable)
    instead = f" The code it uses: {used}; change that." if used else ""
    return f"The {what} occurs only in {names}, which you may not change.{instead}"


def code_used_by(
    files: list[Path], workspace: Path, text: str = "", unchangeable: tuple[str, ...] = ()
) -> str:
    """Where the definitions the Python `files` import live, as "NAME in PATH (line N)",
    those named in `text` first, at most three; the files of modules they import whole
    when they import no names; "" when none is found. Small models aim at the test that
    shows a failure; this names the module under test."""
    import ast
    import re

    imported: dict[str, None] = {}
    modules: dict[str, None] = {}
    for path in files:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except (OSError, SyntaxError, ValueError):
            continue
        names, whole = imports(tree)
        imported.update(dict.fromkeys(names.values()))
        modules.update(dict.fromkeys(whole))
    if not imported:
        return ", ".join(_module_files(workspace, list(modules), unchangeable)[:3])
    found = definitions(workspace, list(imported), unchangeable)

    def not_in_text(name: str) -> bool:
        return re.search(rf"\b{re.escape(name)}\b", text) is None

    named = sorted((name for name in imported if name in found), key=not_in_text)
    places = [f"{name} in {found[name][0]} (line {found[name][1]})" for name in named]
    return ", ".join(places[:3])


def imports(tree: ast.Module) -> tuple[dict[str, str], list[str]]:
    """What a Python module imports: the names of `from X import name [as local]`, as
    {local: name} ("*" left out), and the modules it imports whole (`import X.Y`)."""
    import ast

    names: dict[str, str] = {}
    whole: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names.update((a.asname or a.name, a.name) for a in node.names if a.name != "*")
        elif isinstance(node, ast.Import):
            whole.extend(alias.name for alias in node.names)
    return names, whole


def _module_files(workspace: Path, modules: list[str], unchangeable: tuple[str, ...]) -> list[str]:
    """The workspace files of `import X.Y` modules (X/Y.py or X/Y/__init__.py)."""
    from lathe.policy.rules import matches_any

    found = []
    for module in modules:
        base = module.replace(".", "/")
        for candidate in (f"{base}.py", f"{base}/__init__.py"):
            if (workspace / candidate).is_file() and not matches_any(candidate, unchangeable):
                found.append(candidate)
                break
    return found


def definitions(
    workspace: Path, names: list[str], unchangeable: tuple[str, ...]
) -> dict[str, tuple[str, int]]:
    """(display path, line) of the first `def NAME`/`class NAME` of each of `names` in a
    changeable Python file of the workspace, found with one rg search."""
    import re

    from lathe.policy.rules import matches_any
    from lathe.tools.grep import RG_COMMON, rg_lines, strip_dot

    if not names:
        return {}
    alternatives = "|".join(re.escape(name) for name in names)
    listing = rg_lines(
        [*RG_COMMON, "--line-number", "--glob=*.py", "--glob=!.lathe",
         "-e", rf"^\s*(async\s+def|def|class)\s+({alternatives})\b", "."],
        cwd=workspace, timeout_s=_TIMEOUT_S,
    )  # fmt: skip
    defines = re.compile(rf"^\s*(?:async\s+def|def|class)\s+({alternatives})\b")
    found: dict[str, tuple[str, int]] = {}
    for hit in sorted(listing or []):
        where, _, rest = hit.partition(":")
        line, _, code = rest.partition(":")
        match = defines.match(code)
        where = strip_dot(where)
        if match is None or not line.isdigit() or matches_any(where, unchangeable):
            continue
        found.setdefault(match.group(1), (display_path(workspace, workspace / where), int(line)))
    return found
