"""A batch's run folder: what it ran with and what each task came to.

- `manifest.json`: lathe's version, the model and endpoint, the settings, the config
  (secrets masked), and the hash of the task list. A later run into the same folder
  must match it (or say `--force`).
- `results.jsonl`: one line a task, appended and fsynced the moment the task ends, so a
  batch killed at any point has lost no finished task, and a task never got two lines
  (one run again with `--retry-errors` has its old line dropped, atomically, first). A
  torn last line — the one being written when the process died — is cut off (`mend`),
  once the batch holds the folder and its settings match; a whole one that lacks only
  its newline gets it.
- `diffs/ID.diff` and `transcripts/ID.md`: each task's changes and conversation.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

from lathe.batch.task_run import TaskResult
from lathe.batch.tasks import task_file_name
from lathe.errors import UsageError


class RunFolder:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.results_file = path / "results.jsonl"
        self.manifest_file = path / "manifest.json"
        self.skipped: list[str] = []  # what the last `results()` could not read

    def results(self) -> dict[str, dict[str, Any]]:
        """Each finished task's line, by id, in the order they finished. A whole line
        that is not a task's result (edited by hand, another tool's) is skipped and
        named in `skipped` ("results.jsonl:N: ..."); its task, if any, runs again. A
        last line without its newline counts when it is a whole result."""
        found: dict[str, dict[str, Any]] = {}
        self.skipped = []
        try:
            raw = self.results_file.read_bytes()
        except FileNotFoundError:
            return found
        for number, line in enumerate(raw.splitlines(keepends=True), 1):
            record = _result(line)
            if record is not None:
                found[record["id"]] = record
            elif line.endswith(b"\n") and line.strip():  # else torn: its task runs again
                self.skipped.append(
                    f"{self.results_file.name}:{number}: not a task's result line, skipped"
                )
        return found

    def create(self) -> None:
        """Make the folder, or find it writable."""
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            (self.path / ".writable").touch()
            (self.path / ".writable").unlink()
        except OSError as exc:
            raise UsageError(
                f"--out {self.path}: cannot make or write the run folder there "
                f"({exc.strerror or exc}); give another --out"
            ) from None

    def mend(self) -> None:
        """Make the last line of `results.jsonl` one a line can follow: a whole result
        that lacks its newline gets it, a torn line is cut off (its task runs again).
        For a batch that holds the folder, its settings checked: a refused one changes
        nothing."""
        try:
            raw = self.results_file.read_bytes()
        except FileNotFoundError:
            return
        last = raw.rfind(b"\n") + 1
        if last == len(raw):
            return
        if _result(raw[last:]) is None:
            os.truncate(self.results_file, last)
        else:
            _append(self.results_file, b"\n")

    def record(self, result: TaskResult) -> dict[str, Any]:
        """Write a finished task: its diff and transcript, then its line (fsynced)."""
        line = result.line()
        for folder, text, suffix, key in (("diffs", result.diff, ".diff", "diff_path"),
                                          ("transcripts", result.transcript, ".md",
                                           "transcript_path")):  # fmt: skip
            if text:
                target = self.path / folder / f"{task_file_name(result.id)}{suffix}"
                target.parent.mkdir(exist_ok=True)
                target.write_text(text, encoding="utf-8")
                line[key] = str(target.relative_to(self.path))
            else:
                line[key] = None
        _append(self.results_file, (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8"))
        return line

    def drop(self, ids: set[str]) -> None:
        """Remove the lines of `ids` (tasks about to run again), in one atomic step."""
        from lathe.atomic_write import write_atomic

        if not ids or not self.results_file.exists():
            return
        kept = [
            line for line in self.results_file.read_bytes().splitlines(keepends=True)
            if line.endswith(b"\n") and _id_of(line) not in ids
        ]  # fmt: skip
        write_atomic(self.results_file, b"".join(kept))

    def manifest(self) -> dict[str, Any] | None:
        try:
            manifest = json.loads(self.manifest_file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:  # UnicodeDecodeError too
            raise UsageError(f"cannot read {self.manifest_file}: {exc}") from None
        if not isinstance(manifest, dict):
            raise UsageError(
                f"cannot read {self.manifest_file}: it holds {type(manifest).__name__}, not the "
                "object lathe batch writes; remove it to go on without it"
            )
        return manifest

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        from lathe.atomic_write import write_atomic

        text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
        write_atomic(self.manifest_file, text.encode("utf-8"))


def masked_config(workspace: Path) -> dict[str, Any]:
    """The config a run starts from (every value, secrets masked)."""
    from lathe.config import load_config

    values = {key: value for key, value, _ in load_config(workspace).shown_values()}
    return json.loads(json.dumps(values, default=str))


def _append(path: Path, data: bytes) -> None:
    """Append `data` to `path` and fsync it: a finished task's line outlives a crash."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _result(line: bytes) -> dict[str, Any] | None:
    """`line` as a task's result (`TaskResult`'s shape), or None."""
    from pydantic import ValidationError

    try:
        record = json.loads(line)
        _shape().validate_python(record)
    except (ValueError, ValidationError):  # JSONDecodeError is a ValueError
        return None
    return record


@functools.cache
def _shape() -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(TaskResult)


def _id_of(line: bytes) -> str | None:
    """The id of the result on `line`; None for a line with none, or one that is no
    string (edited by hand: a list is no set member)."""
    try:
        record = json.loads(line)
    except ValueError:  # not JSON, not UTF-8
        return None
    task_id = record.get("id") if isinstance(record, dict) else None
    return task_id if isinstance(task_id, str) else None
