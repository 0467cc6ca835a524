"""The strict front matter reader of SKILL.md and prompt command files, and the skill
list's budget in the system prompt."""

from __future__ import annotations

import pytest

from lathe.agent.prompt import skills_section
from lathe.front_matter import FrontMatterError, split_front_matter

KEYS = ("name", "description")


def test_one_line_values_are_read_and_other_keys_skipped_nested_lines_included():
    text = (
        "---\nname: pdf\n# a comment\ndescription: 'Fill: forms'\nmetadata:\n  version: 2\n"
        "allowed-tools: [Read]\n---\nThe body.\n"
    )
    assert split_front_matter(text, KEYS) == ({"name": "pdf", "description": "Fill: forms"},
                                              "The body.\n")  # fmt: skip


def test_a_text_without_front_matter_is_all_body():
    assert split_front_matter("Just text.\n", KEYS) == ({}, "Just text.\n")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("---\nname: x\n", "the front matter has no closing `---` line"),
        ("---\nname: x\ndescription: |\n  a\n---\n", "line 3: '|' values"),
        ("---\nname: x\ndescription:\n  a\n---\n", "line 4 continues 'description'"),
        ("---\nname: x\njust words\n---\n", "line 3 is not a `key: value` line"),
        ("---\nname: x\nname: y\n---\n", "line 3 repeats the key 'name'"),
        ("---\nname: 'x\n---\n", "line 2: the quote around the value is not closed"),
    ],
)
def test_what_a_real_yaml_reader_would_read_differently_is_refused(text, problem):
    with pytest.raises(FrontMatterError) as caught:
        split_front_matter(text, KEYS)
    assert str(caught.value).startswith(problem)


def test_the_skill_list_stays_within_its_budget_and_says_how_many_it_left_out():
    skills = [(f"skill-{n}", "does one thing well " * 4) for n in range(30)]
    for budget in (200, 400, 1000, 2000):
        section = skills_section(skills, budget)
        assert section is not None and len(section.encode()) <= budget
        listed = sum(line.startswith("- ") for line in section.splitlines())
        assert section.splitlines()[-1] == (
            f"({30 - listed} more skills are not listed here: skill with no name lists them all.)"
        )
    assert skills_section(skills, 100_000).count("\n- ") == 30
    assert skills_section(skills, 120) is None  # not even room to say they exist
    assert skills_section(skills, 0) is None
    assert skills_section([], 1000) is None
