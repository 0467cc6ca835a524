"""Turn a bash command string into the simple commands it would run.

The walker follows the syntax tree from tree-sitter-bash the way bash would execute it,
without running anything: lists run in order, pipelines feed each stage's output to the
next, `cd` moves the working directory later commands see (every folder it may be
in: `dirs`), literal `bash -c`/`eval`
strings are parsed in turn, and wrappers (`sudo`, `env`, `timeout`, `xargs`, `find
-exec`, ...) give way to the command they run. Unquoted expansions split on IFS as the
line sets it (unknown once it is set in a way not followed); a program named by a link
is also judged as its target, and one found through a PATH or `hash -p` the line
changed as the file it runs (`programs`). What cannot be known before run time is
recorded as a note with decision "ask" so the guard never lets it pass silently.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from lathe.policy import dirs, programs
from lathe.policy.assigned import names_set
from lathe.policy.bash_tree import (
    command_name,
    descendants,
    error_excerpt,
    has_ancestor,
    node_text,
    parse_bash,
)
from lathe.policy.dirs import Dirs
from lathe.policy.interpreters import STDIN_FILES, Effect, language_of
from lathe.policy.scripts import Files
from lathe.policy.shell_words import DEFAULT_IFS, Scope, Word, expand, expand_one, shown
from lathe.policy.streams import UNKNOWN, Stream, output_of
from lathe.policy.wrappers import (
    COMMAND_VARIABLES,
    PRIVILEGED,
    SHELLS,
    TRANSPARENT,
    find_call,
)

Decision = Literal["deny", "ask", "allow"]
MAX_DEPTH = 8  # nested shells, eval, scripts, function calls and loops, together
# The work one command line may cost the walker: each node walked counts once for every
# place the shell may be in. Past it the command is refused, never walked for minutes.
MAX_WORK = 40_000
# The same for the scripts on disk it runs (a 40 kB script costs 15,000 to 40,000): past
# it they are read no further, as past `scripts.MAX_BYTES` (they may only add a deny).
MAX_FILE_WORK = 100_000
_WRITE_OPS = frozenset({">", ">>", "&>", "&>>", ">|", ">&", "<>"})
_INTERPRETERS = re.compile(r"(python|pypy|perl|ruby|node|php|lua)[\d.]*")
_SILENT = frozenset({"comment", "variable_assignment", "function_definition", "unset_command"})
_CONTROL = frozenset(
    {"if_statement", "while_statement", "for_statement", "c_style_for_statement",
     "case_statement"}
)  # fmt: skip
_LOOP_PASSES = 4  # a loop whose folders still grow after this many passes: unknown
_INNER_LOOP_PASSES = 2  # the same inside another loop, whose passes multiply these
# Variables that change what a command line runs: how its words split, where programs
# are found, whether bash is in posix mode (`_posix`). Each way of setting them is
# followed, or makes them unknown.
_TRACKED = ("IFS", "PATH", "POSIXLY_CORRECT")
# A variable named only at run time (`read "$N"`) may be IFS, then unknown, or turn on
# posix mode. It is not taken to be PATH: that would ask about every command after it.
_ANY_NAME = ("IFS", "POSIXLY_CORRECT")
# Kept among a state's variables under names no variable can have, so that subshells,
# branches and loops treat them as they treat variables (a change that may not have
# happened is unknown, None): the case attribute of a variable followed ("u", "l", "c",
# "" none, None unknown: `declare -u IFS` uppercases what IFS is set to), under its name
# and this suffix; "on" (or None: maybe) for the shell options that change where
# variables are set: `shopt -s lastpipe` runs a pipeline's last command in this shell,
# `localvar_inherit` gives `local IFS` the caller's value, and posix mode (set by
# `set -o posix`, by POSIXLY_CORRECT, or by being sh) keeps a special builtin's prefix
# assignments (`IFS=@ export x`).
_CASE = "#case"
# The options each declaring builtin takes (bash 5).
_DECLARE_OPTIONS = {
    "declare": frozenset("aAcfFgiIlnprtux"),
    "typeset": frozenset("aAcfFgiIlnprtux"),
    "local": frozenset("aAcfFgiIlnprtux"),
    "export": frozenset("fnp"),
    "readonly": frozenset("aAfp"),
}
_LASTPIPE = ":lastpipe"
_INHERIT = ":localvar_inherit"
_POSIX_SHELL = ":posix"
_OPTIONS = (_LASTPIPE, _INHERIT, _POSIX_SHELL)
_STATE = (*_TRACKED, *(name + _CASE for name in _TRACKED), *_OPTIONS)
# Builtins whose prefix assignments stay set after them in posix mode.
_SPECIAL = frozenset(
    {":", ".", "source", "break", "continue", "eval", "exec", "exit", "export", "readonly",
     "return", "set", "shift", "times", "trap", "unset"}
)  # fmt: skip
# Shells whose special builtins are always posix ones, and those that run a pipeline's
# last command in the shell itself (mksh: maybe).
_POSIX_SHELLS = frozenset({"sh", "dash", "ash", "busybox"})
_LASTPIPE_SHELLS = {"zsh": "on", "ksh": "on", "mksh": None}
# Builtins that set the variables their words name (`read IFS`, `printf -v IFS ,`).
_ASSIGNING = frozenset(
    {"read", "mapfile", "readarray", "printf", "getopts", "let", "wait", "declare",
     "typeset", "local", "export", "readonly", "unset"}
)  # fmt: skip
# An arithmetic or `${X:=...}` assignment to one of them: `((IFS=44))`.
_ASSIGNS_TRACKED = re.compile(
    r"\b(IFS|PATH|POSIXLY_CORRECT)\s*(\[[^]]*\])?\s*([-+*/%&|^:]|<<|>>)?=(?!=)"
    r"|(\+\+|--)\s*(IFS|PATH|POSIXLY_CORRECT)\b|\b(IFS|PATH|POSIXLY_CORRECT)\s*(\+\+|--)"
)
# `{NAME}>file`: bash opens a descriptor and sets NAME to its number.
_DESCRIPTOR_NAME = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_EXPRESSIONS = frozenset(
    {"binary_expression", "unary_expression", "postfix_expression", "expansion"}
)
_UNSET = object()  # a variable's value in a saved state where it was not set


@dataclass(frozen=True)
class Redirect:
    op: str  # ">", ">>", "&>", ...: only redirects that write are kept
    target: Word
    cwd: Path | None
    fd: str = ""  # the descriptor written before the operator (`2>`), "" for stdout
    from_file: bool = False  # found in a script read from disk: it may only deny


@dataclass(frozen=True)
class SimpleCommand:
    """One command bash would run, after wrappers were peeled off (they are in `via`)."""

    words: tuple[Word, ...]
    # The directory it runs in, None when only run time knows. A command that may run in
    # several folders (after `if ...; then cd ~; fi`) is recorded once in each.
    cwd: Path | None
    via: tuple[str, ...] = ()  # e.g. ("sudo",), ("bash -c",), ("xargs",)
    assigned: tuple[str, ...] = ()  # environment names set for it (`X=1 cmd`, `env X=1`)
    # Arguments added at run time: None if none; () if unknown (`xargs` reading a file);
    # else what they may be (`find . | xargs rm`: "./*").
    fed: tuple[Word, ...] | None = None
    redirects: tuple[Redirect, ...] = ()
    text: str = ""
    from_file: bool = False  # found in a script read from disk: it may only deny
    # The values of the variables set for it (`X=1 cmd`, `env X=1 cmd`), by name.
    environment: tuple[tuple[str, Word], ...] = ()

    @property
    def name(self) -> str:
        word = self.words[0]
        return word.text if word.value is None else word.value

    @property
    def args(self) -> tuple[str, ...]:
        return tuple(w.text if w.value is None else w.value for w in self.words[1:])

    @property
    def resolved(self) -> bool:
        return not self.words[0].glob and all(w.value is not None for w in self.words)


@dataclass(frozen=True)
class Found:
    """An effect of interpreter code (`python -c`), where it runs."""

    effect: Effect
    cwd: Path | None
    from_file: bool


@dataclass
class Script:
    commands: list[SimpleCommand] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    notes: list[tuple[Decision, str]] = field(default_factory=list)
    # Commands found inside script files and interpreter code: judged like the others;
    # deny and ask rules hold for them (but for a file on disk's), allow rules name the
    # command line the model wrote.
    indirect: list[SimpleCommand] = field(default_factory=list)
    effects: list[Found] = field(default_factory=list)


@dataclass
class State:
    places: tuple[Dirs, ...]  # everywhere the shell may be at this point
    variables: dict[str, str | None]
    via: tuple[str, ...] = ()
    aliases: dict[str, str | None] = field(default_factory=dict)
    functions: dict[str, Any] = field(default_factory=dict)  # name -> its body's node
    # PATH was last set to a value only known at run time by a script on disk, which
    # may only add a deny: the programs it may find are not asked about.
    path_by_file: bool = False

    @classmethod
    def at(cls, cwds: tuple[Path | None, ...], **fields: Any) -> State:
        """A new shell started in any of `cwds`."""
        return cls(places=tuple(Dirs(cwd) for cwd in cwds), variables={}, **fields)

    @property
    def cwds(self) -> tuple[Path | None, ...]:
        return tuple(dict.fromkeys(place.cwd for place in self.places))

    @property
    def cwd(self) -> Path | None:
        """The folder, when the shell can only be in one known to the guard."""
        cwds = self.cwds
        return cwds[0] if len(cwds) == 1 else None

    def may_also_be(self, places: tuple[Dirs, ...]) -> None:
        self.places = dirs.merged(*self.places, *places)

    def copy(self, **changes: Any) -> State:
        changes.setdefault("aliases", dict(self.aliases))
        changes.setdefault("functions", dict(self.functions))
        return replace(self, variables=dict(self.variables), **changes)


class TooComplex(Exception):
    """The walk went past `MAX_WORK`."""


class FilesTooComplex(Exception):
    """The walk of scripts on disk went past `MAX_FILE_WORK`."""


def parse_script(command: str, *, cwd: Path, home: Path, path: str | None = None) -> Script:
    """The commands `command` runs in `cwd`; `path`: the PATH it starts with."""
    walker = Walker(home, path)
    try:
        walker.walk_text(command, State.at((cwd,)), None)
    except TooComplex:
        walker.script.notes.append(
            ("deny", "too complex to judge: following it would take the guard longer than "
                     "it may (functions or loops that multiply), split it into simpler "
                     "commands")
        )  # fmt: skip
    return walker.script


class Walker:
    def __init__(self, home: Path, path: str | None = None) -> None:
        self.home = home
        self.path = path  # PATH as the command line starts with it
        self.script = Script()
        self.depth = 0
        self.files = Files()
        self.file_depth = 0  # > 0 while walking a script read from disk
        self.indirect = 0  # > 0 while walking a script file or interpreter code
        self.expanding: set[str] = set()  # aliases being expanded: bash does not recurse
        self.calling: set[str] = set()  # functions being walked: a recursive one once
        self.pipes = 0  # `<(...)` met so far: each is a /dev/fd/N of its own
        self.recorded: set[SimpleCommand] = set()
        self.work = 0  # toward MAX_WORK
        self.file_work = 0  # toward MAX_FILE_WORK
        self.loops = 0  # loops being walked, one inside the other
        # A function's walk from one state, by that state: the state it leaves.
        self.called: dict[Any, tuple[Any, ...]] = {}
        # For each function being walked, the values its `local` names had before.
        self.frames: list[dict[str, Any]] = []
        # The variables followed that a name made by `declare -n` may set (`declare -n
        # r=IFS; r=,`): any assignment after it may set them.
        self.namerefs: set[str] = set()
        # Links (and copies) `ln`, `cp`, `install` and `mv` make in this command line
        # (`programs.made_links`; None: of a file only run time knows), and whether one
        # was made whose place only run time knows.
        self.links: dict[Path, Path | None] = {}
        self.vague_links = False
        # `hash -p FILE NAME`: the files NAME runs (None: only run time knows), by NAME;
        # under None, those for any name.
        self.hashed: dict[str | None, list[str | None]] = {}
        # The PATH (and whether a file on disk set it) each script being walked as a new
        # shell started with, when the command line changed it: the script inherits it.
        self.exported: list[tuple[str | None, bool] | None] = []

    def note(self, decision: Decision, reason: str) -> None:
        if self.file_depth and decision != "deny":
            return
        if (decision, reason) not in self.script.notes:
            self.script.notes.append((decision, reason))

    def writes_file(self, target: Word, st: State) -> None:
        """A file a command writes other than by a redirection, judged as `> target`."""
        for cwd in st.cwds:
            self.script.redirects.append(Redirect(">", target, cwd, "", self.file_depth > 0))

    def scope(self, st: State) -> Scope:
        return Scope(
            self.home, st.cwd, st.variables, lambda node: self._substitute(node, st), self.path
        )

    # -- statements -------------------------------------------------------------------

    def too_deep(self) -> bool:
        """Whether one more level of nesting goes past `MAX_DEPTH` (then noted)."""
        if self.depth < MAX_DEPTH:
            return False
        if not self.file_depth:  # scripts that source each other are not an attack
            self.note("deny", f"commands nested more than {MAX_DEPTH} levels deep, further "
                              "than the guard follows")  # fmt: skip
        return True

    def walk_text(self, text: str, st: State, stdin: Stream | None) -> None:
        if self.too_deep():
            return
        root = parse_bash(text)
        if root.has_error:
            self.note("ask", f"the command could not be parsed (near {error_excerpt(root)!r})")
        self.depth += 1
        try:
            self.run(root, st, stdin)
        finally:
            self.depth -= 1

    def run(self, node: Any, st: State, stdin: Stream | None = None) -> Stream | None:
        if self.file_depth:
            self.file_work += len(st.places) or 1
            if self.file_work > MAX_FILE_WORK:
                raise FilesTooComplex
        else:
            self.work += len(st.places) or 1
            if self.work > MAX_WORK:
                raise TooComplex
        kind = node.type
        if kind == "command":
            return self._command(node, st, stdin, [])
        if kind == "redirected_statement":
            return self._redirected(node, st, stdin)
        if kind == "pipeline":
            return self._pipeline(node.named_children, st, stdin)
        if kind in ("subshell", "command_substitution", "process_substitution"):
            return self._sequence(node.named_children, st.copy(), stdin)
        if kind == "function_definition":
            self._function(node, st)
            return None
        if kind == "file_redirect":  # `$(<f)`: a redirect with no command reads f
            redirects: list[Redirect] = []
            self._redirect(node, st, redirects)
            self._read_alone(redirects, st, node)
            return UNKNOWN
        if kind == "variable_assignment":
            self._assign(node, st)
            return None
        if kind == "unset_command":
            self._unset(node, st)
            return None
        if kind == "declaration_command":
            # Its words only run time knows may be set after its assignments were.
            later = self._declare(node, st)
            out = self._sequence(node.named_children, st, stdin)
            self._unknown(st, *later)
            return out
        if kind in _EXPRESSIONS and _ASSIGNS_TRACKED.search(text := node_text(node)):
            self._unknown(st, *(name for name in _TRACKED if name in text))
        if kind in _CONTROL:
            return self._control(node, st)
        if kind == "list":
            return self._list(node, st, stdin)
        return self._sequence(node.named_children, st, stdin)

    def _sequence(self, nodes: list[Any], st: State, stdin: Stream | None) -> Stream | None:
        outs = []
        for i, child in enumerate(nodes):
            out = self.run(child, st, stdin if i == 0 else None)
            if child.type not in _SILENT:
                outs.append(out)
        return _joined(outs)

    def _list(self, node: Any, st: State, stdin: Stream | None) -> Stream | None:
        """`a && b` or `a || b`: b runs only where a's status lets it. A `cd` as `a` tells
        its status in each place the shell may be (`cd x && rm -rf *` deletes only in
        x, `cd ~ || cd /tmp` may stay in ~); after anything else, b may or may not run."""
        left, rest = node.named_children[0], node.named_children[1:]
        outs = [(left, self.run(left, st, stdin))]
        if left.type != "list" and not self._plain_cd(left, st):
            st.places = dirs.unsure(st.places)
        skips = any(c.type == "||" for c in node.children)  # the status that skips b
        skipped = tuple(p for p in st.places if p.ok is skips)
        runs = tuple(p for p in st.places if p.ok is not skips)
        if not runs:  # b cannot run: judged all the same, where the shell may be
            for child in rest:
                self.run(child, st.copy())
        else:
            st.places = runs
            before = {name: st.variables.get(name, _UNSET) for name in _STATE}
            outs += [(child, self.run(child, st)) for child in rest]
            if not self._plain_cd(rest[-1], st):
                st.places = dirs.unsure(st.places)
            if skipped or any(p.ok is None for p in runs):  # b may not have run
                self._maybe_changed(before, st)
            st.may_also_be(skipped)
        return _joined([out for child, out in outs if child.type not in _SILENT])

    def _plain_cd(self, node: Any, st: State) -> bool:
        """Whether `node` is the shell's own cd, pushd or popd (not an alias or function
        of that name), so the places it left say whether it succeeded."""
        if node.type == "redirected_statement":
            body = node.child_by_field_name("body")
            return body is not None and self._plain_cd(body, st)
        name = node.child_by_field_name("name") if node.type == "command" else None
        text = "" if name is None else node_text(name)
        return text in ("cd", "pushd", "popd") and text not in {*st.aliases, *st.functions}

    def _pipeline(self, nodes: list[Any], st: State, stdin: Stream | None) -> Stream | None:
        """Each command of a pipeline runs in a subshell of its own, but the last one
        runs in this shell under `shopt -s lastpipe` (`echo @ | read IFS` sets IFS)."""
        stream = stdin
        for child in nodes[:-1]:
            stream = self.run(child, st.copy(), stream) or UNKNOWN
        lastpipe = st.variables.get(_LASTPIPE, _UNSET)
        if lastpipe is _UNSET:
            return self.run(nodes[-1], st.copy(), stream) or UNKNOWN
        if lastpipe == "on":
            return self.run(nodes[-1], st, stream) or UNKNOWN
        return self._maybe(nodes[-1], st, stream)

    def _maybe(self, node: Any, st: State, stdin: Stream | None) -> Stream | None:
        """Walk `node` in this shell when it may run in a subshell instead: where it
        leaves the shell is one of the places it may be, and what it sets is unknown."""
        entering = st.places
        before = {name: st.variables.get(name, _UNSET) for name in st.variables}
        out = self.run(node, st, stdin)
        st.may_also_be(entering)
        self._maybe_changed({**before, **dict.fromkeys(st.variables.keys() - before, _UNSET)}, st)
        return out or UNKNOWN

    def _control(self, node: Any, st: State) -> None:
        before = st.copy()
        if node.type == "for_statement" and (var := node.child_by_field_name("variable")):
            st.variables[node_text(var)] = None
        # Each part may run or not (a branch, a body run zero times), and a loop's body
        # again from wherever the last pass left the shell, until no new place appears.
        loop = node.type not in ("if_statement", "case_statement")
        if loop and self.too_deep():  # loops nested this deep multiply the passes walked
            st.may_also_be((dirs.UNKNOWN,))
            return
        self.loops += loop
        self.depth += loop
        try:
            for _ in range(_INNER_LOOP_PASSES if self.loops > 1 else _LOOP_PASSES):
                start = set(st.places)
                for child in node.named_children:
                    entering = st.places
                    self.run(child, st)
                    st.may_also_be(entering)
                if not loop or set(st.places) == start:
                    break
            else:
                st.may_also_be((dirs.UNKNOWN,))
        finally:
            self.loops -= loop
            self.depth -= loop
        # A body may run zero or many times: whatever it changed is unknown afterwards.
        names = {*before.variables, *st.variables}
        self._maybe_changed({n: before.variables.get(n, _UNSET) for n in names}, st)

    def _maybe_changed(self, before: dict[str, Any], st: State) -> None:
        """The variables `before` gives the earlier values of may have changed or not:
        each that did is unknown; but PATH may be either, so programs are looked up in
        the folders of both."""
        for name, old in before.items():
            new = st.variables.get(name, _UNSET)
            if old == new:
                continue
            if name == "PATH" and old is not None and new is not None:
                inherited = self.path if old is _UNSET else old
                st.variables[name] = programs.either_path(inherited, new, self.path)
            else:
                st.variables[name] = None

    def _function(self, node: Any, st: State) -> None:
        name_node = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        if name_node is None or body is None:
            return
        name = node_text(name_node)
        calls = [c for c in descendants(body, "command") if command_name(c) == name]
        spawns = any(has_ancestor(c, "pipeline", body) for c in calls) or any(
            child.type == "&" for child in descendants(body, "&")
        )
        if calls and spawns:
            self.note("deny", f"fork bomb: function {name!r} keeps starting copies of itself")
        self.run(body, st.copy())
        st.functions[name] = body  # walked again where it is called, in the caller's shell

    def _assign(self, node: Any, st: State) -> None:
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        for child in node.named_children:
            self.run(child, st)
        element = name is not None and name.type == "subscript"
        if element:  # `IFS[0]=,` sets $IFS: its value is then unknown
            name = name.child_by_field_name("name")
        if name is None or name.type != "variable_name":
            return
        if self.frames and _declares_local(node):
            self._local(st, node_text(name))
        operator = next((c.type for c in node.children if not c.is_named), "=")
        if operator != "=" or element:
            self._set(st, node_text(name), None)
        elif value is None:
            self._set(st, node_text(name), "")
        else:
            self._set(st, node_text(name), expand_one(value, self.scope(st)).value)

    def _set(self, st: State, name: str, value: str | None) -> None:
        st.variables[name] = _cased(value, st.variables.get(name + _CASE, ""))
        if name == "PATH":
            st.path_by_file = value is None and self.file_depth > 0
        self._unknown(st, *(self.namerefs - {name}))

    def _unknown(self, st: State, *names: str) -> None:
        """The variables `names` may have been set to anything."""
        for name in names:
            st.variables[name] = None
            if name == "PATH":
                st.path_by_file = self.file_depth > 0

    def _local(self, st: State, name: str) -> None:
        """`name` becomes local to the function being walked: its value comes back
        when the function returns."""
        if self.frames and name not in self.frames[-1]:
            self.frames[-1][name] = st.variables.get(name, _UNSET)

    def _declare(self, node: Any, st: State) -> list[str]:
        """`export`, `declare`, `local`...: what their words other than `NAME=value`
        (walked as assignments) do to the variables followed. `local IFS` in a function
        unsets IFS there (bash splits on whitespace again); a word only known at run
        time, or one naming IFS or PATH, may set them (`declare "IFS=,"`); `-n` makes
        names that set others; `-u`, `-l`, `-c` (and `-i`, whose arithmetic is not
        followed) change what the names they declare are set to from then on. Returns
        the names its words may set, as they may be set after its assignments."""
        scope = self.scope(st)
        builtin = node_text(node.children[0]) if node.children else ""
        # An option it does not take, or `local` outside a function, fails it whole.
        fails = builtin == "local" and not self.frames
        case: Any = _UNSET  # the case attribute the options give the names declared
        options = True  # bash reads options before the first name only
        declared: list[str] = []  # the followed names among those declared
        later: list[str] = []  # those its words may set
        local = False
        for child in node.named_children:
            if child.type == "variable_assignment":
                options = False
                local = bool(self.frames) and _declares_local(child)
                declared += [n for n in [_assigned_name(child)] if n in _TRACKED]
                continue
            if child.type == "variable_name":
                options = False
                local = bool(self.frames) and _declares_local(child)
                name = node_text(child)
                if name in _TRACKED:
                    declared.append(name)
                    if local:
                        self._local_unset(st, name)
                continue
            for word in expand(child, scope):
                value = word.value
                if value == "--" and options:
                    options = False
                    continue
                if value is not None and value.startswith(("-", "+")) and len(value) > 1:
                    if "n" in value and value[0] == "-":
                        self.namerefs |= {*_ANY_NAME, *_named(node_text(node))}
                    if options:
                        case = _case_option(value, case)
                        known = _DECLARE_OPTIONS.get(builtin, frozenset())
                        fails = fails or not set(value[1:]) <= known
                    continue
                if value is None and options:  # `declare "$F" IFS=q`: maybe -u
                    case = None
                options = False
                names = _ANY_NAME if value is None else _named(value)
                self._unknown(st, *names)
                declared += names
                later += names
        self._declare_case(st, declared, case, local)
        return declared if fails else later

    def _local_unset(self, st: State, name: str) -> None:
        """`local NAME` in a function: NAME has no value there (IFS splits on
        whitespace), unless `shopt -s localvar_inherit` gave it the caller's."""
        self._local(st, name)
        inherit = st.variables.get(_INHERIT, _UNSET)
        if inherit == "on":
            return
        if name == "IFS" and inherit is _UNSET:
            st.variables.pop(name, None)
        else:
            self._unknown(st, name)

    def _declare_case(self, st: State, declared: list[str], case: Any, local: bool) -> None:
        """Give the names a declaration names the case attribute its options set
        (`_UNSET`: none given); a new local has none unless localvar_inherit."""
        if case is _UNSET and not local:
            return
        names = dict.fromkeys(declared)
        if case is not _UNSET and self.namerefs:  # `declare -u r` where r may be IFS
            for name in self.namerefs & set(_TRACKED):
                st.variables[name + _CASE] = None
        for name in names:
            key = name + _CASE
            if local:
                self._local(st, key)
            if case is not _UNSET:
                st.variables[key] = case
            elif key in st.variables:
                inherit = st.variables.get(_INHERIT, _UNSET)
                st.variables[key] = "" if inherit is _UNSET else None

    def _unset(self, node: Any, st: State) -> None:
        if any(node_text(c).startswith("-") and "f" in node_text(c) for c in node.named_children):
            return  # `unset -f NAME` removes functions
        for child in node.named_children:
            name = node_text(child)
            if child.type not in ("variable_name", "word") or "$" in name:
                self._unknown(st, *_ANY_NAME)  # `unset "$V"` may unset IFS
                continue
            if name in ("IFS", "POSIXLY_CORRECT"):  # IFS splits as by default; no posix
                st.variables.pop(name, None)
            else:
                st.variables[name] = ""
            if name + _CASE in st.variables:  # gone with it, or a local's shows again
                st.variables[name + _CASE] = None

    # -- redirects ---------------------------------------------------------------------

    def _redirected(self, node: Any, st: State, stdin: Stream | None) -> Stream | None:
        body = node.child_by_field_name("body")
        others = [c for c in node.named_children if body is None or c != body]
        out = None
        if body is not None and body.type == "list":
            # tree-sitter hangs `a && b > f`'s redirect on the list; bash gives it to `b`,
            # which runs after `a` (and after any `cd` in it).
            out = self.run(body, st, stdin)
            body = None
        redirects: list[Redirect] = []
        continuations: list[Any] = []
        for child in others:
            stdin = self._redirect(child, st, redirects) or stdin
            if child.type == "heredoc_redirect":
                continuations += [
                    c for c in child.named_children
                    if not c.type.startswith("heredoc_") and not c.type.endswith("_redirect")
                ]  # fmt: skip
        if body is not None and body.type == "command":
            out = self._command(body, st, stdin, redirects)
        else:
            if body is not None:
                out = self.run(body, st, stdin)
            self._wrote(redirects, out)
            self._read_alone(redirects, st, node)
        # tree-sitter puts `| sh` or `&& x` after a heredoc inside the heredoc node.
        for rest in continuations:
            if rest.type == "pipeline":
                out = self._pipeline(rest.named_children, st, out)
            else:
                out = self.run(rest, st)
        return out

    def _redirect(self, node: Any, st: State, redirects: list[Redirect]) -> Stream | None:
        for child in node.named_children:
            # `$(...)` runs in a redirect target and in an unquoted heredoc's body; the
            # statements tree-sitter nests in a heredoc node are the caller's to run.
            if node.type != "heredoc_redirect" or child.type == "heredoc_body":
                self._run_word(child, st)
        if node.type == "heredoc_redirect":
            # `cat <<'EOF' > f`: tree-sitter nests the `> f` inside the heredoc node.
            for child in node.named_children:
                if child.type.endswith("_redirect"):
                    self._redirect(child, st, redirects)
            return self._heredoc(node)
        if node.type == "herestring_redirect":
            word = expand_one(node.named_children[-1], self.scope(st))
            return UNKNOWN if word.value is None else Stream("text", word.value + "\n")
        if node.type != "file_redirect":
            return None
        op = next((c.type for c in node.children if not c.is_named), "")
        targets = [c for c in node.named_children if c.type != "file_descriptor"]
        if not targets:
            return None
        fd = next(
            (node_text(c) for c in node.named_children if c.type == "file_descriptor"),
            "",
        )
        if op == "<":  # kept on the command for the read rules; not a write
            source = expand_one(targets[-1], self.scope(st))
            redirects += [Redirect(op, source, cwd, fd, self.file_depth > 0) for cwd in st.cwds]
            return Stream("file", items=(source,))
        if op not in _WRITE_OPS:
            return None
        target = expand_one(targets[-1], self.scope(st))
        if (op == ">&" and (target.value or "").isdigit()) or target.value == "-":
            return None
        for cwd in st.cwds:
            redirects.append(Redirect(op, target, cwd, fd, self.file_depth > 0))
            self.script.redirects.append(redirects[-1])
        return None

    def _heredoc(self, node: Any) -> Stream:
        start = next((c for c in node.named_children if c.type == "heredoc_start"), None)
        body = next((c for c in node.named_children if c.type == "heredoc_body"), None)
        if body is None:
            return Stream("text", "")
        quoted = start is not None and any(q in node_text(start) for q in "'\"\\")
        if not quoted and any(c.type != "heredoc_content" for c in body.named_children):
            return UNKNOWN  # `$x` or `$(...)` in an unquoted heredoc
        return Stream("text", node_text(body))

    # -- simple commands ---------------------------------------------------------------

    def _command(
        self, node: Any, st: State, stdin: Stream | None, redirects: list[Redirect]
    ) -> Stream | None:
        first = node.child_by_field_name("name")
        if first is not None and node_text(first) in st.aliases.keys() - self.expanding:
            return self._alias(node, first, st, stdin)
        assigned: list[str] = []
        environment: list[tuple[str, Word]] = []
        words: list[Word] = []
        scope = self.scope(st)
        redirect_at = {
            c.start_byte
            for parent in (node, node.parent)
            if parent is not None and parent.type in ("command", "redirected_statement")
            for c in parent.children
            if c.type.endswith("_redirect")
        }
        for child in node.named_children:
            descriptor = _DESCRIPTOR_NAME.fullmatch(node_text(child))
            if descriptor and child.end_byte in redirect_at:
                self._set(st, descriptor[1], None)  # `{IFS}>f`: the descriptor's number
                continue
            if child.type == "variable_assignment":
                if name := child.child_by_field_name("name"):
                    assigned.append(node_text(name))
                    value = child.child_by_field_name("value")
                    set_to = Word("", "") if value is None else expand_one(value, scope)
                    environment.append((node_text(name), set_to))
                for grandchild in child.named_children:
                    self._run_word(grandchild, st)
                self._command_in_variable(child, st, scope)
            elif child.type in ("herestring_redirect", "file_redirect"):
                stdin = self._redirect(child, st, redirects) or stdin
            elif child.type == "process_substitution" and node_text(child).startswith("<("):
                words.append(self._pipe(child, self.run(child, st.copy())))
            else:
                self._run_word(child, st)  # executes any $(...) inside the word
                words += expand(child.named_children[0] if child.type == "command_name" else
                                child, scope)  # fmt: skip
        if not words:
            return None
        # `IFS=, eval '$c'`, `PATH=./bin f`: for the command, eval, source or function
        # run with them, then they are as before (but after a special builtin in posix
        # mode, `_persists`).
        saved = {name: st.variables.get(name, _UNSET) for name, _ in environment}
        saved = {name: value for name, value in saved.items() if name in _TRACKED}
        for name, value in environment:
            if name in saved:
                st.variables[name] = _cased(value.value, st.variables.get(name + _CASE, ""))
        function = st.functions.get(words[0].value or "")
        if words[0].glob or words[0].value in self.calling:
            function = None
        persists = _persists(words[0], function is not None, _posix(st)) if saved else False
        try:
            if function is not None:
                return self._call(words[0].value or "", function, st, stdin, redirects)
            text = shown(node_text(node))
            call = Call(
                words, st.via, tuple(assigned), None, tuple(redirects), text, st.cwds,
                tuple(environment),
            )  # fmt: skip
            out = self.dispatch(call, st, stdin)
        finally:
            if persists is False:
                _restore(st, saved)
            elif persists is None:
                self._maybe_changed(saved, st)
        self._wrote(redirects, out)
        return out

    def _run_word(self, node: Any, st: State) -> None:
        """Walk what a word runs (`$(...)`) in a copy of the shell, keeping only that
        it may have set IFS or PATH (`${IFS:=,}`, `$((IFS=4))`)."""
        inner = st.copy()
        self.run(node, inner)
        before, after = st.variables, inner.variables
        self._unknown(st, *(n for n in _TRACKED if after.get(n, _UNSET) != before.get(n, _UNSET)))

    def _call(
        self, name: str, body: Any, st: State, stdin: Stream | None, redirects: list[Redirect]
    ) -> Stream:
        """A function runs in the caller's shell: its `cd` moves the commands after it.
        Called again from the same state (places, variables, aliases, functions, files
        the command line wrote), it does the same: its walk is not repeated, only the
        state it left is taken again."""
        if self.too_deep():
            st.may_also_be((dirs.UNKNOWN,))
            return UNKNOWN
        key = None if stdin is not None else self._call_key(name, body, st)
        if key is not None and key in self.called:
            places, variables, aliases, functions = self.called[key]
            st.places = places
            st.variables, st.aliases, st.functions = dict(variables), dict(aliases), dict(functions)
        else:
            self.calling.add(name)
            self.depth += 1
            self.frames.append({})
            try:
                self.run(body, st, stdin)
            finally:
                self.calling.discard(name)
                self.depth -= 1
                _restore(st, self.frames.pop())
            if key is not None:
                self.called[key] = (
                    st.places,
                    dict(st.variables),
                    dict(st.aliases),
                    dict(st.functions),
                )
        self._wrote(redirects, UNKNOWN)
        self._read_alone(redirects, st, body)
        return UNKNOWN

    def _call_key(self, name: str, body: Any, st: State) -> Any:
        return (
            name, body.start_byte, body.end_byte, body.text, st.places,
            tuple(st.variables.items()), tuple(st.aliases.items()),
            tuple((k, v.start_byte, v.end_byte, v.text) for k, v in st.functions.items()),
            st.via, self.depth, self.file_depth, self.indirect, frozenset(self.calling),
            self.files.version,
        )  # fmt: skip

    def _pipe(self, node: Any, out: Stream | None) -> Word:
        """`<(cmd)` is a file bash names /dev/fd/N holding cmd's output, so `source
        <(echo cd ~)` runs that text in this shell."""
        path = Path(f"/dev/fd/{63 - self.pipes}")
        self.pipes += 1
        text = out.text if out is not None and out.kind == "text" else None
        self.files.write(path, text, append=False)
        return Word(shown(node_text(node)), str(path))

    def _alias(self, node: Any, name: Any, st: State, stdin: Stream | None) -> Stream:
        alias = node_text(name)
        value = st.aliases[alias]
        if value is None:
            self.note("ask", f"the alias {alias} runs a command only known at run time: "
                             f"{node_text(node)}")  # fmt: skip
            st.may_also_be((dirs.UNKNOWN,))
            return UNKNOWN
        raw = node.text
        before = raw[: name.start_byte - node.start_byte].decode("utf-8", "replace")
        after = raw[name.end_byte - node.start_byte :].decode("utf-8", "replace")
        self.expanding.add(alias)
        try:
            self.walk_text(before + value + after, st, stdin)
        finally:
            self.expanding.discard(alias)
        return UNKNOWN

    def _wrote(self, redirects: list[Redirect], out: Stream | None) -> None:
        """Remember what each redirect leaves in its file, for a script run later."""
        for redirect in redirects:
            if redirect.op == "<" or redirect.target.value is None:
                continue
            path = dirs.file_at(redirect.cwd, redirect.target.value)
            stdout = redirect.fd in ("", "1") or redirect.op.startswith("&")
            text = out.text if stdout and out is not None and out.kind == "text" else None
            self.files.write(path, text, append=redirect.op in (">>", "&>>"))

    def _read_alone(self, redirects: list[Redirect], st: State, node: Any) -> None:
        """Input redirections no simple command carries (`$(<f)`, `{ ...; } < f`, a
        function's `f < x`) are recorded as `cat < f`, for the read rules."""
        reads = tuple(r for r in redirects if r.op == "<")
        if reads:
            text = shown(node_text(node))
            self.record(Call([Word("cat", "cat")], st.via, (), None, reads, text, st.cwds))

    def record(self, call: Call) -> None:
        """Keep the command to be judged, once in each folder it may run in."""
        for cwd in call.cwds:
            simple = SimpleCommand(
                tuple(call.words), cwd, call.via, call.assigned, call.fed,
                call.redirects, call.text, self.file_depth > 0, call.environment,
            )  # fmt: skip
            if simple not in self.recorded:  # a loop's body is walked more than once
                self.recorded.add(simple)
                (self.script.indirect if self.indirect else self.script.commands).append(simple)

    def effect(self, effect: Effect, cwds: tuple[Path | None, ...]) -> None:
        for cwd in cwds:
            self.script.effects.append(Found(effect, cwd, self.file_depth > 0))

    def dispatch(self, call: Call, st: State, stdin: Stream | None) -> Stream | None:
        from lathe.policy import runners

        if not call.words:
            return None
        name = call.words[0]
        if name.value is None or name.glob:
            self.note("ask", f"the command name is only known at run time: {call.text}")
            self.record(call)
            return UNKNOWN
        base = PurePosixPath(name.value).name or name.value  # `.` has no name part
        args = call.words[1:]
        if "/" in name.value:
            programs.linked(self, call, st, stdin)
            # Read first: a script called `bash` or `env` is not that program.
            self.exported.append(programs.path_for(self, call, st))
            try:
                runners.script(self, call, st, name, name.text, same_shell=False, executed=True)
            finally:
                self.exported.pop()
        else:
            programs.looked_up(self, call, st, stdin)
        if base in PRIVILEGED:
            self.note("ask", f"runs with elevated privileges ({base}): {call.text}")
        if base in TRANSPARENT or base in PRIVILEGED:
            return runners.wrapper(self, call, st, stdin, base, args)
        if base == "xargs":
            return runners.xargs(self, call, st, stdin, args)
        if base in SHELLS:
            self.exported.append(programs.path_for(self, call, st))
            try:
                shell = _new_shell(st, base, args, call.environment)
                return runners.shell(self, call, shell, stdin, base, args)
            finally:
                self.exported.pop()
        if base in ("eval", "trap", "watch"):
            shell = _new_shell(st, "sh") if base == "watch" else st  # watch runs `sh -c`
            return runners.eval_like(self, call, shell, base, args)
        if base in ("source", "."):
            if args and args[0].value in STDIN_FILES:
                runners.shell_input(self, call, st, stdin, base, same_shell=True)
            elif args:
                runners.script(self, call, st, args[0], f"{base} {args[0].text}", same_shell=True)
        if base in _ASSIGNING:
            self._assigning(base, args, st, stdin)
        if base in ("alias", "unalias"):
            _aliases(base, args, st)
        elif base == "git":
            call = _with_git_config_variables(call, st)
            runners.git_config_options(self, call, _new_shell(st), args)
        elif language := language_of(base):
            runners.interpreter(self, call, _new_shell(st), stdin, language, base, args)
        elif base in ("ln", "cp", "install", "mv"):
            programs.made_links(self, call, base, args)
        elif base in ("set", "shopt"):
            _shell_option_set(base, [w.value for w in args], st)
        elif base == "hash":
            programs.hashed(self, args)
        if base == "find":
            runners.find_execs(self, call, st, find_call(args))
        elif base in ("cd", "pushd", "popd"):
            given = dict(call.environment).get("CDPATH")
            cdpath = given.value if given is not None else st.variables.get("CDPATH", "")
            values = [None if w.glob else w.value for w in args]
            st.places = dirs.merged(
                *(
                    p
                    for here in st.places
                    for p in dirs.after(base, values, here, self.home, cdpath)
                )
            )
        elif base == "tee":
            text = stdin.text if stdin is not None and stdin.kind == "text" else None
            for word, cwd in ((w, c) for w in args for c in call.cwds):
                if word.value is not None and not word.value.startswith("-"):
                    path = dirs.file_at(cwd, word.value)
                    self.files.write(path, text, append="-a" in [w.value for w in args])
        elif _INTERPRETERS.fullmatch(base) and stdin is not None and stdin.kind == "download":
            self.note("ask", f"a download is piped into {base}: {call.text}")
        self.record(call)
        return output_of(base, args, stdin, call.cwd)

    # -- variables builtins set --------------------------------------------------------

    def _assigning(self, base: str, args: list[Word], st: State, stdin: Stream | None) -> None:
        """Builtins that set the variables their words name: what they set is unknown,
        and a word naming IFS or PATH, or one only known at run time, may set those.
        `read NAME` of a known line and `printf -v NAME` of known words set NAME to it."""
        values = [w.value for w in args]
        names = names_set(base, values)
        if base == "printf" and not names:
            return
        splits = "IFS" not in st.variables  # `read` splits its line on the default IFS
        for value in names:
            self._unknown(st, *(_ANY_NAME if value is None else _named(value)), *self.namerefs)
        if base in ("read", "mapfile", "readarray"):
            for value in values:
                if value and not value.startswith("-"):
                    st.variables[value] = None
        name = names[-1] if len(names) == 1 else None
        if not name:
            return
        if base == "read" and values in ([name], ["-r", name]) and splits:
            line = stdin.text.split("\n", 1)[0] if stdin and stdin.kind == "text" else None
            if line is not None and (values[0] == "-r" or "\\" not in line):
                self._set(st, name, line.strip(DEFAULT_IFS))
        elif base == "printf" and (values[0] == f"-v{name}" or values[:2] == ["-v", name]):
            printed = args[2:] if values[0] == "-v" else args[1:]
            if printed and printed[0].value == "--":  # `printf -v IFS -- @`
                printed = printed[1:]
            out = output_of("printf", printed, None, None)
            self._set(st, name, out.text if out.kind == "text" else None)

    def _substitute(self, node: Any, st: State) -> str | None:
        """The output of `$(echo rm)`: only echo, printf and dirname of literal words are
        predictable."""
        inner = node.named_children
        if len(inner) != 1 or inner[0].type != "command":
            return None
        scope = Scope(self.home, st.cwd, st.variables, lambda _: None, self.path)
        words: list[Word] = []
        for child in inner[0].named_children:
            if child.type == "variable_assignment" or child.type.endswith("redirect"):
                return None
            words += expand(child.named_children[0] if child.type == "command_name" else
                            child, scope)  # fmt: skip
        if not words or words[0].value not in ("echo", "printf", "dirname"):
            return None
        out = output_of(words[0].value, words[1:], None, st.cwd)
        return out.text.rstrip("\n") if out and out.kind == "text" else None

    def _command_in_variable(self, assignment: Any, st: State, scope: Scope) -> None:
        """`EDITOR='rm -rf ~' git commit`: the program the variable is for runs its value
        as a command line, so judge it as one."""
        name, value = (assignment.child_by_field_name(f) for f in ("name", "value"))
        if name is None or value is None or node_text(name) not in COMMAND_VARIABLES:
            return
        words = expand(value, scope)
        label = f"{node_text(name)}="
        command = words[0] if len(words) == 1 else Word(node_text(value), None)
        self.nested(command, _new_shell(st.copy(via=(*st.via, label))), label)

    def nested(self, word: Word, st: State, label: str, stdin: Stream | None = None) -> None:
        if word.value is None:
            self.note("ask", f"{label} runs a string only known at run time: {word.text}")
            st.may_also_be((dirs.UNKNOWN,))  # `eval "$X"` may cd anywhere
            return
        self.walk_text(word.value, st, stdin)


def _named(text: str) -> tuple[str, ...]:
    """The variables followed that a word setting variables names (`IFS`, `PATH=x`)."""
    return tuple(name for name in _TRACKED if name in text)


def _new_shell(
    st: State, base: str | None = None, args: Sequence[Word] = (),
    environment: Sequence[tuple[str, Word]] = (),
) -> State:  # fmt: skip
    """The state a new shell `base args...` starts with (None: some shell a program
    starts): it inherits the environment, but sets IFS itself and takes no case
    attribute. It is in posix mode if it is sh, if its options say so (`--posix`, `-o
    posix`) or SHELLOPTS does, and maybe if the caller was or may have exported
    POSIXLY_CORRECT; it runs a pipeline's last command itself if it is zsh or ksh, or
    `-O lastpipe` or BASHOPTS says so (and maybe if the caller did)."""
    shell = st.copy()
    for name in ("IFS", *(name + _CASE for name in _TRACKED), *_OPTIONS):
        shell.variables.pop(name, None)
    if "POSIXLY_CORRECT" in st.variables:  # whether it was exported only run time knows
        shell.variables["POSIXLY_CORRECT"] = None
    named = _shell_options(args)
    given = dict(environment)
    for name in ("SHELLOPTS", "BASHOPTS"):
        word = given.get(name)
        value = st.variables.get(name, "") if word is None else word.value
        named |= {None} if value is None else set(value.split(":"))
    defaults = {
        _POSIX_SHELL: "on" if base in _POSIX_SHELLS else None if base is None else _UNSET,
        _LASTPIPE: _LASTPIPE_SHELLS.get(base or "", _UNSET),
        _INHERIT: _UNSET,
    }
    for key, default in defaults.items():
        option = key[1:]
        if option in named:
            shell.variables[key] = "on"
        elif None in named or key in st.variables or default is None:
            shell.variables[key] = None
        elif default == "on":
            shell.variables[key] = "on"
    return shell


def _shell_options(args: Sequence[Word]) -> set[str | None]:
    """The options a shell's arguments turn on (`--posix`, `-o posix`, `-O lastpipe`);
    None for a word only run time knows."""
    values = [word.value for word in args]
    found: set[str | None] = set()
    i = 0
    while i < len(values):
        value = values[i]
        if value is None:
            found.add(None)
        elif value == "--" or not value.startswith(("-", "+")) or value in ("-", "+"):
            break
        elif value.startswith("--"):
            found.add(value[2:])
        elif value[-1] in "oO":  # `-o posix`, `-eo posix`: the option is the next word
            i += 1
            found.add(values[i] if i < len(values) else "")
        i += 1
    return found


def _shell_option_set(base: str, values: list[str | None], st: State) -> None:
    """`set -o posix`, `set +o posix`, `shopt -s lastpipe`, `shopt -so posix`...: the
    options followed that they turn on or off; a word only run time knows may be any."""
    changes: list[tuple[str | None, bool | None]] = []  # (option, on); None: unknown
    on: Any = True if base == "set" else _UNSET  # `shopt NAME` only tells
    set_options = base == "set"
    i = 0
    while i < len(values):
        value = values[i]
        i += 1
        if value is None:
            changes.append((None, None))
            on = None if base == "shopt" else on
        elif value == "--" and base == "set":
            break
        elif value.startswith(("-", "+")) and len(value) > 1:
            letters = value[1:]
            if base == "shopt":
                on = True if "s" in letters else False if "u" in letters else on
                set_options = set_options or "o" in letters
            elif "o" in letters and i < len(values):  # `set -eo posix`
                changes.append((values[i], value[0] == "-"))
                i += 1
        elif base == "shopt":
            if on is not _UNSET:
                changes.append((value, on))
        else:
            break  # `set a b`: the positional parameters
    for option, turned in changes:
        keys = [_POSIX_SHELL] if set_options else [_LASTPIPE, _INHERIT]
        if option is not None:
            keys = [k for k in keys if k[1:] == option]
        for key in keys:
            if key == _POSIX_SHELL:
                _set_posix(st, None if option is None else turned)
            elif turned is None or option is None:
                st.variables[key] = None
            elif turned:
                st.variables[key] = "on"
            else:
                st.variables.pop(key, None)


def _set_posix(st: State, on: bool | None) -> None:
    """Posix mode turned on (bash sets POSIXLY_CORRECT then), off, or maybe (None)."""
    if on is None:
        st.variables["POSIXLY_CORRECT"] = None
    elif on:
        st.variables.setdefault("POSIXLY_CORRECT", "y")
    else:
        st.variables.pop("POSIXLY_CORRECT", None)
        st.variables.pop(_POSIX_SHELL, None)


def _assigned_name(node: Any) -> str:
    """The variable an assignment sets (`IFS=x`, `IFS[0]=x`: IFS)."""
    name = node.child_by_field_name("name")
    if name is not None and name.type == "subscript":
        name = name.child_by_field_name("name")
    return "" if name is None else node_text(name)


def _case_option(option: str, case: Any) -> Any:
    """The case attribute after a declaration's `option` (`-u`), given the one its
    options set before it (`_UNSET`: none): "u", "l", "c", or None when more than one,
    one taken away (`+u`), or `-i` (arithmetic) or `-c` (not in every bash) leaves only
    run time knowing what a value becomes."""
    letters = set(option[1:]) & set("ulci")
    if not letters:
        return case
    if option[0] == "+" or letters & set("ic") or len(letters) > 1:
        return None
    return letters.pop() if case is _UNSET else None


def _cased(value: str | None, case: str | None) -> str | None:
    """`value` as a variable with the case attribute `case` holds it: bash changes
    each letter as the locale says, so only ASCII is known."""
    if case == "":
        return value
    if value is None or case is None or not value.isascii():
        return None
    return value.upper() if case == "u" else value.lower()


def _persists(name: Word, function: bool, posix: bool | None) -> bool | None:
    """Whether a command's prefix assignments stay set after it (None: maybe): after a
    special builtin (`IFS=@ export x`) in posix mode; bash before 5.2 kept them after a
    function too, and a name only run time knows may be either."""
    if name.value in _SPECIAL and not name.glob:
        return posix
    if posix is not False and (name.value is None or name.glob or function):
        return None
    return False


def _posix(st: State) -> bool | None:
    """Whether the shell is in posix mode (None: maybe)."""
    values = [st.variables[key] for key in ("POSIXLY_CORRECT", _POSIX_SHELL) if key in st.variables]
    if not values:
        return False
    return True if any(v is not None for v in values) else None


def _declares_local(node: Any) -> bool:
    """Whether `node`, a name or assignment, is one `local`, `declare` or `typeset`
    (without -g) makes: inside a function, local to it."""
    parent = node.parent
    if parent is None or parent.type != "declaration_command" or not parent.children:
        return False
    if node_text(parent.children[0]) not in ("local", "declare", "typeset"):
        return False
    flags = [node_text(c) for c in parent.named_children if node_text(c).startswith("-")]
    return not any("g" in flag for flag in flags)


def _with_git_config_variables(call: Call, st: State) -> Call:
    """`call` (a git command) with the GIT_CONFIG_* variables the script set before it
    among its environment (`export GIT_CONFIG_COUNT=1 ...; git x`: set on a line of
    their own, they configured git unseen), and GIT_DIR and GIT_WORK_TREE (where it
    works); a variable set but not exported counts too, which only ever judges more."""
    from lathe.policy.git_config import set_by_environment

    given = dict(call.environment)
    earlier = [
        (name, Word(f"${name}", value))
        for name, value in st.variables.items()
        if name not in given and set_by_environment([name])
    ]
    places = [
        (name, Word(f"${name}", st.variables[name]))
        for name in ("GIT_DIR", "GIT_WORK_TREE")
        if name not in given and name in st.variables
    ]
    if not earlier and not places:
        return call
    names = tuple(name for name, _ in earlier)
    return replace(
        call,
        assigned=(*call.assigned, *names),
        environment=(*call.environment, *earlier, *places),
    )


def _restore(st: State, saved: dict[str, Any]) -> None:
    """Give variables back the values `saved` holds (`_UNSET`: none)."""
    for name, value in saved.items():
        if value is _UNSET:
            st.variables.pop(name, None)
        else:
            st.variables[name] = value


def _aliases(base: str, args: list[Word], st: State) -> None:
    for word in args:
        value = word.value
        if base == "unalias":
            if value == "-a":
                st.aliases.clear()
            else:
                st.aliases.pop(value or "", None)
            continue
        # `alias x="$CMD"` defines x even though its value is only known at run time.
        name, eq, text = (value if value is not None else word.text).partition("=")
        if eq and not name.startswith("-") and re.fullmatch(r"[\w.:@%+-]+", name):
            st.aliases[name] = text if value is not None else None


def _joined(outs: list[Stream | None]) -> Stream | None:
    """What a sequence of commands writes: all their text, if every one's is known."""
    if len(outs) == 1:
        return outs[0]
    if outs and all(o is not None and o.kind == "text" for o in outs):
        return Stream("text", "".join(o.text for o in outs if o is not None))
    risky = [o for o in outs if o is not None and o.kind in ("download", "decoded")]
    return risky[0] if risky else (UNKNOWN if outs else None)


@dataclass
class Call:
    words: list[Word]
    via: tuple[str, ...]
    assigned: tuple[str, ...]
    fed: tuple[Word, ...] | None
    redirects: tuple[Redirect, ...]
    text: str
    cwds: tuple[Path | None, ...]  # every folder it may run in
    # The values of the variables set for it (`X=1 cmd`, `env X=1 cmd`), by name.
    environment: tuple[tuple[str, Word], ...] = ()

    @property
    def cwd(self) -> Path | None:
        """The folder it runs in, None when it may be several or only run time knows."""
        return self.cwds[0] if len(self.cwds) == 1 else None
