"""End to end: a model profile chosen in a config file switches each small-model
behaviour and each wire quirk on, for a model on the user's own server (`--base-url`);
a small window alone switches none of them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.e2e.test_calculator import EXAMPLE, PLAIN_PYTEST
from tests.fakes.openai_server import Call, Reply

VERIFY = "python -m pytest -q -p no:cacheprovider"
NEW_CALCULATOR = (
    "def tax(income: float, rate: float) -> float:\n"
    "    if income < 0:\n"
    '        raise ValueError("income must not be negative")\n'
    "    return income * (rate / 100)\n"
)
# The fix shown in prose instead of made with edit, as small models do.
SHOWN_FIX = (
    "Here is the fix:\n\n"
    "```python\n"
    "def tax(income: float, rate: float) -> float:\n"
    '    """Tax owed on `income` at `rate` percent. Negative income is an error."""\n'
    "    if income < 0:\n"
    '        raise ValueError("income must not be negative")\n'
    "    return income * (rate / 100)\n"
    "```"
)


def lathe_run(server, tmp_path: Path, config: str, *args: str) -> subprocess.CompletedProcess:
    """`lathe run --model m --base-url FAKE` on a copy of the calculator, with `config` as
    the user's config file and a private LATHE_HOME."""
    ws = tmp_path / "calc"
    if not ws.exists():
        shutil.copytree(EXAMPLE, ws)
    user_file = tmp_path / "user.toml"
    user_file.write_text(config)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update(
        PLAIN_PYTEST,
        LATHE_HOME=str(tmp_path / "home"),
        LATHE_CONFIG=str(user_file),
        OPENAI_API_KEY="sk-test-profiles",
    )
    return subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url", server.base_url,
         "-C", str(ws), *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def tool_results(server) -> list[str]:
    return [m["content"] for m in server.chat_bodies()[-1]["messages"] if m["role"] == "tool"]


def replace_the_calculator() -> list[Reply]:
    return [
        Reply(calls=[Call("read", {"path": "calculator.py"})]),
        Reply(calls=[Call("write", {"path": "calculator.py", "content": NEW_CALCULATOR})]),
        Reply("Rewrote it."),
    ]


# the small-model care, switched on by one line


def test_profile_small_forbids_write_replacing_a_file(tmp_path, fake_openai):
    fake_openai.enqueue(*replace_the_calculator())

    result = lathe_run(fake_openai, tmp_path, 'profile = "small"\n', "fix it")

    assert result.returncode == 0, result.stderr
    assert "write only creates new files here" in tool_results(fake_openai)[-1]
    assert (tmp_path / "calc" / "calculator.py").read_text() == (
        EXAMPLE / "calculator.py"
    ).read_text()


def test_profile_small_applies_code_a_reply_shows_after_a_failed_check(tmp_path, fake_openai):
    fake_openai.enqueue(Reply(SHOWN_FIX))

    result = lathe_run(fake_openai, tmp_path, 'profile = "small"\n', "--verify", VERIFY, "fix")

    assert result.returncode == 0, result.stderr
    assert "edit calculator.py (the code in the reply)" in result.stderr
    assert "status: verified after 1 turn" in result.stderr


def test_a_models_entry_names_its_profile(tmp_path, fake_openai):
    fake_openai.enqueue(*replace_the_calculator())
    config = '[models.m]\nprovider = "openai"\nprofile = "small"\n'

    result = lathe_run(fake_openai, tmp_path, config, "fix it")

    assert result.returncode == 0, result.stderr
    assert "write only creates new files here" in tool_results(fake_openai)[-1]


# a small window is no reason


SMALL_WINDOW = '[models.m]\nprovider = "openai"\ncontext_window = 8192\n'


def test_a_small_window_alone_lets_write_replace_a_file(tmp_path, fake_openai):
    fake_openai.enqueue(*replace_the_calculator())

    result = lathe_run(fake_openai, tmp_path, SMALL_WINDOW, "fix it")

    assert result.returncode == 0, result.stderr
    assert (tmp_path / "calc" / "calculator.py").read_text() == NEW_CALCULATOR


def test_a_small_window_alone_applies_no_code_from_a_reply(tmp_path, fake_openai):
    fake_openai.enqueue(Reply(SHOWN_FIX))
    fake_openai.responder = lambda request: Reply("I showed the fix.")

    result = lathe_run(
        fake_openai, tmp_path, SMALL_WINDOW, "--verify", VERIFY, "--max-turns", "2", "fix"
    )

    assert result.returncode == 1, result.stderr
    assert "(the code in the reply)" not in result.stderr
    assert (tmp_path / "calc" / "calculator.py").read_text() == (
        EXAMPLE / "calculator.py"
    ).read_text()


# the wire


def test_the_output_limit_field_follows_the_profile_not_the_url(tmp_path, fake_openai):
    fake_openai.enqueue(Reply("nothing to do"))
    config = '[profiles.strict]\nmax_tokens_field = "max_completion_tokens"\n'

    result = lathe_run(fake_openai, tmp_path, config, "--profile", "strict", "look")

    assert result.returncode == 0, result.stderr
    [body] = fake_openai.chat_bodies()
    assert "max_completion_tokens" in body and "max_tokens" not in body


def test_an_openai_model_at_another_url_is_sent_max_tokens(tmp_path, fake_openai):
    # gpt-4o's provider profile is for api.openai.com; --base-url is another server.
    fake_openai.enqueue(Reply("nothing to do"))

    result = lathe_run(fake_openai, tmp_path, "", "-c", "model=gpt-4o", "look")

    assert result.returncode == 0, result.stderr
    [body] = fake_openai.chat_bodies()
    assert "max_tokens" in body and "max_completion_tokens" not in body


def test_a_profile_can_turn_stream_options_off(tmp_path, fake_openai):
    fake_openai.enqueue(Reply("nothing to do", usage_when="always"))
    config = 'profile = "plain"\n[profiles.plain]\nstream_options = false\n'

    result = lathe_run(fake_openai, tmp_path, config, "look")

    assert result.returncode == 0, result.stderr
    [body] = fake_openai.chat_bodies()
    assert "stream_options" not in body


THINKS_INLINE = 'profile = "qwen3"\n[profiles.qwen3]\nthinking_in_text = true\n'


def test_thinking_written_inline_is_neither_the_answer_nor_replayed(tmp_path, fake_openai):
    fake_openai.enqueue(
        Reply("<think>\nI should read the file first.\n</think>\n\n", calls=[
            Call("read", {"path": "calculator.py"})
        ], text_chunk=3),
        Reply("<think>The rate is divided by 10.</think>\n\nThe rate is off by ten.", text_chunk=5),
    )  # fmt: skip

    result = lathe_run(fake_openai, tmp_path, THINKS_INLINE, "--json", "what is wrong?")

    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    shown = "".join(e["text"] for e in events if e["type"] == "text_delta")
    thought = "".join(e["text"] for e in events if e["type"] == "thinking_delta")
    assert shown == "The rate is off by ten."
    assert "I should read the file first." in thought
    assert "The rate is divided by 10." in thought
    assert "think>" not in shown + thought
    final = next(e for e in events if e["type"] == "run_finished")
    assert final["answer"] == "The rate is off by ten."
    replayed = fake_openai.chat_bodies()[1]["messages"]
    assert not any("read the file first" in str(m.get("content")) for m in replayed)


def test_without_the_profile_inline_thinking_stays_text(tmp_path, fake_openai):
    fake_openai.enqueue(Reply("<think>hmm</think>The answer.", text_chunk=3))

    result = lathe_run(fake_openai, tmp_path, "", "look")

    assert result.returncode == 0, result.stderr
    assert "<think>hmm</think>The answer." in result.stdout


# a profile that does not exist


def test_an_unknown_profile_is_one_line_naming_the_known_ones(tmp_path, fake_openai):
    result = lathe_run(fake_openai, tmp_path, 'profile = "smal"\n', "look")

    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("lathe: ")
    assert "unknown profile 'smal'" in line and "'small'" in line
    assert "default" in line and "local" in line
    assert fake_openai.chat_bodies() == []


def test_a_profile_naming_a_tool_lathe_does_not_have_is_one_clear_line(tmp_path, fake_openai):
    config = 'profile = "lean"\n[profiles.lean]\ntools = ["read", "reed"]\n'

    result = lathe_run(fake_openai, tmp_path, config, "fix it")

    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        "lathe: profiles.lean.tools names 'reed', which lathe does not have; use some of: "
        "read, edit, write, bash, grep, glob, ls, memory, recall, skill"
    ]
    assert fake_openai.chat_bodies() == []
