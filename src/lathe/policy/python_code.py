"""What Python code does to files, processes and the shell, read with `ast`.

Calls are found by the name they resolve to through the code's imports (`import shutil
as s`, `from os import system`, `__import__("os")`, `getattr(os, "system")`), and their
arguments evaluated when they are fixed by the text: string literals, f-strings without
fields, `+`, `/` on paths, `os.path.join`, `Path(...)`, `Path.home()`,
`os.path.expanduser`, `os.environ["HOME"]`, and names assigned once to such a value.
Anything else is "only known at run time". Code passed to `exec` as a literal (or as
base64 of one) is read in turn, a few levels deep.
"""

from __future__ import annotations

import ast
import base64
import binascii
import os
import shlex
from collections import Counter
from pathlib import Path

from lathe.policy.interpreters import RUNTIME_VALUE, Effect
from lathe.policy.shell_words import Word

_MAX_EXEC_DEPTH = 4

_TREE = frozenset({"shutil.rmtree"})
_REMOVE = {"os.remove": "deletes", "os.unlink": "deletes", "os.rmdir": "deletes",
           "os.removedirs": "deletes"}  # fmt: skip
_WRITE_FIRST = {"os.truncate": "empties", "os.mkfifo": "creates"}
_WRITE_SECOND = {"shutil.copy": "writes", "shutil.copy2": "writes", "shutil.copyfile": "writes",
                 "shutil.copytree": "writes", "os.symlink": "makes a link at",
                 "os.link": "makes a link at"}  # fmt: skip
_MOVE = frozenset({"shutil.move", "os.rename", "os.replace", "os.renames"})
_OPEN = frozenset({"open", "io.open", "builtins.open", "codecs.open", "os.open"})
_SHELL_STRING = frozenset(
    {"os.system", "os.popen", "subprocess.getoutput", "subprocess.getstatusoutput",
     "asyncio.create_subprocess_shell", "pty.spawn"}
)  # fmt: skip
_SUBPROCESS = frozenset(
    {"subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
     "subprocess.Popen"}
)  # fmt: skip
_EXEC_ARGV = frozenset({"os.execv", "os.execve", "os.execvp", "os.execvpe"})
_EXEC_LIST = frozenset({"os.execl", "os.execle", "os.execlp", "os.execlpe"})
_PATH_TYPES = frozenset(
    {"pathlib.Path", "pathlib.PosixPath", "pathlib.PurePath", "pathlib.PurePosixPath"}
)
_PATH_SAME = frozenset({"str", "os.fspath", "os.path.abspath", "os.path.normpath",
                        "os.path.realpath", "os.fsdecode"})  # fmt: skip
# Methods of a path object: name -> (verb, follows a symlink at the path).
_PATH_METHODS = {"unlink": ("deletes", False), "rmdir": ("deletes", False),
                 "write_text": ("overwrites", True), "write_bytes": ("overwrites", True),
                 "symlink_to": ("makes a link at", False),
                 "hardlink_to": ("makes a link at", False)}  # fmt: skip
_MODULES = {"posix": "os", "nt": "os", "posixpath": "os.path", "genericpath": "os.path"}


def python_effects(code: str, home: Path, depth: int = 0) -> list[Effect]:
    """Effects of running `code`; none when it does not parse (Python would not run it).
    Raises RecursionError for code too deeply nested to parse safely."""
    if _too_deep_to_parse(code):
        raise RecursionError("python code nested too deeply")
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return []
    reader = _Reader(code, home, depth)
    reader.learn(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            reader.call(node)
    return reader.effects


class _Reader:
    def __init__(self, code: str, home: Path, depth: int) -> None:
        self.code = code
        self.home = home
        self.depth = depth
        self.imports: dict[str, str] = {}  # local name -> what it stands for: "shutil.rmtree"
        self.star: list[str] = []  # modules imported with `from m import *`
        self.bound: dict[str, ast.expr] = {}  # names assigned exactly once
        self.effects: list[Effect] = []

    def learn(self, tree: ast.AST) -> None:
        stores: Counter[str] = Counter()
        assigned: dict[str, ast.expr] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.imports[alias.asname] = _module(alias.name)
                    else:
                        top = alias.name.split(".")[0]
                        self.imports[top] = _module(top)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    if alias.name == "*":
                        self.star.append(_module(node.module))
                    else:
                        full = f"{_module(node.module)}.{alias.name}"
                        self.imports[alias.asname or alias.name] = full
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                stores[node.id] += 1
            elif isinstance(node, ast.Assign) and isinstance(target := node.targets[0], ast.Name):
                assigned[target.id] = node.value  # `a = b = x` also counts two stores
        self.bound = {name: value for name, value in assigned.items() if stores[name] == 1}

    # -- what a name or an expression stands for ----------------------------------------

    def dotted(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            if node.id in self.imports:
                return self.imports[node.id]
            for module in self.star:
                if _is_known(f"{module}.{node.id}"):
                    return f"{module}.{node.id}"
            return None if node.id in self.bound else node.id
        if isinstance(node, ast.Attribute):
            base = self.dotted(node.value)
            return None if base is None else f"{base}.{node.attr}"
        if isinstance(node, ast.Call):
            name = self.dotted(node.func)
            args = [self.text(a) for a in node.args]
            if name in ("__import__", "importlib.import_module") and args and args[0]:
                return _module(args[0])
            if name == "getattr" and len(node.args) >= 2 and args[1]:
                base = self.dotted(node.args[0])
                return None if base is None else f"{base}.{args[1]}"
        return None

    def text(self, node: ast.expr, seen: int = 0) -> str | None:
        """The value of a string (or path) expression, if the code fixes it."""
        if seen > 20:
            return None
        if isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, bytes):
                return value.decode("utf-8", "replace")
            return value if isinstance(value, str) else None
        if isinstance(node, ast.Name):
            bound = self.bound.get(node.id)
            return None if bound is None else self.text(bound, seen + 1)
        if isinstance(node, ast.JoinedStr):
            parts = [self.text(v, seen + 1) if isinstance(v, ast.Constant) else None
                     for v in node.values]  # fmt: skip
            return None if None in parts else "".join(p for p in parts if p is not None)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Div):
            left, right = self.text(node.left, seen + 1), self.text(node.right, seen + 1)
            if left is None or right is None:
                return None
            return left + right if isinstance(node.op, ast.Add) else os.path.join(left, right)
        if isinstance(node, ast.Subscript) and self.dotted(node.value) == "os.environ":
            key = self.text(node.slice, seen + 1)
            return str(self.home) if key == "HOME" else None
        if isinstance(node, ast.Attribute) and node.attr == "parent":
            inner = self.text(node.value, seen + 1)
            return None if inner is None else os.path.dirname(inner.rstrip("/")) or "."
        if isinstance(node, ast.Call):
            return self._call_text(node, seen + 1)
        return None

    def is_path(self, node: ast.expr, seen: int = 0) -> bool:
        """Is this expression a pathlib path (so `.replace()` renames a file)?"""
        if seen > 20:
            return False
        if isinstance(node, ast.Name):
            bound = self.bound.get(node.id)
            return bound is not None and self.is_path(bound, seen + 1)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            return self.is_path(node.left, seen + 1)
        if isinstance(node, ast.Attribute) and node.attr == "parent":
            return self.is_path(node.value, seen + 1)
        if not isinstance(node, ast.Call):
            return False
        name = self.dotted(node.func)
        if name in _PATH_TYPES or name in ("pathlib.Path.home", "pathlib.Path.cwd"):
            return True
        func = node.func
        return (
            isinstance(func, ast.Attribute)
            and func.attr in ("expanduser", "resolve", "absolute", "joinpath", "with_name",
                              "with_suffix")
            and self.is_path(func.value, seen + 1)
        )  # fmt: skip

    def _call_text(self, node: ast.Call, seen: int) -> str | None:
        name = self.dotted(node.func)
        args = [self.text(a, seen) for a in node.args]
        if name in ("pathlib.Path.home", "pathlib.PosixPath.home"):
            return str(self.home)
        if name in ("os.getcwd", "pathlib.Path.cwd"):
            return "."
        if name in ("os.getenv", "os.environ.get") and args[:1] == ["HOME"]:
            return str(self.home)
        if None in args:
            return None
        known = [a for a in args if a is not None]
        if name in _PATH_TYPES or name == "os.path.join":
            return os.path.join(*known) if known else "."
        if name in _PATH_SAME and len(known) == 1:
            return known[0]
        if name == "os.path.expanduser" and len(known) == 1:
            return self._expand(known[0])
        if isinstance(node.func, ast.Attribute):
            inner = self.text(node.func.value, seen)
            if inner is None:
                return None
            method = node.func.attr
            if method == "expanduser":
                return self._expand(inner)
            if method in ("resolve", "absolute", "as_posix", "__str__"):
                return inner
            if method == "joinpath":
                return os.path.join(inner, *known)
        return None

    def _expand(self, path: str) -> str:
        if path == "~" or path.startswith("~/"):
            return str(self.home) + path[1:]
        return path

    # -- calls --------------------------------------------------------------------------

    def call(self, node: ast.Call) -> None:
        name = self.dotted(node.func)
        if name is None and isinstance(node.func, ast.Attribute):
            self._path_method(node)
            return
        if name is None:
            return
        if name in _TREE and node.args:
            self._effect("tree", node.args[0], name)
        elif name in _REMOVE and node.args:
            self._effect("file", node.args[0], name, _REMOVE[name], follow=False)
        elif name in _WRITE_FIRST and node.args:
            self._effect("file", node.args[0], name, _WRITE_FIRST[name])
        elif name in _WRITE_SECOND and len(node.args) >= 2:
            self._effect("file", node.args[1], name, _WRITE_SECOND[name])
            if name == "os.link":  # the same file under a second name: writes reach it
                self._effect("file", node.args[0], name, "gives a second name (a hard link) to")
        elif name in _MOVE and len(node.args) >= 2:
            self._effect("file", node.args[0], name, "moves", follow=False)
            self._effect("file", node.args[1], name, "writes")
        elif name in _OPEN and node.args and self._writes(node, name):
            self._effect("file", node.args[0], name, "overwrites")
        elif name in ("os.kill", "os.killpg") and node.args:
            self._signal(node, name)
        elif name in _SHELL_STRING and node.args:
            self._shell(node.args[0], name)
        elif name in _SUBPROCESS:
            command = node.args[0] if node.args else _keyword(node, "args")
            if command is not None:
                self._shell(command, name)
        elif name in _EXEC_ARGV and len(node.args) >= 2:
            self._shell(node.args[1], name)
        elif name in _EXEC_LIST and len(node.args) >= 2:
            self._shell(ast.List(elts=list(node.args[1:])), name)
        elif name in ("exec", "eval", "compile") and node.args:
            self._exec(node.args[0], name)
        else:
            self._path_method(node)

    def _path_method(self, node: ast.Call) -> None:
        func = node.func
        if not isinstance(func, ast.Attribute) or not self.is_path(func.value):
            return  # `"a".replace(...)` is not `Path.replace`
        method = func.attr
        if method in _PATH_METHODS:
            verb, follow = _PATH_METHODS[method]
            self._effect("file", func.value, f"Path.{method}", verb, follow=follow)
        elif method in ("rename", "replace") and node.args:
            self._effect("file", func.value, f"Path.{method}", "moves", follow=False)
            self._effect("file", node.args[0], f"Path.{method}", "writes")
        elif method == "open" and self._writes(node, "Path.open"):
            self._effect("file", func.value, "Path.open", "overwrites")

    def _writes(self, node: ast.Call, name: str) -> bool:
        if name == "os.open":
            flags = ast.unparse(node.args[1]) if len(node.args) > 1 else ""
            return any(f in flags for f in ("O_WRONLY", "O_RDWR", "O_TRUNC", "O_CREAT"))
        at = 0 if name == "Path.open" else 1
        mode_node = node.args[at] if len(node.args) > at else _keyword(node, "mode")
        if mode_node is None:
            return False
        mode = self.text(mode_node)
        return mode is None or bool(set(mode) & set("wax+"))

    def _effect(
        self, kind: str, node: ast.expr, name: str, verb: str = "", *, follow: bool = True
    ) -> None:
        source = ast.get_source_segment(self.code, node) or ast.unparse(node)
        target = Word(source, self.text(node))
        if kind == "tree":
            self.effects.append(Effect("tree", target, name))
        else:
            self.effects.append(Effect("file", target, name, verb, follow))

    def _signal(self, node: ast.Call, name: str) -> None:
        if len(node.args) > 1 and isinstance(node.args[1], ast.Constant) and not node.args[1].value:
            return  # signal 0 only checks the process exists
        target = node.args[0]
        number = _int(target)
        if number is not None:
            pid = str(number if name == "os.kill" else -number)
        elif self._calls_getppid(target):
            pid = "ppid"
        else:
            return
        source = ast.get_source_segment(self.code, target) or ast.unparse(target)
        self.effects.append(Effect("signal", Word(source, pid), name))

    def _calls_getppid(self, node: ast.expr) -> bool:
        return any(
            isinstance(n, ast.Call) and self.dotted(n.func) == "os.getppid" for n in ast.walk(node)
        )

    def _shell(self, node: ast.expr, name: str) -> None:
        source = ast.get_source_segment(self.code, node) or ast.unparse(node)
        if isinstance(node, ast.Name) and isinstance(self.bound.get(node.id), ast.List | ast.Tuple):
            node = self.bound[node.id]
        if isinstance(node, ast.List | ast.Tuple):
            words = [self.text(e) for e in node.elts]
            line = " ".join(RUNTIME_VALUE if w is None else shlex.quote(w) for w in words)
            self.effects.append(Effect("shell", Word(source, line or None), name))
        else:
            self.effects.append(Effect("shell", Word(source, self.text(node)), name))

    def _exec(self, node: ast.expr, name: str) -> None:
        if self.depth >= _MAX_EXEC_DEPTH:
            return
        code = self.text(node)
        decoder = self.dotted(node.func) if isinstance(node, ast.Call) and node.args else None
        if code is None and decoder in ("base64.b64decode", "base64.standard_b64decode"):
            encoded = self.text(node.args[0])  # type: ignore[attr-defined]
            code = None if encoded is None else _b64(encoded)
        if code is not None:
            self.effects += python_effects(code, self.home, self.depth + 1)


def _module(name: str) -> str:
    for alias, real in _MODULES.items():
        if name == alias or name.startswith(alias + "."):
            return real + name[len(alias) :]
    return name


_KNOWN = frozenset(
    {*_TREE, *_REMOVE, *_WRITE_FIRST, *_WRITE_SECOND, *_MOVE, *_OPEN, *_SHELL_STRING,
     *_SUBPROCESS, *_EXEC_ARGV, *_EXEC_LIST, *_PATH_TYPES, "os.kill", "os.killpg",
     "os.getppid", "os.environ", "os.getenv", "os.getcwd"}
)  # fmt: skip


def _is_known(name: str) -> bool:
    """Could `from module import *` have brought this name in as one we look for?"""
    return name in _KNOWN or name.startswith("os.path.")


def _keyword(node: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in node.keywords if k.arg == name), None)


def _int(node: ast.expr) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int(node.operand)
        return None if inner is None else -inner
    return None


def _b64(text: str) -> str | None:
    try:
        return base64.b64decode(text, validate=True).decode("utf-8")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return None


# ast.parse on code nested thousands deep (`x.a.a.a...`) hits the recursion limit inside
# CPython's AST construction, and on 3.11 before 3.11.8 that leaves the interpreter
# raising "AST constructor recursion depth mismatch" for later parses (gh-106905). A
# statement of this many tokens is refused before parsing instead; real one-liners stay
# far below it.
_MAX_STATEMENT_TOKENS = 1000


def _too_deep_to_parse(code: str) -> bool:
    import io
    import tokenize

    count = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            count = 0 if token.type == tokenize.NEWLINE else count + 1
            if count > _MAX_STATEMENT_TOKENS:
                return True
    except (tokenize.TokenError, SyntaxError, ValueError):
        return False
    return False
