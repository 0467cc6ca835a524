"""Small task folders in the format of ../shared/tasks, and a fake model that answers
each task's requests from the script named by the marker in its task text."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakes.openai_server import Call, Reply

VERIFY = "python -m pytest -q -p no:cacheprovider"


def make_task(root: Path, name: str, *, kind: str = "logic-bug") -> Path:
    """A task whose `add` subtracts; its test says so. Read-only, like the shared set."""
    folder = root / name
    repo = folder / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "tests" / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    (folder / "TASK.md").write_text(f"Task {name}: make the failing test pass.\n")
    (folder / "task.json").write_text(json.dumps({"verify": VERIFY, "timeout": 60, "kind": kind}))
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
