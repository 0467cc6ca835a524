"""Commands that run other commands: where the inner command starts in their argv.

`env -i X=1 timeout 5 nice -n 3 rm -rf /` runs `rm -rf /`; the guard must judge the rm,
and rules must see it too. Each wrapper's argv is read the way its own parser reads it
(`Syntax`), because a spelling read differently hides the inner command: getopt reads
`script -qc CMD FILE` as `-q -c CMD` and `strace -fqo F cmd` as `-f -q -o F`. `unwrap`
returns None when the argv is not statically known, so the caller treats the command as
unresolved rather than guessing.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from lathe.policy.shell_words import Word
from lathe.policy.wrapper_syntax import SYNTAX, Syntax, options

PRIVILEGED = frozenset({"sudo", "doas", "su", "pkexec", "run0", "runuser"})
# Environment variables whose value a program runs as a command line (git, less, man...):
# `GIT_EXTERNAL_DIFF='rm -rf ~' git diff` runs the rm.
COMMAND_VARIABLES = frozenset(
    {"GIT_EXTERNAL_DIFF", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "EDITOR", "VISUAL",
     "GIT_SSH_COMMAND", "GIT_SSH", "GIT_PAGER", "PAGER", "MANPAGER", "GIT_ASKPASS",
     "SSH_ASKPASS", "GIT_PROXY_COMMAND", "LESSOPEN", "LESSCLOSE", "BROWSER"}
)  # fmt: skip
SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "busybox"})


# tmux and screen read their argv in ways of their own (`_tmux`, `_screen`).
TRANSPARENT = (frozenset(SYNTAX) | {"tmux", "screen", "sg"}) - PRIVILEGED - {"xargs"}


@dataclass
class Unwrapped:
    inner: list[Word]  # the command that actually runs; may be empty (`sudo -i`, `env`)
    chdir: Word | None = None  # `env -C DIR` / `sudo -D DIR`
    assigned: list[str] = field(default_factory=list)  # `env NAME=VALUE`
    environment: list[tuple[str, Word]] = field(default_factory=list)  # their values
    split_string: Word | None = None  # `env -S "cmd args"`: a string parsed as a command
    replaces: Word | None = None  # `xargs -I STR`: the string each input line replaces
    commands_in_variables: list[Word] = field(default_factory=list)  # `env EDITOR=...`
    lookup_only: bool = False  # `command -v rm` names a command without running it
    writes: list[Word] = field(default_factory=list)  # files it writes itself (`strace -o`)
    reads: list[Word] = field(default_factory=list)  # files it reads for it (`xargs -a F`)


def basename(word: Word) -> str | None:
    return None if word.value is None else PurePosixPath(word.value).name


def unwrap(name: str, args: Sequence[Word]) -> Unwrapped | None:
    """The inner command of wrapper `name` (in TRANSPARENT, PRIVILEGED or xargs); None if
    it cannot be told before run time."""
    if name in ("tmux", "screen"):
        return _tmux(args) if name == "tmux" else _screen(args)
    if name == "sg":
        return _sg(args)
    syntax = SYNTAX.get(name)
    parsed = None if syntax is None else _parse(syntax, args)
    if syntax is None or parsed is None:
        return None
    result = Unwrapped(inner=parsed.operands[syntax.skip :])
    for option, value in parsed.options:
        _note(result, syntax, option, value)
        if name == "xargs" and option in ("-I", "-i", "--replace"):
            result.replaces = value or Word("{}", "{}")
        if name == "xargs" and option in ("-a", "--arg-file") and value is not None:
            result.reads.append(value)
    result.lookup_only = name == "command" and _any(parsed, "-v", "-V")
    last = parsed.options[-1] if parsed.options else None
    if last is not None and last[0] in syntax.splits and last[1] is not None:
        result.split_string, result.inner = _env_split(last[1], parsed.operands), []
    elif name == "env":
        # A lone `-` first is GNU env's old spelling of -i, not the command.
        operands = (
            parsed.operands[1:]
            if parsed.operands[:1] and parsed.operands[0].value == "-"
            else parsed.operands
        )
        inner = _assignments(result, operands)
        if inner is None:
            return None
        result.inner = inner
    elif name == "su" or (name == "runuser" and not _any(parsed, "-u", "--user")):
        # A user, then arguments for that user's shell: `su root -- -c CMD` runs CMD
        # as su's own -c would (the shell's -c and su's are both walked).
        result.inner = []
        operands = parsed.operands
        login = operands[:1] and operands[0].value == "-"
        shell_args = operands[2:] if login else operands[1:]
        if shell_args:
            how = shell_call(shell_args)
            if how is None or how.script is None or how.script.value is None:
                return None  # a script file, or a string only known at run time
            given = result.split_string
            if given is not None and given.value is not None:
                joined = f"{given.value}\n{how.script.value}"
                result.split_string = Word(f"{given.text} {how.script.text}", joined)
            elif given is None:
                result.split_string = how.script
    elif name == "script":
        result.writes += parsed.operands  # its typescript; what it runs is `-c`'s
        result.inner = []
    elif name == "flock" and result.inner and result.inner[0].value in ("-c", "--command"):
        if len(result.inner) < 2:
            return None
        result.split_string, result.inner = result.inner[1], []  # a shell runs it
    result.writes = [w for w in result.writes if w.value != "/dev/null"]
    return result


def _any(parsed: _Parsed, *names: str) -> bool:
    return any(option in names for option, _ in parsed.options)


def _sg(args: Sequence[Word]) -> Unwrapped | None:
    """shadow's `sg [-] GROUP [-c] COMMAND`: /bin/sh -c runs the word after the group."""
    words = list(args[1:] if args[:1] and args[0].value == "-" else args)
    if any(word.value is None for word in words[:2]):
        return None
    if len(words) >= 2 and words[1].value == "-c":
        del words[1]
    result = Unwrapped(inner=[])
    if len(words) >= 2:
        result.split_string = words[1]
    return result


def _note(result: Unwrapped, syntax: Syntax, option: str, value: Word | None) -> None:
    if option in syntax.chdir:
        result.chdir = value or Word(option, None)  # `nsenter -w`: the target's, unknown
    if option in syntax.runs:
        result.split_string = value  # the last one given wins
    if option in syntax.writes and value is not None:
        result.writes.append(value)


@dataclass
class _Parsed:
    options: list[tuple[str, Word | None]] = field(default_factory=list)  # by full name
    operands: list[Word] = field(default_factory=list)


def _parse(syntax: Syntax, args: Sequence[Word]) -> _Parsed | None:
    """The options and operands of `args` as the wrapper reads them; None when a word
    that may be an option is only known at run time, or an option lacks its value."""
    parsed = _Parsed()
    i = 0
    while i < len(args):
        value = args[i].value
        if value is None and _LITERAL_START.match(args[i].text) is None:
            return None  # `$X` may be an option as well as an operand
        if value is None or not _is_option(syntax, value):
            if not syntax.permutes:
                parsed.operands += args[i:]
                break
            parsed.operands.append(args[i])
            i += 1
            continue
        if value == "--":
            parsed.operands += args[i + 1 :]
            break
        after = _read_option(syntax, args, i, parsed.options)
        if after is None:
            return None
        i = after
        if parsed.options[-1][0] in syntax.splits:
            parsed.operands += args[i:]  # read again, after the split value's words
            break
    return parsed


# A word whose text starts so is no option whatever it expands to (`FOO=$BAR`, `./$X`).
_LITERAL_START = re.compile(r"[\w./~=:@%+,]")


def _is_option(syntax: Syntax, value: str) -> bool:
    if value == "--":
        return syntax.style in ("getopt", "words")
    if syntax.style == "listed":
        return value in syntax.known
    return value.startswith("-") and value != "-"


def _read_option(
    syntax: Syntax, args: Sequence[Word], i: int, options: list[tuple[str, Word | None]]
) -> int | None:
    """Read the option at `args[i]` into `options`; the index of the word after it."""
    word = args[i]
    value = word.value or ""
    if syntax.style == "getopt" and not value.startswith("--"):
        return _read_cluster(syntax, args, i, options)
    name, attached = value, None
    if syntax.style == "letter":
        name = value[:2]
    elif syntax.style != "listed":
        name, eq, rest = value.partition("=")
        attached = Word(word.text, rest) if eq else None
        if syntax.style == "getopt":
            name = _full_name(syntax, name)
    if name in syntax.values and attached is None:
        if i + 1 >= len(args):
            return None
        i += 1
        attached = args[i]
    options.append((name, attached))
    return i + 1


def _read_cluster(
    syntax: Syntax, args: Sequence[Word], i: int, options: list[tuple[str, Word | None]]
) -> int | None:
    """getopt's `-abc`: letters until one that takes a value, which is the rest of the
    word or else the next word."""
    word = args[i]
    value = word.value or ""
    for j in range(1, len(value)):
        name, rest = f"-{value[j]}", value[j + 1 :]
        if name in syntax.values and not rest:
            if i + 1 >= len(args):
                return None
            options.append((name, args[i + 1]))
            return i + 2
        if name in syntax.values or name in syntax.optional:
            options.append((name, Word(word.text, rest) if rest else None))
            return i + 1
        options.append((name, None))
    return i + 1


def _full_name(syntax: Syntax, name: str) -> str:
    """getopt_long's long option for `name`: itself, or the one it abbreviates (`--comm`
    for `--command`); an ambiguous abbreviation is an error there, read as a flag here."""
    if name in syntax.known:
        return name
    matches = [o for o in syntax.long_names if o.startswith(name)]
    kinds = {(o in syntax.values, o in syntax.optional) for o in matches}
    return matches[0] if len(kinds) == 1 else name


def _assignments(result: Unwrapped, operands: Sequence[Word]) -> list[Word] | None:
    """env's operands after its `NAME=VALUE` words (any word holding a `=` is one), which
    go into `result`; None when a word may or may not hold one."""
    for i, word in enumerate(operands):
        if word.value is None:
            if not re.match(r"[A-Za-z_]\w*=", word.text):
                return None  # `$X` may expand to `A=b` or name the command
            variable, value = word.text.split("=", 1)[0], None
        elif "=" not in word.value:
            return list(operands[i:])
        else:
            variable, value = word.value.split("=", 1)
        result.assigned.append(variable)
        result.environment.append((variable, Word(word.text, value)))
        if variable in COMMAND_VARIABLES:
            result.commands_in_variables.append(Word(word.text, value))
    return []


def _env_split(string: Word, after: Sequence[Word]) -> Word:
    """`env -S STRING ARGS...`: env reads STRING's words in place of the option, then
    ARGS, as its own argv (options and `NAME=VALUE` too), so the whole is judged as one
    `env` command line."""
    words = [_as_shell_word(w) for w in after]
    if string.value is None or any(w is None for w in words):
        return Word(string.text, None)
    return Word(string.text, " ".join(["env", string.value, *[w for w in words if w is not None]]))


def _as_shell_word(word: Word) -> str | None:
    """`word` written back for the shell, its unquoted glob characters still globs."""
    if word.value is None:
        return None
    if not word.glob:
        return shlex.quote(word.value)
    pieces = re.split(r"([*?[\]])", word.value)
    return "".join(p if p in ("*", "?", "[", "]") else shlex.quote(p) for p in pieces if p)


_TMUX = Syntax(values=options("-c -f -L -S -T"), runs=options("-c"))
# The tmux commands that start a program: one word is a shell command line, several an
# argv; `-c` is where it runs.
_TMUX_STARTS = {
    "new-session": Syntax(values=options("-c -e -f -F -n -s -t -x -y"), chdir=options("-c")),
    "new-window": Syntax(values=options("-c -e -F -n -t"), chdir=options("-c")),
    "split-window": Syntax(values=options("-c -e -F -l -p -t"), chdir=options("-c")),
}
_TMUX_ALIASES = {"new": "new-session", "neww": "new-window", "splitw": "split-window"}
# tmux commands that neither start a program nor type into one.
_TMUX_QUIET = options(
    "ls list-sessions lsw list-windows lsp list-panes has has-session kill-session "
    "kill-server killw kill-window killp kill-pane capturep capture-pane attach "
    "attach-session detach detach-client rename rename-session renamew rename-window "
    "selectw select-window selectp select-pane show show-options showb show-buffer lsb "
    "list-buffers lsc list-clients start start-server wait wait-for resizep resize-pane "
    "switchc switch-client"
)


def _tmux(args: Sequence[Word]) -> Unwrapped | None:
    """The program tmux starts (new-session, new-window, split-window) or runs (`tmux -c
    CMD`); None for a command that may start or type one any other way (run-shell,
    send-keys, a `#(...)` format, several commands joined by `;`)."""
    parsed = _parse(_TMUX, args)
    if parsed is None:
        return None
    result = Unwrapped(inner=[])
    for option, value in parsed.options:
        _note(result, _TMUX, option, value)
    words = parsed.operands
    if result.split_string is not None or not words:
        return result  # `tmux` alone starts the default shell, reading no input here
    if any(w.value is None or w.value.endswith(";") or "#(" in w.value for w in words):
        return None
    command = _TMUX_ALIASES.get(words[0].value or "", words[0].value or "")
    syntax = _TMUX_STARTS.get(command)
    if syntax is None:
        return result if command in _TMUX_QUIET else None
    started = _parse(syntax, words[1:])
    if started is None:
        return None
    for option, value in started.options:
        _note(result, syntax, option, value)
    if len(started.operands) == 1:
        result.split_string = started.operands[0]
    else:
        result.inner = started.operands
    return result


def _screen(args: Sequence[Word]) -> Unwrapped | None:
    """The program screen starts, read as screen.c reads its argv: letters cluster; -c,
    -e, -p take the rest of the word or the next one, -h, -s, -t, -T and -S the next;
    -d, -r, -R, -x may take a session name; its last word is never an option. None when
    -X or -Q send a command to a running session instead."""
    result = Unwrapped(inner=[])
    shell: Word | None = None
    session = False
    i = 0
    while i < len(args) - 1:
        value = args[i].value
        if value is None:
            return None
        if value == "--" or not value.startswith("-"):
            i += value == "--"
            break
        letters = value[1:]
        for j, letter in enumerate(letters):
            rest = letters[j + 1 :]
            if letter in "XQ":
                return None
            if letter in "vw" or (letter == "l" and rest[:1] in ("s", "i")):
                return result  # -v, -wipe, -ls, -list print and run nothing
            if letter in "cep" and rest:
                break
            takes = letter in "cephstT" or (letter, rest) == ("L", "ogfile")
            if takes or (letter == "S" and not session):
                i += 1
                if i >= len(args):
                    return result  # screen stops, asking for the value
                shell = args[i] if letter == "s" else shell
                session = session or letter == "S"
                result.writes += [args[i]] if letter == "L" else []
                if letter in "cepL":
                    break
            elif not session and _screen_session(letter, args, i):
                i += 1
                session = True
        i += 1
    result.inner = list(args[i:]) or ([shell] if shell is not None else [])
    return result


def _screen_session(letter: str, args: Sequence[Word], i: int) -> bool:
    """Whether screen's -r, -R, -x (two words left) or -d, -D (exactly two) at `args[i]`
    take the next word as the session's name."""
    left = len(args) - 1 - i
    if letter not in "rRxdD" or left < 2 or (letter in "dD" and left != 2):
        return False
    return not (args[i + 1].value or "-").startswith("-")


@dataclass
class ShellCall:
    """How a shell was asked to get its script."""

    script: Word | None = None  # the `-c` string
    script_file: Word | None = None  # a file operand
    reads_stdin: bool = False


def shell_call(args: Sequence[Word]) -> ShellCall | None:
    call = ShellCall()
    i = 0
    has_c = False
    while i < len(args):
        value = args[i].value
        if value is None:
            return None
        if value == "--" or value == "-":
            i += 1
            break
        if value in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
            continue
        if value.startswith("--"):
            i += 1
            continue
        if value[:1] in "-+" and len(value) > 1:
            has_c = has_c or "c" in value[1:]
            call.reads_stdin = call.reads_stdin or "s" in value[1:]
            i += 1
            continue
        break
    operands = list(args[i:])
    if has_c:
        if not operands:
            return None
        call.script = operands[0]
        call.reads_stdin = False
    elif operands and not call.reads_stdin:
        call.script_file = operands[0]
    else:
        call.reads_stdin = True
    return call


@dataclass
class FindCall:
    roots: list[Word]
    deletes: bool
    execs: list[list[Word]]  # each `-exec ... ;` / `-ok ... +` command, `{}` left as is


_FIND_GLOBAL = frozenset({"-H", "-L", "-P"})
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


def find_call(args: Sequence[Word]) -> FindCall:
    i = 0
    while i < len(args) and (args[i].value in _FIND_GLOBAL or _is_find_debug(args[i])):
        i += 2 if args[i].value in ("-D", "-O") else 1
    roots: list[Word] = []
    while i < len(args):
        value = args[i].value
        if value is not None and (value.startswith("-") or value in ("(", "!", ")")):
            break
        roots.append(args[i])
        i += 1
    call = FindCall(roots=roots or [Word(".", ".")], deletes=False, execs=[])
    while i < len(args):
        value = args[i].value
        if value == "-delete":
            call.deletes = True
        elif value in _FIND_EXEC:
            end = i + 1
            while end < len(args) and args[end].value not in (";", "+"):
                end += 1
            call.execs.append(list(args[i + 1 : end]))
            i = end
        i += 1
    return call


def _is_find_debug(word: Word) -> bool:
    return word.value is not None and (
        word.value in ("-D", "-O") or word.value.startswith(("-O", "-D"))
    )
