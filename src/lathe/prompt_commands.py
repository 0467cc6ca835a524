"""Prompt commands: Markdown files that become a message, `/NAME ARGS` in the
interactive session and `lathe run --command NAME [ARGS...]` headless.

`<workspace>/.lathe/commands/NAME.md` and `commands/NAME.md` beside the user config file
are found (the project's wins when both have a name). The file's text, its front matter
removed, is the message, with every `$ARGUMENTS` replaced by the arguments as typed (one
string, words joined by spaces); a text without `$ARGUMENTS` gets non-empty arguments
after it as a last paragraph. Optional front matter gives a `description`, shown by
/help (see `lathe.front_matter`: one-line values, not full YAML). Like skills, a
project's commands are text for the model and need no trust.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from lathe.errors import UsageError

PLACEHOLDER = "$ARGUMENTS"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_MAX_BYTES = 256 * 1024


@dataclass(frozen=True)
class PromptCommand:
    name: str
    description: str
    path: Path
    text: str  # the file's text without its front matter

    def expand(self, arguments: str) -> str:
        """The message this command sends with `arguments`."""
        arguments = arguments.strip()
        if PLACEHOLDER in self.text:
            return self.text.replace(PLACEHOLDER, arguments).strip()
        return f"{self.text.strip()}\n\n{arguments}" if arguments else self.text.strip()


@dataclass
class CommandCatalog:
    """The commands found, by name in the order found, and the files skipped by the
    name they would have had (one line each, naming the file)."""

    commands: dict[str, PromptCommand] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def problems(self) -> list[str]:
        return list(self.skipped.values())


def command_dirs(workspace: Path) -> list[Path]:
    """The folders searched, in order of precedence."""
    from lathe.config.loader import user_config_path

    return [workspace / ".lathe" / "commands", user_config_path().parent / "commands"]


def discover_commands(workspace: Path) -> CommandCatalog:
    from lathe.front_matter import FrontMatterError, split_front_matter

    catalog = CommandCatalog()
    project = command_dirs(workspace)[0]
    for folder in command_dirs(workspace):
        try:
            files = sorted(p for p in folder.glob("*.md") if p.is_file())
        except OSError:
            continue
        for path in files:
            name = path.stem
            if name in catalog.commands or name in catalog.skipped:
                continue
            if not _NAME.fullmatch(name):
                catalog.skipped[name] = (
                    f"prompt command {path} skipped: a command's name is letters, digits, '.', "
                    "'_' and '-', starting with a letter or digit; rename the file"
                )
                continue
            refused = _not_a_command_file(path, workspace if folder == project else None)
            if refused:
                catalog.skipped[name] = f"prompt command {path} skipped: {refused}"
                continue
            try:
                data = path.read_bytes()[: _MAX_BYTES + 1]
                if len(data) > _MAX_BYTES:
                    raise OSError(f"it is larger than {_MAX_BYTES // 1024} KiB")
                values, body = split_front_matter(data.decode("utf-8"), ("description",))
            except (FrontMatterError, OSError, UnicodeDecodeError) as exc:
                catalog.skipped[name] = f"prompt command {path} skipped: {exc}"
                continue
            catalog.commands[name] = PromptCommand(
                name=name, description=values.get("description", ""), path=path, text=body
            )
    return catalog


_SYSTEM_TREES = (Path("/proc"), Path("/sys"), Path("/dev"))


def _not_a_command_file(path: Path, confine: Path | None) -> str | None:
    """Why the file a command's name leads to is not sent to the model as its message,
    or None. A project's commands come with the repository: a link in one to a file
    outside the workspace (`~/.aws/credentials`) would send that file. No command is a
    file named like a secret, or one of the kernel's (`/proc/self/environ`)."""
    from lathe.patterns import SECRET_LIKE
    from lathe.policy.rules import matches_any

    real = Path(os.path.realpath(path))
    if confine is not None and not real.is_relative_to(os.path.realpath(confine)):
        return f"it is a link to {real}, outside the workspace"
    if matches_any(real.name, SECRET_LIKE) or any(real.is_relative_to(t) for t in _SYSTEM_TREES):
        return f"it leads to {real}, which is not sent to the model"
    return None


def expand_command(workspace: Path, name: str, arguments: str) -> str:
    """The message of the prompt command `name` with `arguments`; UsageError, listing
    the commands there are, when there is none of that name (or its file is unreadable)."""
    catalog = discover_commands(workspace)
    name = name.removeprefix("/")
    command = catalog.commands.get(name)
    if command is not None:
        if not (message := command.expand(arguments)):
            raise UsageError(
                f"the prompt command {name!r} sends nothing: {command.path} holds no "
                "message; write the one it sends there, or give it arguments"
            )
        return message
    if name in catalog.skipped:
        raise UsageError(catalog.skipped[name])
    raise UsageError(unknown_command(name, catalog))


def unknown_command(name: str, catalog: CommandCatalog) -> str:
    where = " or ".join(str(folder) for folder in command_dirs(Path(".")))
    if not catalog.commands:
        return (
            f"no prompt command {name!r}: there are none; write one as "
            f".lathe/commands/{name}.md in the workspace"
        )
    return (
        f"no prompt command {name!r}; the commands are: {', '.join(catalog.commands)} "
        f"(files NAME.md in {where})"
    )
