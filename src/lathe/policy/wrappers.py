"""Commands that run other commands: where the inner command starts in their argv.

`env -i X=1 timeout 5 nice -n 3 rm -rf /` runs `rm -rf /`; the guard must judge the rm,
and rules must see it too. Each function here knows one wrapper's options well enough
to find the inner command; it returns None when the argv is not statically known, so the
caller treats the command as unresolved rather than guessing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

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

# Options that take a separate value, per wrapper (long forms may also use `=`).
_VALUE_OPTIONS: dict[str, frozenset[str]] = {
    "env": frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "timeout": frozenset({"-s", "--signal", "-k", "--kill-after"}),
    "nohup": frozenset(),
    "command": frozenset(),
    "builtin": frozenset(),
    "exec": frozenset({"-a"}),
    "time": frozenset({"-f", "--format", "-o", "--output"}),
    "setsid": frozenset(),
    "stdbuf": frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}),
    "ionice": frozenset({"-c", "--class", "-n", "--classdata", "-p", "--pid"}),
    "chronic": frozenset(),
    "coproc": frozenset(),
    "flock": frozenset({"-w", "--wait", "--timeout", "-E", "--conflict-exit-code"}),
    "taskset": frozenset(),
    "chrt": frozenset({"-T", "--sched-runtime", "-P", "--sched-period", "-D", "--sched-deadline"}),
    "prlimit": frozenset({"-p", "--pid", "-o", "--output"}),  # limits ride on `=`
    "setpriv": frozenset(
        [
            "--ruid",
            "--euid",
            "--rgid",
            "--egid",
            "--reuid",
            "--regid",
            "--groups",
            "--inh-caps",
            "--ambient-caps",
            "--bounding-set",
            "--securebits",
            "--pdeathsig",
            "--selinux-label",
            "--apparmor-profile",
            "--landlock-access",
            "--landlock-rule",
        ]
    ),
    "strace": frozenset(
        [
            "-o",
            "--output",
            "-e",
            "-p",
            "--attach",
            "-P",
            "--trace-path",
            "-s",
            "--string-limit",
            "-u",
            "--user",
            "-E",
            "--env",
            "-a",
            "-I",
            "-b",
            "-X",
            "-O",
            "-S",
            "-U",
        ]
    ),
    "numactl": frozenset(
        [
            "-C",
            "--physcpubind",
            "-N",
            "--cpunodebind",
            "-m",
            "--membind",
            "-i",
            "--interleave",
            "-p",
            "--preferred",
            "-P",
            "--preferred-many",
            "-w",
            "--weighted-interleave",
        ]
    ),
    "chroot": frozenset({"--userspec", "--groups"}),
    "unshare": frozenset(
        [
            "-S",
            "--setuid",
            "-G",
            "--setgid",
            "-R",
            "--root",
            "-w",
            "--wd",
            "--map-user",
            "--map-group",
            "--map-users",
            "--map-groups",
            "--propagation",
            "--setgroups",
            "--monotonic",
            "--boottime",
        ]
    ),
    "script": frozenset(
        [
            "-c",
            "--command",
            "-E",
            "--echo",
            "-I",
            "--log-in",
            "-O",
            "--log-out",
            "-B",
            "--log-io",
            "-T",
            "--log-timing",
            "-m",
            "--logging-format",
            "-o",
            "--output-limit",
        ]
    ),
    "sudo": frozenset(
        [
            "-u",
            "--user",
            "-g",
            "--group",
            "-h",
            "--host",
            "-p",
            "--prompt",
            "-r",
            "--role",
            "-t",
            "--type",
            "-T",
            "--command-timeout",
            "-U",
            "--other-user",
            "-C",
            "--close-from",
            "-D",
            "--chdir",
        ]
    ),
    "doas": frozenset({"-u", "-C"}),
    "pkexec": frozenset({"--user"}),
    "run0": frozenset({"-u", "--user", "-g", "--group", "-D", "--chdir"}),
    "runuser": frozenset({"-u", "--user", "-g", "--group", "-G", "--supp-group"}),
    "xargs": frozenset(
        [
            "-a",
            "--arg-file",
            "-d",
            "--delimiter",
            "-E",
            "-I",
            "-L",
            "--max-lines",
            "-n",
            "--max-args",
            "-P",
            "--max-procs",
            "-s",
            "--max-chars",
            "--process-slot-var",
        ]
    ),
}
TRANSPARENT = frozenset(_VALUE_OPTIONS) - PRIVILEGED - {"xargs"}
_FIRST_OPERAND_IS_NO_COMMAND = frozenset({"timeout", "flock", "taskset", "chrt", "chroot"})
# Options of a wrapper that write a file of their own (strace's log, script's typescript).
_WRITING_OPTIONS = {
    "strace": frozenset({"-o", "--output"}),
    "script": frozenset(
        {"-O", "--log-out", "-B", "--log-io", "-I", "--log-in", "-T", "--log-timing"}
    ),
}


def _writes_a_file(name: str, options: Sequence[Word], rest: Sequence[Word]) -> bool:
    """Whether wrapper `name` writes a file besides running its command (other than
    /dev/null): peeled, only the inner command met the rules, and `strace -o ~/.bashrc
    ls` passed as `ls`."""
    writing = _WRITING_OPTIONS.get(name, frozenset())
    targets: list[str | None] = []
    for index, word in enumerate(options):
        value = word.value or ""
        following = options[index + 1].value if index + 1 < len(options) else None
        if value in writing:  # `-o FILE`, `--output FILE`
            targets.append(following)
        elif value.startswith("--") and value.partition("=")[0] in writing:
            targets.append(value.partition("=")[2])  # `--output=FILE`
        elif value[:2] in writing and len(value) > 2 and not value.startswith("--"):
            targets.append(value[2:])  # `-oFILE`
    if name == "script" and rest:  # its operand is the typescript file
        targets.append(rest[0].value)
    return any(target != "/dev/null" for target in targets)


@dataclass
class Unwrapped:
    inner: list[Word]  # the command that actually runs; may be empty (`sudo -i`, `env`)
    chdir: Word | None = None  # `env -C DIR` / `sudo -D DIR`
    assigned: list[str] = field(default_factory=list)  # `env NAME=VALUE`
    environment: list[tuple[str, Word]] = field(default_factory=list)  # their values
    split_string: Word | None = None  # `env -S "cmd args"`: a string parsed as a command
    commands_in_variables: list[Word] = field(default_factory=list)  # `env EDITOR=...`
    lookup_only: bool = False  # `command -v rm` names a command without running it


def basename(word: Word) -> str | None:
    return None if word.value is None else PurePosixPath(word.value).name


def unwrap(name: str, args: Sequence[Word]) -> Unwrapped | None:
    """The inner command of wrapper `name` (a key of the option table); None if unknown."""
    takes_value = _VALUE_OPTIONS[name]
    result = Unwrapped(inner=[])
    i = 0
    while i < len(args):
        value = args[i].value
        if value is None:
            return None
        if value == "--":
            i += 1
            break
        if name == "env" and "=" in value and not value.startswith("-"):
            variable, _, command = value.partition("=")
            result.assigned.append(variable)
            result.environment.append((variable, Word(args[i].text, command)))
            if variable in COMMAND_VARIABLES:
                result.commands_in_variables.append(Word(args[i].text, command))
        elif name == "nice" and value[:1] == "-" and value[1:].isdigit():
            pass  # `nice -10 cmd`
        elif value.startswith("-") and len(value) > 1:
            option, operand = _split_option(value, takes_value)
            if option in takes_value and operand is None:
                i += 1
                if i >= len(args):
                    return None
                operand = args[i]
            _note_option(result, name, option, operand)
            if name == "command" and option in ("-v", "-V"):
                result.lookup_only = True
        else:
            break
        i += 1
    rest = list(args[i:])
    if _writes_a_file(name, args[:i], rest):
        return None  # what it writes is judged nowhere: as a command not known statically
    if name in _FIRST_OPERAND_IS_NO_COMMAND and rest:
        rest = rest[1:]  # the duration, the lock file, the CPU mask, the new root...
    if name == "script":
        rest = []  # its operand is the typescript file; what runs is `-c`'s
    if name == "flock" and rest and rest[0].value in ("-c", "--command"):
        if len(rest) < 2:
            return None
        result.split_string, rest = rest[1], []  # `flock FILE -c 'cmd'`: a shell runs it
    result.inner = rest
    return result


def _split_option(value: str, takes_value: frozenset[str]) -> tuple[str, Word | None]:
    """`--opt=v` and `-ov` carry their value; `--opt v` and `-o v` leave it to the caller."""
    if value.startswith("--"):
        option, eq, inline = value.partition("=")
        return option, Word(value, inline) if eq else None
    option = value[:2]
    if option in takes_value and len(value) > 2:
        return option, Word(value, value[2:])
    return option, None


def _note_option(result: Unwrapped, name: str, option: str, operand: Word | None) -> None:
    # sudo's -C is --close-from, not a directory.
    if name in ("env", "sudo", "run0") and option in ("-C", "--chdir", "-D"):
        result.chdir = operand if (name, option) != ("sudo", "-C") else result.chdir
    if (name, option) in (("env", "-S"), ("env", "--split-string"), ("script", "-c"),
                          ("script", "--command")):  # fmt: skip
        result.split_string = operand


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
