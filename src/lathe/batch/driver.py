"""A batch: what runs, in which order, within which budgets, and where each result goes.

Resume rules, for the same command run again into the same folder:
- a task with a line in `results.jsonl` is finished (solved or not) and is skipped;
- a task without one never finished (the batch was killed, or stopped) and runs;
- with `retry_errors`, a task whose line says `error` (infrastructure or provider, not
  the agent) runs again, its old line dropped first;
- a different task list, model or run setting (`RESULT_SETTINGS`) than the manifest's
  is refused unless `force`.
Total budgets (`max_total_cost`, `max_total_wall_s`) stop new tasks from starting; the
ones running finish and are recorded, the rest wait for a later run.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from lathe.batch.executors import TaskExecutor
from lathe.batch.results import RunFolder
from lathe.batch.task_run import RunSettings, TaskResult
from lathe.batch.tasks import BatchTask, list_hash, list_hashes
from lathe.errors import UsageError

# The settings that change what a task's result means, with the option that sets each;
# the base URL does too, compared apart since the manifest holds it masked
# (`_base_url_change`).
RESULT_SETTINGS = {
    "max_turns": "--max-turns",
    "attempts": "--attempts",
    "max_cost": "--max-cost",
    "max_wall_s": "--max-wall",
    "lathe_args": "--lathe-arg",
}


class BatchFace(Protocol):
    """What a face shows of a batch."""

    def planned(self, plan: Plan) -> None: ...

    def started(self, task: BatchTask) -> None: ...

    def finished(self, line: dict[str, Any]) -> None: ...

    def stopped(self, reason: str) -> None: ...


@dataclass
class Plan:
    tasks: list[BatchTask]
    to_run: list[BatchTask]
    done: dict[str, dict[str, Any]]  # lines kept from earlier runs
    retried: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # results lines that could not be read


@dataclass
class BatchOptions:
    tasks: list[BatchTask]
    source: str  # what the list was read from, for the manifest
    out: Path
    settings: RunSettings
    model: str  # the resolved model id, for the manifest
    retry_errors: bool = False
    force: bool = False
    max_total_cost: float | None = None
    max_total_wall_s: float | None = None
    config: dict[str, Any] = field(default_factory=dict)
    executor_name: str = "local"


class Batch:
    def __init__(self, options: BatchOptions, executor: TaskExecutor, face: BatchFace) -> None:
        self.options = options
        self.executor = executor
        self.face = face
        self.folder = RunFolder(options.out)
        self.lines: dict[str, dict[str, Any]] = {}
        self._queue: list[BatchTask] = []
        self._recorded: list[dict[str, Any]] = []  # this run's lines
        self._started_at = 0.0
        self.stop_reason = ""
        self._unwritable = False  # a result could not be recorded: none may start

    def plan(self) -> Plan:
        options = self.options
        self.folder.create()
        self._hold_folder()
        self._check_manifest()
        self.folder.mend()  # only now: a refused run leaves the folder as it was
        done = self.folder.results()
        ids = {task.id for task in options.tasks}
        retried = []
        if options.retry_errors:
            # Only this list's: another task's error line stays (a smaller list with
            # --force would otherwise drop lines it never runs again).
            retried = [i for i, line in done.items() if line.get("status") == "error" and i in ids]
            self.folder.drop(set(retried))
            done = {i: line for i, line in done.items() if i not in retried}
        done = {i: line for i, line in done.items() if i in ids}
        to_run = [task for task in options.tasks if task.id not in done]
        return Plan(options.tasks, to_run, done, retried, list(self.folder.skipped))

    def run(self) -> dict[str, dict[str, Any]]:
        """Run the plan; every task's line (earlier ones included), by id."""
        plan = self.plan()
        self.lines = dict(plan.done)
        self._queue = list(plan.to_run)
        self._write_manifest()
        self.face.planned(plan)
        self._started_at = time.monotonic()
        try:
            self.executor.run(self._next_task, self.options.settings, self)
        except KeyboardInterrupt:
            self.executor.stop()
            self.stop_reason = "interrupted: the tasks that were running will run next time"
            self.face.stopped(self.stop_reason)
            raise
        if (self._queue or self._unwritable) and self.stop_reason:
            self.face.stopped(self.stop_reason)
        return self.lines

    # the executor's sink

    def started(self, task: BatchTask) -> None:
        self.face.started(task)

    def finished(self, result: TaskResult) -> None:
        try:
            line = self.folder.record(result)
        except OSError as exc:  # a full disk: the task runs again next time, none starts now
            self._unwritable = True
            self.stop_reason = (
                f"cannot write to the run folder {self.options.out} "
                f"({exc.strerror or exc}); free space there, then run the same command to "
                "resume"
            )
            return
        self.lines[result.id] = line
        self._recorded.append(line)
        self.face.finished(line)

    def _next_task(self) -> BatchTask | None:
        if self._unwritable or not self._queue:
            return None
        over = self._over_budget()
        if over:
            self.stop_reason = f"{over}; the {len(self._queue)} tasks left run next time"
            return None
        return self._queue.pop(0)

    def _over_budget(self) -> str | None:
        from lathe.agent.budget import cost_reached

        options = self.options
        if options.max_total_cost is not None:  # what this run spent: earlier runs paid
            spent = sum(line.get("cost_usd") or 0.0 for line in self._recorded)
            if cost_reached(spent, options.max_total_cost):
                return f"the batch's cost limit (${options.max_total_cost:g}) is spent"
        elapsed = time.monotonic() - self._started_at
        if options.max_total_wall_s is not None and elapsed >= options.max_total_wall_s:
            return f"the batch's time limit ({options.max_total_wall_s:g} s) is up"
        return None

    def _hold_folder(self) -> None:
        """One batch at a time in a run folder: two would run the same tasks twice."""
        from lathe.file_lock import FileLock

        lock = FileLock(self.options.out / ".lock")
        holder = lock.try_acquire(f"{os.getpid()}\n")
        if holder is not None:
            raise UsageError(
                f"another lathe batch (pid {holder.split()[0] if holder.split() else '?'}) "
                f"is writing to {self.options.out}; wait for it, or give another --out"
            )
        self._lock = lock  # held until this process ends

    def _check_manifest(self) -> None:
        earlier = self.folder.manifest()
        if earlier is None or self.options.force:
            return
        changes = []
        tasks = self.options.tasks
        if earlier.get("tasks_hash") not in list_hashes(tasks):
            changes.append("a different task list")
        if earlier.get("model") != self.options.model:
            changes.append(f"model {self.options.model} (it was {earlier.get('model')})")
        changes += _changed_settings(earlier.get("settings") or {}, self.options.settings)
        base_url = _base_url_change(earlier, self.options.settings.base_url)
        changes += [base_url] if base_url else []
        if changes:
            raise UsageError(
                f"{self.options.out} holds results made with other settings; this run has "
                f"{' and '.join(changes)}: give another --out, or --force to add to it anyway"
            )

    def _write_manifest(self) -> None:
        from lathe import __version__

        options = self.options
        base_url = options.settings.base_url
        masked = _masked_url(base_url)
        settings = {**asdict(options.settings), "base_url": masked}
        self.folder.write_manifest(
            {
                "lathe_version": __version__,
                "model": options.model,
                # Credentials in the URL masked; what tells two such URLs apart, hashed.
                "base_url": masked,
                "base_url_digest": _url_digest(base_url),
                "tasks": options.source,
                "tasks_hash": list_hash(options.tasks),
                "task_ids": [t.id for t in options.tasks],
                "executor": options.executor_name,
                "settings": settings,
                "max_total_cost": options.max_total_cost,
                "max_total_wall_s": options.max_total_wall_s,
                "config": options.config,
            }
        )


def _changed_settings(earlier: dict[str, Any], settings: RunSettings) -> list[str]:
    """Each result setting of `settings` unlike the manifest's, as `--option now (it was
    before)`; one the manifest does not hold (an older lathe's) is not compared, nor
    the base URL (`_base_url_change`)."""
    now = asdict(settings)
    changes = []
    for key, option in RESULT_SETTINGS.items():
        if key in earlier and _shown(key, earlier[key]) != _shown(key, now[key]):
            changes.append(f"{option} {_shown(key, now[key])} (it was {_shown(key, earlier[key])})")
    return changes


def _shown(key: str, value: Any) -> str:
    if value is None or value == [] or value == ():
        return "none"
    if key == "max_wall_s":
        return f"{value:g}s"
    if key == "lathe_args":
        return " ".join(value)
    return str(value)


def _base_url_change(manifest: dict[str, Any], now: str | None) -> str | None:
    """`--base-url now (it was before)` when `now` is another endpoint than the
    manifest's, credentials masked in both; None when it is the same. A manifest with no
    `base_url_digest` is an earlier lathe's, which wrote the URL as given."""
    settings = manifest.get("settings") or {}
    if "base_url" not in settings:  # an older lathe's: not compared
        return None
    before = settings["base_url"]
    if "base_url_digest" not in manifest:
        same = before == now
    else:
        same = before == _masked_url(now) and _same_url(manifest["base_url_digest"], now)
    if same:
        return None
    shown_now = _shown("base_url", _masked_url(now))
    shown_before = _shown("base_url", _masked_url(before) if isinstance(before, str) else before)
    if shown_now == shown_before:
        return f"--base-url {shown_now} with other credentials"
    return f"--base-url {shown_now} (it was {shown_before})"


def _masked_url(url: str | None) -> str | None:
    from lathe.config.secrets import masked_url

    return None if url is None else masked_url(url)


_DIGEST_ROUNDS = 200_000  # each guess at a password in the URL costs as much


def _url_digest(url: str | None, salt: bytes | None = None) -> str | None:
    """What tells a URL holding credentials from another with the same masked form: a
    salted, slow hash (a password in it must not be guessed from the manifest cheaply);
    None for a URL with no credentials, which the manifest holds as it is."""
    if url is None or _masked_url(url) == url:
        return None
    salt = salt or os.urandom(16)
    digest = hashlib.pbkdf2_hmac("sha256", url.encode("utf-8"), salt, _DIGEST_ROUNDS)
    return f"pbkdf2-sha256${_DIGEST_ROUNDS}${salt.hex()}${digest.hex()}"


def _same_url(digest: Any, url: str | None) -> bool:
    """Whether `url` is the one `digest` (`_url_digest`) was made of."""
    if not isinstance(digest, str):  # None: that URL held no credentials
        return digest is None and _url_digest(url) is None
    try:
        _, rounds, salt, _ = digest.split("$")
        salt_bytes = bytes.fromhex(salt)
    except ValueError:
        return False
    return rounds == str(_DIGEST_ROUNDS) and _url_digest(url, salt_bytes) == digest
