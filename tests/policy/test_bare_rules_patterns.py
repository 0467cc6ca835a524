"""A deny rule naming `read` or `edit` and no path covers every path in the patterns the
prompt, the search tools, the hints and the sandbox go by; before, it was left out of
them, so they allowed what the rule forbids."""

from __future__ import annotations

from lathe.agent.prompt import system_prompt
from lathe.policy.rules import EVERY_PATH, RuleSet, matches_any


def test_a_rule_without_a_path_denies_every_path():
    rules = RuleSet.from_strings(deny=["read", "edit", "read(.env)"])

    assert rules.denied_read_patterns() == [EVERY_PATH, ".env"]
    assert rules.denied_edit_patterns() == [EVERY_PATH]
    assert all(matches_any(p, [EVERY_PATH]) for p in ("calc.py", "a/b/c.txt", ".hidden"))


def test_a_glob_of_every_tool_denies_every_path_once():
    rules = RuleSet.from_strings(deny=["*", "read"])

    assert rules.denied_read_patterns() == [EVERY_PATH]
    assert rules.denied_edit_patterns() == [EVERY_PATH]


def test_other_tools_rules_deny_no_path():
    rules = RuleSet.from_strings(deny=["bash", "write", "mcp__fk__*"])

    assert rules.denied_read_patterns() == []
    assert rules.denied_edit_patterns() == []


def test_the_prompt_says_every_file(tmp_path):
    (tmp_path / "a.py").write_text("SECRET = 1\n")

    prompt = system_prompt(
        tmp_path, ["read"], verify_command=None, snapshot_max_bytes=10_000,
        no_edit=[EVERY_PATH], no_read=[EVERY_PATH, ".env"],
    )  # fmt: skip

    assert "- no changes to: every file\n- no reading of: every file, .env" in prompt.text
    assert "SECRET" not in prompt.text
    assert not prompt.has_snapshot
