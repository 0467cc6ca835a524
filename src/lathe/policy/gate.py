"""Approval modes and the policy gate: the first `before_tool` hook every call passes.

Modes: `read-only` (reads and searches only), `ask` (reads run; edits and commands
ask), `auto` (edits inside the workspace and sandboxed commands run; anything the
sandbox cannot contain asks), `full` (no sandbox, no prompts). The command guard's
hard-deny verdicts hold in every mode. Rules come before the mode default, with
precedence deny > ask > allow. In a headless run nobody can answer, so an ask becomes a
denial explained to the model.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal, Protocol

from lathe.errors import ToolError, UsageError
from lathe.hooks.base import AgentHooks
from lathe.patterns import compiled
from lathe.policy.rules import (
    EVERY_PATH,
    Action,
    RuleSet,
    covers_path_tool,
    matches_any,
    protected_patterns,
    workspace_names,
)
from lathe.tools.base import Tool, ToolOutput, ToolRegistry
from lathe.tools.paths import display_path, resolve_path
from lathe.words import Words, load_words

if TYPE_CHECKING:
    from lathe.policy.shell_words import Word


class Mode(StrEnum):
    READ_ONLY = "read-only"
    ASK = "ask"
    AUTO = "auto"
    FULL = "full"

    @classmethod
    def parse(cls, text: str) -> Mode:
        try:
            return cls(text)
        except ValueError:
            choices = ", ".join(m.value for m in cls)
            raise UsageError(f"unknown approval mode {text!r}; choose one of {choices}") from None


@dataclass(frozen=True)
class Decision:
    action: Action
    reason: str
    key: str  # what "allow always" remembers, e.g. "bash(npm test)" or "edit"
    preview: str = ""  # the exact command or change being approved
    brief: str = ""  # a few words for a progress line: the rule, or the reason cut short

    @property
    def why(self) -> str:
        return self.brief or self.reason


@dataclass(frozen=True)
class ApprovalRequest:
    tool: str
    arguments: dict[str, Any]
    reason: str
    key: str
    preview: str


@dataclass(frozen=True)
class ApprovalAnswer:
    choice: Literal["once", "always", "deny"]
    reason: str = ""  # a denial's reason, shown to the model
    by: Literal["user", "timeout"] = "user"  # "timeout": nobody answered in time


class Approver(Protocol):
    """Asks a person. The interactive face implements it; headless runs have none."""

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer: ...


def _builtin_registry() -> ToolRegistry:
    from lathe.tools.builtin import builtin_tools

    return ToolRegistry(builtin_tools())


@dataclass
class Policy:
    mode: Mode
    rules: RuleSet
    workspace: Path
    home: Path
    sandboxed: bool  # commands run inside a working sandbox
    # The user's protected paths (permissions.protect); ALWAYS_PROTECTED come on top.
    protected: tuple[str, ...] = ()
    # The run's tools: each says whether it is read-only, which argument is its path and
    # which command it runs. A name not among them is judged as a tool that changes files.
    tools: ToolRegistry = field(default_factory=_builtin_registry)

    def decide(self, tool: str, arguments: dict[str, Any]) -> Decision:
        found = self.tools.get(tool)
        command = found.shell_command(arguments) if found else None
        if command is not None:
            return self._decide_command(command)
        if found is not None and found.path_argument is not None:
            return self._decide_path(found, arguments.get(found.path_argument))
        verdict = self.rules.for_tool(tool, *(found.also_governed_by(arguments) if found else ()))
        if verdict:
            return Decision(verdict[0], f"rule {verdict[1].key}", tool, brief=verdict[1].key)
        read_only = found is not None and found.read_only_call(arguments)
        return self._mode_default(tool, read_only, tool, "")

    def _decide_path(self, found: Tool, path: Any) -> Decision:
        tool, changes_files = found.name, not found.read_only
        # Resolved exactly as the tool will resolve it, so no spelling slips past a rule.
        try:
            resolved = resolve_path(self.workspace, str(path or "."))
        except ToolError:
            relative = None  # outside the workspace: the tool itself refuses it
        else:
            relative = display_path(self.workspace, resolved)
        preview = relative
        if relative is None:
            return self._mode_default(tool, found.read_only, tool, preview)
        is_dir = _is_dir(resolved)
        # A rule names a path as the user sees it: `.env` may be a link to the file read.
        spellings = workspace_names(self.workspace, str(path or ".")) or [relative]
        verdicts = {
            spelling: self.rules.for_path(
                tool, spelling, is_dir=is_dir, changes_files=changes_files
            )
            for spelling in spellings
        }
        named, verdict = _strongest(verdicts)
        if changes_files:
            for spelling in spellings:
                guarded = self._protected_change(tool, spelling, is_dir, verdict)
                if guarded:
                    return guarded
        if verdict and not (changes_files and self.mode is Mode.READ_ONLY):
            action, rule = verdict
            reason = f"{named} matches the rule {rule.key}"
            return Decision(action, reason, rule.key, preview, brief=rule.key)
        return self._mode_default(tool, found.read_only, tool, preview)

    def _protected_change(
        self, tool: str, relative: str, is_dir: bool, verdict: tuple[Action, Any] | None
    ) -> Decision | None:
        """A change to a protected path needs an explicit approval: an allow rule naming
        the path, or a person's answer. `full` mode trusts the model with it."""
        patterns = compiled(protected_patterns(self.protected))
        protected = patterns.first_match(relative, is_dir=is_dir)
        if protected is None:
            return None
        if verdict and (verdict[0] != "allow" or _names(verdict[1].pattern, protected)):
            return None  # a deny or ask rule decides; so does an allow rule naming it
        if self.mode is Mode.FULL:
            return None
        reason = (
            f"{relative} is a protected path: changing it could make this machine run code "
            "later, outside the sandbox"
        )
        action: Action = "deny" if self.mode is Mode.READ_ONLY else "ask"
        brief = f"protected path {relative}"
        return Decision(action, reason, f"{tool}({relative})", relative, brief=brief)

    def _decide_command(self, command: str) -> Decision:
        from lathe.policy.command import analyze

        analysis = analyze(command, workspace=self.workspace, home=self.home)
        key = command_key(command)
        first = analysis.reasons[0] if analysis.reasons else ""
        if analysis.decision == "deny":
            return Decision("deny", "; ".join(analysis.reasons), key, command, brief=first)
        verdict = self.rules.for_commands(
            analysis.commands, also=analysis.indirect, named=analysis.in_files
        )
        if verdict and verdict[0] == "deny":  # named first: `--deny '*'` denies bash itself
            rule = verdict[1].key
            return Decision("deny", f"the rule {rule}", rule, command, brief=rule)
        hidden = _globs_see_dotfiles(command, analysis)
        denied_read = self._reveals_denied_path(analysis, hidden=hidden)
        if denied_read:
            reason, brief = denied_read
            return Decision("deny", reason, key, command, brief=brief)
        if analysis.decision == "ask" and self.mode is not Mode.FULL:
            return Decision("ask", "; ".join(analysis.reasons), key, command, brief=first)
        guarded = self._command_changes(analysis.changes, key, command, hidden=hidden)
        if guarded is None:
            guarded = self._find_changes(analysis, key, command, hidden=hidden)
        if guarded:
            return guarded
        if self.mode is Mode.READ_ONLY and not self.sandboxed:
            reason = "read-only mode runs commands only in a sandbox that keeps files as they are"
            return Decision("deny", reason, key, command, brief="no read-only sandbox")
        if verdict:
            rule = verdict[1].key
            return Decision(verdict[0], f"the rule {rule}", rule, command, brief=rule)
        if self.mode is Mode.AUTO and not self.sandboxed:
            reason = "the sandbox is not available to contain it"
            return Decision("ask", reason, key, command, brief="no sandbox to contain it")
        return self._mode_default("bash", False, key, command)

    def _command_changes(
        self, changes: tuple[Path, ...], key: str, command: str, *, hidden: bool
    ) -> Decision | None:
        """What a command's known writes and deletions decide, as for `edit`: one an edit
        rule denies is refused, one it asks about asks; one of a protected path asks unless
        a sandbox keeps it read-only (an allow rule for the command must not let it plant
        `.git/config`). A glob (`rm -rf t*`, `sed -i ... */*.py`, `cp a.py t*/`: `t*/a.py`)
        is judged as written and as each path it names on disk (`carried.glob_targets`,
        dotfiles only when `hidden`: bash's dotglob), a folder with everything under it
        (`_edit_rule_inside`). Only edit rules judge those matches: a read rule is about
        showing a file, and the word that names it was judged for that."""
        from lathe.policy.carried import glob_targets

        known: dict[Path, list[str]] = {}  # a glob's matches share their folders' names
        for changed in changes:
            paths = [changed]
            if any(mark in str(changed) for mark in "*?["):
                paths += glob_targets(changed, hidden=hidden)
            for i, path in enumerate(paths):
                decided = self._path_change(path, key, command, reads=not i, known=known)
                if decided is None and i and _is_dir(path):
                    decided = self._edit_rule_inside(path, key, command)
                if decided:
                    return decided
        return None

    def _find_changes(
        self, analysis: Any, key: str, command: str, *, hidden: bool
    ) -> Decision | None:
        """What the paths finds delete or hand to a command run on `{}` decide
        (`Analysis.picked`: `find . -name '*.pyc' -delete`, `find . -name __pycache__
        -exec rm -rf {} +`): each selected path (and what is beneath a selected folder, for
        `-exec`) that a deny or ask edit rule covers, or a protected path where no
        sandbox keeps it, as `_path_change` decides. Where the find's tests are not all
        judged (`-newer f`, `-o`), a path that may be selected asks. Past
        `carried.FIND_LIMIT` entries, the rule that could cover one decides."""
        from lathe.policy.carried import FIND_LIMIT

        for pick in analysis.picked:
            selections = _find_selections(analysis, pick.root)
            exact = all(s.exact for s in selections)
            for root in _roots(pick.root, hidden=hidden):
                for hit, rule_action in self._picked_hits(root, selections, below=pick.below):
                    if hit is None:
                        reason = (
                            f"a find changes what it selects under {root}, which holds more "
                            f"than {FIND_LIMIT:,} entries: too many to see that none is a "
                            "path an edit rule covers"
                        )
                        brief = f"{root.name} is too large to look through"
                        return Decision(rule_action, reason, key, command, brief=brief)
                    decided = self._path_change(self.workspace / hit, key, command, reads=False)
                    if decided is None:
                        continue
                    if not exact and decided.action == "deny":
                        why = f"{decided.reason}, if find selects it (not all its tests are judged)"
                        decided = dataclasses.replace(decided, action="ask", reason=why)
                    return decided
        return None

    def _picked_hits(self, root: Path, selections: list[Any], *, below: bool) -> Any:
        """The workspace names under the find root `root` that `selections` pick and
        that a deny or ask edit rule, or a protected pattern where that counts, may
        cover, each with the action to take when there are too many to look through
        (the name then None)."""
        from lathe.policy.carried import find_hits

        names = workspace_names(self.workspace, root)
        if not names:
            return
        groups = [
            (
                action,
                [
                    rule.pattern or EVERY_PATH
                    for rule in rules
                    if covers_path_tool(rule.tool, "edit", changes_files=True, denies=False)
                ],
            )
            for action, rules in (("deny", self.rules.deny), ("ask", self.rules.ask))
        ]
        if not self.sandboxed and self.mode is not Mode.FULL:
            groups.append(("ask", list(protected_patterns(self.protected))))
        for action, patterns in groups:
            if patterns:
                for hit in find_hits(root, names[0], selections, patterns, below=below):
                    yield (None if hit is None else hit[0]), action

    def _path_change(
        self,
        path: Path,
        key: str,
        command: str,
        *,
        reads: bool = True,
        known: dict[Path, list[str]] | None = None,
    ) -> Decision | None:
        """What a command's change of one path decides (`_command_changes`); read rules
        count only with `reads` (the path as the command names it). `known`: the names
        looked up so far (`_names_in`), for the many matches of a glob."""
        is_dir = _is_dir(path)
        rules = self.rules if reads else _edit_rules(self.rules)
        names = (
            workspace_names(self.workspace, path)
            if known is None
            else (self._names_in(path, known))
        )
        for name in names:
            verdict = rules.for_path("edit", name, is_dir=is_dir, changes_files=True)
            if verdict and verdict[0] != "allow":
                rule = verdict[1].key
                reason = f"it changes {name}, which the rule {rule} " + (
                    "denies" if verdict[0] == "deny" else "asks about"
                )
                return Decision(verdict[0], reason, key, command, brief=rule)
            if self.sandboxed:
                continue
            guarded = self._protected_change("bash", name, is_dir, verdict)
            if guarded:
                return dataclasses.replace(guarded, key=key, preview=command)
        return None

    def _edit_rule_inside(self, folder: Path, key: str, command: str) -> Decision | None:
        """What changing `folder` whole (a glob matched it: `rm -rf t*`, `mv t* old`)
        decides when a deny or ask edit rule covers a path under it; one with more
        entries than are looked at (`carried.WALK_LIMIT`) is taken to hold one. The
        workspace root, which holds everything, is not looked into."""
        from lathe.policy.carried import WALK_LIMIT, could_cover, denied_inside

        names = workspace_names(self.workspace, folder)
        if not names or names[0] == ".":
            return None
        name = names[0]
        for action, rules in (("deny", self.rules.deny), ("ask", self.rules.ask)):
            patterns = [
                rule.pattern
                for rule in rules
                if rule.pattern
                and covers_path_tool(rule.tool, "edit", changes_files=True, denies=False)
            ]
            if not could_cover(name, patterns):
                continue
            found, complete = denied_inside(folder, name, patterns)
            if not complete:
                reason = (
                    f"it changes {name}, which holds more than {WALK_LIMIT:,} entries: too "
                    "many to see that none is a path an edit rule covers"
                )
                brief = f"{name} is too large to look through"
                return Decision(action, reason, key, command, brief=brief)
            if found is not None:
                is_dir = _is_dir(self.workspace / found)
                verdict = self.rules.for_path("edit", found, is_dir=is_dir, changes_files=True)
                rule = verdict[1].key if verdict else f"{action} rule"
                verb = "denies" if action == "deny" else "asks about"
                reason = f"it changes {name}, which holds {found}, which the rule {rule} {verb}"
                return Decision(action, reason, key, command, brief=rule)
        return None

    def _reveals_denied_path(self, analysis: Any, *, hidden: bool) -> tuple[str, str] | None:
        """Why the command would show a file a read rule denies, and a few words: a word
        or an input redirection (`< f`, `3< f`, `<> f`, `$(<f)`, `xargs -a f`) names it
        (a glob: any path it matches, dotfiles only when `hidden`; dd's `if=f`), a find
        hands it to a command (`find . -type f -exec cat {} +`), or the command carries
        a folder that holds it (`carried.carries`: mv, cp -r, tar ...) to another name,
        beyond the rule's reach. The workspace root, which holds everything, is no such
        folder."""
        from lathe.policy.carried import carries

        patterns = self.rules.denied_read_patterns()
        if not patterns:
            return None
        known: dict[Path, list[str]] = {}
        for command in analysis.commands:
            found = self._find_reveals(command, patterns, hidden=hidden)
            if found:
                return found
            carrier = carries(command)
            named = [(command.cwd, word, carrier) for word in _named_words(command)] + [
                (redirect.cwd, redirect.target, False)
                for redirect in command.redirects
                if redirect.op in _READ_OPS and redirect.target.value is not None
            ]
            for cwd, word, carried in named:
                base = cwd or self.workspace
                found = self._names_denied(
                    base, word, patterns, carried, hidden=hidden, known=known
                )
                if found:
                    return found
        return None

    def _find_reveals(
        self, command: Any, patterns: list[str], *, hidden: bool
    ) -> tuple[str, str] | None:
        """Why a find that hands what it selects to a command (`-exec cat {} +`) would
        show a file a read rule denies, and a few words: it may select one (its tests
        judged as `carried.find_selection` does), or, for a command that carries folders
        (`-exec cp -r {} d ;`), a folder holding one."""
        from lathe.policy.carried import (
            FIND_LIMIT,
            carries_words,
            find_hits,
            find_selection,
            named_paths,
        )
        from lathe.policy.wrappers import find_call

        if PurePosixPath(command.name).name != "find":
            return None
        call = find_call(command.words[1:])
        runs = [words for words in call.execs if any("{}" in w.text for w in words)]
        if not runs:
            return None
        selection = find_selection(command.words[1:])
        carrier = any(carries_words(words) for words in runs)
        for word in call.roots:
            if word.value is None:
                continue
            for root in named_paths(command.cwd or self.workspace, word, hidden=hidden):
                names = workspace_names(self.workspace, root)
                if not names:
                    continue
                hits = find_hits(root, names[0], [selection], patterns, below=carrier)
                for hit in hits:
                    if hit is None:
                        reason = (
                            f"it hands what find selects under {word.text} to a command, and "
                            f"there are more than {FIND_LIMIT:,} entries: too many to see "
                            "that none is a file a read rule denies"
                        )
                        return reason, f"{word.text} may hold a file a read rule denies"
                    name = hit[0]
                    return (
                        f"it reads {name}, which a read rule denies: find {word.text} "
                        "selects it for the command it runs"
                    ), f"a read rule denies {name}"
        return None

    def _names_denied(
        self,
        base: Path,
        word: Word,
        patterns: list[str],
        carrier: bool,
        *,
        hidden: bool,
        known: dict[Path, list[str]],
    ) -> tuple[str, str] | None:
        """Why `word`, from `base`, names a file a read rule denies (or, for a
        `carrier`, a folder holding one), and a few words; None if it does not. `known`:
        the workspace names of the paths looked at so far (`_names_in`)."""
        from lathe.policy.carried import named_paths

        for named in named_paths(base, word, hidden=hidden):
            names = self._names_in(named, known)
            is_dir = bool(names) and _is_dir(named)
            for name in names:
                if matches_any(name, patterns, is_dir=is_dir):
                    return f"it reads {name}, which a read rule denies", (
                        f"a read rule denies {name}"
                    )
            if carrier and is_dir and names[0] != ".":
                held = self._denied_inside(named, names[0], patterns)
                if held:
                    return held
        return None

    def _names_in(self, path: Path, known: dict[Path, list[str]]) -> list[str]:
        """`rules.workspace_names` of `path`, from its folder's (each looked up once, in
        `known`) where it is no link itself: a glob's thousands of matches share a few
        folders, and resolving each one's links had taken seconds."""
        path = Path(os.path.normpath(path))
        if path not in known:
            if path.name in ("", ".", "..") or path == self.workspace or os.path.islink(path):
                known[path] = workspace_names(self.workspace, path)
            else:
                known[path] = [
                    path.name if name == "." else f"{name}/{path.name}"
                    for name in self._names_in(path.parent, known)
                ]
        return known[path]

    def _denied_inside(
        self, folder: Path, name: str, patterns: list[str]
    ) -> tuple[str, str] | None:
        """Why carrying `folder` (`name` in the workspace) elsewhere is refused, and a few
        words, when it holds a file a read rule denies, or more than can be looked at."""
        from lathe.policy.carried import WALK_LIMIT, denied_inside

        found, complete = denied_inside(folder, name, patterns)
        if not complete:
            reason = (
                f"it moves or copies {name}, which holds more than {WALK_LIMIT:,} entries: "
                "too many to see that none is a file a read rule denies"
            )
            return reason, f"{name} may hold a file a read rule denies"
        if found is None:
            return None
        verdict = self.rules.for_path("read", found, is_dir=_is_dir(self.workspace / found))
        rule = verdict[1].key if verdict and verdict[0] == "deny" else "a read rule"
        reason = (
            f"it moves or copies {name}, which holds {found}, which the rule {rule} denies "
            "reading: under another name it would be out of the rule's reach"
        )
        return reason, rule

    def _mode_default(self, tool: str, read_only: bool, key: str, preview: str) -> Decision:
        match self.mode:
            case Mode.FULL:
                return Decision("allow", "full access mode", key, preview)
            case Mode.READ_ONLY:
                if read_only:
                    return Decision("allow", "read-only tool", key, preview)
                reason = "lathe is in read-only mode"
                return Decision("deny", reason, key, preview, brief="read-only mode")
            case Mode.ASK:
                if read_only:
                    return Decision("allow", "read-only tool", key, preview)
                return Decision("ask", f"{tool} changes the workspace", key, preview)
            case Mode.AUTO:
                return Decision("allow", "auto mode", key, preview)


# What turns bash's dotglob on, so a glob matches dotfiles: `shopt -s dotglob`, a
# GLOBIGNORE set, BASHOPTS in a new bash's environment, `bash -O dotglob`.
_DOTGLOB = ("dotglob", "GLOBIGNORE", "BASHOPTS")


def _globs_see_dotfiles(text: str, analysis: Any) -> bool:
    """Whether the command line may turn dotglob on, so that `*` matches `.env`: it
    names what does so, or runs a `shopt` whose options are only known at run time.
    Judged by the line's text and commands (those of a script it sources included),
    not by where the shell turns it on: any mention counts for every glob."""
    if any(mark in text for mark in _DOTGLOB):
        return True
    for command in (*analysis.commands, *analysis.indirect, *analysis.in_files):
        words = [w.value for w in command.words]
        if PurePosixPath(command.name).name == "shopt" and None in words:
            return True
        seen = [*(w for w in words if w), *command.assigned]
        if any(mark in value for value in seen for mark in _DOTGLOB):
            return True
    return False


def _named_words(command: Any) -> list[Word]:
    """The words of `command` that may name a file it reads: its operands, and the file
    of dd's `if=`; not the `{}` of a command a find runs, which stands for what the find
    selects (`Policy._find_reveals` judges that)."""
    from lathe.policy.shell_words import Word

    by_find = command.via[-1:] == ("find -exec",)
    dd = PurePosixPath(command.name).name == "dd"
    named = []
    for word in command.words[1:]:
        value = word.value
        if value is None or value.startswith("-") or (by_find and "{}" in word.text):
            continue
        named.append(word)
        if dd and value.startswith("if="):
            named.append(Word(word.text, value[3:], glob=word.glob))
    return named


def _edit_rules(rules: RuleSet) -> RuleSet:
    """`rules` without the read-deny rules that are not also about editing: what judges
    a path a command changes but does not name (a glob's match, a find's pick)."""
    deny = [
        r for r in rules.deny if covers_path_tool(r.tool, "edit", changes_files=True, denies=False)
    ]
    return RuleSet(rules.allow, rules.ask, deny)


def _find_selections(analysis: Any, root: Path) -> list[Any]:
    """The selections (`carried.find_selection`) of the finds in `analysis` rooted at
    `root`, the one every path is taken to be when none is found there."""
    from lathe.policy.carried import EVERYTHING, find_selection
    from lathe.policy.dirs import join_path
    from lathe.policy.wrappers import find_call

    found = []
    for command in (*analysis.commands, *analysis.indirect, *analysis.in_files):
        if PurePosixPath(command.name).name != "find":
            continue
        args = command.words[1:]
        roots = [r.value for r in find_call(args).roots if r.value is not None]
        if any(join_path(command.cwd, value) == root for value in roots):
            found.append(find_selection(args))
    return found or [EVERYTHING]


def _roots(root: Path, *, hidden: bool) -> list[Path]:
    """The folders a find root names: a glob's matches (`find t* -delete`), or itself."""
    from lathe.policy.carried import glob_targets

    if not any(mark in str(root) for mark in "*?["):
        return [root]
    return glob_targets(root, hidden=hidden)


# Redirections that open a file for reading: `< f` (any descriptor: `3< f`), `<> f`.
_READ_OPS = frozenset({"<", "<>"})


def _names(rule_pattern: str | None, protected: str) -> bool:
    """Whether an allow rule names a protected entry itself (`edit(.envrc)`,
    `edit(.vscode/**)`) rather than covering it by a wildcard (`write(*.json)`, `edit`)."""
    core = protected.strip().strip("/").removeprefix("**/")
    return bool(rule_pattern) and core in str(rule_pattern)


_STRENGTH = {"deny": 0, "ask": 1}


def _strongest(
    verdicts: dict[str, tuple[Action, Any] | None],
) -> tuple[str, tuple[Action, Any] | None]:
    """Of the verdicts on a path's spellings (`rules.workspace_names`), with the spelling it was
    drawn for: a deny or ask on any; an allow only when every spelling is allowed (an
    allow for the link's name does not reach the file it leads to)."""
    drawn = [(name, v) for name, v in verdicts.items() if v is not None]
    restrictive = [(name, v) for name, v in drawn if v[0] in _STRENGTH]
    if restrictive:
        return min(restrictive, key=lambda item: _STRENGTH[item[1][0]])
    first = next(iter(verdicts))
    if drawn and len(drawn) == len(verdicts):
        return drawn[0]
    return first, None


@dataclass
class PolicyGate(AgentHooks):
    policy: Policy
    approver: Approver | None = None
    remembered: set[str] = field(default_factory=set)
    on_remember: Callable[[str], None] | None = None  # records "always" in the session
    words: Words = field(default_factory=load_words)  # what a refusal tells the model

    async def before_tool(self, name: str, arguments: dict[str, Any]) -> ToolOutput | None:
        try:
            decision = self.policy.decide(name, arguments)
        except ToolError as exc:
            return _denied(self.words.say("denied", reason=exc), str(exc))
        if decision.action == "allow" or (
            decision.action == "ask" and decision.key in self.remembered
        ):
            return None
        if decision.action == "deny":
            text = self.words.say("denied_by_rule", tool=name, reason=decision.reason)
            return _denied(text, decision.why)
        if self.approver is None:
            text = self.words.say("denied_without_approver", tool=name, reason=decision.reason)
            return _denied(text, f"{decision.why} (needs approval)", by="no_approver")
        answer = await self.ask(
            ApprovalRequest(name, arguments, decision.reason, decision.key, decision.preview)
        )
        if answer.choice == "deny":
            why = f": {answer.reason}" if answer.reason else ""
            if answer.by == "timeout":  # not a person steering: the model must not read one
                text = self.words.say("denied_unanswered", tool=name, why=why)
                return _denied(text, f"unanswered{why}", by="timeout")
            text = self.words.say("denied_by_user", tool=name, why=why)
            return _denied(text, f"by the user{why}", by="user")
        return None

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer:
        """The person's answer to `request` (there must be an approver); an "always"
        is remembered for the session, and told to `on_remember`."""
        assert self.approver is not None
        answer = await self.approver.ask(request)
        if answer.choice == "always":
            self.remembered.add(request.key)
            if self.on_remember:
                self.on_remember(request.key)
        return answer


def command_key(command: str) -> str:
    """The approval key of a shell command, `bash(COMMAND)`, as remembered."""
    return f"bash({command.strip()})"


def _denied(message: str, why: str, *, by: str = "rule") -> ToolOutput:
    """A refusal: `message` is what the model reads; `why`, a few words naming the rule
    or reason, goes to the progress line ("denied: edit(tests/**)") and to
    `details["denied"]` for programs reading the events; `details["denied_by"]` says
    who refused: "rule" (a rule, the mode, the command guard), "no_approver" (it needed
    a person and there is none), "timeout" (nobody answered in time) or "user"."""
    return ToolOutput(
        content=message,
        is_error=True,
        summary=f"denied: {why}",
        details={"denied": why, "denied_by": by},
    )


def _is_dir(path: Path) -> bool:
    """Path.is_dir, False where the path cannot even be looked at (a name too long, a
    folder without the search permission): the tool then reports why."""
    try:
        return path.is_dir()
    except OSError:
        return False
