"""The Redactor masks exact secret values in tool output, spill files, messages and events."""

from __future__ import annotations

from lathe.config.secrets import mask_secret
from lathe.events import RunFinished, RunStatus, VerifyFinished
from lathe.hooks.base import AgentHooks
from lathe.obs.log import SessionLog, summarize_arguments
from lathe.obs.redact import Redactor
from lathe.tools.base import ToolOutput
from lathe.types import Usage, UserMessage

KEY = "sk-live-1234567890abcdefghij"
HEADER = "hdr-secret-99887766"


async def test_after_tool_masks_content_summary_details_and_the_spill_file(tmp_path):
    spill = tmp_path / "out.txt"
    spill.write_text(f"line 1 {KEY}\nline 2 {HEADER}\n")
    redactor = Redactor([KEY, HEADER])
    output = ToolOutput(
        content=f"OPENAI_API_KEY={KEY}\nX={HEADER}",
        summary=f"printed {KEY}",
        details={
            "exit_code": 0,
            "command": "env",
            "full_output_path": str(spill),
            "nested": [KEY, {"k": HEADER}],
        },
    )
    masked = await redactor.after_tool("bash", {"command": "env"}, output)
    assert masked.content == f"OPENAI_API_KEY={mask_secret(KEY)}\nX={mask_secret(HEADER)}"
    assert masked.summary == f"printed {mask_secret(KEY)}"
    assert masked.details["nested"] == [mask_secret(KEY), {"k": mask_secret(HEADER)}]
    assert masked.details["exit_code"] == 0
    assert spill.read_text() == f"line 1 {mask_secret(KEY)}\nline 2 {mask_secret(HEADER)}\n"


async def test_no_secrets_or_short_ones_change_nothing():
    output = ToolOutput(content="no-key abc")
    assert await Redactor([]).after_tool("bash", {}, output) is output
    assert not Redactor(["no-key", ""])  # too short to be a key; masking would wreck text
    assert Redactor(["abc"]).mask("abc") == "abc"


def test_a_longer_secret_containing_a_shorter_one_is_masked_whole():
    short, long = "abcdefgh1234", "abcdefgh1234-and-more-5678"
    assert Redactor([short, long]).mask(f"x {long} y") == f"x {mask_secret(long)} y"


def test_guarded_hooks_see_masked_messages_and_summaries():
    seen: list = []

    class Recorder(AgentHooks):
        def on_message(self, message):
            seen.append(message)

        def on_compaction(self, opening, kept_messages, tokens_before, tokens_after):
            seen.append(opening)

    guarded = Redactor([KEY]).guard(Recorder())
    guarded.on_message(UserMessage(content=f"verify failed: KEY={KEY}"))
    guarded.on_compaction(f"summary mentions {KEY}", 2, 100, 10)
    assert seen == [
        UserMessage(content=f"verify failed: KEY={mask_secret(KEY)}"),
        f"summary mentions {mask_secret(KEY)}",
    ]


def test_events_are_masked_and_untouched_ones_are_the_same_object():
    redactor = Redactor([KEY])
    verify = VerifyFinished(command="env", exit_code=0, passed=True, output_tail=f"K={KEY}")
    assert redactor.event(verify).output_tail == f"K={mask_secret(KEY)}"
    clean = RunFinished(status=RunStatus.VERIFIED, turns=1, usage=Usage(), answer="ok")
    assert redactor.event(clean) is clean


def test_log_lines_are_masked_and_arguments_summarised(tmp_path):
    log = SessionLog(tmp_path / "s.log", "abc", Redactor([KEY]))
    log(VerifyFinished(command=f"echo {KEY}", exit_code=0, passed=True, output_tail=""))
    log.close()
    text = (tmp_path / "s.log").read_text()
    assert KEY not in text and mask_secret(KEY) in text
    summary = summarize_arguments(
        {
            "path": "a.py",
            "old_string": "x" * 50,
            "new_string": "",
            "command": "y" * 500,
            "limit": 3,
            "paths": ["a", "b"],
        }
    )
    assert summary["old_string"] == "<50 chars>" and summary["new_string"] == "<0 chars>"
    assert len(summary["command"]) == 200 and summary["command"].endswith("...")
    assert summary["limit"] == 3 and summary["paths"] == '["a", "b"]'


def test_an_unwritable_log_never_raises(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    log = SessionLog(blocker / "s.log", "abc")
    log(VerifyFinished(command="x", exit_code=0, passed=True, output_tail=""))
    assert log.error and "cannot write the log" in log.error


async def test_a_huge_spill_file_is_masked_in_bounded_memory(tmp_path):
    """A command printing 1 GB peaked at ~2 GB of memory: the whole spill file was read
    in. 64 MB here, with secrets placed across every possible chunk boundary."""
    import tracemalloc

    spill = tmp_path / "huge.log"
    block = b"x" * (1024 * 1024 - 7)
    with spill.open("wb") as out:
        for n in range(64):
            out.write(block)
            out.write(KEY.encode() if n % 2 else b"\xffplain\n")
    redactor = Redactor([KEY])
    output = ToolOutput(content="...", details={"full_output_path": str(spill)})

    tracemalloc.start()
    await redactor.after_tool("bash", {}, output)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    assert peak < 16 * 1024 * 1024, f"peak {peak:,} bytes"
    data = spill.read_bytes()
    assert KEY.encode() not in data
    assert data.count(mask_secret(KEY).encode()) == 32
    assert data.count(b"\xffplain\n") == 32  # bytes that are not UTF-8 survive as they were


def test_deltas_are_masked_across_their_boundaries_and_nothing_is_lost():
    from lathe.events import AssistantReply, TextDelta, ThinkingDelta
    from lathe.types import AssistantMessage

    key = "sk-deltas-0123456789abcdefghij"
    masking = Redactor([key]).streamed()
    thought = ["think sk-de", "ltas-0123456789abcdefghij", " then sk-"]
    said = [key[:5], key[5:], "! near sk-deX", " end sk-d"]
    events = [ThinkingDelta(text=piece) for piece in thought]
    events += [TextDelta(text=piece) for piece in said]
    events.append(AssistantReply(message=AssistantMessage(text="whole")))
    out = [masked for event in events for masked in masking(event)]

    thinking = "".join(e.text for e in out if isinstance(e, ThinkingDelta))
    text = "".join(e.text for e in out if isinstance(e, TextDelta))
    assert thinking == "think sk-…ghij then sk-"  # let go when the text begins
    assert text == "sk-…ghij! near sk-deX end sk-d"  # and before the whole reply
    assert isinstance(out[-1], AssistantReply)


def test_a_secret_inside_a_longer_one_streamed_leaves_nothing_of_the_longer():
    # Masking before choosing the cut masked the password early, and the rest of the
    # URL went out in the clear: "postgres://admin:…@db.internal.example:5432/app".
    from lathe.events import TextDelta

    url = "postgres://admin:Pa55word99@db.internal.example:5432/app"
    masking = Redactor([url, "Pa55word99"]).streamed()
    said = f"it is {url} there"
    out = [e for n in range(0, len(said), 6) for e in masking(TextDelta(text=said[n : n + 6]))]
    out += masking.flush()

    assert "".join(e.text for e in out) == f"it is {mask_secret(url)} there"


def test_flush_lets_go_of_the_held_text_masked_once():
    from lathe.events import TextDelta

    masking = Redactor([KEY]).streamed()
    assert [e.text for e in masking(TextDelta(text=f"key {KEY[:6]}"))] == ["key "]
    assert [e.text for e in masking.flush()] == [KEY[:6]]
    assert masking.flush() == []
