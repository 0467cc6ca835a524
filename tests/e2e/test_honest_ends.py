"""How a run's end tells what it knows, each checked with the real CLI:

- an unverified run's evidence is the test runner's outcome, not that of a pipe, a `||`
  or a command after it, and never a change made later in the same command;
- an answer continued after the output limit is the whole answer;
- a reply the provider's content filter stopped is no success, unless the check passes.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from tests.e2e.test_fake_fixes import VERIFY, _finished, _repo
from tests.e2e.test_run_edges import lathe_run
from tests.fakes import anthropic_server as claude
from tests.fakes.openai_server import Call, Reply

BREAK = Call("bash", {"command": "sed -i 's/a - b/a * b/' calc.py"})
FIX = Call("bash", {"command": "sed -i 's/a - b/a + b/' calc.py"})


def _evidence_after(tmp_path, fake_openai, change: Call, command: str) -> dict:
    """How a run without a verify command ends when the model makes `change`, runs
    `command` and says it is done."""
    ws = _repo(tmp_path)
    fake_openai.enqueue(
        Reply(calls=[change]), Reply(calls=[Call("bash", {"command": command})]), Reply("Done.")
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--json", "--approval", "full", "Fix add")
    finished = _finished(done)
    assert finished["status"] == "unverified", done.stderr
    return finished


@pytest.mark.parametrize(
    ("change", "command", "exit_code", "said"),
    [
        # The pipe's exit status is tail's: the summary said "1 failed".
        (BREAK, f"{VERIFY} 2>&1 | tail -3", 1, "(a pipe after it); its output reports 1 failing"),
        (BREAK, f"{VERIFY} || true", 1, "(`||` after it); its output reports 1 failing"),
        (FIX, f"{VERIFY} | tail -3", 0, "its output reports 0 failing, 1 passing"),
        # With pipefail the status is the runner's, as lathe's own check runs it.
        (BREAK, f"set -o pipefail; {VERIFY} | tail -3", 1, ""),
    ],
)
def test_evidence_is_the_test_runners_outcome_not_the_pipes(
    tmp_path, fake_openai, change, command, exit_code, said
):
    finished = _evidence_after(tmp_path, fake_openai, change, command)
    assert finished["evidence"] == {"command": command, "exit_code": exit_code}
    assert said in finished["reason"]
    assert bool(said) == bool(finished["reason"])


def test_evidence_whose_outcome_cannot_be_told_has_no_exit_code(tmp_path, fake_openai):
    command = f"{VERIFY} >/dev/null 2>&1; echo finished"
    finished = _evidence_after(tmp_path, fake_openai, BREAK, command)
    assert finished["evidence"] == {"command": command, "exit_code": None}
    assert "whether the tests passed is unclear" in finished["reason"]


@pytest.mark.parametrize(
    "command",
    [
        # pytest passed, then the same command broke the code.
        f"{VERIFY} && sed -i 's/a + b/a * b/' calc.py",
        f"{VERIFY}; sed -i 's/a + b/a * b/' calc.py",
        # A runner's version, help or collection runs no test.
        "python -m pytest --version",
        "python -m pytest --collect-only -q",
        "python -m pytest -h",
    ],
)
def test_a_command_that_tests_nothing_after_the_last_change_is_no_evidence(
    tmp_path, fake_openai, command
):
    finished = _evidence_after(tmp_path, fake_openai, FIX, command)
    assert finished["evidence"] is None


PARTS = (
    "The answer has three steps: 1) open the file, 2) change",
    " the sign, 3) rerun the tests.",
)


@pytest.mark.parametrize("verify", [(), ("--verify", "true")])
def test_an_answer_continued_after_the_output_limit_is_the_whole_answer(
    tmp_path, fake_openai, verify
):
    ws = _repo(tmp_path)
    fake_openai.enqueue(Reply(PARTS[0], finish_reason="length"), Reply(PARTS[1]))
    done = lathe_run(fake_openai, ws, tmp_path, "--json", *verify, "How do I fix add?")
    assert _finished(done)["answer"] == "".join(PARTS)
    fake_openai.enqueue(Reply(PARTS[0], finish_reason="length"), Reply(PARTS[1]))
    shown = lathe_run(fake_openai, ws, tmp_path, *verify, "How do I fix add?")
    assert shown.stdout.strip() == "".join(PARTS)


FILTERED = "I fixed add and here is how the rest of the migrati"


def test_a_reply_the_content_filter_stopped_is_no_success(tmp_path, fake_openai):
    # It ended `unverified`, exit 0, with no word of the filter.
    ws = _repo(tmp_path)
    fake_openai.enqueue(Reply(calls=[FIX]), Reply(FILTERED, finish_reason="content_filter"))
    done = lathe_run(fake_openai, ws, tmp_path, "--json", "--approval", "full", "Fix add")
    finished = _finished(done)
    assert (finished["status"], done.returncode) == ("provider_error", 3)
    assert "content filter stopped the model's reply" in finished["reason"]
    assert finished["answer"] == FILTERED
    assert finished["error"]["kind"] == "provider"


@pytest.mark.parametrize(("verify", "status"), [(VERIFY, "verified"), ("false", "provider_error")])
def test_a_filtered_reply_ends_as_the_check_says_when_there_is_one(
    tmp_path, fake_openai, verify, status
):
    ws = _repo(tmp_path)
    fake_openai.enqueue(Reply(calls=[FIX]), Reply(FILTERED, finish_reason="content_filter"))
    done = lathe_run(fake_openai, ws, tmp_path, "--json", "--approval", "full",
                     "--verify", verify, "Fix add")  # fmt: skip
    finished = _finished(done)
    assert finished["status"] == status, done.stderr
    assert "content filter stopped the model's reply" in finished["reason"]


def test_an_anthropic_refusal_is_a_filtered_reply(tmp_path, fake_anthropic):
    ws = _repo(tmp_path)
    fake_anthropic.enqueue(claude.Reply(FILTERED, stop_reason="refusal"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update(ANTHROPIC_API_KEY="sk-ant-test", LATHE_HOME=str(tmp_path / "home"))
    done = subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--json", "--model", "m", "--base-url",
         fake_anthropic.base_url, "-c", "models.m.provider=anthropic", "-C", str(ws),
         "Fix add"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert (_finished(done)["status"], done.returncode) == ("provider_error", 3), done.stderr


def test_a_filtered_reply_after_a_cut_one_keeps_the_whole_answer(tmp_path, fake_openai):
    # The filter's handler is asked before the cut-off one: the answer must not depend
    # on which handler kept the cut text.
    ws = _repo(tmp_path)
    fake_openai.enqueue(
        Reply(PARTS[0], finish_reason="length"), Reply(PARTS[1], finish_reason="content_filter")
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--json", "How do I fix add?")
    assert (_finished(done)["status"], _finished(done)["answer"]) == (
        "provider_error",
        "".join(PARTS),
    )


def test_the_closing_lines_say_an_unclear_outcome_in_words(tmp_path, fake_openai):
    # They said "`...` exited None".
    ws = _repo(tmp_path)
    command = f"{VERIFY} >/dev/null 2>&1; echo finished"
    fake_openai.enqueue(
        Reply(calls=[BREAK]), Reply(calls=[Call("bash", {"command": command})]), Reply("Done.")
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Fix add")
    assert done.returncode == 0, done.stderr
    assert "None" not in done.stderr
    assert f"evidence: `{command}` ran with an unclear outcome after the last edit" in done.stderr
