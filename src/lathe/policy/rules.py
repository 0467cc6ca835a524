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


def files_named(words: Iterable[str], base: Path, workspace: Path) -> list[str]:
    """The workspace files `words` name (relative to `base`: a script, a config a program
    loads), as patterns anchored at the workspace: what code run on the host — an MCP
    server, a hook — reads, to protect so that it changes only with the user's approval
    (the model had edited such a script, and the next run of it was the edit, outside the
    sandbox). A link is named with its target: replaced, it would run another file. A
    word holding a `${VAR}` is left out.

    However the command names them: an option's value (`--script=FILE`); a module run
    with `-m`/`--module` (`MODULE.py` or the `MODULE/` package, and the `__init__.py` of
    each package it is in, which the import runs first), looked up in `base`, the
    workspace and the folders named so far; a name in the folder an option such as uv's
    `--directory` moves to first (`uv --directory sub run s.py`); a folder Python runs as
    a script (one holding `__main__.py`: `python pkgdir`), whole. `python -m pserv` and
    these others had named nothing, so the model rewrote the server a trusted project
    runs on the host."""
    root = workspace.resolve()
    folders = [base.resolve()]  # where a relative name is looked up
    found: list[str] = []
    before = ""
    for word in words:
        option, value = _option_value(word, before)
        before = word
        if "${" in word or not value.strip():
            continue
        try:
            if option in _MOVES_TO:
                folders.append((folders[0] / Path(value).expanduser()).resolve())
                continue
            if option in _RUNS_MODULE:
                paths = [p for f in dict.fromkeys([*folders, root]) for p in _module(f, value)]
            else:
                paths = [folder / Path(value).expanduser() for folder in folders]
        except (OSError, ValueError, RuntimeError):  # a NUL, a loop of links
            continue
        for path in paths:
            found += [p for p in _in_workspace(path, root) if p not in found]
    return found


# Options whose value is a module to run (python's `-m`, uv run's `--module`), and those
# that move the command to a folder before it looks up what it runs (uv's `--directory`).
_RUNS_MODULE = frozenset({"-m", "--module"})
_MOVES_TO = frozenset({"--directory", "--dir", "--cwd", "-C"})
_MODULE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


def _option_value(word: str, before: str) -> tuple[str, str]:
    """The option `word` gives a value to and that value (`--script=F`, `-mNAME`, or
    `word` after an option without one), else ("", word)."""
    if word.startswith("-") and "=" in word:
        option, _, value = word.partition("=")
        return option, value
    if word.startswith("-m") and len(word) > 2 and not word.startswith("--"):
        return "-m", word[2:]
    if before.startswith("-") and "=" not in before:
        return before, word
    return "", word


def _module(folder: Path, module: str) -> list[Path]:
    """What `python -m MODULE` run in `folder` runs of it there: the `__init__.py` of each
    package it is in, then `MODULE.py` or the `MODULE/` package; none when it is not
    there."""
    if not _MODULE.fullmatch(module):
        return []
    *packages, name = module.split(".")
    where = folder.joinpath(*packages)
    runs = [p for p in (where / f"{name}.py", where / name) if _in_workspace(p, folder)]
    inits = [folder.joinpath(*packages[: n + 1], "__init__.py") for n in range(len(packages))]
    return [*inits, *runs] if runs else []


def _in_workspace(path: Path, root: Path) -> list[str]:
    """`path`, when it is a file or a folder Python runs (holding `__main__.py`) in the
    workspace, and the link it is named by, as patterns anchored at the workspace. The
    workspace itself run so is its `__main__.py` alone: every change there would ask."""
    try:
        spelled = Path(os.path.normpath(path))
        target = spelled.resolve()
        runs = target.is_file() or (target / "__main__.py").is_file()
        named = [
            where
            for where, there in ((target, runs), (spelled, spelled.is_symlink()))
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
