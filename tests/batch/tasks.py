"""Small task folders in the format of ../shared/tasks, a fake model that answers
each task's requests from the script named by the marker in its task text, and
`lathe batch` run as a subprocess against it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.fakes.openai_server import Call, Reply

VERIFY = "python -m pytest -q -p no:cacheprovider"
BROKEN = "def add(a, b):\n    return a - b\n"


def make_task(
    root: Path, name: str, *, kind: str = "logic-bug", code: str = BROKEN, **spec: Any
) -> Path:
    """A task whose `add` subtracts (unless `code` says otherwise); its test says so.
    `spec`: more of task.json. Read-only, like the shared set."""
    folder = root / name
    repo = folder / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text(code)
    (repo / "tests" / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    (folder / "TASK.md").write_text(f"Task {name}: make the failing test pass.\n")
    (folder / "task.json").write_text(
        json.dumps({"verify": VERIFY, "timeout": 60, "kind": kind, **spec})
    )
    for path in [*repo.rglob("*"), repo]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    return folder


def fix(name: str) -> list:
    return [
        Reply(
            calls=[Call("edit", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"})]
        ),
        Reply(f"{name}: fixed."),
    ]


def cheat(name: str) -> list:
    """Makes the test pass by rewriting it: lathe's own check passes, the batch's not."""
    return [
        Reply(
            calls=[
                Call(
                    "edit",
                    {"path": "tests/test_calc.py", "old_string": "== 5", "new_string": "== -1"},
                )
            ]
        ),
        Reply(f"{name}: done."),
    ]


def stuck(name: str) -> list:
    same = Reply(calls=[Call("read", {"path": "calc.py"})])
    return [same] * 12


def batch_env(tmp_path: Path, key: str = "sk-test") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    return {**env, "LATHE_HOME": str(tmp_path / "home"), "OPENAI_API_KEY": key}


def batch_argv(tasks: Path, run: Path, fake: Any, *extra: str) -> list[str]:
    return [sys.executable, "-m", "lathe", "batch", str(tasks), "--out", str(run),
            "--workers", "2", "--model", "m", "--base-url", fake.base_url, "--max-turns", "8",
            *extra]  # fmt: skip


def run_batch(
    tmp_path: Path, tasks: Path, run: Path, fake: Any, *extra: str, env: dict | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(batch_argv(tasks, run, fake, *extra), env=env or batch_env(tmp_path),
                          capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)  # fmt: skip


def result_lines(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
