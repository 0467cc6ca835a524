"""Model scripts for many sessions at once: the fake model answers each request from
the script of the session whose marker the task carries, at the step given by how many
replies that conversation already holds."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tests.fakes.openai_server import Call, ErrorReply, Reply


def by_marker(scripts: dict[str, Sequence[Any]]) -> Callable[[dict[str, Any]], Any]:
    def respond(body: dict[str, Any]) -> Any:
        messages = body.get("messages", [])
        first = next((m for m in messages if m.get("role") == "user"), {})
        text = first.get("content") if isinstance(first.get("content"), str) else str(first)
        marker = next((m for m in scripts if m in text), None)
        if marker is None:
            return ErrorReply(500, "fake server: no script for this task")
        step = sum(1 for m in messages if m.get("role") == "assistant")
        script = scripts[marker]
        return script[step] if step < len(script) else Reply(f"{marker} done")

    return respond


def fix_add(marker: str) -> list[Any]:
    """Edit calc.py (asks in `ask` mode), then finish."""
    return [
        Reply(
            calls=[Call("edit", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"})]
        ),
        Reply(f"{marker}: fixed add."),
    ]


def long_run(marker: str, turns: int) -> list[Any]:
    """`turns` replies: reads of the session's own file at changing offsets, one command
    echoing the marker, then a final answer naming the marker."""
    script: list[Any] = []
    for turn in range(1, turns):
        if turn == turns // 2:
            call = Call("bash", {"command": f"echo {marker}-ran"})
        else:
            call = Call("read", {"path": f"{marker}.txt", "offset": turn, "limit": 1})
        script.append(Reply(f"{marker} turn {turn}", calls=[call]))
    script.append(Reply(f"{marker} finished"))
    return script


def workspace_for(root, marker: str, lines: int = 40):
    ws = root / marker
    ws.mkdir(parents=True)
    (ws / f"{marker}.txt").write_text("".join(f"{marker} line {n}\n" for n in range(1, lines + 1)))
    (ws / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    return ws


def calc_workspace(root, name: str = "ws"):
    """`calc.py` whose `add` subtracts, and `check.py`, which fails until it is fixed."""
    ws = root / name
    ws.mkdir()
    (ws / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (ws / "check.py").write_text(
        "from calc import add\nassert add(2, 3) == 5, 'add is wrong'\nprint('ok')\n"
    )
    return ws
