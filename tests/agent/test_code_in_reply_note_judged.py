"""`shown_code_note`: what the verify gate says of code a reply shows that lathe did not
apply (the end to end cases: tests/e2e/test_code_in_reply_note.py)."""

from __future__ import annotations

from pathlib import Path

from lathe.agent.reply_code import shown_code_note

CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
TESTS = (
    "from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_mul():\n    assert mul(2, 3) == 6\n"
)
CHANGED_TEST = "```python\ndef test_add():\n    assert add(2, 3) == -1\n```"


def workspace(tmp_path: Path) -> Path:
    (tmp_path / "tests").mkdir()
    (tmp_path / "calc.py").write_text(CALC)
    (tmp_path / "tests" / "test_calc.py").write_text(TESTS)
    return tmp_path


def test_code_already_in_the_file_it_copies_gets_no_note(tmp_path):
    ws = workspace(tmp_path)

    assert shown_code_note(ws, "```python\ndef add(a, b):\n    return a - b\n```") == ""
    # But for the blank lines between.
    dropped = "```python\ndef add(a, b):\n    return a - b\ndef mul(a, b):\n    return a * b\n```"
    assert shown_code_note(ws, dropped) == ""


def test_a_changed_copy_of_a_denied_test_names_the_code_it_uses(tmp_path):
    ws = workspace(tmp_path)

    note = shown_code_note(ws, CHANGED_TEST, deny_edit=("tests/**",))

    assert note == (
        "Your reply shows a changed copy of tests/test_calc.py, which you may not change. "
        "The code it uses: add in calc.py (line 1), mul in calc.py (line 5); change that "
        "with the edit tool."
    )


def test_a_changed_copy_of_the_checks_own_file_is_no_invitation_to_edit_it(tmp_path):
    ws = workspace(tmp_path)
    named = "```python\n# tests/test_calc.py\ndef test_add():\n    assert add(2, 3) == -1\n```"

    note = shown_code_note(ws, named)

    assert note is not None
    assert note.startswith(
        "Your reply shows a changed copy of tests/test_calc.py, which is part of the check"
    )
    assert "add in calc.py (line 1)" in note


def test_a_change_the_model_may_make_or_new_code_keeps_the_usual_note(tmp_path):
    ws = workspace(tmp_path)

    assert shown_code_note(ws, "```python\ndef add(a, b):\n    return a + b\n```") is None
    assert shown_code_note(ws, "```python\ndef sub(a, b):\n    return a - b\n```") is None
    assert shown_code_note(ws, "```bash\npytest -q\n```") is None
    # One block already in a file does not hide another that changes code.
    both = "```python\ndef add(a, b):\n    return a - b\n```\n\n" + (
        "```python\ndef mul(a, b):\n    return a + b\n```"
    )
    assert shown_code_note(ws, both) is None


def test_a_file_a_read_rule_denies_is_never_compared(tmp_path):
    ws = workspace(tmp_path)

    assert shown_code_note(ws, CHANGED_TEST, deny_edit=("tests/**",), deny_read=("tests/**",)) is (
        None
    )
