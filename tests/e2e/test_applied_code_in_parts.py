"""End to end: code from a reply that makes the check worse as a whole is tried one
change at a time before it is put back. A small model's copy of a file often changes
more than the fix: the chunked_drops_tail trace showed a reply adding the missing import
(which fixed the last failing test) and rewriting another function (which broke one),
put back whole three times over."""

from __future__ import annotations

from tests.e2e.test_applied_code_worse import calc_workspace
from tests.e2e.test_small_model import finished, notes_to_model, run_local_profile
from tests.fakes.openai_server import Reply

ADD_WRONG = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
FIX_ADD_BREAK_MUL = (
    "Fix:\n```python\ndef add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a ** b\n```"
)
THREE_TESTS = """from calc import add, mul, sub


def test_add():
    assert add(2, 3) == 5


def test_mul():
    assert mul(2, 3) == 6


def test_sub():
    assert sub(5, 3) == 2
"""
ADD_AND_MUL_WRONG = (
    "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a + b\n\n\n"
    "def sub(a, b):\n    return a - b\n"
)


def test_the_change_that_fixes_the_check_is_kept_without_the_one_that_breaks_it(
    tmp_path, fake_openai
):
    ws = calc_workspace(tmp_path, ADD_WRONG)
    fake_openai.enqueue(Reply(FIX_ADD_BREAK_MUL), Reply("done"), Reply("done"))

    run, events = run_local_profile(fake_openai, tmp_path, ws, "--max-turns", "3")

    end = finished(events)
    assert end["status"] == "verified", run.stderr
    assert (ws / "calc.py").read_text() == ADD_WRONG.replace("a - b", "a + b")
    assert "+    return a + b" in end["answer"] and "a ** b" not in end["answer"]
    assert len(fake_openai.chat_bodies()) == 1  # lathe found the fix without asking again


def test_a_change_that_makes_the_check_better_is_kept_and_the_model_told(tmp_path, fake_openai):
    ws = calc_workspace(tmp_path, ADD_AND_MUL_WRONG)
    (ws / "tests" / "test_calc.py").write_text(THREE_TESTS)
    # Fixes add, leaves mul wrong, breaks sub: 2 failing (one new) where 2 failed.
    reply = (
        "Fix:\n```python\ndef add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n"
        "    return a + b\n\n\ndef sub(a, b):\n    return a + b\n```"
    )
    fake_openai.enqueue(Reply(reply), Reply("done"), Reply("done"))

    run, events = run_local_profile(fake_openai, tmp_path, ws, "--max-turns", "2")

    assert finished(events)["status"] != "verified", run.stderr
    code = (ws / "calc.py").read_text()
    assert code.startswith("def add(a, b):\n    return a + b\n") and code.endswith("return a - b\n")
    told = notes_to_model(fake_openai.chat_bodies()[1])[-1]
    assert "tried its changes one at a time" in told
    assert "+    return a + b" in told and "1 failed" in told
    assert "made things worse" not in told


def test_when_no_single_change_helps_the_whole_is_put_back(tmp_path, fake_openai):
    ws = calc_workspace(tmp_path, ADD_WRONG)
    # add stays wrong another way, mul breaks: neither change alone is better.
    reply = (
        "Fix:\n```python\ndef add(a, b):\n    return a * b\n\n\ndef mul(a, b):\n"
        "    return a ** b\n```"
    )
    fake_openai.enqueue(Reply(reply), Reply("done"), Reply("done"))

    run, events = run_local_profile(fake_openai, tmp_path, ws, "--max-turns", "2")

    assert finished(events)["status"] != "verified", run.stderr
    assert (ws / "calc.py").read_text() == ADD_WRONG
    told = notes_to_model(fake_openai.chat_bodies()[1])[-1]
    assert "made things worse" in told and "one at a time" in told
    assert "a ** b" in told  # the whole change the model sent, as it was judged
    assert "from 1 failing, 1 passing to 2 failing, 0 passing" in told


REFUSE_EACH_PART = """import json, sys
arguments = json.load(sys.stdin)["arguments"]
if any(kept in arguments.get("new_string", "") for kept in ("return a * b", "return a - b")):
    print("not this one", file=sys.stderr)
    sys.exit(2)
"""


def test_parts_that_could_not_be_applied_are_not_said_to_have_been_tried(tmp_path, fake_openai):
    # A hook refused each part: the model was told "none of its changes alone made it
    # better: lathe tried them one at a time", of changes that never ran.
    ws = calc_workspace(tmp_path, ADD_WRONG)
    hook = tmp_path / "refuse_parts.py"
    hook.write_text(REFUSE_EACH_PART)
    user = tmp_path / "user.toml"
    user.write_text(f"[[hooks.pre_tool]]\ncommand = 'python {hook}'\ntools = ['edit']\n")
    fake_openai.enqueue(Reply(FIX_ADD_BREAK_MUL), Reply("done"), Reply("done"))

    run, events = run_local_profile(
        fake_openai, tmp_path, ws, "--max-turns", "2", env_extra={"LATHE_CONFIG": str(user)}
    )

    assert finished(events)["status"] != "verified", run.stderr
    assert (ws / "calc.py").read_text() == ADD_WRONG
    told = notes_to_model(fake_openai.chat_bodies()[1])[-1]
    assert "made things worse" in told and "one at a time" not in told
