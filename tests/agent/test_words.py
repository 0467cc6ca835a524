"""The words lathe says to the model live in one template set a profile chooses; and
the loop itself is generic (it names no tool and holds no verify or stall logic)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import lathe.agent.loop as loop_module
from lathe.errors import UsageError
from lathe.tools.builtin import builtin_tools
from lathe.words import DEFAULT_SET, builtin_sets, load_words


def test_every_template_of_the_default_set_renders_with_what_its_caller_gives():
    words = load_words()
    assert DEFAULT_SET in builtin_sets()
    assert "system" in words.names()
    text = words.say("nudge", description="called read with the same arguments 3 times")
    assert text.startswith("You have called read with the same arguments 3 times.")
    with pytest.raises(KeyError):
        words.say("verify_failed", command="pytest")  # a missing value is a bug, not blank


def test_a_folder_of_the_users_own_overrides_some_templates_and_keeps_the_rest(tmp_path: Path):
    (tmp_path / "nudge.md").write_text("Stop repeating: $description.\n")

    words = load_words(str(tmp_path))

    assert words.say("nudge", description="x") == "Stop repeating: x."
    assert words.say("cut_off_reply") == load_words().say("cut_off_reply")


@pytest.mark.parametrize(
    ("name", "text", "complaint"),
    [
        ("nudge.md", "You did $what.", "unknown placeholders ['what']"),
        ("nudge.md", "It costs $ 5.", "a stray $"),
        ("greeting.md", "Hello", "greeting.md is not a template lathe uses"),
    ],
)
def test_a_broken_user_template_is_refused_when_loaded(tmp_path: Path, name, text, complaint):
    (tmp_path / name).write_text(text)

    with pytest.raises(UsageError, match=re.escape(complaint)):
        load_words(str(tmp_path))


def test_an_unknown_set_names_the_known_ones():
    with pytest.raises(UsageError, match="no such template set; use one of default"):
        load_words("no-such-set")


def test_the_loop_names_no_tool_and_holds_no_verify_reply_code_or_stall_logic():
    tree = ast.parse(Path(loop_module.__file__).read_text())
    agent = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Agent")
    words: set[str] = set()
    for node in ast.walk(agent):
        if isinstance(node, ast.Name):
            words.add(node.id)
        elif isinstance(node, ast.Attribute):
            words.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            words.add(node.value)
    tool_names = {tool.name for tool in builtin_tools()}
    assert not words & tool_names
    assert not [w for w in words if any(k in w.lower() for k in ("verify", "stall", "reply_code"))]
