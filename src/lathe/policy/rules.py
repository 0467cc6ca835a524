"""Permission rules: `bash(git diff:*)`, `bash(npm test)`, `edit(src/**)`, `read(.env)`,
`mcp__server__tool`, `mcp__server__*` (a `*` in a tool name matches any run of
characters, so one rule covers every tool of a server, and `--deny '*'` every tool).
Precedence between lists is deny > ask > allow.

Path patterns are .gitignore's, in the one dialect of `lathe.patterns`: a pattern without
a slash matches that name at any depth (`.env`, `*.pem`, `secrets/`); one with a slash
is anchored at the workspace root (`src/**`, `/top.txt`); `**` crosses directories; a
match on a folder covers what is in it. A `read(...)` rule guards the content of a path,
so a denied read holds for every tool that could reveal it, `bash` included. An
`edit(...)` rule is about changing the files, so it covers `write` too; inside the
sandbox a denied edit holds for `bash` as well (the paths are mounted read-only).
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from lathe.errors import UsageError
from lathe.patterns import compiled, path_matches

if TYPE_CHECKING:
    from lathe.policy.shell_parse import SimpleCommand

Action = Literal["allow", "ask", "deny"]
_RULE = re.compile(r"^(?P<tool>[A-Za-z0-9_\-*]+)(?:\((?P<pattern>.*)\))?$")
# Changing these makes the host run code later, outside the sandbox: git's config and
# hooks (fsmonitor, pre-commit), lathe's project config (hooks) and MCP server lists.
ALWAYS_PROTECTED = (".git", ".lathe/", ".mcp.json")
EVERY_PATH = "**"
"""The path pattern of a rule that names no path (`--deny read`): it covers every path."""


@dataclass(frozen=True)
class Rule:
    tool: str
    pattern: str | None  # None: every use of the tool

    @property
    def key(self) -> str:
        return self.tool if self.pattern is None else f"{self.tool}({self.pattern})"


def parse_rule(text: str) -> Rule:
    match = _RULE.match(text.strip())
    if not match:
        raise UsageError(
            f"cannot read the permission rule {text!r}: write it as TOOL or TOOL(PATTERN), "
            "e.g. bash(git diff:*), edit(src/**), read(.env)"
        )
    tool, pattern = match.group("tool"), match.group("pattern")
    if pattern is not None and tool.lower().startswith("mcp__"):
        raise UsageError(
            f"the permission rule {text.strip()!r} matches no call: an MCP tool's arguments "
            f"are not matched against a pattern; write {tool!r} for every call of it"
        )
    if pattern is not None and tool != "bash":  # a command pattern is words, not a path
        from lathe.patterns import pattern_problem

        problem = pattern_problem(pattern)
        if problem:
            raise UsageError(
                f"cannot read the permission rule {text!r}: its pattern is no path pattern "
                f"({problem}); write it as in a .gitignore, e.g. edit(src/**), read(*.pem)"
            )
    return Rule(tool, pattern.strip() if pattern is not None else None)


def unknown_tools(
    names: Iterable[str],
    known: Collection[str],
    *,
    servers: Mapping[str, Collection[str] | None] | None = None,
) -> dict[str, str | None]:
    """Each of `names` (the tools rules or hooks name) that is none of `known` and no
    pattern of names (`*`), so it matches no call, with the tool it likely means: a
    known one in another case, or the nearest (a capitalised `Edit(tests/**)` denied
    nothing), else None (a plugin's tool whose plugin did not load).

    An MCP tool's name (`mcp__...`) is judged only once the run knows its MCP tools,
    given `servers`: each configured server's name and the names of its tools, or None
    where the run does not know them (it did not start, or is not trusted), which makes
    no name of that server a near miss. What it means is then the configured server in
    its own case (`mcp__FK__echo`: `mcp__fk__echo`, a glob's too), every tool of it for
    the server alone (`mcp__fk`: `mcp__fk__*`), or the nearest of its tools
    (`mcp__fk__ech`: `mcp__fk__echo`); a server not configured means nothing."""
    every = {*known, *(n for tools in (servers or {}).values() for n in tools or ())}
    cased = {name.lower(): name for name in sorted(every, reverse=True)}
    ordered = sorted(known)
    found: dict[str, str | None] = {}
    for name in names:
        if name in every:
            continue
        if name.lower().startswith("mcp__"):
            if servers is not None and (meant := _mcp_meant(name, servers, cased)) != name:
                found[name] = meant
            continue
        if "*" in name:
            continue
        found[name] = cased.get(name.lower()) or next(
            iter(difflib.get_close_matches(name.lower(), ordered, n=1)), None
        )
    return found


def _mcp_meant(
    name: str, servers: Mapping[str, Collection[str] | None], cased: Mapping[str, str]
) -> str | None:
    """What the MCP tool name (or glob) `name` likely means (see `unknown_tools`): the
    name itself when it may match (a glob), None when there is nothing to suggest."""

    def judged_again(fixed: str) -> str:
        """`fixed`, a spelling mended, or what it in turn likely means."""
        return fixed if "*" in fixed else _mcp_meant(fixed, servers, cased) or fixed

    rest = name[len("mcp__") :]
    if not name.startswith("mcp__"):  # `MCP__`: no tool is named so
        return judged_again(f"mcp__{rest}")
    named = [
        server
        for server in servers
        if rest[: len(server)].lower() == server.lower()
        and (len(rest) == len(server) or rest[len(server) :].startswith("__"))
    ]
    # The server as written before one in another case; `a_` before `a` (`mcp__a___x`).
    server = max(named, key=lambda s: (rest.startswith(s), len(s)), default=None)
    if server is None:
        return name if "*" in name else cased.get(name.lower())
    tool = rest[len(server) + 2 :]
    if not rest.startswith(server):
        return judged_again(f"mcp__{server}__{tool or '*'}")
    if not tool:
        return f"mcp__{server}__*"
    if "*" in tool:
        return name
    if name.lower() in cased:
        return cased[name.lower()]
    prefix = f"mcp__{server}__"
    theirs = {t[len(prefix) :].lower(): t for t in servers[server] or () if t.startswith(prefix)}
    near = difflib.get_close_matches(tool.lower(), sorted(theirs), n=1)
    return theirs[near[0]] if near else None


def misnamed_tool(rule: Rule, meant: str, listed: str) -> str:
    """The refusal of a rule naming a tool lathe has in another spelling (`meant`), at
    load or at run start; `listed` names the tool names there are."""
    return (
        f"the permission rule {rule.key!r} names no tool lathe has; did you mean "
        f"{Rule(meant, rule.pattern).key!r}? Tool names are lower case: {listed}, and "
        "mcp__SERVER__TOOL"
    )


def command_pattern_problem(rule: Rule) -> str | None:
    """Why a `bash(...)` rule's pattern would match no command it seems to name, or None.
    A pattern is the command's words, or its first words then `:*`; a `*` anywhere else
    is compared as the word `*` (`bash(rm *)` denied only `rm *` itself, so `rm -rf x`
    ran), and a pattern the shell cannot split matches nothing."""
    pattern = rule.pattern
    if rule.tool != "bash" or pattern is None:
        return None
    words = pattern[:-2] if pattern.endswith(":*") else pattern
    try:
        shlex.split(words)
    except ValueError as exc:
        return f"the permission rule {rule.key!r} cannot be split into words ({exc})"
    if "*" not in words:
        return None
    meant = Rule(rule.tool, words.split("*", 1)[0].rstrip() + ":*")
    return (
        f"the permission rule {rule.key!r} matches no command: a * there is the word *; "
        f"for every command starting so, write {meant.key!r} (a pattern is the command's "
        "words, or its first words then :*)"
    )


def matches_any(relative_path: str, patterns: Iterable[str], *, is_dir: bool = False) -> bool:
    return compiled(tuple(patterns)).matches(relative_path, is_dir=is_dir)


def workspace_names(workspace: Path, path: str | Path) -> list[str]:
    """The workspace-relative names of one path that rules are matched against: where
    its links lead, then as named (`..` folded, links not followed) when that differs —
    `--deny 'read(.env)'` holds for a `.env` that is a link; only those in the workspace
    (a relative `path` is taken from the workspace)."""
    root = Path(os.path.realpath(workspace))
    named = Path(os.path.normpath(root / Path(path).expanduser()))
    try:
        real = Path(os.path.realpath(named))
    except (ValueError, OSError):  # an embedded NUL byte, a loop of links
        return []
    names: list[str] = []
    for candidate, bases in ((real, (root,)), (named, (root, Path(os.path.abspath(workspace))))):
        for base in bases:
            if candidate.is_relative_to(base):
                name = "." if candidate == base else candidate.relative_to(base).as_posix()
                if name not in names:
                    names.append(name)
                break
    return names


def files_named(
    words: Iterable[str], base: Path, workspace: Path, *, packages: bool = True
) -> list[str]:
    """The workspace files `words` name (relative to `base`: a script, a config a program
    loads), as patterns anchored at the workspace: what code run on the host — an MCP
    server, a hook — reads, to protect so that it changes only with the user's approval
    (the model had edited such a script, and the next run of it was the edit, outside the
    sandbox). A link is named with its target: replaced, it would run another file. A
    word holding a `${VAR}` is left out. `words` may be several commands, as a hook's
    are: each is read with its own program (`ruff format src; python -m pkg`).

    Every word names the file it is a path to, and so does an option's value
    (`--script=FILE`). Besides, as the command's program reads its words (`_reads`): the
    module a Python launcher runs (`python -m MODULE`, `uv run -m MODULE`: `MODULE.py`
    or the `MODULE/` package, after the `__init__.py` of each package on the way, which
    the import runs even when the module is missing), looked up in `base`, the folders
    moved to and the workspace; the folder it runs as a script (one holding
    `__main__.py`: `python pkgdir`), whole; each word in the folder a program known to
    move there first (uv's `--directory`, git's, make's and env's `-C`). Another
    program's `-m` (`git commit -m wip`) is no module and its folder (`ruff format
    src/app`) no script: a hook formatting a package had made every edit in it one that
    nobody could approve.

    With `packages` False, a package stands for the file it runs, its `__main__.py`,
    without the `__init__.py` files it is imported through: the files a check is made of
    (`check_files.named_by`) are what it runs, not the project it tests."""
    root = workspace.resolve()
    found: list[str] = []

    def add(folder: Path, name: str, *, script: bool = False) -> None:
        try:
            path = folder / Path(name).expanduser()
        except RuntimeError:  # `~someone`, who is no user here
            return
        named = _in_workspace(path, root, script=script, packages=packages)
        found.extend(p for p in named if p not in found)

    words = list(words)
    start = base.resolve()
    for word in words:  # each word where the command starts, as it always was
        for value in _values(word):
            add(start, value)
    for command in _commands(words):
        reads = _reads(command)
        folders = [start]
        try:
            for move in reads.moves:
                if "${" in move:
                    break
                folders.append((folders[-1] / Path(move).expanduser()).resolve())
        except (OSError, ValueError, RuntimeError):  # a NUL, a loop of links, no such user
            pass
        for folder in folders[1:]:
            for value in (v for word in command for v in _values(word)):
                add(folder, value)
        if reads.module is not None and "${" not in reads.module:
            for folder in dict.fromkeys([*folders, root]):
                for name in _module(folder, reads.module, packages=packages):
                    add(folder, name, script=True)
        if reads.script is not None and "${" not in reads.script:
            for folder in folders:
                add(folder, reads.script, script=True)
    return found


_MODULE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
# The shell's operators as a hook's command is split (`shlex` with punctuation_chars).
_OPERATOR = re.compile(r"[;&|()<>]+")
_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=.*", re.DOTALL)
# A Python launcher: python, python3, python3.12, python3.13t, pythonw, pypy3, py (and
# their .exe), by name or by path.
_PYTHON = re.compile(r"(python|pythonw|pypy)(\d+(\.\d+)*t?)?(\.exe)?|py(\.exe)?")
# Programs that run the command after their options (timeout: after its duration too),
# and their options that take the next word as their value.
_WRAPPERS: dict[str, frozenset[str]] = {
    "env": frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}),
    "exec": frozenset({"-a"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "timeout": frozenset({"-s", "--signal", "-k", "--kill-after"}),
    "nohup": frozenset(),
    "command": frozenset(),
    "time": frozenset(),
}
# uv's and uvx's options that take the next word as their value (its -C is
# --config-setting, no folder); `-m`/`--module` of `uv run` takes none: the command is
# the module.
_UV_VALUED = frozenset({
    "--directory", "--project", "--python", "-p", "--with", "--with-editable",
    "--with-requirements", "--from", "--index", "--index-url", "-i", "--extra-index-url",
    "--default-index", "--find-links", "-f", "--config-file", "--cache-dir", "--color",
    "--extra", "--group", "--only-group", "--no-group", "--package", "--env-file",
    "--python-preference", "--index-strategy", "--keyring-provider", "--resolution",
    "--prerelease", "--exclude-newer", "--link-mode", "--allow-insecure-host",
    "--refresh-package", "--reinstall-package", "--upgrade-package", "-P",
    "--no-binary-package", "--no-build-package", "--python-platform", "--config-setting",
    "-C",
})  # fmt: skip
_PIPX_VALUED = frozenset({"--spec", "--python", "--index-url", "--pip-args"})
_GIT_VALUED = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env"})


@dataclass
class _Reads:
    """What a command's program reads its words as, besides paths: the folders it moves
    to before it looks up a name (each from the one before), the module and the script
    Python runs."""

    moves: list[str] = field(default_factory=list)
    module: str | None = None
    script: str | None = None


def _values(word: str) -> list[str]:
    """The paths a word may be: itself, and an option's value (`--script=FILE`)."""
    values = [word]
    if word.startswith("-") and "=" in word:
        values.append(word.partition("=")[2])
    return [v for v in values if v.strip() and "${" not in v]


def _commands(words: list[str]) -> list[list[str]]:
    """`words` split at the shell's operators into the commands they are (the argv of a
    server is one), each without its redirections."""
    commands: list[list[str]] = [[]]
    redirected = False
    for word in words:
        if redirected:
            redirected = False
        elif not _OPERATOR.fullmatch(word):
            commands[-1].append(word)
        elif "<" in word or ">" in word:
            redirected = True  # the next word is a file it reads or writes, no argument
        else:
            commands.append([])
    return [c for c in commands if c]


def _reads(words: list[str]) -> _Reads:
    """How the program of one command reads its words (`files_named`): only a Python
    launcher runs a module or a folder, and only a program known to move to a folder
    does (uv's `--directory`, git's `-C` before its subcommand, make's `-C` or
    `--directory`, env's `-C`); bash's -C is noclobber. A wrapper (`env`, `timeout`,
    `exec`, ...), `uv run`, `uvx` and `pipx run` are read through to what they run."""
    reads = _Reads()
    while words:
        while words and _ASSIGNMENT.fullmatch(words[0]):
            words = words[1:]
        if not words:
            break
        program, args = os.path.basename(words[0]), words[1:]
        if _PYTHON.fullmatch(program):
            _python(args, reads)
            break
        if program in _WRAPPERS:
            options, words = _options(args, _WRAPPERS[program])
            if any(o in ("-S", "--split-string") for o, _ in options):
                break  # env splits a string into the command: not read
            reads.moves += [v for o, v in options if o in ("-C", "--chdir") and v is not None]
            words = words[1:] if program == "timeout" else words
        elif program in ("uv", "uvx"):
            words = _uv(program == "uvx", args, reads)
        elif program == "pipx" and args[:1] == ["run"]:
            words = _options(args[1:], _PIPX_VALUED)[1]
        elif program == "git":
            options = _options(args, _GIT_VALUED)[0]
            reads.moves += [v for o, v in options if o == "-C" and v is not None]
            break
        elif program in ("make", "gmake"):
            reads.moves += make_moves(args)
            break
        else:
            break
    return reads


def _options(
    args: list[str], valued: Collection[str]
) -> tuple[list[tuple[str, str | None]], list[str]]:
    """`args`' leading options, each with its value (`--opt=V`; the next word, or the
    rest of the word for a short one, for one of `valued`), and the words after them
    (after `--`, when it ends them)."""
    options: list[tuple[str, str | None]] = []
    n = 0
    while n < len(args) and args[n].startswith("-") and args[n] != "-":
        word = args[n]
        n += 1
        if word == "--":
            break
        if word.startswith("--") and "=" in word:
            option, _, value = word.partition("=")
            options.append((option, value))
        elif word in valued:
            options.append((word, args[n] if n < len(args) else None))
            n += 1
        elif not word.startswith("--") and word[:2] in valued:
            options.append((word[:2], word[2:]))
        else:
            options.append((word, None))
    return options, args[n:]


def _python(args: list[str], reads: _Reads) -> None:
    """Reads Python's command line `args`: the module of `-m`, else the script, the first
    word that is no option; nothing after `-c`, whose words are its own."""
    n = 0
    while n < len(args):
        word = args[n]
        n += 1
        if word == "--":
            reads.script = args[n] if n < len(args) else None
            return
        if not word.startswith("-"):
            reads.script = word
            return
        if word == "-":
            return  # the script is read from stdin
        if word.startswith("--"):
            n += word == "--check-hash-based-pycs"
            continue
        for at, letter in enumerate(word[1:], 2):
            if letter in "cmWX":  # takes a value: the rest of the word, or the next one
                value = word[at:] or (args[n] if n < len(args) else None)
                n += not word[at:]
                if letter == "m":
                    reads.module = value
                if letter in "cm":
                    return
                break


def _uv(tool: bool, args: list[str], reads: _Reads) -> list[str]:
    """Reads what `uv run`, `uv tool run` or uvx (`tool`) runs, uv's options read: the
    folder `--directory` moves to, the module `--module` runs, a script or a folder
    `uv run` runs with Python. The words of the command it runs then, its program first
    (`uvx python -m x`, `uv run pytest`), or none."""
    options, rest = _options(args, _UV_VALUED)
    if not tool:
        if rest[:2] == ["tool", "run"]:
            tool, rest = True, rest[2:]
        elif rest[:1] == ["run"]:
            rest = rest[1:]
        else:
            return []
        more, rest = _options(rest, _UV_VALUED)
        options += more
    reads.moves += [v for o, v in options if o == "--directory" and v is not None]
    if not rest:
        return []
    if not tool and any(o in ("-m", "--module") for o, _ in options):
        reads.module = rest[0]
        return []
    if not tool and not _PYTHON.fullmatch(os.path.basename(rest[0])):
        reads.script = rest[0]  # a .py file, or a folder holding __main__.py
    return rest


def make_moves(args: list[str]) -> list[str]:
    """The folders `make args...` moves to: each `-C DIR` (or `--directory=DIR`), each
    from the one before."""
    moves: list[str] = []
    for n, arg in enumerate(args):
        if arg in ("-C", "--directory") and n + 1 < len(args):
            moves.append(args[n + 1])
        elif arg.startswith("--directory="):
            moves.append(arg.partition("=")[2])
        elif arg.startswith("-C") and len(arg) > 2:
            moves.append(arg[2:])
    return moves


def _module(folder: Path, module: str, *, packages: bool) -> list[str]:
    """What `python -m MODULE` run in `folder` runs of it there, in order, as names in
    `folder` (some of it may not be there): the `__init__.py` of each package on the way,
    which the import runs even when what follows is missing; then `MODULE.py`, or the
    `MODULE/` package, whole when it holds `__main__.py` (else its `__init__.py`). A
    module on the way ends it: `-m server.py` runs server.py, then finds no `py` in it.
    Without `packages`, a package is its `__main__.py` alone (`files_named`)."""
    if not _MODULE.fullmatch(module):
        return []
    *names, leaf = module.split(".")
    runs: list[str] = []
    where = ""  # the package looked in, as a name in `folder`
    try:
        for name in names:
            package = f"{where}{name}/"
            if (folder / package / "__init__.py").is_file():
                runs += [f"{package}__init__.py"] if packages else []
            elif (folder / f"{where}{name}.py").is_file():
                return [*runs, f"{where}{name}.py"]
            elif not (folder / package).is_dir():
                return runs
            where = package
        package, main = f"{where}{leaf}", f"{where}{leaf}/__main__.py"
        if (folder / package / "__init__.py").is_file() or (
            (folder / package).is_dir() and not (folder / f"{package}.py").is_file()
        ):
            if not packages:
                return [*runs, main]
            return [*runs, package if (folder / main).is_file() else f"{package}/__init__.py"]
    except OSError:  # a name too long, a loop of links
        return runs
    return [*runs, f"{package}.py"]


def _in_workspace(
    path: Path, root: Path, *, script: bool = False, packages: bool = True
) -> list[str]:
    """`path`, when it is a file in the workspace or a folder Python runs as a `script`
    (one holding `__main__.py`: whole, or without `packages` its `__main__.py`), and the
    link it is named by, as patterns anchored at the workspace. The workspace itself
    run so is its `__main__.py` alone: every change there would ask."""
    try:
        spelled = Path(os.path.normpath(path))
        target = spelled.resolve()
        folder = script and target.is_dir() and (target / "__main__.py").is_file()
        if folder and not packages:
            return _in_workspace(spelled / "__main__.py", root)
        named = [
            where
            for where, there in (
                (target, folder or target.is_file()),
                (spelled, spelled.is_symlink()),
            )
            if there and where.is_relative_to(root)
        ]
    except (OSError, ValueError, RuntimeError):  # a NUL, a loop of links, a name too long
        return []
    return [
        "/" + (p if p != root else p / "__main__.py").relative_to(root).as_posix() for p in named
    ]


def protected_patterns(user: Iterable[str]) -> tuple[str, ...]:
    """Every protected path pattern: ALWAYS_PROTECTED, then the user's (permissions.protect)."""
    return (*ALWAYS_PROTECTED, *user)


@dataclass
class RuleSet:
    allow: list[Rule] = field(default_factory=list)
    ask: list[Rule] = field(default_factory=list)
    deny: list[Rule] = field(default_factory=list)

    @classmethod
    def from_strings(
        cls, allow: Iterable[str] = (), ask: Iterable[str] = (), deny: Iterable[str] = ()
    ) -> RuleSet:
        return cls(
            [parse_rule(r) for r in allow],
            [parse_rule(r) for r in ask],
            [parse_rule(r) for r in deny],
        )

    def denied_read_patterns(self) -> list[str]:
        """The path patterns read-deny rules cover, EVERY_PATH for one with no path."""
        return self._denied_patterns("read")

    def denied_edit_patterns(self) -> list[str]:
        """The path patterns edit-deny rules cover, EVERY_PATH for one with no path."""
        return self._denied_patterns("edit")

    def _denied_patterns(self, tool: str) -> list[str]:
        # A bare `--deny read` had been left out, so the prompt's snapshot, the searches
        # and the hints, which go by these patterns, showed every file it forbids.
        found = [
            EVERY_PATH if r.pattern is None else r.pattern
            for r in self.deny
            if names_tool(r.tool, tool) and r.pattern != ""  # `read()` matches no path
        ]
        return list(dict.fromkeys(found))

    def for_path(
        self, tool: str, relative_path: str, *, is_dir: bool = False, changes_files: bool = False
    ) -> tuple[Action, Rule] | None:
        """The strongest rule about `tool` touching `relative_path` (a folder when
        `is_dir`); read-deny rules apply to every tool, and `edit` rules to every tool
        that `changes_files` there (write as well as edit)."""
        for action, rules in (("deny", self.deny), ("ask", self.ask), ("allow", self.allow)):
            for rule in rules:
                applies = covers_path_tool(
                    rule.tool, tool, changes_files=changes_files, denies=action == "deny"
                )
                if applies and (
                    rule.pattern is None or path_matches(relative_path, rule.pattern, is_dir=is_dir)
                ):
                    return action, rule  # type: ignore[return-value]
        return None

    def for_commands(
        self,
        commands: Sequence[SimpleCommand],
        *,
        also: Sequence[SimpleCommand] = (),
        named: Sequence[SimpleCommand] = (),
    ) -> tuple[Action, Rule] | None:
        """deny or ask if any simple command matches, `also` included (the commands a
        script or one-liner runs), and `named` by the words it names (those of a script
        on disk: `matches_rule(named=True)`); allow only if every one of `commands` does."""
        from lathe.policy.command import matches_rule

        def matches(command: SimpleCommand, rule: Rule, **how: bool) -> bool:
            return rule.pattern is None or matches_rule(command, rule.pattern, **how)

        # A deny or ask rule holds against whatever may be its command; an allow rule
        # only for exactly its command.
        for action, rules in (("deny", self.deny), ("ask", self.ask)):
            for rule in rules:
                if names_tool(rule.tool, "bash") and (
                    any(matches(c, rule, could=True) for c in (*commands, *also))
                    or any(matches(c, rule, could=True, named=True) for c in named)
                ):
                    return action, rule  # type: ignore[return-value]
        bash_allows = [r for r in self.allow if names_tool(r.tool, "bash")]
        if commands and bash_allows:
            matched = [next((r for r in bash_allows if matches(c, r)), None) for c in commands]
            if all(matched):
                return "allow", matched[0]  # type: ignore[return-value]
        return None

    def for_tool(self, *tools: str) -> tuple[Action, Rule] | None:
        """The first rule without a pattern naming any of `tools`, deny before ask
        before allow (a call some other tool's rules also govern passes all names)."""
        for action, rules in (("deny", self.deny), ("ask", self.ask), ("allow", self.allow)):
            for rule in rules:
                if rule.pattern is None and any(names_tool(rule.tool, tool) for tool in tools):
                    return action, rule  # type: ignore[return-value]
        return None


def covers_path_tool(rule_tool: str, tool: str, *, changes_files: bool, denies: bool) -> bool:
    """Whether a rule's (or a hook's) tool part governs the calls of `tool`, one that
    names a path: it names the tool, or it is `edit` and the tool `changes_files` there
    (write as well as edit), or it `denies` (a hook guards) `read`, which holds for every
    tool that could reveal the path."""
    return (
        names_tool(rule_tool, tool)
        or (names_tool(rule_tool, "edit") and changes_files)
        or (denies and names_tool(rule_tool, "read"))
    )


def names_tool(rule_tool: str, tool: str) -> bool:
    """Whether a rule's (or a hook's) tool part names `tool`: exactly, or as a `*`
    glob (`mcp__docs__*`)."""
    if "*" not in rule_tool:
        return rule_tool == tool
    from fnmatch import fnmatchcase

    return fnmatchcase(tool, rule_tool.replace("[", "[[]"))
