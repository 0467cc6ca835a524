"""Commands that run other commands: where the inner command starts in their argv.

`env -i X=1 timeout 5 nice -n 3 rm -rf /` runs `rm -rf /`; the guard must judge the rm,
and rules must see it too. Each wrapper's argv is read the way its own parser reads it
(`_Syntax`), because a spelling read differently hides the inner command: getopt reads
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
from typing import Literal

from lathe.policy.shell_words import Word

PRIVILEGED = frozenset({"sudo", "doas", "su", "pkexec", "run0", "runuser"})
# Environment variables whose value a program runs as a command line (git, less, man...):
# `GIT_EXTERNAL_DIFF='rm -rf ~' git diff` runs the rm.
COMMAND_VARIABLES = frozenset(
    {"GIT_EXTERNAL_DIFF", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "EDITOR", "VISUAL",
     "GIT_SSH_COMMAND", "GIT_SSH", "GIT_PAGER", "PAGER", "MANPAGER", "GIT_ASKPASS",
     "SSH_ASKPASS", "GIT_PROXY_COMMAND", "LESSOPEN", "LESSCLOSE", "BROWSER"}
)  # fmt: skip
SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "busybox"})


def _o(options: str) -> frozenset[str]:
    return frozenset(options.split())


@dataclass(frozen=True)
class _Syntax:
    """How one wrapper reads its argv, as its source does."""

    values: frozenset[str] = frozenset()  # take a value: `-o F`, `-oF`, `--out F`, `--out=F`
    optional: frozenset[str] = frozenset()  # take one only attached: `-t[F]`, `--timing[=F]`
    flags: frozenset[str] = frozenset()  # long options taking none, to tell abbreviations
    # "getopt": GNU getopt_long that stops at the first operand; "words": each option a
    # word of its own, `--name=value` included; "listed": only the listed words are
    # options, anything else is the first operand; "letter": an option is known by the
    # letter after its dash alone (`-qf` is `-q`).
    style: Literal["getopt", "words", "listed", "letter"] = "getopt"
    permutes: bool = False  # getopt without "+": options may follow operands
    skip: int = 0  # operands before the command: a duration, a lock file, a new root
    runs: frozenset[str] = frozenset()  # options whose value a shell runs (`script -c`)
    splits: frozenset[str] = frozenset()  # options whose value is read as argv (`env -S`)
    chdir: frozenset[str] = frozenset()  # options naming the directory the command runs in
    writes: frozenset[str] = frozenset()  # options naming a file the wrapper writes itself


_HELP = "--help --version"
_SYNTAX: dict[str, _Syntax] = {
    "env": _Syntax(
        values=_o("-u --unset -C --chdir -S --split-string -a --argv0"),
        optional=_o("--block-signal --default-signal --ignore-signal"),
        flags=_o(f"--ignore-environment --null --debug --list-signal-handling {_HELP}"),
        splits=_o("-S --split-string"),
        chdir=_o("-C --chdir"),
    ),
    "nice": _Syntax(values=_o("-n --adjustment"), flags=_o(_HELP)),
    "timeout": _Syntax(
        values=_o("-s --signal -k --kill-after"),
        flags=_o(f"--foreground --preserve-status --verbose {_HELP}"),
        skip=1,
    ),
    "nohup": _Syntax(flags=_o(_HELP)),
    "command": _Syntax(),
    "builtin": _Syntax(),
    "exec": _Syntax(values=_o("-a")),
    "time": _Syntax(
        values=_o("-f --format -o --output"),
        flags=_o(f"--append --portability --quiet --verbose {_HELP}"),
        writes=_o("-o --output"),
    ),
    "setsid": _Syntax(flags=_o(f"--ctty --fork --wait {_HELP}")),
    "stdbuf": _Syntax(values=_o("-i -o -e --input --output --error"), flags=_o(_HELP)),
    "ionice": _Syntax(
        values=_o("-c --class -n --classdata -p --pid -P --pgid -u --uid"),
        flags=_o(f"--ignore {_HELP}"),
    ),
    "chronic": _Syntax(),
    "coproc": _Syntax(),
    "flock": _Syntax(
        values=_o("-w --wait --timeout -E --conflict-exit-code"),
        flags=_o(
            f"--shared --exclusive --unlock --nonblock --nb --close --no-fork --verbose {_HELP}"
        ),
        skip=1,
    ),
    "taskset": _Syntax(flags=_o(f"--all-tasks --pid --cpu-list {_HELP}"), skip=1),
    "chrt": _Syntax(
        values=_o("-T --sched-runtime -P --sched-period -D --sched-deadline"),
        flags=_o(
            f"--batch --deadline --fifo --idle --other --rr --reset-on-fork --all-tasks "
            f"--max --pid --verbose {_HELP}"
        ),
        skip=1,
    ),
    "prlimit": _Syntax(
        values=_o("-p --pid -o --output"),
        optional=_o(
            "-c -d -e -f -i -l -m -n -q -r -s -t -u -v -x -y --core --data --nice "
            "--fsize --sigpending --memlock --rss --nofile --msgqueue --rtprio --stack "
            "--cpu --nproc --as --locks --rttime"
        ),
        flags=_o(f"--noheadings --raw --verbose {_HELP}"),
    ),
    "setpriv": _Syntax(
        values=_o(
            "--ruid --euid --rgid --egid --reuid --regid --groups --inh-caps "
            "--ambient-caps --bounding-set --securebits --pdeathsig --selinux-label "
            "--apparmor-profile --landlock-access --landlock-rule --ptracer"
        ),
        flags=_o(
            f"--dump --nnp --no-new-privs --clear-groups --keep-groups --init-groups "
            f"--reset-env {_HELP}"
        ),
    ),
    "strace": _Syntax(
        values=_o(
            "-a -b -e -E -I -o -O -p -P -s -S -u -U -X --abbrev --attach --columns "
            "--const-print-style --decode-pids --detach-on --env --fault --inject "
            "--interruptible --kvm --output --raw --read --signal --status "
            "--string-limit --summary-columns --summary-sort-by "
            "--summary-syscall-overhead --trace --trace-fds --trace-path --user "
            "--verbose --write --argv0 --syscall-limit"
        ),
        optional=_o(
            "--absolute-timestamps --daemonize --decode-fds --quiet --silence "
            "--relative-timestamps --strings-in-hex --syscall-times --tips "
            "--timestamps --stack-trace --secontext"
        ),
        flags=_o(
            f"--follow-forks --output-separately --output-append-mode --seccomp-bpf "
            f"--summary --summary-only --summary-wall-clock --no-abbrev "
            f"--instruction-pointer --syscall-number --successful-only --failed-only "
            f"--stack-traces --debug --pidns-translation {_HELP}"
        ),
        writes=_o("-o --output"),
    ),
    "ltrace": _Syntax(
        values=_o(
            "-a -A -D -e -F -l -n -o -p -s -u -w -x -X --align --config --debug "
            "--indent --library --output --where"
        ),
        flags=_o(f"--demangle --no-signals {_HELP}"),
        writes=_o("-o --output"),
    ),
    "numactl": _Syntax(
        values=_o(
            "-i -p -c -N -C -m -S -f -o -L -M -I -P -w --interleave --preferred "
            "--cpubind --cpunodebind --physcpubind --membind --shm --file --offset "
            "--length --shmmode --shmid --preferred-many --weighted-interleave"
        ),
        flags=_o(
            f"--show --localalloc --hardware --strict --dump --huge --touch --verify "
            f"--all --balancing {_HELP}"
        ),
    ),
    "chroot": _Syntax(values=_o("--userspec --groups"), flags=_o(f"--skip-chdir {_HELP}"), skip=1),
    "unshare": _Syntax(
        values=_o(
            "-S -G -R -w -l --setuid --setgid --root --wd --load-interp --map-user "
            "--map-group --map-users --map-groups --propagation --setgroups "
            "--monotonic --boottime"
        ),
        optional=_o(
            "--mount --uts --ipc --net --pid --user --cgroup --time --kill-child "
            "--mount-proc --mount-binfmt"
        ),
        flags=_o(f"--fork --map-root-user --map-current-user --map-auto --keep-caps {_HELP}"),
        chdir=_o("-w --wd"),
    ),
    "nsenter": _Syntax(
        values=_o("-t -S -G -W --target --setuid --setgid --wdns"),
        optional=_o(
            "-m -u -i -n -p -C -U -T -r -w --mount --uts --ipc --net --pid --cgroup "
            "--user --time --root --wd"
        ),
        flags=_o(
            f"--all --preserve-credentials --no-fork --follow-context --user-parent "
            f"--keep-caps --env --join-cgroup {_HELP}"
        ),
        chdir=_o("-w --wd -W --wdns"),
    ),
    "script": _Syntax(
        values=_o(
            "-c -E -I -O -B -T -m -o --command --echo --log-in --log-out --log-io "
            "--log-timing --logging-format --output-limit"
        ),
        optional=_o("-t --timing"),
        flags=_o(f"--append --return --flush --force --quiet {_HELP}"),
        permutes=True,  # util-linux script: `script FILE -qc CMD` works too
        runs=_o("-c --command"),
        writes=_o("-I -O -B -T -t --log-in --log-out --log-io --log-timing --timing"),
    ),
    "fakeroot": _Syntax(
        values=_o("-l -f -i -s -b --lib --faked --fd-base"),
        flags=_o(f"--unknown-is-real {_HELP}"),
        writes=_o("-s"),  # the state it saves on exit
    ),
    "xvfb-run": _Syntax(
        values=_o(
            "-e -f -n -p -s -w --error-file --auth-file --server-num --xauth-protocol "
            "--server-args --wait"
        ),
        flags=_o("--auto-servernum --auto-display --listen-tcp --help"),
        writes=_o("-e -f --error-file --auth-file"),
    ),
    "unbuffer": _Syntax(flags=_o("-p"), style="listed"),
    "catchsegv": _Syntax(flags=_o(_HELP), style="listed"),
    "firejail": _Syntax(style="words", writes=_o("--output --output-stderr")),
    "valgrind": _Syntax(
        style="words",
        writes=_o(
            "--log-file --xml-file --callgrind-out-file --cachegrind-out-file "
            "--massif-out-file --dhat-out-file"
        ),
    ),
    "faketime": _Syntax(
        values=_o("-p --date-prog"),
        flags=_o("-m -f --exclude-monotonic --disable-shm --no-cache -v --version -h --help"),
        style="listed",
        skip=1,
    ),
    "proxychains": _Syntax(values=_o("-f"), style="letter"),
    "proxychains4": _Syntax(values=_o("-f"), style="letter"),
    "torsocks": _Syntax(
        values=_o("-u --user -p --pass -a --address -P --port"),
        flags=_o("-i --isolate -d --debug -q --quiet --shell -h --help --version"),
        style="listed",
    ),
    "sudo": _Syntax(
        values=_o(
            "-a -C -c -D -g -p -R -r -T -t -U -u --close-from --chdir --group --host "
            "--prompt --chroot --role --command-timeout --type --other-user --user"
        ),
        optional=_o("-h --preserve-env"),
        flags=_o(
            f"--askpass --background --bell --edit --set-home --login "
            f"--remove-timestamp --reset-timestamp --list --non-interactive "
            f"--preserve-groups --stdin --shell --validate {_HELP}"
        ),
        chdir=_o("-D --chdir"),
    ),
    "doas": _Syntax(values=_o("-a -C -u")),
    "pkexec": _Syntax(
        values=_o("-u --user"),
        flags=_o("--disable-internal-agent --keep-cwd --help --version"),
        style="listed",
    ),
    "run0": _Syntax(
        values=_o(
            "-u -g -D --user --group --chdir --setenv --property --unit --description "
            "--slice --nice --machine --background --shell-prompt-prefix"
        ),
        flags=_o(f"--no-ask-password --slice-inherit {_HELP}"),
        chdir=_o("-D --chdir"),
    ),
    "runuser": _Syntax(
        values=_o(
            "-u -g -G -s -w -c --user --group --supp-group --shell "
            "--whitelist-environment --command --session-command"
        ),
        flags=_o(f"--login --preserve-environment --pty {_HELP}"),
        runs=_o("-c --command --session-command"),
    ),
    "xargs": _Syntax(
        values=_o(
            "-a -d -E -I -L -n -P -s --arg-file --delimiter --max-args --max-procs "
            "--max-chars --process-slot-var"
        ),
        optional=_o("-e -i -l --eof --replace --max-lines"),
        flags=_o(
            f"--null --interactive --no-run-if-empty --verbose --exit --open-tty "
            f"--show-limits {_HELP}"
        ),
    ),
}
# tmux and screen read their argv in ways of their own (`_tmux`, `_screen`).
TRANSPARENT = (frozenset(_SYNTAX) | {"tmux", "screen"}) - PRIVILEGED - {"xargs"}


@dataclass
class Unwrapped:
    inner: list[Word]  # the command that actually runs; may be empty (`sudo -i`, `env`)
    chdir: Word | None = None  # `env -C DIR` / `sudo -D DIR`
    assigned: list[str] = field(default_factory=list)  # `env NAME=VALUE`
    environment: list[tuple[str, Word]] = field(default_factory=list)  # their values
    split_string: Word | None = None  # `env -S "cmd args"`: a string parsed as a command
    commands_in_variables: list[Word] = field(default_factory=list)  # `env EDITOR=...`
    lookup_only: bool = False  # `command -v rm` names a command without running it
    writes: list[Word] = field(default_factory=list)  # files it writes itself (`strace -o`)


def basename(word: Word) -> str | None:
    return None if word.value is None else PurePosixPath(word.value).name


def unwrap(name: str, args: Sequence[Word]) -> Unwrapped | None:
    """The inner command of wrapper `name` (in TRANSPARENT, PRIVILEGED or xargs); None if
    it cannot be told before run time."""
    if name in ("tmux", "screen"):
        return _tmux(args) if name == "tmux" else _screen(args)
    syntax = _SYNTAX.get(name)
    parsed = None if syntax is None else _parse(syntax, args)
    if syntax is None or parsed is None:
        return None
    result = Unwrapped(inner=parsed.operands[syntax.skip :])
    for option, value in parsed.options:
        _note(result, syntax, option, value)
    result.lookup_only = name == "command" and any(o in ("-v", "-V") for o, _ in parsed.options)
    last = parsed.options[-1] if parsed.options else None
    if last is not None and last[0] in syntax.splits and last[1] is not None:
        result.split_string, result.inner = _env_split(last[1], parsed.operands), []
    elif name == "env":
        inner = _assignments(result, parsed.operands)
        if inner is None:
            return None
        result.inner = inner
    elif name == "script":
        result.writes += parsed.operands  # its typescript; what it runs is `-c`'s
        result.inner = []
    elif name == "flock" and result.inner and result.inner[0].value in ("-c", "--command"):
        if len(result.inner) < 2:
            return None
        result.split_string, result.inner = result.inner[1], []  # a shell runs it
    result.writes = [w for w in result.writes if w.value != "/dev/null"]
    return result


def written_by(name: str, args: Sequence[Word]) -> list[Word]:
    """Files wrapper `name` writes itself besides running its command (`strace -o F`):
    peeled, only the inner command met the rules, and `strace -o ~/.bashrc ls` passed as
    `ls`."""
    unwrapped = unwrap(name, args) if name != "su" else None
    return [] if unwrapped is None else unwrapped.writes


def _note(result: Unwrapped, syntax: _Syntax, option: str, value: Word | None) -> None:
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


def _parse(syntax: _Syntax, args: Sequence[Word]) -> _Parsed | None:
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


def _is_option(syntax: _Syntax, value: str) -> bool:
    if value == "--":
        return syntax.style in ("getopt", "words")
    if syntax.style == "listed":
        return value in syntax.values | syntax.optional | syntax.flags
    return value.startswith("-") and value != "-"


def _read_option(
    syntax: _Syntax, args: Sequence[Word], i: int, options: list[tuple[str, Word | None]]
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
    syntax: _Syntax, args: Sequence[Word], i: int, options: list[tuple[str, Word | None]]
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


def _full_name(syntax: _Syntax, name: str) -> str:
    """getopt_long's long option for `name`: itself, or the one it abbreviates (`--comm`
    for `--command`); an ambiguous abbreviation is an error there, read as a flag here."""
    known = [o for o in syntax.values | syntax.optional | syntax.flags if o.startswith("--")]
    if name in known:
        return name
    matches = sorted(o for o in known if o.startswith(name))
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


_TMUX = _Syntax(values=_o("-c -f -L -S -T"), runs=_o("-c"))
# The tmux commands that start a program: one word is a shell command line, several an
# argv; `-c` is where it runs.
_TMUX_STARTS = {
    "new-session": _Syntax(values=_o("-c -e -f -F -n -s -t -x -y"), chdir=_o("-c")),
    "new-window": _Syntax(values=_o("-c -e -F -n -t"), chdir=_o("-c")),
    "split-window": _Syntax(values=_o("-c -e -F -l -p -t"), chdir=_o("-c")),
}
_TMUX_ALIASES = {"new": "new-session", "neww": "new-window", "splitw": "split-window"}
# tmux commands that neither start a program nor type into one.
_TMUX_QUIET = _o(
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
