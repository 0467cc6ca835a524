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
    workspace: Path, text: str, *, besides: Path, unreadable: tuple[str, ...], what: str
) -> str:
    """A sentence naming the other files that hold `text`, or "" when none do."""
    found = files_containing(workspace, text, besides=besides, unreadable=unreadable)
    if not found:
        return ""
    places = ", ".join(f"{name} (line {line})" for name, line in found)
    return f"The {what} does occur in {places}: did you mean that file?"
