"""What a one-line program in another language would do to files, processes and the shell.

`python3 -c "import shutil; shutil.rmtree('/home/u/x')"` and `perl -e 'system("rm -rf
~")'` are shell commands whose effect is plain in their text. `program` finds the code
in an interpreter's argv (`-c`, `-e`, `-r`, or a heredoc on stdin); `effects` lists what
it does as `Effect`s: a recursive deletion, a file removed or written, a signal, or a
command line handed to a shell (which the walker then analyses like any other).

Python code is parsed with `ast` (see `python_code`). Perl, Ruby, Node and PHP are read
with regular expressions, which see only calls whose arguments are literal strings
written in the call (`system("rm -rf ~")`, `unlink('/x')`, backticks, `qx{...}`,
`%x(...)`, `execSync('...')`); a string built from variables, concatenation or
interpolation, a `q{}`-style quote, or a call reached through an alias is not seen.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from lathe.policy.shell_words import Word

Language = Literal["python", "perl", "ruby", "node", "php"]
RUNTIME_VALUE = '"$value_only_known_at_run_time"'  # an argv element we cannot evaluate


@dataclass(frozen=True)
class Effect:
    kind: Literal["tree", "file", "signal", "shell"]
    # The path, the pid as kill(2) takes it ("-1", or "ppid" for the parent), or the
    # shell command line; a value of None means it is only known at run time.
    target: Word
    name: str  # what does it, e.g. "shutil.rmtree"
    verb: str = ""  # for "file": "deletes", "overwrites", ...
    follow: bool = True  # for "file": the change goes through a symlink at the path


# Names a program may be given as its script that are its standard input:
# `python3 /dev/stdin <<< '...'` runs the here-string as `python3 -` does.
STDIN_FILES = frozenset({"/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"})


@dataclass
class Program:
    language: Language
    code: Word | None = None  # the `-c`/`-e` text
    flag: str = ""  # how the code was given: "-c", "-e", "-r"
    reads_stdin: bool = False
    in_place: list[Word] = field(default_factory=list)  # `perl -i` files


def language_of(base: str) -> Language | None:
    for language, pattern in _NAMES:
        if pattern.fullmatch(base):
            return language
    return None


_NAMES: list[tuple[Language, re.Pattern[str]]] = [
    ("python", re.compile(r"(python|pypy)[\d.]*")),
    ("perl", re.compile(r"perl[\d.]*")),
    ("ruby", re.compile(r"ruby[\d.]*")),
    ("node", re.compile(r"node(js)?[\d.]*")),
    ("php", re.compile(r"php[\d.]*")),
]

# Per language: the code flags, the option letters that take a value (attached, else
# the next word), those that take only an attached one, and long options taking the next.
_FLAGS: dict[Language, tuple[str, str, str, frozenset[str]]] = {
    "python": ("c", "WX", "", frozenset({"--check-hash-based-pycs"})),
    "perl": ("eE", "", "IMmlFx0Cd", frozenset()),
    "ruby": ("e", "rICE", "FxW0l", frozenset({"--encoding", "--external-encoding"})),
    "node": ("ep", "r", "", frozenset({"--require", "--import", "--input-type", "--loader"})),
    "php": ("r", "dfcz", "", frozenset()),
}
_NODE_EVAL = frozenset({"--eval", "--print"})


def program(language: Language, args: Sequence[Word]) -> Program | None:
    """Where the code comes from; None when it is a module, a script file or unknown."""
    code_flags, value_letters, attached, long_values = _FLAGS[language]
    found = Program(language)
    pieces: list[Word] = []
    in_place = False
    i = 0
    while i < len(args):
        value = args[i].value
        if value is None:
            return None
        if value == "--" or value == "-" or not value.startswith("-") or len(value) == 1:
            break
        if value.startswith("--"):
            name, eq, inline = value.partition("=")
            if language == "node" and name in _NODE_EVAL:
                pieces.append(Word(value, inline) if eq else _next(args, i))
                found.flag = name
                i += 0 if eq else 1
            elif name in long_values and not eq:
                i += 1
            i += 1
            continue
        for j, letter in enumerate(value[1:], start=1):
            rest = value[j + 1 :]
            if letter in code_flags:
                pieces.append(Word(value, rest) if rest else _next(args, i))
                found.flag = "-" + letter
                i += 0 if rest else 1
                break
            if letter == "m" and language == "python":
                return None  # `python -m module`: a program from a file
            if letter == "i" and language in ("perl", "ruby"):
                in_place = True  # `-i.bak`: the rest is the backup suffix
                break
            if letter in value_letters or letter in attached:
                i += 0 if rest or letter in attached else 1
                break
        i += 1
    operands = list(args[i:])
    if operands and operands[0].value == "--":
        operands = operands[1:]
    if pieces:
        values = [p.value for p in pieces]
        text = None if None in values else "\n".join(v for v in values if v is not None)
        found.code = Word(" ".join(p.text for p in pieces), text)
    elif operands and operands[0].value != "-" and operands[0].value not in STDIN_FILES:
        if not in_place:
            return None  # a script file
        operands = operands[1:]
    else:
        found.reads_stdin = True
    if in_place:
        found.in_place = [w for w in operands if w.value != "-"]
    return found


def _next(args: Sequence[Word], i: int) -> Word:
    return args[i + 1] if i + 1 < len(args) else Word("", "")


def effects(language: Language, code: str, home: Path) -> list[Effect]:
    if language == "python":
        from lathe.policy.python_code import python_effects

        return python_effects(code, home)
    return _regex_effects(language, code)


# -- Perl, Ruby, Node and PHP: literal strings in calls --------------------------------

_STRING = r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|`(?:[^`\\]|\\.)*`"""
_ARGS = re.compile(rf"\s*\(?\s*((?:{_STRING})(?:\s*,\s*(?:{_STRING}|\[[^\]]*\]))*)", re.DOTALL)
_ONE_STRING = re.compile(_STRING, re.DOTALL)

_RUBY_TREE = r"FileUtils\.(?:rm_rf|rm_r|rmtree|remove_dir|remove_entry(?:_secure)?)"
_RUBY_REMOVE = r"FileUtils\.(?:rm|rm_f|remove|remove_file)|File\.(?:delete|unlink)|Dir\.rmdir"
_NODE_WRITE = r"writeFileSync|appendFileSync|truncateSync|writeFile|appendFile|truncate"
# Per language: (call names, kind, verb). "shell" takes a command line or an argv list;
# "rm" is Node's, recursive only with `{recursive: true}`.
_CALLS: dict[Language, list[tuple[str, str, str]]] = {
    "perl": [
        (r"system|exec", "shell", ""),
        (r"unlink|rmdir", "remove", "deletes"),
        (r"rmtree|remove_tree", "tree", ""),
    ],
    "ruby": [
        (r"system|exec|spawn|IO\.popen|Open3\.\w+", "shell", ""),
        (_RUBY_TREE, "tree", ""),
        (_RUBY_REMOVE, "remove", "deletes"),
        (r"File\.write", "write", "overwrites"),
    ],
    "node": [
        (r"execSync|exec|spawnSync|spawn|execFileSync|execFile", "shell", ""),
        (r"rmSync|rm|rmdirSync|rmdir", "rm", "deletes"),
        (r"unlinkSync|unlink", "remove", "deletes"),
        (_NODE_WRITE, "write", "overwrites"),
    ],
    "php": [
        (r"system|exec|shell_exec|passthru|popen|proc_open", "shell", ""),
        (r"unlink|rmdir", "remove", "deletes"),
        (r"file_put_contents", "write", "overwrites"),
    ],
}
# Backticks and their spelled-out forms run a command line.
_BACKTICKS: dict[Language, re.Pattern[str] | None] = {
    "perl": re.compile(r"`([^`]*)`|\bqx\s*(?:\{([^}]*)\}|\(([^)]*)\)|/([^/]*)/|'([^']*)')"),
    "ruby": re.compile(r"`([^`]*)`|%x\s*(?:\{([^}]*)\}|\(([^)]*)\)|\[([^\]]*)\])"),
    "php": re.compile(r"`([^`]*)`"),
    "node": None,
}
# `open(my $fh, '>', '/path')` and `open(FH, ">/path")`.
_PERL_OPEN_3 = re.compile(rf"\bopen\s*\(?\s*[^,;]+,\s*(['\"])\+?>{{1,2}}\1\s*,\s*({_STRING})")
_PERL_OPEN_2 = re.compile(r"\bopen\s*\(?\s*[^,;]+,\s*(['\"])\+?>{1,2}\s*([^'\"&|]+)\1")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0"}


def _regex_effects(language: Language, code: str) -> list[Effect]:
    found: list[Effect] = []
    for names, kind, verb in _CALLS[language]:
        for match in re.finditer(rf"(?<![\w$'\"`])({names})\b", code):
            args = _ARGS.match(code, match.end())
            if args is None:
                continue
            literals = _literals(language, args.group(1))
            name = match.group(1)
            if kind == "shell":
                found.append(Effect("shell", _command_line(literals), name))
            elif kind == "tree" or (kind == "rm" and _node_recursive(code[args.end() :])):
                found += [Effect("tree", w, name) for w in literals[: 1 if kind == "rm" else None]]
            elif kind in ("remove", "rm"):
                found += [Effect("file", w, name, verb, follow=False) for w in literals]
            else:
                found.append(Effect("file", literals[0], name, verb))
    backticks = _BACKTICKS[language]
    for match in backticks.finditer(code) if backticks else ():
        body = next(g for g in match.groups() if g is not None)
        literal = match.group(0).startswith("qx") and match.group(0).endswith("'")
        value = body if literal or not _interpolates(language, body) else None
        found.append(Effect("shell", Word(match.group(0), value), "`...`"))
    if language == "perl":
        found += [Effect("file", _literals("perl", m.group(2))[0], "open", "overwrites")
                  for m in _PERL_OPEN_3.finditer(code)]  # fmt: skip
        for match in _PERL_OPEN_2.finditer(code):
            path = match.group(2).strip()
            known = match.group(1) == "'" or not _interpolates("perl", path)
            word = Word(match.group(0), path if known else None)
            found.append(Effect("file", word, "open", "overwrites"))
    return found


def _node_recursive(after: str) -> bool:
    return re.match(r"\s*,\s*\{[^}]*recursive\s*:\s*true", after) is not None


def _literals(language: Language, text: str) -> list[Word]:
    """The literal strings in `"a", 'b', ["c", "d"]`; a value is None if it interpolates."""
    words = []
    for match in _ONE_STRING.finditer(text):
        raw = match.group(0)
        quote, body = raw[0], raw[1:-1]
        value: str | None
        if quote == "'" and language != "node":
            value = re.sub(r"\\([\\'])", r"\1", body)
        elif (quote == "`" and "${" in body) or (quote != "'" and _interpolates(language, body)):
            value = None
        else:
            value = re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body)
        words.append(Word(raw, value))
    return words


def _interpolates(language: Language, body: str) -> bool:
    if language in ("perl", "php"):
        return re.search(r"(?<!\\)[$@][\w{:]", body) is not None
    if language == "ruby":
        return "#{" in body
    return False


def _command_line(literals: list[Word]) -> Word:
    text = ", ".join(w.text for w in literals)
    values = [w.value for w in literals]
    if not values or None in values:
        return Word(text, None)
    if len(values) == 1:
        return Word(text, values[0])  # one string: a shell command line
    return Word(text, shlex.join(v for v in values if v is not None))  # an argv list
