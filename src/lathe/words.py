"""Every word lathe itself says to the model, in one place: a set of templates.

A set is a folder of `NAME.md` files. The built-in ones live in `lathe/prompts/`
(`default`); a model profile chooses one by name (`prompts = "default"`) or names a
folder of its own, where any file it lacks falls back to the default set. A template
uses `string.Template` placeholders (`$command`, `${output}`); one trailing newline of
each file is dropped.

A user's set is checked when it is loaded: a template that asks for a placeholder its
default does not provide, or a file that cannot be read as UTF-8 text, is a `UsageError`
then, not a crash in the middle of a run.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from string import Template

from lathe.errors import UsageError

PROMPTS_DIR = Path(__file__).parent / "prompts"
DEFAULT_SET = "default"


class Words:
    """Renders named templates. `say("nudge", description=...)`."""

    def __init__(self, templates: Mapping[str, Template], source: str = DEFAULT_SET) -> None:
        self._templates = dict(templates)
        self.source = source

    def say(self, name: str, **values: object) -> str:
        return self._templates[name].substitute({k: str(v) for k, v in values.items()})

    def names(self) -> list[str]:
        return sorted(self._templates)


def builtin_sets() -> list[str]:
    return sorted(p.name for p in PROMPTS_DIR.iterdir() if p.is_dir())


@cache
def load_words(name: str = DEFAULT_SET, relative_to: Path | None = None) -> Words:
    """The set called `name` (a built-in one), or the folder `name` points to (a
    relative path from `relative_to`, the workspace, when given)."""
    default = _read_folder(PROMPTS_DIR / DEFAULT_SET)
    if name == DEFAULT_SET:
        return Words(default)
    folder = PROMPTS_DIR / name if name in builtin_sets() else Path(name).expanduser()
    if not folder.is_absolute() and name not in builtin_sets() and relative_to is not None:
        folder = relative_to / folder
    if not folder.is_dir():
        raise UsageError(
            f"prompts {name!r}: no such template set; use one of {', '.join(builtin_sets())} "
            "or the path of a folder of NAME.md templates"
        )
    own = _read_folder(folder, name)
    for template_name, template in own.items():
        if template_name not in default:
            raise UsageError(
                f"prompts {name!r}: {template_name}.md is not a template lathe uses; "
                f"the names are: {', '.join(sorted(default))}"
            )
        unknown = set(template.get_identifiers()) - set(default[template_name].get_identifiers())
        if unknown or not template.is_valid():
            what = f"unknown placeholders {sorted(unknown)}" if unknown else "a stray $"
            raise UsageError(
                f"prompts {name!r}: {template_name}.md has {what}; write $$ for a dollar sign, "
                f"and use only what {DEFAULT_SET}/{template_name}.md uses"
            )
    return Words({**default, **own}, source=str(folder))


def _read_folder(folder: Path, name: str = DEFAULT_SET) -> dict[str, Template]:
    """The folder's templates; a file that cannot be read as UTF-8 text is a UsageError
    naming the set (`name`, as the profile gives it) and the file."""
    templates = {}
    for path in sorted(folder.glob("*.md")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(
                f"prompts {name!r}: {path.name} cannot be read: {_unreadable(path, exc)}"
            ) from exc
        templates[path.stem] = Template(text.removesuffix("\n"))
    return templates


def _unreadable(path: Path, exc: OSError | UnicodeDecodeError) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return f"it is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at {exc.start})"
    if path.is_dir():
        return "it is a folder"
    if path.is_symlink() and not path.exists():
        return "it is a link to nothing"
    return exc.strerror or type(exc).__name__
