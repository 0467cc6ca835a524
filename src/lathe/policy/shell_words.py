"""Static evaluation of bash words: what a word becomes before the command sees it.

A word's value is computed only from what the text itself fixes: quotes and backslashes
are removed, `$'...'` escapes decoded, braces expanded, `~` and `$HOME` become the home
directory, and variables assigned literally earlier in the same script are substituted.
Anything that depends on run time (an unknown variable, most command substitutions,
arithmetic) leaves the value as None: "unresolved", which the guard never auto-allows.
"""

from __future__ import annotations

import itertools
import pwd
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# A character of a word and how it was written: "lit" (unquoted: braces, tilde and globs
# act on it), "q" (quoted or escaped: literal), "exp" (an unquoted expansion result:
# split on IFS and globbed, but not brace- or tilde-expanded) or "brk" (where a brace
# range like `{1..3}` splits, whatever IFS holds).
_Char = tuple[str, str]
_GLOB_CHARS = frozenset("*?[")
DEFAULT_IFS = " \t\n"  # bash sets IFS so at its start, whatever the environment says
_IFS_WHITESPACE = frozenset(DEFAULT_IFS)


@dataclass(frozen=True)
class Word:
    text: str  # as written in the command
    value: str | None  # after quote removal and static expansion; None: known at run time
    glob: bool = False  # holds an unquoted glob character, so it may name many paths


@dataclass
class Scope:
    """What a word may refer to at the point where it is evaluated."""

    home: Path
    cwd: Path | None
    variables: dict[str, str | None]
    substitute: Callable[[Any], str | None]  # static value of a `$(...)` node, or None
    path: str | None = None  # PATH as the command starts with it, if known


def expand(node: Any, scope: Scope) -> list[Word]:
    """The words one syntax node turns into (braces and unquoted `$X` can make several)."""
    text = shown(node.text.decode("utf-8", "replace"))
    chars = _chars(node, scope)
    if chars is None:
        return [Word(text, None)]
    words: list[Word] = []
    for variant in _expand_braces(chars):
        pieces = _split_fields(variant, separators(scope))
        if pieces is None:
            words.append(Word(text, None))
            continue
        for piece in pieces:
            value = _expand_tilde(piece, scope)
            if value is None:
                words.append(Word(text, None))
                continue
            glob = any(c in _GLOB_CHARS and kind != "q" for c, kind in piece)
            words.append(Word(text, value, glob))
    return words


def shown(text: str) -> str:
    """Source text as a person wrote it: the parser puts `""` before a `{` glued to a
    word (`{rm,-rf,~}`), which changes nothing in bash, so it is taken out again."""
    return text.replace('""{', "{")


def expand_one(node: Any, scope: Scope) -> Word:
    """A node that must stay one word (a redirect target, an assignment value)."""
    words = expand(node, scope)
    if len(words) == 1:
        return words[0]
    return Word(node.text.decode("utf-8", "replace"), None)


def _chars(node: Any, scope: Scope) -> list[_Char] | None:
    kind = node.type
    if kind in ("word", "number", "variable_name"):
        return _unquoted(node.text.decode("utf-8", "replace"))
    if kind == "raw_string":
        return [(c, "q") for c in node.text.decode("utf-8", "replace")[1:-1]]
    if kind == "ansi_c_string":
        decoded = decode_ansi_c(node.text.decode("utf-8", "replace")[2:-1])
        return None if decoded is None else [(c, "q") for c in decoded]
    if kind == "string":
        return _double_quoted(node, scope)
    if kind == "translated_string":
        inner = node.named_children
        return _chars(inner[0], scope) if inner else None
    if kind == "concatenation":
        out: list[_Char] = []
        for child in node.children:
            part = _chars(child, scope)
            if part is None:
                return None
            out += part
        return out
    if kind in ("simple_expansion", "expansion", "command_substitution"):
        value = _expansion_value(node, scope)
        return None if value is None else [(c, "exp") for c in value]
    if kind == "brace_expression":
        return _number_range(node)
    return None


def _unquoted(text: str) -> list[_Char]:
    out: list[_Char] = []
    i = 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            if text[i + 1] != "\n":
                out.append((text[i + 1], "q"))
            i += 2
            continue
        out.append((text[i], "lit"))
        i += 1
    return out


def _double_quoted(node: Any, scope: Scope) -> list[_Char] | None:
    source = node.text
    base = node.start_byte
    out: list[_Char] = []
    pos = base + 1
    for child in node.named_children:
        if child.type == "string_content":
            continue
        out += _dq_literal(source[pos - base : child.start_byte - base])
        value = _expansion_value(child, scope)
        if value is None:
            return None
        out += [(c, "q") for c in value]
        pos = child.end_byte
    out += _dq_literal(source[pos - base : node.end_byte - base - 1])
    return out


def _dq_literal(raw: bytes) -> list[_Char]:
    text = raw.decode("utf-8", "replace")
    out: list[_Char] = []
    i = 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in '$`"\\\n':
            if text[i + 1] != "\n":
                out.append((text[i + 1], "q"))
            i += 2
            continue
        out.append((text[i], "q"))
        i += 1
    return out


def _expansion_value(node: Any, scope: Scope) -> str | None:
    if node.type == "command_substitution":
        return scope.substitute(node)
    if node.type not in ("simple_expansion", "expansion"):
        return None
    named = node.named_children
    if node.type == "expansion" and len(node.children) == 3 and _first_of(named):
        # `${X[0]}` is `$X` (BASH_SOURCE[0], the script's path).
        return variable(named[0].named_children[0].text.decode(), scope)
    # `${X}` only: any operator (`${X:-d}`, `${#X}`, `${X/a/b}`) depends on run time.
    if len(named) != 1 or named[0].type != "variable_name":
        return None
    if node.type == "expansion" and len(node.children) != 3:
        return None
    return variable(named[0].text.decode(), scope)


def _first_of(named: list[Any]) -> bool:
    """Whether the nodes are `X[0]` alone."""
    if len(named) != 1 or named[0].type != "subscript":
        return False
    parts = named[0].named_children
    return (
        len(parts) == 2
        and parts[0].type == "variable_name"
        and parts[1].type == "number"
        and parts[1].text == b"0"
    )


def variable(name: str, scope: Scope) -> str | None:
    if name in scope.variables:
        return scope.variables[name]
    if name == "HOME":
        return str(scope.home)
    if name == "IFS":
        return DEFAULT_IFS
    if name == "PATH":
        return scope.path
    if name == "PWD":
        return None if scope.cwd is None else str(scope.cwd)
    return None


def _number_range(node: Any) -> list[_Char] | None:
    numbers = [c.text.decode() for c in node.named_children]
    if len(numbers) != 2 or not all(n.lstrip("-").isdigit() for n in numbers):
        return None
    start, end = int(numbers[0]), int(numbers[1])
    step = 1 if end >= start else -1
    # Braces expand into separate words; a "brk" stands in for the split (done later).
    out: list[_Char] = []
    for n in range(start, end + step, step):
        out += [*([(" ", "brk")] if out else []), *((c, "q") for c in str(n))]
    return out


def _expand_braces(chars: list[_Char]) -> list[list[_Char]]:
    depth = 0
    open_at = -1
    commas: list[int] = []
    for i, (c, kind) in enumerate(chars):
        if kind != "lit":
            continue
        if c == "{":
            if depth == 0:
                open_at, commas = i, []
            depth += 1
        elif c == "}" and depth > 0:
            depth -= 1
            if depth == 0 and commas:
                head, tail = chars[:open_at], chars[i + 1 :]
                bounds = [open_at, *commas, i]
                out: list[list[_Char]] = []
                for a, b in itertools.pairwise(bounds):
                    out += _expand_braces(head + chars[a + 1 : b] + tail)
                return out
        elif c == "," and depth == 1:
            commas.append(i)
    return [chars]


def separators(scope: Scope) -> str | None:
    """The characters unquoted expansions are split on: IFS, None when only run time
    knows it (`read IFS`)."""
    return scope.variables.get("IFS", DEFAULT_IFS)


def _split_fields(chars: list[_Char], ifs: str | None) -> list[list[_Char]] | None:
    """The fields bash splits a word into, as it does: on the characters of `ifs` that
    came from an unquoted expansion; a run of IFS whitespace is one break and those at
    either end none; any other IFS character breaks once, so `a,,b` with IFS=, is three
    fields, the middle one empty. None: where `ifs` is unknown, any expansion may split."""
    if ifs is None:
        if any(kind == "exp" for _, kind in chars):
            return None
        ifs = ""

    def breaks(i: int) -> bool:
        return chars[i][1] == "brk" or (chars[i][1] == "exp" and chars[i][0] in ifs)

    def blank(i: int) -> bool:
        return breaks(i) and (chars[i][1] == "brk" or chars[i][0] in _IFS_WHITESPACE)

    if not any(breaks(i) for i in range(len(chars))):
        return [chars]
    fields: list[list[_Char]] = []
    current: list[_Char] = []
    i, end = 0, len(chars)
    while i < end and blank(i):
        i += 1
    while i < end:
        if not breaks(i):
            current.append(chars[i])
            i += 1
            continue
        while i < end and blank(i):
            i += 1
        if i < end and breaks(i):  # one IFS character that is not whitespace
            i += 1
            while i < end and blank(i):
                i += 1
        fields.append(current)
        current = []
    if current:
        fields.append(current)
    return fields or [[]]


def _expand_tilde(chars: list[_Char], scope: Scope) -> str | None:
    text = "".join(c for c, _ in chars)
    if not chars or chars[0] != ("~", "lit"):
        return text
    end = next((i for i, (c, kind) in enumerate(chars) if c == "/" and kind == "lit"), None)
    end = len(chars) if end is None else end
    user = text[1:end]
    rest = text[end:]
    if user == "":
        return str(scope.home) + rest
    if user == "+":
        return None if scope.cwd is None else str(scope.cwd) + rest
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", user):
        return None
    try:
        return pwd.getpwnam(user).pw_dir + rest
    except KeyError:
        return text  # bash leaves an unknown ~user as written


_ANSI_SIMPLE: Mapping[str, str] = {
    "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n",
    "r": "\r", "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?",
}  # fmt: skip
_ANSI_ESCAPE = re.compile(
    r"\\(?:([abeEfnrtv\\'\"?])|([0-7]{1,3})|x([0-9A-Fa-f]{1,2})"
    r"|u([0-9A-Fa-f]{1,4})|U([0-9A-Fa-f]{1,8})|c(.)|(.))",
    re.DOTALL,
)


def decode_ansi_c(body: str) -> str | None:
    """The value of `$'body'`; None for an escape bash would treat in a way we don't model."""
    unknown = False

    def replace(match: re.Match[str]) -> str:
        nonlocal unknown
        simple, octal, hex2, u4, u8, ctrl, other = match.groups()
        if simple:
            return _ANSI_SIMPLE[simple]
        if octal:
            return chr(int(octal, 8) & 0xFF)
        if hex2 or u4 or u8:
            code = int(hex2 or u4 or u8, 16)
            return chr(code) if code <= 0x10FFFF else "\ufffd"
        if ctrl:
            return chr(ord(ctrl.upper()) ^ 0x40)
        unknown = True
        return "\\" + other

    decoded = _ANSI_ESCAPE.sub(replace, body)
    return None if unknown else decoded
