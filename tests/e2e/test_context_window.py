"""The model's window at its edges, with the real CLI:

- a server refusing a request as too long: lathe threw away the numbers the server gave,
  sent the identical request again and then reported its own estimate ("about 1,813
  tokens for a limit of 24,576") against the server's "9000 tokens for a window of 8192";
- a compaction in a continued session opened the history with the session's first,
  finished task and dropped the one being worked on.
"""

from __future__ import annotations

import itertools
import json

from tests.e2e.test_run_edges import lathe_run
from tests.fakes.openai_server import Call, ErrorReply, Reply


def too_long(window: int, requested: int) -> ErrorReply:
    return ErrorReply(
        400,
        f"This model's maximum context length is {window} tokens. However, you requested "
        f"{requested} tokens (9000 in the messages). Please reduce the length of the messages.",
        "invalid_request_error",
        "context_length_exceeded",
    )


def test_a_first_request_too_long_is_not_sent_again_and_the_servers_numbers_are_said(
    tmp_path, fake_openai
):
    ws = tmp_path / "ws"
    ws.mkdir()
    fake_openai.enqueue(too_long(8192, 9000), too_long(8192, 9000))
    done = lathe_run(fake_openai, ws, tmp_path, "Fix it")
    assert done.returncode != 0
    assert len(fake_openai.chat_bodies()) == 1  # nothing could make it smaller
    assert "first request does not fit" in done.stdout + done.stderr
    assert "9,000 tokens by the server's count for a window of 8,192" in done.stdout + done.stderr


def test_a_window_smaller_than_lathe_assumed_is_learned_and_the_run_goes_on(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    for n in range(4):
        (ws / f"log{n}.txt").write_text(f"entry {n} " * 2_000)
    reads = [Reply(calls=[Call("read", {"path": f"log{n}.txt"})]) for n in range(4)]
    fake_openai.enqueue(
        *reads,
        too_long(16_000, 25_000),
        Reply("Goal: read the logs. Progress: all four read."),  # the compaction summary
        Reply("All four logs read."),
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Read the logs")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "All four logs read." in done.stdout
    assert "window is 16,000 tokens" in done.stderr
    bodies = fake_openai.chat_bodies()
    assert len(bodies) == 7
    retried = bodies[-1]["messages"]
    assert len(retried) < len(bodies[4]["messages"])  # compacted before it was sent again


def test_a_compaction_in_a_continued_session_keeps_the_task_being_worked_on(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    small = ["-c", "models.m.provider=openai", "-c", "models.m.context_window=6000"]
    fake_openai.enqueue(Reply("Listed."))
    first = lathe_run(fake_openai, ws, tmp_path, *small, "TASK-ONE: list the numbers")
    assert first.returncode == 0, first.stderr

    asked = itertools.count()

    def respond(body):
        if not body.get("tools"):
            return Reply("Goal: sum numbers. Progress: printed some numbers.")
        calls = next(asked)
        size = len(json.dumps(body)) // 3  # what a real server would count
        usage = {"prompt_tokens": size, "completion_tokens": 20, "total_tokens": size + 20}
        if calls < 8:
            command = f"seq {calls * 1000} {calls * 1000 + 500}"
            return Reply(calls=[Call("bash", {"command": command})], usage=usage)
        return Reply("Wrote the sum.", usage=usage)

    fake_openai.responder = respond
    second = lathe_run(
        fake_openai, ws, tmp_path, *small, "--approval", "full", "--continue",
        "TASK-TWO: write the sum into sum.txt",
    )  # fmt: skip
    assert second.returncode == 0, second.stderr
    assert "compacted" in second.stderr
    bodies = fake_openai.chat_bodies()
    summarised = [b for b in bodies if not b.get("tools")]
    assert summarised and "TASK-TWO" in json.dumps(summarised[0]["messages"])
    after = [b for b in bodies[bodies.index(summarised[0]) :] if b.get("tools")]
    assert all("TASK-TWO" in json.dumps(b["messages"]) for b in after)


def test_compact_threshold_sets_where_compaction_starts(tmp_path, fake_openai):
    # context.compact_threshold was shown by `config show` and read by nothing.
    def run(threshold: str) -> list[dict]:
        ws = tmp_path / f"ws-{threshold}"
        ws.mkdir()
        for n in range(4):
            (ws / f"log{n}.txt").write_text(f"entry {n}\n" * 500)
        reads = iter([Reply(calls=[Call("read", {"path": f"log{n}.txt"})]) for n in range(4)])

        def respond(body):
            if not body.get("tools"):
                return Reply("Goal: read the logs. Progress: all read.")
            size = len(json.dumps(body)) // 3  # what a real server would count
            usage = {"prompt_tokens": size, "completion_tokens": 20, "total_tokens": size + 20}
            reply = next(reads, None)
            if reply is None:
                return Reply("All logs read.", usage=usage)
            return Reply(calls=reply.calls, usage=usage)

        fake_openai.requests.clear()
        fake_openai.responder = respond
        done = lathe_run(
            fake_openai, ws, tmp_path, "-c", "models.m.provider=openai", "-c",
            "models.m.context_window=40000", "-c", f"context.compact_threshold={threshold}",
            "--approval", "full", "Read the logs",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return fake_openai.chat_bodies()

    assert all(body.get("tools") for body in run("1.0"))  # never summarised
    assert any(not body.get("tools") for body in run("0.3"))
