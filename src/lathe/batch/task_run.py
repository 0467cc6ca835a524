"""One task, end to end: a fresh copy of its repository, `lathe run --json` in it, then
the task's verify command — lathe's claim is recorded, never trusted.

The verify command runs in a second copy of the agent's work as its diff shows it (no
caches: a stale .pyc once ran a fix the source did not hold) in which the task's
protected files (its tests) and what makes any check pass whatever the code (a
`pytest.py` shadowing the runner, a `.pth`) are put back as the source has them, so
changing the check never counts as a fix. Files the verify command names (the
`check.py` of `python check.py`, or the `calc.py` of `python calc.py`: no name tells a
check from the code under test) are not put back; the result names those the agent
changed (`check_changed`). The source is never written.
Everything here is a plain function of its arguments, returning a `TaskResult`: a Ray
worker runs it as the local pool does.

Statuses: `solved` (the verify command passed), `unsolved` (it did not: lathe gave up,
stopped, or claimed a success the check refutes), `over_limit` (lathe was stopped at the
task's wall-time limit), `passed_before` (the check passed before the agent changed
anything, so it may not test the task: not a measurement, left out of the solve rate),
`error` (not the agent's doing: the copy, the setup command or lathe itself failed —
`error_kind` "infrastructure" — or the model endpoint did — "provider"). `lathe batch
--retry-errors` runs the `error` ones again.
"""

from __future__ import annotations

import contextlib
import difflib
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lathe.batch.processes import Stopped, run_command, run_process, stopped
from lathe.batch.tasks import BatchTask, is_run_folder, shown

_TAIL = 2_000
# What the diff leaves out, and so what the check must not see of the agent's: caches
# (a .pyc compiled from a fix and stamped as the source put back ran the fix with an
# empty diff) are left out of the check's copy; .lathe is the set-up tree's there, and
# .git the work's (a task may be about a commit) but for what makes git run code.
_CACHES = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})
_AS_SET_UP = frozenset({".git", ".lathe"})
_NOISE = _CACHES | _AS_SET_UP
# In a git folder (and each submodule's or worktree's in it), what runs code when the
# check runs git: `core.fsmonitor`, filters, aliases, hooks and what selects filters.
_GIT_RUNS = ("config", "config.worktree", "hooks", "info/attributes")
_BYTECODE = (".pyc", ".pyo")
_GRACE_S = 60.0  # past the wall limit lathe enforces itself, the harness kills it
_GIT_TIMEOUT_S = 600.0  # a clone or checkout of a task's repository
_SETUP_TIMEOUT_S = 900.0


@dataclass(frozen=True)
class RunSettings:
    """How every task of a batch is run."""

    model: str | None = None
    base_url: str | None = None
    max_turns: int | None = None
    attempts: int | None = None
    max_cost: str | None = None  # per task, as `lathe run --max-cost` takes it
    max_wall_s: float | None = None  # per task
    lathe_args: tuple[str, ...] = ()
    keep_workspace: bool = False
    # The batch's run folder, which a task's repository may hold: left out of its copy,
    # or a later task's copy would hold the earlier tasks' diffs.
    run_folder: str | None = None


@dataclass
class TaskResult:
    id: str
    solved: bool = False
    status: str = "error"
    lathe_status: str | None = None
    error_kind: str | None = None  # "infrastructure" | "provider" | None
    reason: str = ""
    attempts: int = 0
    turns: int = 0
    tokens: dict[str, int] = field(default_factory=lambda: {"input": 0, "output": 0})
    cost_usd: float | None = None
    wall_s: float = 0.0
    verify_exit: int | None = None
    verify_s: float = 0.0
    verify_tail: str = ""
    false_verified: bool = False  # lathe said verified; the task's own check disagrees
    # The files the verify command names (`agent.check_files.named_by`: its script, a
    # Makefile) that the agent changed and the check ran changed: not put back, as they
    # may be the fix (`python calc.py`), but said.
    check_changed: list[str] = field(default_factory=list)
    # lathe's check before the agent changed anything passed (status `passed_before`);
    # None: it ran none (or the line is older than this field).
    baseline_passed: bool | None = None
    diff_stat: dict[str, int] = field(default_factory=lambda: {"files": 0, "added": 0,
                                                                "removed": 0})  # fmt: skip
    session_id: str | None = None
    session_file: str | None = None
    workspace: str | None = None  # kept only with --keep
    kind: str | None = None
    tags: list[str] = field(default_factory=list)
    host: str = ""
    started: str = ""
    finished: str = ""
    # Carried back to the driver, which writes them beside the results (not in the line).
    diff: str = ""
    transcript: str = ""

    def line(self) -> dict[str, Any]:
        record = asdict(self)
        del record["diff"], record["transcript"]
        return record


def run_task(task: BatchTask, settings: RunSettings, source: bytes | None = None) -> TaskResult:
    """Run `task`. `source`: its repository as a tar archive (how Ray ships it to a
    worker); None reads `task.repo` where it is."""
    result = TaskResult(id=task.id, kind=task.kind, tags=list(task.tags), host=socket.gethostname())
    result.started = _now()
    remove_orphaned_copies()
    base = _new_task_folder(keep=settings.keep_workspace)
    pristine, work = base / "source", base / "work"
    began = time.monotonic()
    try:
        try:
            _materialize(task, settings, source, base / "given")
            _make_writable(base / "given")  # read-only task folders: else not removable
            _copy(base / "given", work)
            if task.setup:
                _setup(task, settings, work, base / "spill")
            # The baseline is the set-up tree: what setup made is not the agent's change.
            _copy(work, pristine)
        except (OSError, subprocess.SubprocessError, _Failed) as exc:
            result.error_kind, result.reason = "infrastructure", f"preparing the copy: {exc}"
            return result
        except Stopped:
            return result
        try:
            _run_lathe(task, settings, work, result)
            if stopped():  # killed by the stop, not finished: nothing to score
                return result
            if result.status != "error" or result.error_kind == "provider":
                _verify(task, settings, pristine, work, result)
            result.diff, result.diff_stat = tree_diff(pristine, work)
        except Stopped:  # during the scoring: not recorded, it runs next time
            return result
        except Exception as exc:  # whatever the work left behind, the task gets its line
            result.status, result.solved, result.error_kind = "error", False, "infrastructure"
            result.reason = f"scoring the task failed: {type(exc).__name__}: {exc}"
        result.transcript = _transcript(result.session_id)
        if settings.keep_workspace:
            result.workspace = str(work)
        return result
    finally:
        result.wall_s = round(time.monotonic() - began, 3)
        result.finished = _now()
        if not settings.keep_workspace:
            _remove_task_folder(base)
        else:  # the user's now: no later batch may take it for a killed one's leftover
            (base / _OWNER_FILE).unlink(missing_ok=True)


_TASK_FOLDER_PREFIX = "lathe-task-"
_OWNER_FILE = "owner"
_KEPT_MARK = "keep"


def _new_task_folder(*, keep: bool) -> Path:
    """A temporary folder for one task's copies, marked with the process that made it,
    so a later batch can tell it was left by one killed with -9 (`remove_orphaned_copies`),
    and with `keep`: the user's (`--keep`) even then."""
    base = Path(tempfile.mkdtemp(prefix=_TASK_FOLDER_PREFIX))
    owner = _process_identity(os.getpid()) or ""
    (base / _OWNER_FILE).write_text(f"{owner} {_KEPT_MARK}" if keep and owner else owner)
    return base


def remove_orphaned_copies() -> int:
    """Remove the task folders in the temporary folder whose process is gone (a batch or
    a Ray worker killed with -9 cannot clean up after itself); how many. A folder with no
    owner mark, one kept for the user (`--keep`: its batch killed with -9 had lost it and
    its checkpoints to the next batch), or one whose owner may still run, is left alone."""
    removed = 0
    for folder in Path(tempfile.gettempdir()).glob(f"{_TASK_FOLDER_PREFIX}*"):
        try:
            mark = (folder / _OWNER_FILE).read_text().split()
        except OSError:
            continue
        if len(mark) < 2 or not mark[0].isdigit() or _KEPT_MARK in mark[2:]:
            continue
        if _process_identity(int(mark[0])) == " ".join(mark[:2]):
            continue
        with contextlib.suppress(OSError):
            _make_writable(folder)
        _remove_task_folder(folder)
        removed += not folder.exists()
    return removed


def _remove_task_folder(base: Path) -> None:
    """A task's folder, and what lathe's run there keeps for its workspace under
    LATHE_HOME, which no later run in that (temporary) path ever takes up: the
    checkpoints (a copy of every file, its `.env` too), the locks of the workspace and
    of its folder, and what its children left (their folders, at any depth, after a
    stop or a kill at the wall limit, and their patches), saved for nobody: the copy they
    were of is gone. Its session stays: the result names it."""
    from lathe.checkpoint.store import store_root
    from lathe.home import lathe_home, project_slug
    from lathe.workspace_lock import lock_file

    home, work = lathe_home(), base / "work"
    children = _children_folders(work, home)
    shutil.rmtree(base, ignore_errors=True)
    # The family's patches folder (`ui.children._Family.patches`).
    for folder in (store_root(work, home), *children, home / "patches" / project_slug(work)):
        shutil.rmtree(folder, ignore_errors=True)
    for locked in (base, work):  # their lathe has ended: no one holds or waits on them
        with contextlib.suppress(OSError):
            lock_file(locked).unlink(missing_ok=True)


def _children_folders(workspace: Path, home: Path) -> list[Path]:
    """The folder the children of a run in `workspace` were made in, and those of their
    own children, at any depth."""
    from lathe.subagents.worktree import worktrees_root

    root = worktrees_root(workspace, home)
    found = [root]
    with contextlib.suppress(OSError):
        for entry in root.iterdir():
            if not entry.name.startswith(".") and entry.is_dir() and not entry.is_symlink():
                found += _children_folders(entry, home)
    return found


def _process_identity(pid: int) -> str | None:
    """`pid` and its start time, which a reused pid does not share; None when no such
    process runs."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return f"{pid} {fields[19]}"  # starttime, field 22 of proc(5)


def _copy(
    source: Path, target: Path, leave_out: str | None = None, *, diffed: bool = False
) -> None:
    """A byte-exact copy, links kept as links; pipes, sockets and devices left out, and
    the folder `leave_out` (an absolute path) and any other batch's run folder. `diffed`:
    only what the diff compares (`_unseen`: no caches, no .git or .lathe)."""

    def special(folder: str, names: list[str]) -> set[str]:
        paths = {name: Path(folder, name) for name in names}
        return {
            name
            for name, path in paths.items()
            if _special(path) or _left_out(path, leave_out) or (diffed and _unseen(path))
        }

    shutil.copytree(source, target, symlinks=True, ignore=special)


def _unseen(path: Path) -> bool:
    """Whether the diff leaves `path` out: a cache or .git folder (a link to one too, as
    `os.walk` counts it), compiled bytecode."""
    if path.is_dir():
        return path.name in _NOISE
    return path.name.endswith(_BYTECODE)


def _scoring_copy(pristine: Path, work: Path, checked: Path) -> None:
    """The copy the task's check runs in: the work as the diff shows it. Caches are left
    out (the check makes its own). Each .git folder is the work's, as the agent left it
    (a check reading its commit had only the set-up tree's, and always failed), but its
    configuration, hooks and attributes are the set-up tree's (`_GIT_RUNS`); each .lathe
    folder, and a .git the work has as no plain folder, is the set-up tree's."""
    _copy(work, checked, diffed=True)
    real = os.path.realpath(checked)
    for relative in sorted(_kept_apart(pristine) | _kept_apart(work)):
        target, ours, original = checked / relative, work / relative, pristine / relative
        # Never through a link the agent put in a folder's place; not in one it removed.
        if os.path.realpath(target.parent) != os.path.join(real, *relative.parts[:-1]):
            continue
        if not target.parent.is_dir():
            continue
        if os.path.lexists(target):  # the agent's file of that name (a gitdir pointer)
            _remove(target)
        if relative.name == ".git" and ours.is_dir() and not ours.is_symlink():
            _copy(ours, target)
            for piece in _git_runs(original) | _git_runs(target):
                _put_back(original / piece, target, piece)
        else:
            _place(original, target)


def _kept_apart(root: Path) -> set[Path]:
    """Where `root` has a .git or .lathe (relative), of any kind, outside caches."""
    found = set()
    for folder, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            if name in _AS_SET_UP:
                found.add(Path(folder, name).relative_to(root))
        dirs[:] = [d for d in dirs if d not in _NOISE]
    return found


def _git_runs(git: Path) -> set[Path]:
    """What of the git folder `git` makes git run code (`_GIT_RUNS`), relative: its own,
    and those of the submodules' and worktrees' git folders in it (a folder of
    `modules/` or `worktrees/` holding a HEAD)."""
    if git.is_symlink() or not git.is_dir():
        return set()
    folders = [Path()]
    for below in ("modules", "worktrees"):
        for folder, _, files in os.walk(git / below):
            if "HEAD" in files:
                folders.append(Path(folder).relative_to(git))
    return {folder / piece for folder in folders for piece in _GIT_RUNS}


def _put_back(original: Path, root: Path, relative: Path) -> None:
    """Make `root / relative` what `original` is (absent when it is absent), never
    through a link or a file the work has in the place of one of its folders."""
    folder = root
    for part in relative.parts[:-1]:
        folder = folder / part
        if folder.is_symlink() or (os.path.lexists(folder) and not folder.is_dir()):
            _remove(folder)
        if not os.path.lexists(folder):
            if not os.path.lexists(original):
                return  # nothing there, nothing to put
            folder.mkdir()
    target = root / relative
    if os.path.lexists(target):
        _remove(target)
    _place(original, target)


def _place(original: Path, target: Path) -> None:
    """A copy of `original` (a file, folder or link, never followed) at `target`, which
    is not there; nothing when there is no `original`."""
    if original.is_symlink():
        os.symlink(os.readlink(original), target)
    elif original.is_dir():
        _copy(original, target)
    elif original.is_file():
        shutil.copy2(original, target)


def _special(path: Path) -> bool:
    return not (path.is_symlink() or path.is_dir() or path.is_file())


def _left_out(path: Path, leave_out: str | None) -> bool:
    """The batch's own run folder (`leave_out`), or an earlier batch's: its diffs are
    other tasks' answers."""
    return str(path) == leave_out or (
        not path.is_symlink() and path.is_dir() and is_run_folder(path)
    )


def pack(repo: str, leave_out: str | None = None) -> bytes:
    """A repository folder as a tar archive (for Ray's object store), without the
    folder `leave_out` (an absolute path) or any other batch's run folder."""
    buffer = io.BytesIO()
    root = Path(repo)

    def kept(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        return None if info.isdir() and _left_out(root / info.name, leave_out) else info

    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(repo, arcname=".", filter=kept)
    return buffer.getvalue()


class _Failed(Exception):
    pass


def _materialize(task: BatchTask, settings: RunSettings, source: bytes | None, into: Path) -> None:
    if source is not None:
        into.mkdir()
        with tarfile.open(fileobj=io.BytesIO(source), mode="r:gz") as archive:
            archive.extractall(into, filter="tar")
    elif task.is_git:
        _git("clone", "--quiet", task.repo, str(into), cwd=into.parent)
        if task.ref:
            _git("checkout", "--quiet", task.ref, cwd=into)
    else:
        _copy(Path(task.repo), into, settings.run_folder)  # bytes as they are: CRLF stays


def _git(*args: str, cwd: Path) -> None:
    """git, run as lathe is (`run_process`): a stopped batch kills it."""
    code, _, err, killed = run_process(["git", *args], cwd, _GIT_TIMEOUT_S)
    if killed:
        raise _Failed(f"git {args[0]} took longer than {_GIT_TIMEOUT_S:g} s")
    if code != 0:
        raise _Failed(f"git {args[0]}: {err.strip()[-500:]}")


def _make_writable(root: Path) -> None:
    """Task folders may be read-only; the agent's copy must not be."""
    for folder, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = Path(folder, name)
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | 0o200)
    root.chmod(root.stat().st_mode | 0o200)


def _setup(task: BatchTask, settings: RunSettings, work: Path, spill: Path) -> None:
    """The task's setup command in `work`, run as lathe runs commands unsandboxed
    (`task_commands.setup_executor`)."""
    from lathe.batch.task_commands import setup_executor
    from lathe.errors import LatheError

    assert task.setup is not None
    try:
        executor = setup_executor(settings, work)
        code, output = run_command(executor, task.setup, work, _SETUP_TIMEOUT_S, spill)
    except LatheError as exc:
        raise _Failed(f"the setup command could not start: {exc}") from None
    if code is None:
        raise _Failed(f"the setup command took longer than {_SETUP_TIMEOUT_S:g} s")
    if code != 0:
        raise _Failed(f"the setup command exited {code}: {_masked(output)[-500:]}")


@dataclass(frozen=True)
class _Given:
    """What the options of one task's `lathe run` are made of."""

    settings: RunSettings
    work: Path
    verify: str
    timeout: float


@dataclass(frozen=True)
class BatchOption:
    """An option the batch gives every task's `lathe run` (`run_arguments`). A
    `--lathe-arg` may give it neither as that option nor as its config `key` (`-c` wins
    over every flag: `-c agent.max_turns=1` beat --max-turns, and `-c model=other` ran
    another model than the manifest records); `instead` says what to do instead."""

    option: str  # as `lathe run` takes it; "-c" for a config key given alone
    key: str | None  # the config key it sets
    instead: str
    value: Callable[[_Given], object]  # None: not given; True: a flag with no value

    def words(self, given: _Given) -> list[str]:
        value = self.value(given)
        if value is None:
            return []
        if value is True:
            return [self.option]
        return [self.option, f"{self.key}={value}" if self.option == "-c" else str(value)]


def _wall(given: _Given) -> str | None:
    return f"{given.settings.max_wall_s:g}s" if given.settings.max_wall_s else None


_LEAVE_OUT = "; leave it out"
BATCH_OPTIONS = (
    BatchOption("--json", None, "the batch reads each task's events through it" + _LEAVE_OUT,
                lambda given: True),
    BatchOption("-C", None, "each task works in a copy of its own repository" + _LEAVE_OUT,
                lambda given: given.work),
    BatchOption("--verify", "agent.verify", "each task's own verify command is its check"
                + _LEAVE_OUT, lambda given: given.verify),
    BatchOption("--model", "model", "give lathe batch --model instead",
                lambda given: given.settings.model),
    BatchOption("--base-url", "base_url", "give lathe batch --base-url instead",
                lambda given: given.settings.base_url),
    BatchOption("--max-turns", "agent.max_turns", "give lathe batch --max-turns instead",
                lambda given: given.settings.max_turns),
    BatchOption("--attempts", "agent.attempts", "give lathe batch --attempts instead",
                lambda given: given.settings.attempts),
    BatchOption("--max-cost", "agent.max_cost_usd", "give lathe batch --max-cost instead",
                lambda given: given.settings.max_cost),
    BatchOption("--timeout", "agent.timeout", "give lathe batch --max-wall instead", _wall),
    # lathe's own check gets the task's time limit too (its default is 15 minutes).
    BatchOption("-c", "agent.verify_timeout_s", "each task's check gets the task's `timeout`"
                + _LEAVE_OUT, lambda given: f"{given.timeout:g}"),
    # No memory tools: a write would outlive the task, and recall would search the user's
    # sessions, this batch's other tasks and earlier runs of this one among them.
    BatchOption("-c", "memory.tools", "no task may read or write the memory" + _LEAVE_OUT,
                lambda given: "false"),
)  # fmt: skip
"""Every option the batch gives each task's `lathe run`, in its order there."""


def run_arguments(settings: RunSettings, work: Path, verify: str, timeout: float) -> list[str]:
    """The arguments of the `lathe run` (after `run`) that works on a task in `work`,
    the task itself on its standard input: `BATCH_OPTIONS`, then the `--lathe-arg`s."""
    given = _Given(settings, work, verify, timeout)
    return [*(word for option in BATCH_OPTIONS for word in option.words(given)),
            *settings.lathe_args]  # fmt: skip


def task_environment(work: Path) -> dict[str, str]:
    """The environment of the `lathe run` of a task copied to `work`: this process's
    (its key, its LATHE_HOME for the session), the memory folder an empty one of the
    task's own, so the user's memory is neither read into its prompt nor written."""
    from lathe.memory import MEMORY_DIR_VARIABLE

    return {**os.environ, MEMORY_DIR_VARIABLE: str(work.parent / "memory")}


def _run_lathe(task: BatchTask, settings: RunSettings, work: Path, result: TaskResult) -> None:
    arguments = run_arguments(settings, work, task.verify, task.timeout)
    argv = [sys.executable, "-m", "lathe", "run", *arguments]
    limit = (settings.max_wall_s or 3600.0) + _GRACE_S
    env = task_environment(work)
    code, out, err, killed = run_process(argv, work, limit, stdin=task.task, env=env)
    _read_events(out, result)
    if killed:
        result.status, result.error_kind = "over_limit", None
        result.reason = f"stopped at the task's wall-time limit ({limit - _GRACE_S:g} s)"
    elif result.lathe_status == "out_of_budget":
        result.status = "over_limit"  # solved all the same if the check passes
    elif result.lathe_status == "interrupted":
        result.error_kind = "infrastructure"
        result.reason = "lathe was stopped from outside (a signal) before it finished"
    elif result.lathe_status is None:
        result.error_kind = "infrastructure"
        result.reason = f"lathe exited {code} without finishing: {_masked(err.strip())[-_TAIL:]}"
    elif result.lathe_status == "provider_error":
        result.error_kind = "provider"
    else:
        result.status = "unsolved"  # until the verify command says otherwise


def _read_events(stdout: str, result: TaskResult) -> None:
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        match event.get("type"):
            case "run_started":
                result.session_id = event.get("session_id")
                result.attempts += 1
            case "verify_finished" if event.get("baseline") and result.baseline_passed is None:
                result.baseline_passed = bool(event.get("passed"))
            case "run_finished":
                usage = event.get("usage") or {}
                result.lathe_status = event.get("status")
                result.turns += int(event.get("turns") or 0)
                result.tokens["input"] += int(usage.get("input_tokens") or 0) + int(
                    usage.get("cache_read_tokens") or 0
                )
                result.tokens["output"] += int(usage.get("output_tokens") or 0)
                if event.get("cost_usd") is not None:
                    result.cost_usd = (result.cost_usd or 0.0) + float(event["cost_usd"])
                result.reason = event.get("reason") or ""
                error = event.get("error") or {}
                if error.get("message"):
                    result.reason = f"{error.get('kind')}: {error['message']}"
    if result.session_id:
        result.session_file = _session_file(result.session_id)


def _verify(
    task: BatchTask, settings: RunSettings, pristine: Path, work: Path, result: TaskResult
) -> None:
    """The task's verify command in a copy of the work whose protected files are the
    source's, in the executor lathe's run had (`task_commands.verify_executor`)."""
    from lathe.agent.check_files import named_by
    from lathe.batch.task_commands import verify_executor

    checked, spill = work.parent / "checked", work.parent / "spill"
    _scoring_copy(pristine, work, checked)
    restore_protected(pristine, checked, task.protected)
    named = {*named_by(task.verify, pristine), *named_by(task.verify, checked)}
    result.check_changed = sorted(
        relative for relative in named if _bytes(pristine / relative) != _bytes(checked / relative)
    )
    executor = verify_executor(settings, pristine, checked)
    started = time.monotonic()
    code, output = run_command(executor, task.verify, checked, task.timeout, spill)
    result.verify_s = round(time.monotonic() - started, 3)
    result.verify_exit = code
    result.verify_tail = _masked(output)[-_TAIL:]
    if code is None:
        note = f"(the verify command timed out after {task.timeout:g} s)\n"
        result.verify_tail = note + result.verify_tail
    # Solved only when the agent's run ended on its own (or at its budget) and the check
    # passes: a provider error's passing check is recorded, not counted.
    result.false_verified = result.lathe_status == "verified" and code != 0
    if result.status not in ("unsolved", "over_limit"):
        return
    if result.baseline_passed:  # whatever the agent did, the check does not measure it
        result.status = "passed_before"
        result.reason = (
            "the task's check passed before the agent changed anything, so it may not test "
            "the task: not counted; fix the task's check or its code"
        )
    elif code == 0:
        result.solved, result.status = True, "solved"


# Put back whatever the task protects: what makes any check pass whatever the code
# (`check_files.RUNNER_SHADOW`; a `pytest.py` printing "1 passed" counted solved). Not
# all `agent.check_files` counts as the check's: its test*.py modules, package.json,
# fixtures/, a root pyproject.toml... are often the fix, and putting them back undid it.


def restore_protected(source: Path, copy: Path, patterns: tuple[str, ...]) -> list[str]:
    """Make every file of `copy` matching `patterns` (gitignore syntax), and every one
    that makes any check pass whatever the code (`check_files.RUNNER_SHADOW`: a module
    shadowing the test runner, a `.pth`), what it is in `source`: changed ones rewritten, added
    ones removed, removed ones put back. The paths put right, relative."""
    from lathe.agent.check_files import RUNNER_SHADOW
    from lathe.patterns import compiled

    matcher = compiled(tuple(patterns))

    def protected(relative: str) -> bool:
        posix = Path(relative).as_posix()
        return matcher.first_match(relative) is not None or bool(RUNNER_SHADOW.search(posix))

    restored = []
    for relative in sorted(_files(source) | _files(copy)):
        if not protected(relative):
            continue
        original, current = source / relative, copy / relative
        if not current.parent.resolve().is_relative_to(copy.resolve()):
            current = copy / Path(relative).parts[0]  # a link leading out: never follow it
        elif _bytes(original) == _bytes(current) and not current.is_symlink():
            continue
        _remove(current)
        current = copy / relative
        if original.is_file() or original.is_symlink():
            current.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(original, current, follow_symlinks=False)
        restored.append(relative)
    return restored


def _remove(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path)


def tree_diff(before: Path, after: Path) -> tuple[str, dict[str, int]]:
    """A unified diff of two folders (build caches left out) and its size."""
    chunks: list[str] = []
    stat = {"files": 0, "added": 0, "removed": 0}
    for relative in sorted(_files(before) | _files(after)):
        old, new = _bytes(before / relative), _bytes(after / relative)
        if old == new:
            continue
        relative = shown(relative)  # a file name need not be UTF-8; the diff is text
        stat["files"] += 1
        try:
            old_lines = old.decode("utf-8").splitlines(keepends=True) if old is not None else []
            new_lines = new.decode("utf-8").splitlines(keepends=True) if new is not None else []
        except UnicodeDecodeError:
            chunks.append(f"Binary files a/{relative} and b/{relative} differ\n")
            continue
        for line in difflib.unified_diff(
            old_lines, new_lines,
            "/dev/null" if old is None else f"a/{relative}",
            "/dev/null" if new is None else f"b/{relative}",
        ):  # fmt: skip
            if line.startswith("+") and not line.startswith("+++"):
                stat["added"] += 1
            elif line.startswith("-") and not line.startswith("---"):
                stat["removed"] += 1
            chunks.append(
                line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
            )
    return "".join(chunks), stat


def _files(root: Path) -> set[str]:
    found = set()
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _NOISE]
        for name in files:
            if not name.endswith(_BYTECODE):
                found.add(str(Path(folder, name).relative_to(root)))
    return found


def _bytes(path: Path) -> bytes | None:
    """A file's bytes, a link's target; None for anything else (never reads a pipe)."""
    if path.is_symlink():
        return b"symlink -> " + os.fsencode(os.readlink(path))
    if not path.is_file():
        return None
    try:
        return path.read_bytes()
    except OSError:
        return None


def _session_file(session_id: str) -> str | None:
    from lathe.home import lathe_home
    from lathe.session import SessionStore

    with contextlib.suppress(Exception):
        return str(SessionStore(lathe_home()).find(session_id))
    return None


def _transcript(session_id: str | None) -> str:
    if not session_id:
        return ""
    from lathe.home import lathe_home
    from lathe.session import SessionStore
    from lathe.session.transcript import render_markdown

    try:
        return render_markdown(SessionStore(lathe_home()).open(session_id, readonly=True))
    except Exception as exc:  # a transcript is a convenience; the result stands without it
        return f"(no transcript: {exc})\n"


def _masked(text: str) -> str:
    """`text` with the environment's secrets and every credential in it masked: the
    agent's code may print what it found anywhere."""
    from lathe.config.secrets import mask_credentials
    from lathe.obs.redact import Redactor

    return mask_credentials(Redactor.for_run((), os.environ).mask(text))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
