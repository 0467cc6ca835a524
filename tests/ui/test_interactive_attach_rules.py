"""`@path` in an interactive message attaches only what the read tool may read, driven
for real in tmux against the fake server. With `--deny 'read(.env)'`, `@.env` had said
"attached: .env" and sent the file's secrets to the provider and the session file."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.openai_server import FakeOpenAIServer, Reply

from lathe.policy.gate import Mode, Policy
from lathe.policy.rules import RuleSet
from lathe.tools.base import ToolRegistry
from lathe.ui.interactive.input import expand_references

SECRET = "DB_PASSWORD=hunter2-very-secret"


def test_a_file_a_rule_denies_reading_is_not_attached_and_the_message_goes(
    launch, fake_openai: FakeOpenAIServer, workspace: Path, lathe_home: Path
) -> None:
    (workspace / ".env").write_text(SECRET + "\n")
    fake_openai.enqueue(Reply("Looked."))
    term = launch("--deny", "read(.env)")
    term.send("look at @.env and @app.py")
    screen = term.wait_for(r"^Looked\.")
    said = " ".join(screen.split())  # the line may wrap
    assert "@.env is not attached: .env matches the rule read(.env)" in said, screen
    assert [line for line in screen.splitlines() if line.startswith("attached")] == [
        "attached: app.py"
    ]
    messages = fake_openai.chat_bodies()[-1]["messages"]
    [sent] = [m["content"] for m in messages if m["role"] == "user"]
    assert sent.startswith("look at @.env and @app.py") and "return a - b" in sent
    assert "hunter2" not in sent
    [session] = (lathe_home / "sessions").glob("*/*.jsonl")
    assert "hunter2" not in session.read_text()


def test_a_link_to_a_denied_file_is_refused_as_the_read_tool_refuses_it(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(SECRET + "\n")
    (tmp_path / "settings").symlink_to(".env")
    policy = Policy(
        Mode.AUTO, RuleSet.from_strings(deny=["read(.env)"]), tmp_path, tmp_path, sandboxed=False
    )
    message, attached, problems = expand_references("see @settings", tmp_path, policy)
    assert (message, attached) == ("see @settings", [])
    assert problems == ["@settings is not attached: .env matches the rule read(.env)"]


def test_the_rules_hold_for_a_model_whose_profile_has_no_read_tool(tmp_path: Path) -> None:
    # Judged as a call of a tool the run lacks, every file asked (read-only mode refused
    # it as a change) and no path rule was read.
    (tmp_path / ".env").write_text(SECRET + "\n")
    (tmp_path / "notes.txt").write_text("the notes\n")
    rules = RuleSet.from_strings(deny=["read(.env)"])
    policy = Policy(Mode.READ_ONLY, rules, tmp_path, tmp_path, False, tools=ToolRegistry())
    message, attached, problems = expand_references("@notes.txt @.env", tmp_path, policy)
    assert attached == ["notes.txt"] and "the notes" in message and "hunter2" not in message
    assert problems == ["@.env is not attached: .env matches the rule read(.env)"]
