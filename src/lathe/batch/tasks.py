"""A task list: a folder of task folders (`repo/`, `TASK.md`, `task.json`, the format of
`../shared/tasks`), or a JSONL file with one task a line (`id`, `repo` — a path or a git
URL — with an optional `ref`, `task`, `verify`, and optionally `setup`, `timeout`,
`protected`, `kind`, `tags`). Relative paths in a JSONL file are from the file's folder.
A problem in the list is a `UsageError` naming the task and what to fix.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lathe.agent.check_files import RUNNER_CONFIGS
from lathe.errors import UsageError

DEFAULT_PROTECTED = (
    "tests/", "test_*.py", "*_test.py", "conftest.py", *(f"/{name}" for name in RUNNER_CONFIGS),
)  # fmt: skip
"""Files restored from the task's source before its verify command runs, so that an
edited test — or a test runner told to load something else — never counts as a fix
(a task may name its own, `protected`). The runner configs are those lathe's own verify
gate watches (`agent.check_files`): a `.pytest.ini` loading a plugin that passes every
test made an untouched task solved."""
# The default before it had every runner config: a run folder made then still resumes.
_EARLIER_DEFAULT_PROTECTED = (
    "tests/", "test_*.py", "*_test.py", "conftest.py",
    "/pytest.ini", "/tox.ini", "/setup.cfg", "/pyproject.toml",
)  # fmt: skip
DEFAULT_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class BatchTask:
    id: str
    repo: str  # an absolute path, or a git URL
    task: str  # what the agent is asked, as written
    verify: str
    ref: str | None = None  # for a git URL: the branch, tag or commit
    setup: str | None = None  # a command run in the fresh copy before the agent
    timeout: float = DEFAULT_TIMEOUT_S  # the verify command's limit
    protected: tuple[str, ...] = DEFAULT_PROTECTED
    kind: str | None = None
    tags: tuple[str, ...] = ()
    fingerprint: str = field(default="", compare=False)  # the source's content hash

    @property
    def is_git(self) -> bool:
        return "://" in self.repo or self.repo.endswith(".git") or self.repo.startswith("git@")

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def load_tasks(source: Path, *, run_folder: Path | None = None) -> list[BatchTask]:
    """The tasks of `source`. `run_folder`: the batch's, resolved, which a task's
    repository may hold (`"repo": "."` beside the list): no part of the task, left out
    of its content hash as its copies leave it out (`task_run`)."""
    if source.is_dir():
        tasks = [
            _from_folder(folder, run_folder)
            for folder in sorted(source.iterdir())
            if _is_task(folder)
        ]
        if not tasks:
            raise UsageError(
                f"{source} holds no task folders (each needs repo/, TASK.md and task.json)"
            )
    elif source.is_file():
        tasks = _from_jsonl(source, run_folder)
    else:
        raise UsageError(f"no task list at {source}: give a folder of tasks or a .jsonl file")
    named: dict[str, str] = {}  # file name -> the id that has it
    for task in tasks:
        name = task_file_name(task.id)
        if len(name.encode()) > _MAX_NAME_BYTES:
            raise UsageError(
                f"task id {task.id[:40]!r}... in {source} is too long: the run folder names "
                f"its files after it, and a file name holds {_MAX_NAME_BYTES} bytes; shorten it"
            )
        if named.get(name) == task.id:
            raise UsageError(f"task id {task.id!r} appears twice in {source}; ids must be unique")
        if name in named:
            raise UsageError(
                f"task ids {named[name]!r} and {task.id!r} in {source} would share the files "
                f"{name}.diff and {name}.md of the run folder; rename one"
            )
        named[name] = task.id
    return tasks


_MAX_NAME_BYTES = 200  # of a task's file names, leaving room for ".diff" under 255


def task_file_name(task_id: str) -> str:
    """The name of a task's files in the run folder (its diff, its transcript)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in task_id)


def list_hash(tasks: list[BatchTask]) -> str:
    """What a run's results were made from: every task's definition and source. A local
    repository counts by its content (the fingerprint), not its path, so a task folder
    moved or cloned elsewhere is the same list."""
    return _digest([{**t.as_json(), "repo": t.repo if t.is_git else ""} for t in tasks])


def path_list_hash(tasks: list[BatchTask]) -> str:
    """The hash manifests held before `list_hash` left local paths out: a run folder
    made then still resumes with the same tasks where they were."""
    return _digest([t.as_json() for t in tasks])


def list_hashes(tasks: list[BatchTask]) -> set[str]:
    """Every hash a run folder of this list may hold: `list_hash`, and those earlier
    lathes wrote: with paths (`path_list_hash`), and with the default `protected` of
    before."""
    earlier = [
        dataclasses.replace(t, protected=_EARLIER_DEFAULT_PROTECTED)
        if t.protected == DEFAULT_PROTECTED else t
        for t in tasks
    ]  # fmt: skip
    return {list_hash(tasks), path_list_hash(tasks), list_hash(earlier), path_list_hash(earlier)}


def _digest(records: list[dict[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(records, sort_keys=True).encode()).hexdigest()


def _is_task(folder: Path) -> bool:
    """A task folder: one that holds task.json or TASK.md. Missing its repo/ is an
    error, not a folder left out: the solve rate's denominator would shrink unseen."""
    if not folder.is_dir():
        return False
    if not ((folder / "task.json").is_file() or (folder / "TASK.md").is_file()):
        return False
    if not (folder / "repo").is_dir():
        raise UsageError(
            f"task {folder.name} ({folder}): no repo/ folder; a task folder holds repo/, "
            "TASK.md and task.json"
        )
    return True


def _from_folder(folder: Path, run_folder: Path | None) -> BatchTask:
    spec = _json_object(folder / "task.json", folder.name)
    try:
        # Bytes decoded, never newline-translated: the task is given exactly as written.
        text = (folder / "TASK.md").read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"task {folder.name}: cannot read TASK.md ({exc})") from None
    repo = (folder / "repo").resolve()
    spec = {**spec, "repo": str(repo), "task": text}
    return _task(folder.name, spec, where=str(folder), run_folder=run_folder)


def _from_jsonl(path: Path, run_folder: Path | None) -> list[BatchTask]:
    tasks = []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the task list {path} ({_why(exc)})") from None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            spec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path}:{number}: not JSON ({exc.msg})") from None
        if not isinstance(spec, dict) or not isinstance(spec.get("id"), str):
            raise UsageError(f"{path}:{number}: each line must be an object with a string `id`")
        repo = str(spec.get("repo", ""))
        if repo and "://" not in repo and not repo.startswith("git@"):
            spec["repo"] = str((path.parent / repo).resolve())
        tasks.append(_task(spec["id"], spec, where=f"{path}:{number}", run_folder=run_folder))
    if not tasks:
        raise UsageError(f"{path} holds no tasks")
    return tasks


def _task(task_id: str, spec: dict[str, Any], *, where: str, run_folder: Path | None) -> BatchTask:
    if not task_id.strip():  # it ran, and its files were transcripts/.md and diffs/.diff
        raise UsageError(
            f"{where}: the task's `id` is empty; give it one: it names the task's diff and "
            "transcript in the run folder"
        )
    if not _is_utf8(task_id):  # it ran, and then its result could not be written
        raise UsageError(
            f"task {shown(task_id)} ({shown(where)}): its id (a task folder's name) is not "
            "UTF-8 text, and the run folder's records are; rename it"
        )
    for key in ("repo", "task", "verify"):
        if not isinstance(spec.get(key), str) or not spec[key].strip():
            raise UsageError(f"task {task_id} ({where}): `{key}` is missing or empty")
    protected = spec.get("protected", DEFAULT_PROTECTED)
    tags = spec.get("tags", ())
    if not _strings(protected) or not _strings(tags):
        raise UsageError(f"task {task_id} ({where}): `protected` and `tags` are lists of strings")
    for key in ("ref", "setup", "kind"):
        if spec.get(key) is not None and not isinstance(spec[key], str):
            raise UsageError(f"task {task_id} ({where}): `{key}` must be a string")
    timeout = spec.get("timeout", DEFAULT_TIMEOUT_S)
    # A bool is an int to Python (true was 1 s), and "30" is text, not seconds.
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise UsageError(
            f"task {task_id} ({where}): `timeout` is not a number ({json.dumps(timeout)}); "
            "give the seconds, like 120"
        )
    if not 0 < timeout < math.inf:  # NaN included
        raise UsageError(
            f"task {task_id} ({where}): `timeout` must be a number of seconds above 0, not "
            f"{json.dumps(timeout)}"
        )
    task = BatchTask(
        id=task_id, repo=spec["repo"], task=spec["task"], verify=spec["verify"],
        ref=spec.get("ref"), setup=spec.get("setup"), timeout=float(timeout),
        protected=tuple(protected), kind=spec.get("kind"), tags=tuple(tags),
    )  # fmt: skip
    if not task.is_git and not Path(task.repo).is_dir():
        raise UsageError(f"task {task_id} ({where}): no repository folder at {task.repo}")
    fingerprint = (
        task.repo + "@" + (task.ref or "") if task.is_git else _tree_hash(task.repo, run_folder)
    )
    return dataclasses.replace(task, fingerprint=fingerprint)


def _why(exc: Exception) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return f"it is not UTF-8 text: byte {exc.start} cannot be read"
    return str(exc)


def _strings(value: Any) -> bool:
    return isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)


def is_run_folder(folder: Path) -> bool:
    """Whether `folder` is a `lathe batch` run folder, this batch's or an earlier one's
    (its manifest and results beside the diffs or transcripts of finished tasks): one
    inside a task's repository holds other tasks' answers, so it is left out of every
    copy of the task and of its content hash."""
    return (
        (folder / "manifest.json").is_file()
        and (folder / "results.jsonl").is_file()
        and ((folder / "diffs").is_dir() or (folder / "transcripts").is_dir())
    )


def _tree_hash(root: str, leave_out: Path | None) -> str:
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(
            d for d in dirs if Path(folder, d) != leave_out and not is_run_folder(Path(folder, d))
        )
        for name in sorted(files):
            path = Path(folder, name)
            if not (path.is_symlink() or path.is_file()):
                continue  # a pipe, a socket, a device: never copied, never read (one hung)
            # Names as the file system has them: one need not be UTF-8.
            digest.update(os.fsencode(path.relative_to(root)) + b"\0")
            digest.update(
                path.read_bytes() if not path.is_symlink() else os.fsencode(os.readlink(path))
            )
    return digest.hexdigest()


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a name's bytes that were not UTF-8 (os.fsdecode's escapes)
        return False
    return True


def shown(text: str) -> str:
    """`text` as a message may show it: a name's bytes that are not UTF-8 as escapes."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a lone surrogate that stands for no byte (JSON's "\ud800")
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _json_object(path: Path, task_id: str) -> dict[str, Any]:
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # not UTF-8, not JSON
        raise UsageError(f"task {task_id}: cannot read {path.name} ({_why(exc)})") from None
    if not isinstance(spec, dict):
        raise UsageError(f"task {task_id}: {path.name} must hold a JSON object")
    return spec
