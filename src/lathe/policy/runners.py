"""How the walker follows commands that run other commands: wrappers, shells, xargs,
eval, find -exec, script files, interpreter one-liners and `git -c`. Each returns what
the command writes to stdout, like `dispatch`, or adds to what the walker found."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from lathe.policy import dirs, file_commands, git_config, interpreters
from lathe.policy.carried import named_paths
from lathe.policy.dirs import Dirs, join_path
from lathe.policy.interpreters import Language
from lathe.policy.scripts import Content, runs_as_shell_script
from lathe.policy.shell_parse import Call, FilesTooComplex, Redirect, State
from lathe.policy.shell_words import Word
from lathe.policy.streams import UNKNOWN, Stream, under
from lathe.policy.wrappers import SHELLS, FindCall, shell_call, unwrap

if TYPE_CHECKING:
    from lathe.policy.shell_parse import Walker

_MAX_LINES = 16  # input lines of `xargs -I` followed one by one
_MAX_LANDINGS = 8  # copies of copies followed back to the file they started from
# These run the inner command in the current shell, so its `cd` outlives the call.
_SAME_SHELL = frozenset({"command", "builtin", "exec", "time"})


def wrapper(
    w: Walker, call: Call, st: State, stdin: Stream | None, base: str, args: list[Word]
) -> Stream:
    via = (*call.via, base)
    unwrapped = unwrap(base, args)
    if unwrapped is None:
        w.note("ask", f"cannot tell which command {base} runs: {call.text}")
        w.record(call)
        return UNKNOWN
    # A file the wrapper writes itself (`strace -o F`) is judged as `> F` would be:
    # peeled, only the inner command met the rules, and `strace -o ~/.bashrc ls` passed.
    for target in unwrapped.writes:
        w.writes_file(target, st)
    for command in unwrapped.commands_in_variables:
        w.nested(command, st.copy(via=via), f"{base} {command.text.split('=', 1)[0]}=")
    if unwrapped.lookup_only or not (unwrapped.inner or unwrapped.split_string):
        w.record(call)
        return UNKNOWN
    cwds = call.cwds
    if (chdir := unwrapped.chdir) is not None:
        cwds = tuple(dict.fromkeys(
            None if chdir.value is None else join_path(cwd, chdir.value) for cwd in cwds
        ))  # fmt: skip
    inner_state = st
    if base not in _SAME_SHELL or cwds != st.cwds:
        inner_state = st.copy(places=tuple(Dirs(cwd) for cwd in cwds))
    if unwrapped.split_string is not None:
        split = unwrapped.split_string
        label = "env -S" if base == "env" else f"{base} -c"
        _with_via(w, inner_state, via, lambda: w.nested(split, inner_state, label))
        return UNKNOWN
    inner = replace(
        call, words=unwrapped.inner, via=via, cwds=cwds,
        assigned=(*call.assigned, *unwrapped.assigned),
        environment=(*call.environment, *unwrapped.environment),
    )  # fmt: skip
    return w.dispatch(inner, inner_state, stdin) or UNKNOWN


def xargs(w: Walker, call: Call, st: State, stdin: Stream | None, args: list[Word]) -> Stream:
    unwrapped = unwrap("xargs", args)
    if unwrapped is None:
        w.note("ask", f"cannot tell which command xargs runs: {call.text}")
        w.record(call)
        return UNKNOWN
    fed: tuple[Word, ...] = ()
    if stdin is not None and stdin.kind == "paths":
        fed = stdin.items
    elif stdin is not None and stdin.kind == "text":
        fed = tuple(Word(item, item) for item in stdin.text.split())
    words = unwrapped.inner or [Word("echo", "echo")]
    # The file `-a F` reads the arguments from is judged as the command's `< F`: what
    # it holds reaches the command (`xargs -a .env echo` shows it).
    reads = tuple(Redirect("<", file, cwd) for file in unwrapped.reads for cwd in call.cwds)
    inner = replace(
        call, words=words, via=(*call.via, "xargs"), fed=fed, redirects=(*call.redirects, *reads)
    )
    mark = unwrapped.replaces
    if mark is None:
        w.dispatch(inner, st.copy(), None)
        return UNKNOWN
    # `xargs -I{} git {} <<< push` runs `git push`: each input line takes the place of
    # the string in the words, and nothing is added after them.
    if stdin is not None and stdin.kind == "text":
        fed = tuple(Word(line, line) for line in stdin.text.splitlines() if line.strip())
    lines = fed[:_MAX_LINES]
    if len(fed) > _MAX_LINES or not fed:  # lines unknown, or more than are followed
        lines += (Word(mark.text, None),)
    for item in lines:
        replaced = [_replaced(word, mark.value, item) for word in words]
        w.dispatch(replace(inner, words=replaced, fed=None), st.copy(), None)
    return UNKNOWN


def _replaced(word: Word, mark: str | None, item: Word) -> Word:
    """`word` with xargs's input line `item` for `mark` (any word, when mark is unknown)."""
    if word.value is None or (mark is not None and mark not in word.value):
        return word
    if mark is None or item.value is None:
        return Word(word.text, None)
    return Word(word.text, word.value.replace(mark, item.value), glob=word.glob or item.glob)


def shell(
    w: Walker, call: Call, st: State, stdin: Stream | None, base: str, args: list[Word]
) -> Stream:
    if base == "busybox":
        applet = args[0].value if args else None
        if applet in SHELLS and applet != "busybox":
            return shell(w, replace(call, words=args), st, stdin, applet, args[1:])
        return w.dispatch(replace(call, words=args, via=(*call.via, base)), st, stdin) or UNKNOWN
    startup = dict(call.environment).get("BASH_ENV") if base == "bash" else None
    if startup is not None:  # a non-interactive bash runs this file before anything
        label = f"BASH_ENV={startup.text if startup.value is None else startup.value} bash"
        if startup.value is None:
            w.note("ask", f"{label} runs a script only known at run time: {call.text}")
        else:
            script(w, call, st, startup, label, same_shell=False)
    how = shell_call(args)
    if how is None:
        w.note("ask", f"cannot tell which script {base} runs: {call.text}")
        w.record(call)
        return UNKNOWN
    if how.script is not None:
        w.nested(how.script, st.copy(via=(*call.via, f"{base} -c")), f"{base} -c")
        return UNKNOWN
    w.record(call)
    if how.script_file is None and call.fed is not None:
        # `echo x.sh | xargs bash`: xargs gives the shell its script, it reads no stdin.
        if not call.fed:
            w.note("ask", f"{base} runs a script xargs names at run time: {call.text}")
        for word in call.fed:
            _script_operand(w, call, st, base, word)
        return UNKNOWN
    if how.script_file is not None and how.script_file.value not in interpreters.STDIN_FILES:
        _script_operand(w, call, st, base, how.script_file)
        return UNKNOWN
    shell_input(w, call, st, stdin, base, same_shell=False)
    return UNKNOWN


def _script_operand(w: Walker, call: Call, st: State, base: str, word: Word) -> None:
    """Walk the script file a shell is given (`bash x.sh`, `xargs bash` fed `x.sh`).
    A path found below a folder at run time (find's `{}`, `find . | xargs bash`) may be
    any file there: the ones the guard sees are read, and it asks."""
    if word.value is None:
        w.note("ask", f"{base} runs a script only known at run time: {call.text}")
        return
    if word.glob and (call.via[-1:] == ("find -exec",) or call.fed):
        w.note("ask", f"{base} runs scripts found at run time: {call.text}")
    script(w, call, st, word, f"{base} {word.text}", same_shell=False, named=True)


def shell_input(
    w: Walker, call: Call, st: State, stdin: Stream | None, base: str, *, same_shell: bool
) -> None:
    """Walk what a shell reads as its script from `stdin` (`bash -s`, `bash /dev/stdin`,
    `source /dev/stdin`); `same_shell` keeps its `cd` and variables for what follows."""
    if stdin is None:
        return  # no input: the bash tool's stdin is /dev/null
    if stdin.kind == "file":
        for item in stdin.items:
            script(w, call, st, item, f"{base} < {item.text}", same_shell=same_shell)
    elif stdin.kind == "text":
        w.walk_text(stdin.text, st if same_shell else st.copy(via=(*call.via, base)), None)
    elif stdin.kind == "download":
        w.note("ask", f"a download is piped into a shell ({stdin.origin} | {base})")
    elif stdin.kind == "decoded":
        w.note("ask", f"decoded data is piped into a shell ({stdin.origin} | {base})")
    else:
        w.note("ask", f"{base} runs a script only known at run time: {call.text}")


def eval_like(w: Walker, call: Call, st: State, base: str, args: list[Word]) -> Stream:
    if base == "trap":
        action = _trap_action(args)
        if action is None:
            w.record(call)
            return UNKNOWN
        string = action
    else:
        if base == "watch":
            args = _watch_command(args)
        values = [a.value for a in args]
        joined = None if None in values else " ".join(v for v in values if v is not None)
        string = Word(" ".join(a.text for a in args), joined)
    # eval runs in this shell, so a `cd` inside it moves the commands after it.
    _with_via(w, st, (*call.via, base), lambda: w.nested(string, st, base))
    return UNKNOWN


def _trap_action(args: list[Word]) -> Word | None:
    """The command `trap args...` sets to run, None when it sets none: `-p`/`-l` print,
    `trap - SIG` and `trap SIG` reset, an unknown option fails. A leading `--` ends the
    options (`trap -- 'rm -rf ~' EXIT` sets the action)."""
    rest = args
    first = (args[0].value or "") if args else ""
    if first == "--":
        rest = args[1:]
    elif first.startswith("-") and first != "-":
        return None  # -p, -l, -P (print) or an option bash refuses: nothing is set
    if len(rest) < 2 or rest[0].value == "-":
        return None
    return rest[0]


def find_execs(w: Walker, call: Call, st: State, find: FindCall) -> None:
    found = [under(root) for root in find.roots]
    for command in find.execs:
        words: list[Word] = []
        for word in command:
            if word.value is None or "{}" not in word.value:
                words.append(word)
                continue
            for path in found:
                value = None if path.value is None else word.value.replace("{}", path.value)
                words.append(Word(word.text, value, glob=True))
        if words:
            w.dispatch(replace(call, words=words, via=(*call.via, "find -exec")), st.copy(), None)


def _watch_command(args: list[Word]) -> list[Word]:
    i = 0
    while i < len(args) and (args[i].value or "").startswith("-"):
        i += 2 if args[i].value in ("-n", "--interval") else 1
    return args[i:]


def _with_via(w: Walker, st: State, via: tuple[str, ...], walk: Callable[[], None]) -> None:
    saved = st.via
    st.via = via
    try:
        walk()
    finally:
        st.via = saved


def script(
    w: Walker, call: Call, st: State, word: Word, label: str, *, same_shell: bool,
    executed: bool = False, named: bool = False,
) -> None:  # fmt: skip
    """Walk the script file `word` names, as `label` (`bash x.sh`, `source x.sh`, `./x.sh`)
    runs it: `same_shell` keeps its `cd`, variables and aliases for what follows;
    `executed` (`./x.sh`) reads it only if its `#!` line names a shell; a script in
    each folder the command may run in is read. In it BASH_SOURCE is `word`, and so
    is `$0` when the script was `named` as the program (`bash x.sh`, `./x.sh`): `cd
    "$(dirname "$0")"` goes to the script's own folder."""
    if word.value is None:
        return
    landed = _landed(w)
    for path, value in _script_paths(w, call, word, label, landed):
        names = {"BASH_SOURCE": value} | ({"0": value} if executed or named else {})
        for content in _may_hold(w, path, landed, frozenset()):
            _script_text(
                w, call, st, content, label, same_shell=same_shell, executed=executed,
                names=names,
            )  # fmt: skip


def _landed(w: Walker) -> list[file_commands.Landing]:
    """The files the commands recorded so far write whole, with where their content
    comes from (`file_commands.landings`; `perl -i` rewrites its files)."""
    found: list[file_commands.Landing] = []
    for command in (*w.script.commands, *w.script.indirect):
        if command.words[0].value is None:
            continue
        base = PurePosixPath(command.words[0].value).name
        args = list(command.words[1:])
        found += file_commands.landings(base, args, command.fed, command.cwd)
        language = interpreters.language_of(base)
        program = interpreters.program(language, args) if language else None
        for word in program.in_place if program else ():
            if word.value is not None and (path := join_path(command.cwd, word.value)):
                found.append((path, None))
    return found


def _may_hold(
    w: Walker, path: Path, landed: list[file_commands.Landing], seen: frozenset[Path]
) -> list[Content]:
    """What the script at `path` may hold when it runs: what the command line wrote
    there by a redirect or tee, else what is on disk (`Files.content`); and what each
    command before it landed there: the content of the file it copied, moved or linked
    (`cp clean.sh c2; bash c2`), or text only run time knows (`sed -i`), which asks.
    Any of those commands may not have run, so each possibility is walked."""
    found = [content] if (content := w.files.content(path)) is not None else []
    if len(seen) >= _MAX_LANDINGS:
        return found
    for target, source in landed:
        if source is None:
            if path.is_relative_to(target) or path.match(str(target)):
                found.append(Content(None, on_disk=False))
            continue
        for origin in _origins(path, target, source):
            if origin not in seen:
                found += _may_hold(w, origin, landed, seen | {path})
    return list(dict.fromkeys(found))


def _origins(path: Path, target: Path, source: Path) -> list[Path]:
    """Where the content at `path` came from, when `source` was copied to `target`:
    `source` itself, or below a folder copied whole (`cp -r d e`: e/x.sh from d/x.sh),
    or copied into one (`cp x.sh e`: e/x.sh from x.sh)."""
    if path == target or path.match(str(target)):
        return [source]
    if not path.is_relative_to(target):
        return []
    relative = path.relative_to(target).parts
    origins = [source.joinpath(*relative)]
    if relative[0] == source.name:
        origins.append(source.joinpath(*relative[1:]))
    return origins


def _script_paths(
    w: Walker, call: Call, word: Word, label: str, landed: list[file_commands.Landing]
) -> list[tuple[Path, str]]:
    """The files the script word names in each folder the command may run in, with the
    name the script is given: a glob word (`bash cl*.sh`), each file it matches on
    disk (as `carried.named_paths` finds them) or among those the command line wrote
    before; when it matches none, the guard asks."""
    assert word.value is not None
    if not word.glob:
        paths = dict.fromkeys(dirs.file_at(cwd, word.value) for cwd in call.cwds)
        return [(path, word.value) for path in paths]
    found: dict[Path, str] = {}
    for cwd in call.cwds:
        here = dirs.file_at(cwd, ".")
        pattern = str(dirs.file_at(cwd, word.value))
        made = [*w.files.written, *(target for target, _ in landed)]
        written = [path for path in made if path.match(pattern)]
        for path in [*named_paths(here, word)[1:], *written]:
            found.setdefault(Path(os.path.normpath(path)), str(path))
        if (literal := Path(pattern)).is_file():  # bash runs `x*.sh` itself if nothing matches
            found.setdefault(literal, word.value)
    if not found:
        w.note("ask", f"{label} runs a script named by a glob that matches no file the "
                      f"guard can see: {call.text}")  # fmt: skip
    return list(found.items())


def _script_text(
    w: Walker, call: Call, st: State, content: Content, label: str, *, same_shell: bool,
    executed: bool, names: dict[str, str],
) -> None:  # fmt: skip
    if content.text is None:
        w.note("ask", f"{label} runs a script written at run time: {call.text}")
        if same_shell:
            st.may_also_be((dirs.UNKNOWN,))
        return
    if executed and not runs_as_shell_script(content.text):
        return
    via = (*call.via, label)
    inner = st if same_shell else State.at(call.cwds, via=via)
    saved = {name: inner.variables.get(name, "\0") for name in names}
    inner.variables.update(names)
    outermost = content.on_disk and not w.file_depth
    w.indirect += 1
    w.file_depth += content.on_disk
    try:
        _with_via(w, inner, via, lambda: w.walk_text(content.text or "", inner, None))
    except FilesTooComplex:
        if not outermost:
            raise
        if same_shell:  # read no further, as past MAX_BYTES: it may have moved anywhere
            st.may_also_be((dirs.UNKNOWN,))
    finally:
        w.indirect -= 1
        w.file_depth -= content.on_disk
        for name, value in saved.items():  # a sourced script's own names end with it
            if value == "\0":
                inner.variables.pop(name, None)
            else:
                inner.variables[name] = value


def interpreter(
    w: Walker, call: Call, st: State, stdin: Stream | None, language: Language, base: str,
    args: list[Word],
) -> None:  # fmt: skip
    program = interpreters.program(language, args)
    if program is None:
        return
    for word in program.in_place:
        w.effect(interpreters.Effect("file", word, f"{base} -i", "rewrites", False), call.cwds)
    if program.code is not None:
        code, label = program.code.value, f"{base} {program.flag}"
    elif program.reads_stdin and stdin is not None and stdin.kind == "text":
        code, label = stdin.text, f"{base} reading stdin"
    else:
        return
    if code is None:
        return
    for effect in interpreters.effects(language, code, w.home):
        if effect.kind != "shell":
            w.effect(replace(effect, name=f"{effect.name} (via {label})"), call.cwds)
            continue
        how = f"{effect.name} in {label}"
        if effect.target.value is None:
            w.note("ask", f"{how} runs a command only known at run time: {effect.target.text}")
            continue
        w.indirect += 1
        try:
            w.walk_text(effect.target.value, st.copy(via=(*call.via, how)), None)
        finally:
            w.indirect -= 1


def git_config_options(w: Walker, call: Call, st: State, args: list[Word]) -> None:
    """`git -c core.pager='rm -rf ~' log` runs the value as a command: judge it, and the
    same keys set by `--config-env` or by the environment (`GIT_CONFIG_*`)."""
    environment = dict(call.environment)
    i = 0
    while i < len(args) - 1 and (args[i].value or "").startswith("-"):
        option, eq, attached = (args[i].value or "").partition("=")
        if option not in git_config.GLOBAL_VALUE_OPTIONS:
            i += 1
            continue
        pair = Word(args[i].text, attached) if eq else args[i + 1]
        i += 1 if eq else 2
        if option not in ("-c", "--config-env"):
            continue
        if pair.value is None:
            if option == "--config-env":
                w.note("ask", f"git --config-env sets a key only known at run time: {call.text}")
            continue
        key, eq, value = pair.value.partition("=")
        if not eq:
            continue
        if option == "--config-env":
            given = environment.get(value, Word(f"${value}", None))
            _judge_config_value(w, call, st, key, given, f"git --config-env {key}")
        else:
            _judge_config_value(w, call, st, key, Word(pair.text, value), f"git -c {key}")
    pairs, unknown = git_config.from_environment(environment)
    if unknown:
        w.note("ask", f"the environment sets git's config in a way only known at run time: "
                      f"{call.text}")  # fmt: skip
    for key, value in pairs:
        _judge_config_value(w, call, st, key, value, f"{key} from GIT_CONFIG_*")


def _judge_config_value(
    w: Walker, call: Call, st: State, key: str, value: Word, label: str
) -> None:
    """A config value git runs as a command line (an alias starting with `!`, a pager,
    a hook path...), judged as one."""
    if not git_config.value_is_command(key):
        return
    if value.value is None:
        w.note("ask", f"{label} is set to a value only known at run time: {call.text}")
        return
    command = value.value
    if key.lower().startswith("alias."):
        if not command.startswith("!"):
            return  # an alias for a git command, not a shell one
        command = command[1:]
    w.nested(Word(value.text, command), st.copy(via=(*call.via, label)), label)
