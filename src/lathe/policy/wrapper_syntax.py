"""How each wrapper reads its argv, as its own source does: the data `wrappers` follows
to find the command a wrapper runs (`script -qc CMD FILE` is `-q -c CMD` to getopt)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Literal


def options(options: str) -> frozenset[str]:
    return frozenset(options.split())


@dataclass(frozen=True)
class Syntax:
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

    @cached_property
    def known(self) -> frozenset[str]:
        """Every option it knows, short and long."""
        return self.values | self.optional | self.flags

    @cached_property
    def long_names(self) -> tuple[str, ...]:
        """Its long options, for telling what an abbreviation stands for."""
        return tuple(sorted(o for o in self.known if o.startswith("--")))


HELP = "--help --version"
# util-linux su and runuser: options anywhere; the operands are a user and the shell's
# arguments (`wrappers.unwrap`), what runs is -c's; runuser -u's operands are the command.
_SU = Syntax(
    values=options(
        "-g -G -s -w -c --group --supp-group --shell --whitelist-environment "
        "--command --session-command"
    ),
    flags=options(f"--fast --login --preserve-environment --pty {HELP}"),
    runs=options("-c --command --session-command"),
    permutes=True,
)
SYNTAX: dict[str, Syntax] = {
    "env": Syntax(
        values=options("-u --unset -C --chdir -S --split-string -a --argv0"),
        optional=options("--block-signal --default-signal --ignore-signal"),
        flags=options(f"--ignore-environment --null --debug --list-signal-handling {HELP}"),
        splits=options("-S --split-string"),
        chdir=options("-C --chdir"),
    ),
    "nice": Syntax(values=options("-n --adjustment"), flags=options(HELP)),
    "timeout": Syntax(
        values=options("-s --signal -k --kill-after"),
        flags=options(f"--foreground --preserve-status --verbose {HELP}"),
        skip=1,
    ),
    "nohup": Syntax(flags=options(HELP)),
    "command": Syntax(),
    "builtin": Syntax(),
    "exec": Syntax(values=options("-a")),
    "time": Syntax(
        values=options("-f --format -o --output"),
        flags=options(f"--append --portability --quiet --verbose {HELP}"),
        writes=options("-o --output"),
    ),
    "setsid": Syntax(flags=options(f"--ctty --fork --wait {HELP}")),
    "stdbuf": Syntax(values=options("-i -o -e --input --output --error"), flags=options(HELP)),
    "ionice": Syntax(
        values=options("-c --class -n --classdata -p --pid -P --pgid -u --uid"),
        flags=options(f"--ignore {HELP}"),
    ),
    "chronic": Syntax(),
    "coproc": Syntax(),
    "flock": Syntax(
        values=options("-w --wait --timeout -E --conflict-exit-code"),
        flags=options(
            f"--shared --exclusive --unlock --nonblock --nb --close --no-fork --verbose {HELP}"
        ),
        skip=1,
    ),
    "taskset": Syntax(flags=options(f"--all-tasks --pid --cpu-list {HELP}"), skip=1),
    "chrt": Syntax(
        values=options("-T --sched-runtime -P --sched-period -D --sched-deadline"),
        flags=options(
            f"--batch --deadline --fifo --idle --other --rr --reset-on-fork --all-tasks "
            f"--max --pid --verbose {HELP}"
        ),
        skip=1,
    ),
    "prlimit": Syntax(
        values=options("-p --pid -o --output"),
        optional=options(
            "-c -d -e -f -i -l -m -n -q -r -s -t -u -v -x -y --core --data --nice "
            "--fsize --sigpending --memlock --rss --nofile --msgqueue --rtprio --stack "
            "--cpu --nproc --as --locks --rttime"
        ),
        flags=options(f"--noheadings --raw --verbose {HELP}"),
    ),
    "setpriv": Syntax(
        values=options(
            "--ruid --euid --rgid --egid --reuid --regid --groups --inh-caps "
            "--ambient-caps --bounding-set --securebits --pdeathsig --selinux-label "
            "--apparmor-profile --landlock-access --landlock-rule --ptracer"
        ),
        flags=options(
            f"--dump --nnp --no-new-privs --clear-groups --keep-groups --init-groups "
            f"--reset-env {HELP}"
        ),
    ),
    "strace": Syntax(
        values=options(
            "-a -b -e -E -I -o -O -p -P -s -S -u -U -X --abbrev --attach --columns "
            "--const-print-style --decode-pids --detach-on --env --fault --inject "
            "--interruptible --kvm --output --raw --read --signal --status "
            "--string-limit --summary-columns --summary-sort-by "
            "--summary-syscall-overhead --trace --trace-fds --trace-path --user "
            "--verbose --write --argv0 --syscall-limit"
        ),
        optional=options(
            "--absolute-timestamps --daemonize --decode-fds --quiet --silence "
            "--relative-timestamps --strings-in-hex --syscall-times --tips "
            "--timestamps --stack-trace --secontext"
        ),
        flags=options(
            f"--follow-forks --output-separately --output-append-mode --seccomp-bpf "
            f"--summary --summary-only --summary-wall-clock --no-abbrev "
            f"--instruction-pointer --syscall-number --successful-only --failed-only "
            f"--stack-traces --debug --pidns-translation {HELP}"
        ),
        writes=options("-o --output"),
    ),
    "ltrace": Syntax(
        values=options(
            "-a -A -D -e -F -l -n -o -p -s -u -w -x -X --align --config --debug "
            "--indent --library --output --where"
        ),
        flags=options(f"--demangle --no-signals {HELP}"),
        writes=options("-o --output"),
    ),
    "numactl": Syntax(
        values=options(
            "-i -p -c -N -C -m -S -f -o -L -M -I -P -w --interleave --preferred "
            "--cpubind --cpunodebind --physcpubind --membind --shm --file --offset "
            "--length --shmmode --shmid --preferred-many --weighted-interleave"
        ),
        flags=options(
            f"--show --localalloc --hardware --strict --dump --huge --touch --verify "
            f"--all --balancing {HELP}"
        ),
    ),
    "chroot": Syntax(
        values=options("--userspec --groups"), flags=options(f"--skip-chdir {HELP}"), skip=1
    ),
    "unshare": Syntax(
        values=options(
            "-S -G -R -w -l --setuid --setgid --root --wd --load-interp --map-user "
            "--map-group --map-users --map-groups --propagation --setgroups "
            "--monotonic --boottime"
        ),
        optional=options(
            "--mount --uts --ipc --net --pid --user --cgroup --time --kill-child "
            "--mount-proc --mount-binfmt"
        ),
        flags=options(f"--fork --map-root-user --map-current-user --map-auto --keep-caps {HELP}"),
        chdir=options("-w --wd"),
    ),
    "nsenter": Syntax(
        values=options("-t -S -G -W --target --setuid --setgid --wdns"),
        optional=options(
            "-m -u -i -n -p -C -U -T -r -w --mount --uts --ipc --net --pid --cgroup "
            "--user --time --root --wd"
        ),
        flags=options(
            f"--all --preserve-credentials --no-fork --follow-context --user-parent "
            f"--keep-caps --env --join-cgroup {HELP}"
        ),
        chdir=options("-w --wd -W --wdns"),
    ),
    "script": Syntax(
        values=options(
            "-c -E -I -O -B -T -m -o --command --echo --log-in --log-out --log-io "
            "--log-timing --logging-format --output-limit"
        ),
        optional=options("-t --timing"),
        flags=options(f"--append --return --flush --force --quiet {HELP}"),
        permutes=True,  # util-linux script: `script FILE -qc CMD` works too
        runs=options("-c --command"),
        writes=options("-I -O -B -T -t --log-in --log-out --log-io --log-timing --timing"),
    ),
    "fakeroot": Syntax(
        values=options("-l -f -i -s -b --lib --faked --fd-base"),
        flags=options(f"--unknown-is-real {HELP}"),
        writes=options("-s"),  # the state it saves on exit
    ),
    "xvfb-run": Syntax(
        values=options(
            "-e -f -n -p -s -w --error-file --auth-file --server-num --xauth-protocol "
            "--server-args --wait"
        ),
        flags=options("--auto-servernum --auto-display --listen-tcp --help"),
        writes=options("-e -f --error-file --auth-file"),
    ),
    "unbuffer": Syntax(flags=options("-p"), style="listed"),
    "catchsegv": Syntax(flags=options(HELP), style="listed"),
    "firejail": Syntax(style="words", writes=options("--output --output-stderr")),
    "valgrind": Syntax(
        style="words",
        writes=options(
            "--log-file --xml-file --callgrind-out-file --cachegrind-out-file "
            "--massif-out-file --dhat-out-file"
        ),
    ),
    "faketime": Syntax(
        values=options("-p --date-prog"),
        flags=options("-m -f --exclude-monotonic --disable-shm --no-cache -v --version -h --help"),
        style="listed",
        skip=1,
    ),
    "proxychains": Syntax(values=options("-f"), style="letter"),
    "proxychains4": Syntax(values=options("-f"), style="letter"),
    "torsocks": Syntax(
        values=options("-u --user -p --pass -a --address -P --port"),
        flags=options("-i --isolate -d --debug -q --quiet --shell -h --help --version"),
        style="listed",
    ),
    "sudo": Syntax(
        values=options(
            "-a -C -c -D -g -p -R -r -T -t -U -u --close-from --chdir --group --host "
            "--prompt --chroot --role --command-timeout --type --other-user --user"
        ),
        optional=options("-h --preserve-env"),
        flags=options(
            f"--askpass --background --bell --edit --set-home --login "
            f"--remove-timestamp --reset-timestamp --list --non-interactive "
            f"--preserve-groups --stdin --shell --validate {HELP}"
        ),
        chdir=options("-D --chdir"),
    ),
    "doas": Syntax(values=options("-a -C -u")),
    "pkexec": Syntax(
        values=options("-u --user"),
        flags=options("--disable-internal-agent --keep-cwd --help --version"),
        style="listed",
    ),
    "run0": Syntax(
        values=options(
            "-u -g -D --user --group --chdir --setenv --property --unit --description "
            "--slice --nice --machine --background --shell-prompt-prefix"
        ),
        flags=options(f"--no-ask-password --slice-inherit {HELP}"),
        chdir=options("-D --chdir"),
    ),
    "su": _SU,
    "runuser": replace(_SU, values=_SU.values | options("-u --user")),
    "xargs": Syntax(
        values=options(
            "-a -d -E -I -L -n -P -s --arg-file --delimiter --max-args --max-procs "
            "--max-chars --process-slot-var"
        ),
        optional=options("-e -i -l --eof --replace --max-lines"),
        flags=options(
            f"--null --interactive --no-run-if-empty --verbose --exit --open-tty "
            f"--show-limits {HELP}"
        ),
    ),
}
