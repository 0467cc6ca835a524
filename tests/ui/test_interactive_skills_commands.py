"""`/skill NAME` and prompt commands in the real interactive terminal (tmux) against the
fake server: what the model receives is the skill's body with the next message, and a
prompt command's text with its arguments; a built-in of the same name wins, and says so."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.openai_server import FakeOpenAIServer, Reply


def _user_texts(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


def test_skill_goes_with_the_next_message_and_prompt_commands_are_slash_commands(
    launch, fake_openai: FakeOpenAIServer, workspace: Path
) -> None:
    skill = workspace / ".lathe" / "skills" / "release" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: release\ndescription: Cut a release\n---\nBump, tag, push.\n")
    commands = workspace / ".lathe" / "commands"
    commands.mkdir()
    (commands / "explain.md").write_text(
        "---\ndescription: Explain a file\n---\nExplain $ARGUMENTS briefly.\n"
    )
    (commands / "clear.md").write_text("Not the built-in.\n")
    fake_openai.enqueue(Reply("one"), Reply("two"))

    term = launch()
    screen = term.screen()
    assert f"the prompt command {commands / 'clear.md'} is not used: /clear is built in" in (
        screen.replace("\n", "")
    )
    term.send("/help")
    term.wait_for(r"/explain \[ARGS\]\s+Explain a file")
    term.send("/skill release")
    term.wait_for(r"the skill release goes with your next message")
    term.send("ship 1.2")
    term.wait_for(r"^one")
    term.send("/explain app.py")
    term.wait_for(r"^two")

    first, second = fake_openai.chat_bodies()
    assert _user_texts(first) == [
        f"Use the skill release (folder: {skill.parent}):\n\nBump, tag, push.\n\nship 1.2"
    ]
    assert _user_texts(second)[-1] == "Explain app.py briefly."
    assert "- release: Cut a release" in first["messages"][0]["content"]
