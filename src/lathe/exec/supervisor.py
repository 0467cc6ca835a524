"""The supervisor: runs one command so that nothing it starts outlives it, its timeout or
lathe. Run by file path, never imported by lathe:

    python -I -S supervisor.py parent=PID status=FD timeout=S grace=S [lc_ctype=V]
                               psutil=DIR -- ARGV...

Only the standard library is loaded at start (`-S` skips site-packages and their .pth
files), so a command costs one small interpreter start; psutil is imported, from DIR,
only when there is something left to stop.

It makes itself a child subreaper, so every descendant — double-forked, `setsid`,
`nohup` — re-parents to it instead of to init, and asks for SIGHUP when lathe (PID)
dies, checking right after that lathe is still its parent. Then it starts ARGV with
lathe's environment (`lc_ctype` undoes the interpreter's C-locale coercion: absent means
the command had no LC_CTYPE) and waits for the first of:
- the command exits: whatever it left running is stopped ("exited");
- TIMEOUT seconds pass ("timeout"), or a SIGTERM or SIGINT comes (from anyone, e.g. a
  service manager stopping everything; "stopped"): the whole tree is stopped;
- lathe itself sends SIGUSR1, from a cancelled run: the whole tree is SIGKILLed at
  once ("killed"), also when it comes during the grace of another stop;
- lathe dies, seen as a new parent ("orphaned"): the whole tree is stopped.
Stopping sends SIGTERM to every descendant, gives them GRACE seconds, then SIGKILLs what
is left, again and again until no child remains: a dying tree may still fork, and for a
subreaper no child means no descendant.

Last it writes one line to the status fd (`status=-`: none) — `done CODE STOPPED
REASON`, where STOPPED counts the processes still running when the command exited, or
`error MESSAGE` (the
OS's reason) when ARGV cannot start — and exits with CODE: the command's status as a
shell reports it (128+N for a death by signal N), 127 when it could not start.
"""

# The C module under `signal`: the same functions, without the enum import that `signal`
# adds (about 5 ms, a fifth of the supervisor's start).
import _signal as signal
import ctypes
import os
import sys
import time

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_WAKE = {signal.SIGCHLD, signal.SIGHUP, signal.SIGTERM, signal.SIGINT, signal.SIGUSR1}
_HURRY = {signal.SIGUSR1}
_PARENT_POLL_S = 0.5  # PR_SET_PDEATHSIG follows the thread that started us, so also look
_POLL_S = 0.01
_GIVE_UP_S = 5.0  # a process stuck in the kernel (D state) may not die at once


class _Tree:
    """The command and every process below it; reaping records the command's status."""

    def __init__(self, command: int) -> None:
        self.command = command
        self.status: int | None = None

    def has_children(self) -> bool:
        """Reap what has exited; whether any child (so any descendant) is left."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return False
            if pid == 0:
                return True
            if pid == self.command:
                code = os.waitstatus_to_exitcode(status)
                self.status = 128 - code if code < 0 else code

    def stop(self, grace: float, psutil_dir: str) -> int:
        """Stop every descendant; how many were running (psutil is loaded only if any)."""
        if not self.has_children():
            return 0
        sys.path.append(psutil_dir)
        import psutil

        me = psutil.Process()
        running = {p.pid for p in me.children(recursive=True) if _running(p, psutil)}
        if grace > 0:
            _signal_all(me, signal.SIGTERM, psutil)
            deadline = time.monotonic() + grace
            while self.has_children() and time.monotonic() < deadline:
                if signal.sigtimedwait(_HURRY, _POLL_S):  # a cancellation: no more grace
                    break
        deadline = time.monotonic() + _GIVE_UP_S
        while self.has_children() and time.monotonic() < deadline:
            _signal_all(me, signal.SIGKILL, psutil)
            time.sleep(_POLL_S)
        return len(running)


def _running(process, psutil) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _signal_all(me, sig: int, psutil) -> None:
    for process in me.children(recursive=True):
        try:
            process.send_signal(sig)
        except psutil.Error:  # gone already, or its pid reused by a stranger
            continue


def _become_subreaper() -> None:
    libc = ctypes.CDLL(None)
    for option, value in ((_PR_SET_CHILD_SUBREAPER, 1), (_PR_SET_PDEATHSIG, signal.SIGHUP)):
        libc.prctl(option, ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0), 0)


def _wait_for_end(tree: _Tree, parent: int, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while True:
        tree.has_children()
        if tree.status is not None:
            return "exited"
        if os.getppid() != parent:
            return "orphaned"
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return "timeout"
        woken = signal.sigtimedwait(_WAKE, min(remaining, _PARENT_POLL_S))
        if woken is None or woken.si_signo in (signal.SIGCHLD, signal.SIGHUP):
            continue
        if woken.si_signo != signal.SIGUSR1:
            return "stopped"
        if woken.si_pid == parent:  # a command's own `kill -USR1 0` must not end it
            return "killed"


def _report(fd: int | None, line: str) -> None:
    if fd is None:  # `status=-`: nobody reads one (an MCP server's supervisor)
        return
    try:  # noqa: SIM105 -- contextlib would be one more import at every start
        os.write(fd, line.encode("utf-8", "replace") + b"\n")
    except OSError:  # lathe is gone: nobody is left to read it
        pass


def main(args: list[str]) -> int:
    split = args.index("--")
    options = dict(item.split("=", 1) for item in args[:split])
    command = args[split + 1 :]
    parent = int(options["parent"])
    status_fd = None if options["status"] == "-" else int(options["status"])
    if status_fd is not None:
        os.set_inheritable(status_fd, False)
    signal.pthread_sigmask(signal.SIG_BLOCK, _WAKE)
    _become_subreaper()
    if os.getppid() != parent:  # lathe died before we could ask to hear about it
        return 137
    env = dict(os.environ)
    env.pop("LC_CTYPE", None)
    if "lc_ctype" in options:
        env["LC_CTYPE"] = options["lc_ctype"]
    try:
        child = os.posix_spawnp(
            command[0], command, env, setsigmask=(), setsigdef=(signal.SIGPIPE, signal.SIGXFSZ)
        )
    except OSError as exc:
        why = exc.strerror or str(exc)
        _report(status_fd, f"error {why}")
        os.write(2, f"lathe: cannot start {command[0]!r}: {why}\n".encode())
        return 127
    tree = _Tree(child)
    reason = _wait_for_end(tree, parent, float(options["timeout"]))
    grace = 0.0 if reason == "killed" else float(options["grace"])
    stopped = tree.stop(grace, options["psutil"])
    code = 137 if tree.status is None else tree.status
    _report(status_fd, f"done {code} {stopped if reason == 'exited' else 0} {reason}")
    return code


if __name__ == "__main__":
    os._exit(main(sys.argv[1:]))
