"""End to end: what the local model's profile does on the kinds of task it failed in a
held-out evaluation (issue 20): a short first request, a server that could not parse
its tool call, a hint that never points at a file it may not change, a refusal that
shows the call to make, code of its that made things worse, and an answer that says
what lathe changed.

Each test runs `lathe run` on a small workspace against the scripted fake server with
the "local" profile (the embedded model's), as a user of `--model local` gets it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.e2e.test_calculator import PLAIN_PYTEST
from tests.fakes.openai_server import Call, ErrorReply, Reply

VERIFY = "python -m pytest -q -p no:cacheprovider"
LLAMA_PARSE_ERROR = (
    "Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] parse "
    "error at line 1, column 512: syntax error while parsing value - invalid string: "
    "missing closing quote; last read: '\"def mean(values): return"
)
STATS = '''def mean(values):
    """The arithmetic mean of `values`."""
    return sum(values) / (len(values) + 1)


def spread(values):
    return max(values) - min(values)
'''
STATS_TESTS = """from stats import mean, spread


def test_mean():
    assert mean([1, 2, 3]) == 2


def test_mean_of_one():
    assert mean([4]) == 4


def test_spread():
    assert spread([1, 5, 3]) == 4
"""
THE_FIX = {
    "path": "stats.py",
    "old_string": "    return sum(values) / (len(values) + 1)",
    "new_string": "    return sum(values) / len(values)",
}


def stats_workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "tests").mkdir(parents=True)
    (ws / "stats.py").write_text(STATS)
    (ws / "tests" / "test_stats.py").write_text(STATS_TESTS)
    return ws


def run_local_profile(
    server,
    tmp_path: Path,
    ws: Path,
    *args: str,
    task: str = "Make the failing tests pass",
    env_extra: dict[str, str] | None = None,
) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """`lathe run --json --profile local` on `ws` against the fake server, with the
    tests read-only as in the README's command; the result and its events."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update(PLAIN_PYTEST, LATHE_HOME=str(tmp_path / "home"), OPENAI_API_KEY="sk-test")
    env.update(env_extra or {})
    run = subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--json", "--model", "m", "--base-url",
         server.base_url, "--profile", "local", "-C", str(ws), "--verify", VERIFY,
         "--deny", "edit(tests/**)", "--deny", "write(tests/**)", *args, task],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    events = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    return run, events


def finished(events: list[dict]) -> dict:
    return next(e for e in events if e["type"] == "run_finished")


def notes_to_model(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


# 1. a first request a small model reads in seconds, not minutes


def test_the_first_request_is_small_and_the_next_one_extends_it(tmp_path, fake_openai):
    fake_openai.enqueue(Reply(calls=[Call("edit", THE_FIX)]), Reply("Fixed mean."))

    run, events = run_local_profile(fake_openai, tmp_path, stats_workspace(tmp_path))

    assert finished(events)["status"] == "verified", run.stderr
    first, second = fake_openai.chat_bodies()[:2]
    assert [t["function"]["name"] for t in first["tools"]] == [
        "read", "edit", "write", "bash", "grep",
    ]  # fmt: skip
    for spec in first["tools"]:  # one line each, parameters without prose
        assert "\n" not in spec["function"]["description"]
        assert len(spec["function"]["description"]) < 100
        for parameter in spec["function"]["parameters"]["properties"].values():
            assert "description" not in parameter
    system = first["messages"][0]["content"]
    assert "def mean(values):" in system  # the code under test is in view...
    assert "def test_mean" not in system  # ...the tests are not: their failures are
    assert "tests/test_stats.py" in system  # still listed
    assert "The code behind the failure" not in json.dumps(first)  # in view already
    whole = json.dumps(first["messages"]) + json.dumps(first["tools"])
    assert len(whole) < 4500, len(whole)  # about 1,100 tokens
    # Nothing of the first request changes in the second: the server's cache reuses it.
    assert second["messages"][: len(first["messages"])] == first["messages"]
    assert second["tools"] == first["tools"]


# 1. (and) the code a failure runs through, when the snapshot cannot hold it

COUPONS = '''"""Coupon codes and what they take off."""

import re
from dataclasses import dataclass


class UnknownCoupon(KeyError):
    pass


@dataclass
class Coupon:
    code: str
    percent: int


def lookup(code: str) -> Coupon:
    if match := re.fullmatch(r"SAVE(\\d+)", code):
        return Coupon(code, int(match.group(1)))
    raise UnknownCoupon(code)
''' + "".join(
    f'\n\ndef rule_{n}(total: int) -> int:\n    """Discount rule {n} of the catalogue, '
    f'kept for the old checkout."""\n    return total - {n}\n'
    for n in range(40)
)
CART = """from shop import coupons


def apply_coupon(code: str) -> coupons.Coupon:
    return coupons.lookup(code)
"""
CART_TESTS = """from shop.cart import apply_coupon


def test_lower_case_codes_work():
    assert apply_coupon("save10").percent == 10
"""
NORMALIZE = {
    "path": "shop/coupons.py",
    "old_string": "def lookup(code: str) -> Coupon:\n",
    "new_string": "def lookup(code: str) -> Coupon:\n    code = code.strip().upper()\n",
}


def test_a_failing_check_shows_the_code_it_ran_through_when_none_is_in_view(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    (ws / "shop").mkdir(parents=True)
    (ws / "tests").mkdir()
    (ws / "shop" / "__init__.py").write_text("")
    (ws / "shop" / "coupons.py").write_text(COUPONS)
    (ws / "shop" / "cart.py").write_text(CART)
    (ws / "tests" / "test_cart.py").write_text(CART_TESTS)
    fake_openai.enqueue(Reply(calls=[Call("edit", NORMALIZE)]), Reply("Codes are normalised."))

    run, events = run_local_profile(fake_openai, tmp_path, ws)

    assert finished(events)["status"] == "verified", run.stderr
    first = fake_openai.chat_bodies()[0]
    assert "def lookup" not in first["messages"][0]["content"]  # too big for the snapshot
    baseline = notes_to_model(first)[-1]
    code = baseline.split("The code behind the failure, from files you may change:")[1]
    # Both functions the traceback passes through, numbered as read numbers them, so
    # the edit above can quote them; none of the test, which may not change.
    assert "shop/cart.py, lines 4-5:\n     4\tdef apply_coupon(code: str)" in code
    assert "     5\t    return coupons.lookup(code)" in code
    assert "shop/coupons.py, lines 17-20:\n    17\tdef lookup(code: str) -> Coupon:" in code
    assert "    20\t    raise UnknownCoupon(code)" in code
    assert "def test_" not in code and "rule_" not in code
    assert len(json.dumps(first)) < 6000, len(json.dumps(first))  # about 1,500 tokens


# 1. (and) one call a reply: the rest of a reply is not waited for


def test_only_the_first_call_of_a_reply_is_read_and_run(tmp_path, fake_openai):
    many = [Call("edit", THE_FIX)] + [Call("bash", {"command": f"echo {n}"}) for n in range(12)]
    # A chunk every 0.2 s, as a CPU writes them: reading all thirteen calls takes 10 s.
    fake_openai.enqueue(Reply(calls=many, trickle_s=0.2), Reply("Fixed mean."))

    run, events = run_local_profile(fake_openai, tmp_path, stats_workspace(tmp_path))

    assert finished(events)["status"] == "verified", run.stderr
    started = [e["name"] for e in events if e["type"] == "tool_started"]
    assert started == ["edit"]
    replayed = [m for m in fake_openai.chat_bodies()[1]["messages"] if m["role"] == "assistant"]
    assert [len(m["tool_calls"]) for m in replayed] == [1]
    requests = [e for e in events if e["type"] == "model_request"]
    assert requests[0]["latency_ms"] < 6000, requests[0]  # closed at the second call


# 5. the server could not parse the model's tool call


def test_a_tool_call_the_server_cannot_parse_is_asked_again_not_retried(tmp_path, fake_openai):
    fake_openai.enqueue(
        ErrorReply(500, LLAMA_PARSE_ERROR, "server_error"),
        Reply(calls=[Call("edit", THE_FIX)]),
        Reply("Fixed mean."),
    )

    run, events = run_local_profile(fake_openai, tmp_path, stats_workspace(tmp_path))

    assert finished(events)["status"] == "verified", run.stderr
    bodies = fake_openai.chat_bodies()
    assert len(bodies) == 3  # no retry of the same request: the model writes it again
    told = notes_to_model(bodies[1])[-1]
    assert "could not be read" in told and "valid JSON" in told
    assert not any(e["type"] == "retry" for e in events)
    assert any("could not parse" in e.get("message", "") for e in events if e["type"] == "notice")
    assert "overloaded" not in run.stderr + run.stdout


def test_a_parse_failure_reported_mid_stream_is_the_same_and_three_in_a_row_is_stuck(
    tmp_path, fake_openai
):
    broken = Reply("I will fix", error_after=1, error=LLAMA_PARSE_ERROR)
    fake_openai.enqueue(broken, broken, broken)

    run, events = run_local_profile(fake_openai, tmp_path, stats_workspace(tmp_path))

    end = finished(events)
    assert end["status"] == "stuck", end
    assert "could not parse" in end["reason"]
    assert len(fake_openai.chat_bodies()) == 3
    assert run.returncode == 1


# 2. a hint never points at a file the rules forbid changing


def test_text_found_only_in_a_protected_test_names_the_code_under_test(tmp_path, fake_openai):
    from_the_test = {
        "path": "stats.py",
        "old_string": "    assert mean([4]) == 4",
        "new_string": "    assert mean([4]) == 4.0",
    }
    the_test_itself = {**from_the_test, "path": "tests/test_stats.py"}
    fake_openai.enqueue(
        Reply(calls=[Call("edit", from_the_test)]),
        Reply(calls=[Call("edit", the_test_itself)]),
        Reply(calls=[Call("edit", THE_FIX)]),
        Reply("Fixed mean."),
    )

    run, events = run_local_profile(fake_openai, tmp_path, stats_workspace(tmp_path))

    assert finished(events)["status"] == "verified", run.stderr
    last = fake_openai.chat_bodies()[-1]["messages"]
    results = [m["content"] for m in last if m["role"] == "tool"]
    not_found, refused = results[0], results[1]
    assert "did you mean" not in not_found
    assert "occurs only in tests/test_stats.py, which you may not change" in not_found
    assert "mean in stats.py (line 1)" in not_found
    assert "Denied" in refused or "denied" in refused
    assert "The code tests/test_stats.py uses: mean in stats.py (line 1)" in refused


# 3. write refused on an existing file: the exact edit call, and no endless asking


def test_a_refused_write_shows_the_edit_call_that_makes_the_same_change(tmp_path, fake_openai):
    fixed = STATS.replace("(len(values) + 1)", "len(values)")
    ws = stats_workspace(tmp_path)
    suggested: list[dict] = []

    def respond(body: dict):
        tool_results = [m for m in body["messages"] if m["role"] == "tool"]
        if not tool_results:
            return Reply(calls=[Call("write", {"path": "stats.py", "content": fixed})])
        if not suggested:
            said = tool_results[-1]["content"]
            suggested.append(json.loads(said[said.index("{") :]))
            return Reply(calls=[Call("edit", suggested[0])])
        return Reply("Fixed mean.")

    fake_openai.responder = respond

    run, events = run_local_profile(fake_openai, tmp_path, ws)

    assert finished(events)["status"] == "verified", run.stderr
    assert [{k: v.rstrip("\n") for k, v in call.items()} for call in suggested] == [THE_FIX]
    assert (ws / "stats.py").read_text() == fixed


def test_asking_to_write_an_existing_file_again_and_again_is_a_stall(tmp_path, fake_openai):
    fixed = STATS.replace("(len(values) + 1)", "len(values)")
    # Each time a little different, as the model's were: not the same call repeated.
    fake_openai.enqueue(
        *[Reply(calls=[Call("write", {"path": "stats.py", "content": f"{fixed}# v{n}\n"})])
          for n in range(10)]
    )  # fmt: skip

    _, events = run_local_profile(fake_openai, tmp_path, stats_workspace(tmp_path))

    end = finished(events)
    assert end["status"] == "stuck", end
    assert "write" in end["reason"] and "refused" in end["reason"]
    assert any(e["type"] == "stall_nudge" for e in events)  # told once first
    assert end["turns"] < 10


def test_a_reply_that_repeats_an_earlier_one_is_followed_by_a_hotter_sample(tmp_path, fake_openai):
    # The 1.5B, told its fix changed nothing, sent the same code back: at its low
    # temperature the same context gives the same reply. A repeat is not checked again
    # (nothing changed), the model is told, the next sample is drawn hotter, and the
    # temperature comes back down once a reply is new.
    code = "def spread(values):\n    return max(values) - min(values)\n"
    same = f"Here is the fix:\n\n```python\n{code}```\n"
    fake_openai.enqueue(
        Reply(same),
        Reply("Let me look again.\n\n" + same),  # other words, the same code: a repeat
        Reply(calls=[Call("read", {"path": "stats.py"})]),
        Reply(calls=[Call("edit", THE_FIX)]),
        Reply("Fixed mean."),
    )

    run, events = run_local_profile(fake_openai, tmp_path, stats_workspace(tmp_path))

    assert finished(events)["status"] == "verified", run.stderr
    bodies = fake_openai.chat_bodies()
    assert [body.get("temperature") for body in bodies] == [0.2, 0.2, 0.8, 0.2, 0.2]
    assert "repeats one you sent before" in notes_to_model(bodies[2])[-1]
    checks = [e for e in events if e["type"] == "verify_started"]
    assert len(checks) == 3  # the baseline, the first "done", the last: not the repeat


# 4. code applied from a reply that made things worse is put back at once


def test_applied_code_that_breaks_more_tests_is_reverted_and_the_model_told(tmp_path, fake_openai):
    ws = stats_workspace(tmp_path)
    worse = (
        "The bug is in spread:\n\n```python\ndef spread(values):\n"
        "    return max(values) + min(values)\n```"
    )
    fake_openai.enqueue(Reply(worse), Reply(calls=[Call("edit", THE_FIX)]), Reply("Fixed mean."))

    run, events = run_local_profile(fake_openai, tmp_path, ws)

    assert finished(events)["status"] == "verified", run.stderr
    told = notes_to_model(fake_openai.chat_bodies()[1])[-1]
    assert "made things worse" in told
    assert "from 2 failing, 1 passing to 3 failing, 0 passing" in told
    assert "put the files back" in told
    # The file is as before that reply, and the model's own edit of it was not refused.
    assert "max(values) - min(values)" in (ws / "stats.py").read_text()
    edits = [e for e in events if e["type"] == "tool_finished" and e["name"] == "edit"]
    assert not edits[-1]["is_error"], edits[-1]


# 6. the answer says what lathe changed, not advice to change it


def test_when_lathe_applied_the_fix_the_answer_says_what_changed(tmp_path, fake_openai):
    advice = (
        "To fix this, you need to modify `mean` so it divides by the count:\n\n```python\n"
        "def mean(values):\n"
        '    """The arithmetic mean of `values`."""\n'
        "    return sum(values) / len(values)\n```\n\nThen the tests should pass."
    )
    fake_openai.enqueue(Reply(advice))

    run, events = run_local_profile(fake_openai, tmp_path, stats_workspace(tmp_path))

    end = finished(events)
    assert end["status"] == "verified", run.stderr
    said = "lathe applied the change the model's reply showed, to stats.py"
    assert end["answer"].startswith(said)
    assert "-    return sum(values) / (len(values) + 1)" in end["answer"]
    assert "+    return sum(values) / len(values)" in end["answer"]
    assert "you need to modify" not in end["answer"]


def test_the_code_behind_a_failure_never_quotes_a_file_the_model_may_not_read(
    tmp_path, fake_openai
):
    # A check whose output named `config/.env` had its secrets quoted to the model as
    # "the code behind the failure", a read rule and a secret-like name regardless.
    ws = tmp_path / "ws"
    (ws / "config").mkdir(parents=True)
    (ws / "tests").mkdir()
    (ws / "app.py").write_text("# filler\n" * 400 + "def answer():\n    return 41\n")
    (ws / "config" / ".env").write_text("DB_PASSWORD=hunter2-env\n")
    (ws / "config" / "keys.txt").write_text("API_KEY=sk-live-denied\n")
    (ws / "notes.py").symlink_to("config/keys.txt")
    (ws / "tests" / "test_app.py").write_text(
        "from app import answer\n\n\ndef test_answer():\n"
        "    print('File \"config/.env\", line 1, in <module>')\n"
        "    print('File \"config/keys.txt\", line 1, in <module>')\n"
        "    print('File \"notes.py\", line 1, in <module>')\n"
        "    print('File \"app.py\", line 402, in answer')\n"
        "    assert answer() == 42\n"
    )
    fake_openai.enqueue(Reply("Nothing to do."), Reply("Still nothing."), Reply("No."))

    run, _ = run_local_profile(
        fake_openai, tmp_path, ws, "--deny", "read(config/keys.txt)", "--max-turns", "3"
    )

    sent = json.dumps(fake_openai.chat_bodies())
    assert "def answer():" in sent, run.stderr  # the code behind the failure is shown...
    assert "hunter2-env" not in sent and "sk-live-denied" not in sent  # ...never these


def test_applied_code_that_makes_the_check_hang_is_put_back(tmp_path, fake_openai):
    # A check killed at its time limit printed no counts, so lathe's own applied code,
    # which never finished, was not "worse" and stayed in the file.
    ws = stats_workspace(tmp_path)
    original = (ws / "stats.py").read_text()
    hang = (
        'The fix:\n\n```python\ndef mean(values):\n    """The arithmetic mean of `values`."""\n'
        "    return sum(iter(int, 1)) / len(values)\n```"
    )
    fake_openai.enqueue(Reply(hang), Reply("I could not fix it."), Reply("Sorry."))

    run, events = run_local_profile(
        fake_openai, tmp_path, ws, "-c", "agent.verify_timeout_s=5", "--max-turns", "2"
    )

    assert finished(events)["status"] != "verified", run.stderr
    assert (ws / "stats.py").read_text() == original
    assert "to a check that timed out" in json.dumps(fake_openai.chat_bodies()[1])
