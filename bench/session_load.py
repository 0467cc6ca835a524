"""Time to load and resume a 20,000-entry session.

Builds a realistic session (user turns, assistant replies with tool calls and usage,
tool results of a few hundred bytes to a few KB) in a temporary LATHE_HOME, then times:
opening it for appending (read + parse + lock), rebuilding the conversation to send,
and listing. The file is written in one go with the same serialisation `append` uses;
a few hundred real appends are timed separately, since each one waits for fsync.

    python bench/session_load.py [--entries N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from pathlib import Path

from lathe.session import MessageEntry, SessionStore
from lathe.types import (
    AssistantMessage,
    Message,
    StopReason,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)


def _conversation(count: int, rng: random.Random) -> list[MessageEntry]:
    entries: list[MessageEntry] = []
    parent: str | None = None
    turn = 0
    while len(entries) < count:
        if turn % 25 == 0:
            message: Message = UserMessage(content=f"task {turn}: make the tests in pkg{turn} pass")
        else:
            call_id = f"call_{turn}"
            arguments = json.dumps({"command": f"pytest -q tests/test_{turn}.py"})
            message = AssistantMessage(
                text="Let me check the failing test." if rng.random() < 0.5 else "",
                tool_calls=(ToolCall(id=call_id, name="bash", arguments=arguments),),
                stop_reason=StopReason.TOOL_USE,
                usage=Usage(input_tokens=rng.randint(2_000, 60_000), output_tokens=150),
                model="bench-model",
            )
            entry = MessageEntry(id=f"{len(entries):08x}", parent=parent, message=message)
            entries.append(entry)
            parent = entry.id
            output = "\n".join(f"tests/test_{turn}.py::case_{n} PASSED" for n in range(60))
            message = ToolResultMessage(
                tool_call_id=call_id, name="bash", content=output[: rng.randint(200, 3_000)]
            )
        entry = MessageEntry(id=f"{len(entries):08x}", parent=parent, message=message)
        entries.append(entry)
        parent = entry.id
        turn += 1
    return entries[:count]


def _timed(label: str, action):  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    value = action()
    print(f"{label:<44} {time.perf_counter() - started:8.3f} s")
    return value


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=20_000)
    parser.add_argument("--appends", type=int, default=200)
    options = parser.parse_args()

    with tempfile.TemporaryDirectory() as home:
        os.environ["LATHE_HOME"] = home
        workspace = Path(home) / "repo"
        workspace.mkdir()
        store = SessionStore(Path(home))
        entries = _conversation(options.entries, random.Random(7))
        with store.create(workspace, "bench-model") as session:
            pass
        with session.path.open("ab") as handle:
            handle.write(b"".join(e.model_dump_json().encode() + b"\n" for e in entries))
        size = session.path.stat().st_size
        load = os.getloadavg()[0]
        print(f"session: {len(entries):,} entries, {size / 1e6:.1f} MB")
        print(f"machine: {os.cpu_count()} CPUs, load average {load:.1f}")

        resumed = _timed("open for append (read, parse, lock)", lambda: store.open(session.id))
        assert len(resumed.entries) == len(entries) and not resumed.warnings
        messages = _timed("rebuild conversation (branch + repair)", resumed.conversation)
        assert len(messages) >= len(entries)
        _timed("list (summarise every session)", lambda: store.list(workspace))
        _timed("list again (unchanged files: the index)", lambda: store.list(workspace))

        started = time.perf_counter()
        for _ in range(options.appends):
            resumed.append_message(UserMessage(content="one more line"))
        per_append = (time.perf_counter() - started) / options.appends
        print(f"{'append (write + fsync), per entry':<44} {per_append * 1000:8.2f} ms")
        resumed.close()


if __name__ == "__main__":
    main()
