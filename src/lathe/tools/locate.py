"""Where else in the workspace a piece of text occurs.

Small models often get a change right and the file wrong (they edit the test that
calls a function instead of the module that defines it). Naming the file that really
holds the text turns a dead end into the next step.
"""

from __future__ import annotations

from pathlib import Path

from lathe.tools.paths import display_path

_TIMEOUT_S = 10.0


def files_containing(
    workspace: Path, text: str, *, besides: Path, unreadable: tuple[str, ...] = (), limit: int = 3
) -> list[tuple[str, int]]:
    """Up to `limit` other files holding `text` exactly, as (display path, first line),
    sorted; [] when there are more than `limit` (the hint would not narrow anything) or
    ripgrep cannot run."""
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
    if len(others) > limit:
        return []
    found = []
    for path in others:
        try:
            content = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        index = content.find(text)
        if index >= 0:
            found.append((display_path(workspace, path), content.count("\n", 0, index) + 1))
    return found


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
    those named in `text` first, at most three; "" when none is found. Small models
    aim at the test that shows a failure; this names the module under test."""
    import ast
    import re

    from lathe.policy.rules import matches_any

    imported: dict[str, None] = {}
    modules: dict[str, None] = {}
    for path in files:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except (OSError, SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                imported.update((alias.name, None) for alias in node.names if alias.name != "*")
            elif isinstance(node, ast.Import):
                modules.update((alias.name, None) for alias in node.names)
    if not imported:
        return ", ".join(_module_files(workspace, list(modules), unchangeable, matches_any)[:3])
    named = sorted(imported, key=lambda name: re.search(rf"\b{re.escape(name)}\b", text) is None)
    places = []
    for name in named:
        place = _definition(workspace, name, unchangeable, matches_any)
        if place:
            places.append(f"{name} in {place[0]} (line {place[1]})")
        if len(places) == 3:
            break
    return ", ".join(places)


def _module_files(
    workspace: Path, modules: list[str], unchangeable: tuple[str, ...], matches_any
) -> list[str]:
    """The workspace files of `import X.Y` modules (X/Y.py or X/Y/__init__.py)."""
    found = []
    for module in modules:
        base = module.replace(".", "/")
        for candidate in (f"{base}.py", f"{base}/__init__.py"):
            if (workspace / candidate).is_file() and not matches_any(candidate, unchangeable):
                found.append(candidate)
                break
    return found


def _definition(workspace: Path, name: str, unchangeable: tuple[str, ...], matches_any):
    """(display path, line) of the first `def NAME`/`class NAME` in a changeable Python
    file of the workspace, or None."""
    from lathe.tools.grep import RG_COMMON, rg_lines, strip_dot

    pattern = rf"^\s*(async\s+def|def|class)\s+{name}\b"
    listing = rg_lines(
        [*RG_COMMON, "--line-number", "--glob=*.py", "--glob=!.lathe", "-e", pattern, "."],
        cwd=workspace,
        timeout_s=_TIMEOUT_S,
    )
    for hit in sorted(listing or []):
        where, _, rest = hit.partition(":")
        line, _, _ = rest.partition(":")
        where = strip_dot(where)
        if line.isdigit() and not matches_any(where, unchangeable):
            return display_path(workspace, workspace / where), int(line)
    return None
