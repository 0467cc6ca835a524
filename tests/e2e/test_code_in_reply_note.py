"""End to end: "code in a reply changes no file: make the change with the edit tool" is
said only where it holds. It was said of a block lathe had already applied (the file held
that code), and of a changed copy of a test the deny rules protect: an invitation to an
edit that would be refused. There, the note names the code the test uses instead.
"""

from __future__ import annotations

from tests.e2e.test_applied_code_worse import ADD_WRONG, calc_workspace
from tests.e2e.test_run_edges import lathe_run
from tests.e2e.test_small_model import VERIFY, notes_to_model, run_local_profile
from tests.fakes.openai_server import Reply

NOTE = "code in a reply changes no file"
WRONG_ADD = "Fix:\n```python\ndef add(a, b):\n    return b - a\n```"
CHANGED_TEST = "Fix the test:\n```python\ndef test_add():\n    assert add(2, 3) == -1\n```"


def test_a_block_lathe_already_applied_gets_no_note(tmp_path, fake_openai):
    ws = calc_workspace(tmp_path, ADD_WRONG)
    fake_openai.enqueue(*[Reply(WRONG_ADD)] * 3)

    run_local_profile(fake_openai, tmp_path, ws, "--max-turns", "3")

    assert "return b - a" in (ws / "calc.py").read_text()  # applied after the first
    after_repeat = notes_to_model(fake_openai.chat_bodies()[2])[-1]
    assert after_repeat.startswith("You said you were done")
    assert NOTE not in after_repeat


def test_a_changed_copy_of_a_protected_test_names_the_code_it_uses(tmp_path, fake_openai):
    ws = calc_workspace(tmp_path, ADD_WRONG)
    fake_openai.enqueue(Reply(CHANGED_TEST), Reply("done"), Reply("done"))

    run_local_profile(fake_openai, tmp_path, ws, "--max-turns", "2")

    told = notes_to_model(fake_openai.chat_bodies()[1])[-1]
    assert NOTE not in told
    assert "tests/test_calc.py, which you may not change" in told
    assert "add in calc.py (line 1)" in told


def test_without_applying_reply_code_the_note_is_judged_the_same(tmp_path, fake_openai):
    ws = calc_workspace(tmp_path, ADD_WRONG)
    fake_openai.enqueue(Reply(CHANGED_TEST), Reply("done"))

    run = lathe_run(
        fake_openai, ws, tmp_path, "--verify", VERIFY, "--deny", "edit(tests/**)",
        "--max-turns", "2", "Fix add",
    )  # fmt: skip

    told = notes_to_model(fake_openai.chat_bodies()[1])[-1]
    assert told.startswith("You said you were done"), run.stderr
    assert NOTE not in told
    assert "add in calc.py (line 1)" in told


def test_new_code_in_a_reply_still_gets_the_note(tmp_path, fake_openai):
    ws = calc_workspace(tmp_path, ADD_WRONG)
    new = "Add this:\n```python\ndef sub(a, b):\n    return a - b\n```"
    fake_openai.enqueue(Reply(new), Reply("done"))

    run_local_profile(fake_openai, tmp_path, ws, "--max-turns", "2")

    assert NOTE in notes_to_model(fake_openai.chat_bodies()[1])[-1]
