"""The interactive terminal, driven for real: a tmux terminal running
`python -m lathe.ui.interactive` against the fake OpenAI-compatible server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from tests.fakes.openai_server import Call, FakeOpenAIServer, Hang, Reply


def _pids(marker: str) -> list[str]:
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    return found.stdout.split()


def _user_texts(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


def _ask_then_leave(launch, question: str, answer: str) -> None:
    """One exchange in a session of its own, then Ctrl-D: a session to go on with."""
    term = launch()
    term.send(question)
    term.wait_for(answer)
    term.keys("C-d")
    term.wait_exit()


def _session_lines(home: Path) -> list[dict]:
    files = sorted((home / "sessions").glob("*/*.jsonl"))
    assert files, f"no session file under {home}"
    return [json.loads(line) for line in files[-1].read_text().splitlines() if line.strip()]


def test_a_small_task_streams_text_shows_the_approved_diff_and_command_output(
    launch, fake_openai: FakeOpenAIServer, workspace: Path, lathe_home: Path
) -> None:
    fake_openai.enqueue(
        Reply("I'll look at **app.py** first.\n\n", calls=[Call("read", {"path": "app.py"})]),
        Reply(
            "Found it: subtraction.",
            calls=[Call("edit", {"path": "app.py", "old_string": "a - b", "new_string": "a + b"})],
        ),
        Reply(
            "", calls=[Call("bash", {"command": "python -c 'import app; print(app.add(2, 3))'"})]
        ),
        Reply("Fixed: `add` now returns the **sum**.\n\n- edited `app.py`\n- checked it\n"),
    )
    term = launch()
    term.send("fix the add function")
    screen = term.wait_for(r"approve: edit app\.py")
    assert "I'll look at app.py first." in screen
    assert "read app.py" in screen
    term.wait_for(r"\+    return a \+ b")
    screen = term.screen()
    assert "-    return a - b" in screen
    assert "allow? y once" in screen
    assert workspace.joinpath("app.py").read_text() == "def add(a, b):\n    return a - b\n"

    term.send("y")
    term.wait_for(r"approve: run command")
    term.wait_for(r"\$ python -c 'import app; print\(app.add\(2, 3\)\)'")
    term.send("y")
    screen = term.wait_for(r"unverified · 4 turn")
    assert "Fixed: add now returns the sum." in screen
    assert "edited app.py" in screen
    assert "exit 0" in screen
    assert "│ 5" in screen
    assert workspace.joinpath("app.py").read_text() == "def add(a, b):\n    return a + b\n"
    # the next request carried the approved results, not denials
    tool_results = [m for m in fake_openai.chat_bodies()[-1]["messages"] if m["role"] == "tool"]
    assert len(tool_results) == 3
    assert "Denied" not in json.dumps(tool_results)
    term.keys("C-d")
    term.wait_exit()
    # the structured log beside the session records the run
    logs = sorted((lathe_home / "sessions").glob("*/*.log"))
    assert len(logs) == 1
    kinds = [json.loads(line)["kind"] for line in logs[0].read_text().splitlines()]
    assert kinds[0] == "run_start" and kinds.count("tool_call") == 3 and kinds[-1] == "run_end"


def test_a_denied_edit_tells_the_model_why_and_changes_nothing(
    launch, fake_openai: FakeOpenAIServer, workspace: Path
) -> None:
    fake_openai.enqueue(
        Reply("", calls=[Call("write", {"path": "app.py", "content": "gone\n"})]),
        Reply("Understood, I left it alone."),
    )
    term = launch()
    term.send("rewrite app.py")
    term.wait_for(r"approve: write app\.py")
    term.send("n keep the original")
    term.wait_for(r"Understood, I left it alone\.")
    assert workspace.joinpath("app.py").read_text() == "def add(a, b):\n    return a - b\n"
    result = next(m for m in fake_openai.chat_bodies()[-1]["messages"] if m["role"] == "tool")
    assert "keep the original" in result["content"]


def test_ctrl_c_kills_a_running_command_and_records_the_interruption(
    launch, fake_openai: FakeOpenAIServer, lathe_home: Path
) -> None:
    marker = f"lathe-ui-test-{uuid.uuid4().hex[:10]}"
    fake_openai.enqueue(
        Reply("Running it.", calls=[Call("bash", {"command": f"sleep 300 && echo {marker}"})]),
        Reply("Back again."),
    )
    term = launch("--approval", "full")
    term.send("run the long thing")
    term.wait_for(r"bash sleep 300")
    deadline = time.monotonic() + 10
    while not _pids(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _pids(marker), "the command never started"

    term.keys("C-c")
    term.wait_for(r"interrupted · the prompt is yours")
    deadline = time.monotonic() + 5
    while _pids(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _pids(marker), "the command's process survived the interrupt"

    term.send("carry on")
    term.wait_for(r"Back again\.")
    messages = fake_openai.chat_bodies()[-1]["messages"]
    tool = next(m for m in messages if m["role"] == "tool")
    assert "interrupted: the user stopped the run" in tool["content"]
    assert any(
        m["role"] == "assistant" and "[interrupted by the user]" in (m.get("content") or "")
        for m in messages
    )
    assert _user_texts(fake_openai.chat_bodies()[-1])[-1] == "carry on"

    lines = _session_lines(lathe_home)
    [end] = [e for e in lines if e.get("type") == "run_end" and e["status"] == "interrupted"]
    assert "Ctrl-C" in end["reason"], end  # it said Esc whatever was pressed
    assert any(
        e.get("type") == "message" and "[interrupted by the user]" in e["message"].get("text", "")
        for e in lines
    )
    # The structured log `lathe stats` reads closes the run too: it had been counted
    # "unfinished", as a crash is.
    [log] = (lathe_home / "sessions").glob("*/*.log")
    ends = [json.loads(line) for line in log.read_text().splitlines()]
    assert any(e.get("kind") == "run_end" and e.get("status") == "interrupted" for e in ends), ends


def test_esc_interrupts_a_model_that_hangs_and_a_second_ctrl_c_exits(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.enqueue(Hang(60))
    term = launch()
    term.send("think hard")
    term.wait_for(r"thinking · \d+s")
    term.keys("Escape")
    term.wait_for(r"interrupted · the prompt is yours")
    term.keys("C-c")
    term.wait_for(r"press Ctrl-C again")
    assert not term.dead()
    term.keys("C-c")
    term.wait_exit()


@pytest.mark.waits
def test_messages_typed_during_a_turn_are_queued_for_the_next(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.enqueue(
        Reply("", calls=[Call("bash", {"command": "sleep 3"})]),
        Reply("First done."),
        Reply("Second done."),
    )
    term = launch("--approval", "full")
    term.send("first task")
    term.wait_for(r"bash sleep 3")
    term.send("second task")
    term.wait_for(r"queued: second task")
    term.wait_for(r"Second done\.", timeout=20)
    bodies = fake_openai.chat_bodies()
    assert _user_texts(bodies[-1])[-1] == "second task"
    assert _user_texts(bodies[1]) == ["first task"]


def test_model_switches_mid_session(launch, fake_openai: FakeOpenAIServer) -> None:
    fake_openai.enqueue(Reply("one"), Reply("two"))
    term = launch()
    term.send("hello")
    term.wait_for(r"^one")
    term.send("/model extra words here")  # it became the model name "extra words here"
    term.wait_for(r"/model takes one model name")
    term.send("/model other-model")
    term.wait_for(r"model: fake-model → other-model")
    term.send("again")
    term.wait_for(r"^two")
    bodies = fake_openai.chat_bodies()
    assert [b["model"] for b in bodies] == ["fake-model", "other-model"]
    assert _user_texts(bodies[-1]) == ["hello", "again"]
    assert "other-model" in term.screen(history=False)


def test_a_model_switch_during_a_turn_keeps_the_rest_of_that_turn(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    # A new agent built mid-turn copied the conversation: the running turn's tool result
    # and reply were missing from every later request (an unanswered tool call: a 400).
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": "sleep 3; echo slept"})]),
        Reply("done sleeping"),
        Reply("next answer"),
    )
    term = launch("--approval", "auto")
    term.send("sleep a little")
    term.wait_for(r"sleep 3")
    term.send("/model other-model")
    term.wait_for(r"from the next message")
    term.wait_for(r"^done sleeping")
    term.send("and then")
    term.wait_for(r"^next answer")
    bodies = fake_openai.chat_bodies()
    assert [b["model"] for b in bodies] == ["fake-model", "fake-model", "other-model"]
    roles = [m["role"] for m in bodies[-1]["messages"] if m["role"] != "system"]
    assert roles == ["user", "assistant", "tool", "assistant", "user"]
    assert _user_texts(bodies[-1]) == ["sleep a little", "and then"]


def test_a_model_switch_brings_the_new_models_profile(
    launch, fake_openai: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    config = tmp_path / "user.toml"
    config.write_text('[models.tiny]\nprovider = "openai"\nprofile = "small"\n')
    (workspace / "notes.txt").write_text("old\n")
    rewrite = Call("write", {"path": "notes.txt", "content": "new\n"})
    fake_openai.enqueue(Reply("one"), Reply(calls=[rewrite]), Reply("done"))
    term = launch("--approval", "full", env={"LATHE_CONFIG": str(config)})
    term.send("hello")
    term.wait_for(r"^one")
    term.send("/model tiny")
    term.wait_for(r"model: fake-model → tiny")
    term.send("rewrite the notes")
    term.wait_for(r"^done")

    results = [m for m in fake_openai.chat_bodies()[-1]["messages"] if m["role"] == "tool"]
    assert "write only creates new files here" in results[-1]["content"]
    assert (workspace / "notes.txt").read_text() == "old\n"


def test_continue_reopens_the_last_session_with_its_history(
    launch, fake_openai: FakeOpenAIServer, lathe_home: Path
) -> None:
    fake_openai.enqueue(Reply("The answer is 42."), Reply("Still 42."))
    _ask_then_leave(launch, "what is the answer", r"The answer is 42\.")

    second = launch("--continue")
    # The prompt is up, not only the replay begun: keys typed while the history is still
    # being drawn reach the terminal before lathe reads them, and their Enter is lost.
    screen = second.wait_for(r"ctx \d+% of")
    assert "earlier in this session" in screen and "what is the answer" in screen
    second.send("and now?")
    second.wait_for(r"Still 42\.")
    assert _user_texts(fake_openai.chat_bodies()[-1]) == ["what is the answer", "and now?"]
    assert len(list((lathe_home / "sessions").glob("*/*.jsonl"))) == 1


def test_undo_reverts_the_last_turns_edit(
    launch, fake_openai: FakeOpenAIServer, workspace: Path
) -> None:
    pytest.importorskip("lathe.checkpoint")
    fake_openai.enqueue(
        Reply(
            "",
            calls=[Call("edit", {"path": "app.py", "old_string": "a - b", "new_string": "a + b"})],
        ),
        Reply("Edited."),
    )
    term = launch("--approval", "full")
    term.send("fix it")
    term.wait_for(r"Edited\.")
    assert "a + b" in workspace.joinpath("app.py").read_text()
    term.send("/undo")
    term.wait_for(r"restored: app\.py")
    # It names the turn it reverted, as `lathe undo` does, so it is not taken for another.
    term.wait_for(r'undone: turn 1 of session \S+ \("fix it", recorded ')
    assert workspace.joinpath("app.py").read_text() == "def add(a, b):\n    return a - b\n"
    term.send("/checkpoints")
    term.wait_for(r"undo of")


def test_narrow_terminal_no_color_and_c_locale(launch, fake_openai: FakeOpenAIServer) -> None:
    fake_openai.enqueue(Reply("Ünïcödé → fine, and a long line " + "word " * 30))
    term = launch(width=60, env={"NO_COLOR": "1", "LANG": "C", "LC_ALL": "C"})
    term.send("/help")
    term.wait_for(r"/verify")
    term.send("talk")
    screen = term.wait_for(r"unverified")
    assert "Traceback" not in screen
    assert "fine, and a long line" in screen
    colored = subprocess.run(
        ["tmux", "-L", term.socket, "capture-pane", "-p", "-e", "-t", term.target],
        capture_output=True,
        text=True,
    ).stdout
    assert "\x1b[3" not in colored.replace("\x1b[39m", "")  # no foreground colours


def test_a_closed_terminal_ends_the_turn_so_undo_reverts_that_turn(
    launch, fake_openai: FakeOpenAIServer, lathe_home: Path, workspace: Path, tmp_path: Path
) -> None:
    # Closing the terminal (SIGHUP) killed lathe where it stood: the turn's checkpoint
    # was never recorded, so `lathe undo` reverted the turn before it instead.
    marker = f"lathe-ui-test-{uuid.uuid4().hex[:10]}"
    command = f"echo 'x = 1' > app.py; sleep 300 && echo {marker}"
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": command})]), Reply("Back."))
    term = launch("--approval", "full")
    term.send("rewrite app.py")
    deadline = time.monotonic() + 15
    while not _pids(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _pids(marker), "the command never started"

    term.close()  # the terminal goes away: SIGHUP
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if any(e.get("type") == "run_end" for e in _session_lines(lathe_home)):
            break
        time.sleep(0.1)
    assert not _pids(marker), "the command outlived the terminal"

    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "LATHE_HOME": str(lathe_home)}
    undone = subprocess.run(
        [sys.executable, "-m", "lathe", "undo", "-C", str(workspace)], env=env,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert undone.returncode == 0, undone.stderr
    assert workspace.joinpath("app.py").read_text() == "def add(a, b):\n    return a - b\n"


def test_a_continued_session_shows_its_context_and_its_tokens_so_far(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    # The footer said "ctx 0%" and /cost "0 in · 0 out" for a session holding 16k tokens.
    usage = {"prompt_tokens": 16374, "completion_tokens": 10, "total_tokens": 16384}
    fake_openai.enqueue(Reply("The answer is 42.", usage=usage, usage_when="always"))
    _ask_then_leave(launch, "what is the answer", r"The answer is 42\.")

    second = launch("--continue")
    second.wait_for(r"ctx 50% of 32k")
    second.send("/cost")
    second.wait_for(r"this session so far: 16,374 in · 10 out")


def test_the_text_of_an_attempt_that_was_cut_is_not_glued_to_the_retry(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    # "Hello, tHello, the answer is 42.": the cut attempt's text stayed in front.
    fake_openai.enqueue(
        Reply("Hello, the answer is 42.", cut_after=3), Reply("Hello, the answer is 42.")
    )
    term = launch()
    term.send("what is it")
    screen = term.wait_for(r"the answer is 42\.")
    assert "retry 1/" in screen
    assert "Hello, tHello" not in screen and screen.count("Hello,") == 1, screen


def test_a_message_typed_while_an_approval_waits_is_queued_not_lost(
    launch, fake_openai: FakeOpenAIServer, workspace: Path
) -> None:
    # It was answered "answer y, a or n" and thrown away: neither queued nor put back.
    fake_openai.enqueue(
        Reply("", calls=[Call("write", {"path": "app.py", "content": "gone\n"})]),
        Reply("Left it."),
        Reply("Docs updated."),
    )
    term = launch()
    term.send("rewrite app.py")
    term.wait_for(r"approve: write app\.py")
    term.send("also update the docs please")
    term.wait_for(r"queued for after this turn: also update the docs please")
    term.send("n")
    term.wait_for(r"Docs updated\.")
    assert _user_texts(fake_openai.chat_bodies()[-1])[-1] == "also update the docs please"


def test_text_put_back_after_an_interrupt_is_continued_at_its_end(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    # The cursor stayed at the start: " please" went in front ("> pleasefix the bug").
    fake_openai.enqueue(Reply("", calls=[Call("bash", {"command": "sleep 30"})]), Reply("Ok."))
    term = launch("--approval", "full")
    term.send("first task")
    term.wait_for(r"bash sleep 30")
    term.send("fix the bug")
    term.wait_for(r"queued: fix the bug")
    term.keys("Escape")
    term.wait_for(r"interrupted · the prompt is yours")
    term.type(" please")
    term.wait_for(r"> fix the bug please")


def test_a_file_whose_path_has_spaces_is_attached_when_completion_wrote_it(
    launch, fake_openai: FakeOpenAIServer, workspace: Path
) -> None:
    # Tab wrote `@dir with space/my file.txt`; the reference stopped at the first space
    # and nothing was attached, without a word.
    (workspace / "dir with space").mkdir()
    (workspace / "dir with space" / "my file.txt").write_text("the notes inside\n")
    fake_openai.enqueue(Reply("Summarised."))
    term = launch()
    term.type("summarize @my")
    time.sleep(0.5)
    term.keys("Tab")
    term.wait_for(r'@"dir with space/my file\.txt"')
    term.keys("Enter")  # takes the completion
    time.sleep(0.3)
    term.keys("Enter")  # sends
    term.wait_for(r"attached: dir with space/my file\.txt")
    term.wait_for(r"Summarised\.")
    assert "the notes inside" in str(fake_openai.chat_bodies()[-1]["messages"])


def test_a_message_the_provider_failed_on_is_said_to_go_with_the_next(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    # The failed message was silently merged into the next one.
    from tests.fakes.openai_server import unauthorized

    fake_openai.enqueue(unauthorized(), Reply("Both answered."))
    term = launch()
    term.send("first question")
    term.wait_for(r"sent again with your next one")
    term.send("second question")
    term.wait_for(r"Both answered\.")
    assert _user_texts(fake_openai.chat_bodies()[-1]) == ["first question\n\nsecond question"]


def test_the_window_the_server_told_is_the_one_the_footer_and_model_show(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    # "working within 8,192" said the warning, while the footer kept "of 32k" and /model
    # "window 32,768".
    from tests.fakes.openai_server import context_too_long

    fake_openai.enqueue(context_too_long(), context_too_long())
    term = launch()
    term.send("hello")
    term.wait_for(r"window is 8,192 tokens")
    term.wait_for(r"ctx \d+% of 8k")
    term.send("/model")
    term.wait_for(r"window 8,192\)")


def test_alt_enter_still_starts_a_new_line_with_esc_made_quick(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    # Esc waited 1.6 s for a possible Enter after it; Alt-Enter (ESC and CR sent
    # together) must still be a newline, not a sent message.
    term = launch()
    term.type("firstline")
    term.keys("M-Enter")
    term.type("secondline")
    term.wait_for(r"> firstline\n\s+secondline")
    assert fake_openai.requests == []


def test_a_question_that_starts_like_an_answer_is_not_taken_for_one(
    launch, fake_openai: FakeOpenAIServer, workspace: Path
) -> None:
    # "a question first: ..." was read as "a": allowed always, and the question lost.
    fake_openai.enqueue(
        Reply("", calls=[Call("write", {"path": "app.py", "content": "gone\n"})]),
        Reply("Left it."),
        Reply("It rewrites app.py."),
    )
    before = (workspace / "app.py").read_text()
    term = launch()
    term.send("rewrite app.py")
    term.wait_for(r"approve: write app\.py")
    term.send("a question first: what does it write?")
    term.wait_for(r"queued for after this turn: a question first")
    term.send("n")
    term.wait_for(r"It rewrites app\.py\.")
    assert (workspace / "app.py").read_text() == before
    assert _user_texts(fake_openai.chat_bodies()[-1])[-1] == "a question first: what does it write?"


def test_a_slash_command_typed_while_an_approval_waits_is_not_sent_to_the_model(
    launch, fake_openai: FakeOpenAIServer, workspace: Path
) -> None:
    fake_openai.enqueue(
        Reply("", calls=[Call("write", {"path": "app.py", "content": "gone\n"})]),
        Reply("Left it."),
    )
    term = launch()
    term.send("rewrite app.py")
    term.wait_for(r"approve: write app\.py")
    term.send("/model")
    term.wait_for(r"answer the approval first")
    term.send("n")
    term.wait_for(r"Left it\.")
    assert "/model" not in json.dumps(fake_openai.chat_bodies())


def test_escape_codes_a_model_writes_are_shown_not_obeyed(
    launch, fake_openai: FakeOpenAIServer, workspace: Path
) -> None:
    # The command to approve showed as `$ ls -la` alone: its start was erased by the
    # escape codes it held, and `y` ran `touch PWNED`.
    sneaky = "touch PWNED; #\x1b[2K\x1b[1G    ls -la"
    fake_openai.enqueue(
        Reply("", calls=[Call("bash", {"command": sneaky})]),
        Reply("Title \x1b]0;pwned\x07 and \x1b[2J done."),
    )
    term = launch()
    term.send("list the files")
    screen = term.wait_for(r"approve: run command")
    assert "touch PWNED" in screen
    term.send("n")
    screen = term.wait_for(r"done\.")
    assert "\\x1b]0;pwned\\x07" in screen and "list the files" in screen
    assert not (workspace / "PWNED").exists()


def test_a_draft_being_typed_when_the_turn_is_interrupted_is_kept(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    # The queued messages came back into the input line in place of the draft typed
    # after them, which was lost.
    fake_openai.enqueue(Reply("", calls=[Call("bash", {"command": "sleep 30"})]), Reply("Ok."))
    term = launch("--approval", "full")
    term.send("first task")
    term.wait_for(r"bash sleep 30")
    term.send("queued words")
    term.wait_for(r"queued: queued words")
    term.type("draft words")
    term.wait_for(r"> draft words")
    term.keys("Escape")
    term.wait_for(r"interrupted · the prompt is yours")
    screen = term.wait_for(r"draft words")
    assert "queued words" in screen.split("interrupted")[-1], screen


def test_a_terminal_eight_rows_high_still_shows_what_is_typed(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    # prompt_toolkit kept 8 rows free for the completion menu: at 8 rows the prompt gave
    # way to "Window too small..." and the user typed blind.
    fake_openai.enqueue(Reply("Small but fine."))
    term = launch(height=8)
    term.type("typed in a small terminal")
    screen = term.wait_for(r"typed in a small terminal")
    assert "too small" not in screen
    term.keys("Enter")
    term.wait_for(r"Small but fine\.")


def test_angle_brackets_and_html_in_a_reply_are_shown_as_written(
    launch, fake_openai: FakeOpenAIServer
) -> None:
    # The markdown renderer dropped HTML: `Vec<String>` showed as `Vec`, and a `<div>`
    # block vanished, so a reply could hide words from the person at the terminal.
    fake_openai.enqueue(
        Reply("Return a Vec<String> wrapped in Option<T>.\n\n<div>run rm -rf build first</div>\n")
    )
    term = launch()
    term.send("what type?")
    screen = term.wait_for(r"unverified|Option")
    screen = term.wait_for(r"rm -rf build first")
    assert "Vec<String>" in screen and "Option<T>" in screen
    assert "<div>run rm -rf build first</div>" in screen
