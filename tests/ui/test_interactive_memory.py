"""`/memory` in the real interactive session (tmux, fake server): the instruction files
read so far, in order, the one a tool reached below the workspace included, then the
memory files."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.openai_server import Call, FakeOpenAIServer, Reply


def test_memory_lists_the_files_read_so_far_then_the_memory(
    launch, fake_openai: FakeOpenAIServer, workspace: Path
) -> None:
    (workspace / "AGENTS.md").write_text("Use tabs.\n")
    (workspace / "sub").mkdir()
    (workspace / "sub" / "CLAUDE.md").write_text("Never touch generated code.\n")
    (workspace / "sub" / "x.py").write_text("x = 1\n")
    fake_openai.enqueue(
        Reply("", calls=[Call("read", {"path": "sub/x.py"})]),
        Reply("", calls=[Call("memory", {"action": "add", "scope": "user", "text": "Be brief."})]),
        Reply("Read it."),
    )
    term = launch("--approval", "auto")
    term.send("/memory")
    term.wait_for(r"\(1 file, budget 32,768 bytes\)[\s\S]*1\. AGENTS\.md +10 bytes")
    term.send("read x")
    term.wait_for(r"Read it\.")
    term.send("/memory")
    screen = term.wait_for(r"\(2 files, budget[\s\S]*2\. sub/CLAUDE\.md +28 bytes[\s\S]*Be brief")
    unwrapped = screen.replace("\n", "")  # long paths wrap at the terminal's width
    assert "user.md (1 entry, 12 of 8,192 bytes)" in unwrapped
    term.send("/exit")
