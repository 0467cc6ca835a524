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
import os
import subprocess
import sys

from tests.e2e.test_run_edges import lathe_run
from tests.fakes.anthropic_server import ErrorReply as AnthropicError
from tests.fakes.anthropic_server import Reply as AnthropicReply
from tests.fakes.anthropic_server import ToolUse as AnthropicToolUse
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


def _refusing_past(window: int, *, functions_apart: bool):
    """A server answering "hi" to a request whose prompt and max_tokens fit `window`,
    else refusing it in the OpenAI/vLLM wording: the tool definitions counted in the
    messages (vLLM) or apart from them (OpenAI's "in the functions")."""

    def respond(body):
        size, asked = len(json.dumps(body)) // 3, body.get("max_tokens") or 0
        if size + asked <= window:
            return Reply("hi", usage={"prompt_tokens": size, "completion_tokens": 5})
        tools = len(json.dumps(body.get("tools", []))) // 3 if functions_apart else 0
        counted = f"{size - tools} in the messages, " + (
            f"{tools} in the functions, and " if functions_apart else ""
        )
        return ErrorReply(
            400,
            f"This model's maximum context length is {window} tokens. However, you "
            f"requested {size + asked} tokens ({counted}{asked} in the completion). Please "
            "reduce the length of the messages or completion.",
            "invalid_request_error",
            "context_length_exceeded",
        )

    return respond


def test_max_tokens_asks_only_what_the_window_leaves_after_the_prompt(tmp_path, fake_openai):
    # A window of 8,192 and the model's max output of 8,192: every request asked for
    # 8,192 tokens of output on top of its prompt, so vLLM refused each one, and lathe
    # said the first request "does not fit the model's window".
    ws = tmp_path / "ws"
    ws.mkdir()
    window = 8192

    fake_openai.responder = _refusing_past(window, functions_apart=False)
    done = lathe_run(
        fake_openai, ws, tmp_path, "-c", "models.m.provider=vllm",
        "-c", f"models.m.context_window={window}", "-c", "models.m.max_output_tokens=8192",
        "say hi",
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert "hi" in done.stdout
    asked = [body["max_tokens"] for body in fake_openai.chat_bodies()]
    assert asked[-1] < window and len(asked) <= 2, asked


def test_a_refusal_of_prompt_plus_max_tokens_asks_again_for_less_output(tmp_path, fake_anthropic):
    # Anthropic's wording was not known as "too long": a session past 136k tokens of a
    # model with 64k of output ended in a provider error, and so did every --continue.
    ws = tmp_path / "ws"
    ws.mkdir()
    fake_anthropic.enqueue(
        AnthropicError(
            400,
            "input length and `max_tokens` exceed context limit: 150000 + 64000 > 200000, "
            "decrease input length or `max_tokens` and try again",
            "invalid_request_error",
        ),
        AnthropicReply("done"),
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "ANTHROPIC_"))}
    env.update(ANTHROPIC_API_KEY="sk-ant-test", LATHE_HOME=str(tmp_path / "home"))
    done = subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url",
         fake_anthropic.base_url, "-C", str(ws), "-c", "models.m.provider=anthropic",
         "-c", "models.m.context_window=200000", "-c", "models.m.max_output_tokens=64000",
         "say done"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    asked = [body["max_tokens"] for body in fake_anthropic.message_bodies()]
    assert asked[0] == 64000 and asked[1] <= 50000, asked


def _compacting_run(tmp_path, fake_openai, summary, *, finding: str = ""):
    """A run in a 6,000-token window whose bash outputs make it compact; `summary` is
    what the summary request is answered with. The bodies sent, and the run."""
    ws = tmp_path / "ws"
    ws.mkdir()
    asked = itertools.count()

    def respond(body):
        if not body.get("tools"):
            return summary
        calls = next(asked)
        size = len(json.dumps(body)) // 3  # what a real server would count
        usage = {"prompt_tokens": size, "completion_tokens": 20, "total_tokens": size + 20}
        if calls < 8:
            command = f"seq {calls * 1000} {calls * 1000 + 500}"
            text = finding if calls == 0 else ""
            return Reply(text, calls=[Call("bash", {"command": command})], usage=usage)
        return Reply("Wrote the sum.", usage=usage)

    fake_openai.responder = respond
    done = lathe_run(
        fake_openai, ws, tmp_path, "-c", "models.m.provider=openai",
        "-c", "models.m.context_window=6000", "--approval", "full", "Sum the numbers",
    )  # fmt: skip
    return fake_openai.chat_bodies(), done


def test_the_summary_request_asks_for_a_bounded_answer(tmp_path, fake_openai):
    # It asked for no limit at all: a 30 KB summary grew the request it was to shrink,
    # and the next refusal ended the run.
    bodies, done = _compacting_run(tmp_path, fake_openai, Reply("Goal: sum. Progress: some."))
    assert done.returncode == 0, done.stderr
    summaries = [b for b in bodies if not b.get("tools")]
    assert summaries and all(0 < (b.get("max_tokens") or 0) <= 6000 // 8 for b in summaries)


def test_a_summary_the_model_could_not_write_is_said_and_keeps_its_findings(tmp_path, fake_openai):
    # The history was silently replaced by a list of tool calls: the model's own
    # diagnosis was gone, for good once saved.
    finding = "FINDING: the sum overflows in parse_total, report.py must use int."
    bodies, done = _compacting_run(
        tmp_path, fake_openai, ErrorReply(400, "the summary cannot be made"), finding=finding
    )
    assert done.returncode == 0, done.stderr
    assert "could not summarise" in done.stderr
    first_summary = next(i for i, b in enumerate(bodies) if not b.get("tools"))
    after = bodies[first_summary + 1]
    assert finding in json.dumps(after["messages"])


def test_tokens_written_to_the_prompt_cache_count_toward_the_window(tmp_path, fake_anthropic):
    # Anthropic reports what a turn added as cache writes, apart from input: lathe left
    # them out of the conversation's size and sent a request past its own limit.
    ws = tmp_path / "ws"
    ws.mkdir()
    for n in range(12):
        lines = (f"x{n}_{k} = {k}  # some padding text here to fill" for k in range(240))
        (ws / f"f{n}.py").write_text("\n".join(lines))
    turns = itertools.count()
    cached = {"before": 0}
    sizes = []

    def respond(body):
        size = len(json.dumps(body)) // 3  # what a real server would count
        if not body.get("tools"):
            return AnthropicReply("Goal: read the files. Progress: some read.")
        sizes.append(size)
        usage = {"input_tokens": 3, "cache_read_input_tokens": cached["before"],
                 "cache_creation_input_tokens": max(0, size - cached["before"] - 3),
                 "output_tokens": 30}  # fmt: skip
        cached["before"] = size
        turn = next(turns)
        if turn < 4:
            reads = [
                AnthropicToolUse("read", {"path": f"f{3 * turn + k}.py"}, id=f"t{turn}_{k}")
                for k in range(3)
            ]
            return AnthropicReply("Let me think. " * 1700, calls=reads, usage=usage)
        return AnthropicReply("done", usage=usage)

    fake_anthropic.responder = respond
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "ANTHROPIC_"))}
    env.update(ANTHROPIC_API_KEY="sk-ant-test", LATHE_HOME=str(tmp_path / "home"))
    done = subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url",
         fake_anthropic.base_url, "-C", str(ws), "-c", "models.m.provider=anthropic",
         "-c", "models.m.context_window=40000", "-c", "context.prune_budget_tokens=100000",
         "Read the files"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert max(sizes) <= 30_000, sizes  # the window less the output reserve


def test_tool_definitions_a_refusal_counts_apart_are_prompt_too(tmp_path, fake_openai):
    # OpenAI's "(N in the messages, M in the functions, and K in the completion)": the
    # tools were left out of the prompt, less output was asked for, and still too much.
    ws = tmp_path / "ws"
    ws.mkdir()
    window = 8192

    fake_openai.responder = _refusing_past(window, functions_apart=True)
    done = lathe_run(
        fake_openai, ws, tmp_path, "-c", "models.m.provider=openai",
        "-c", f"models.m.context_window={window}", "-c", "models.m.max_output_tokens=8000",
        "say hi",
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
