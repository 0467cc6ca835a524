"""Code shown in a reply, read as an edit only when it is unmistakably one."""

from __future__ import annotations

from lathe.agent.reply_code import code_blocks, implied_edit, implied_edits, workspace_edits

CONVERT = '''"""Temperature conversion."""


def celsius_to_fahrenheit(celsius: float) -> float:
    """Degrees Fahrenheit for `celsius` degrees Celsius."""
    return celsius * 9 / 5 - 32


def fahrenheit_to_celsius(fahrenheit: float) -> float:
    return (fahrenheit - 32) * 5 / 9
'''


def apply(original: str, block: str) -> str | None:
    change = implied_edit(original, block.splitlines())
    if change is None:
        return None
    old, new = change
    return original.replace(old, new)


def test_a_changed_copy_of_a_function_changes_only_its_changed_line():
    shown = (
        '"""Temperature conversion."""\n'
        "def celsius_to_fahrenheit(celsius: float) -> float:\n"
        '    """Degrees Fahrenheit for `celsius` degrees Celsius."""\n'
        "    return celsius * 9 / 5 + 32"
    )

    # The copy dropped the blank lines between the docstring and the function: they stay.
    assert apply(CONVERT, shown) == CONVERT.replace("9 / 5 - 32", "9 / 5 + 32")


def test_lines_the_copy_adds_go_where_the_copy_puts_them():
    shown = (
        "def fahrenheit_to_celsius(fahrenheit: float) -> float:\n"
        "    if fahrenheit < -459.67:\n"
        '        raise ValueError("below absolute zero")\n'
        "    return (fahrenheit - 32) * 5 / 9"
    )

    assert apply(CONVERT, shown) == CONVERT.replace(
        "float:\n    return (f",
        'float:\n    if fahrenheit < -459.67:\n        raise ValueError("below absolute zero")\n'
        "    return (f",
    )


def test_no_edit_for_copies_that_leave_code_out_or_change_nothing_or_match_nothing():
    elided = "def celsius_to_fahrenheit(celsius: float) -> float:\n    # ... rest unchanged"
    unchanged = CONVERT.splitlines()[-2] + "\n" + CONVERT.splitlines()[-1]
    unrelated = "import math\n\n\ndef area(radius):\n    return math.pi * radius**2"
    assert apply(CONVERT, elided) is None
    assert apply(CONVERT, unchanged) is None
    assert apply(CONVERT, unrelated) is None


def test_a_copy_that_drops_several_lines_of_the_file_is_no_edit():
    # Shares its first and last lines with the file, but would delete the code between.
    shown = '"""Temperature conversion."""\nSCALE = 1\n    return (fahrenheit - 32) * 5 / 9'
    assert apply(CONVERT, shown) is None


def test_a_new_last_line_unlike_the_file_line_after_the_copy_is_added_not_swapped():
    shown = '"""Temperature conversion."""\nimport math'
    assert apply(CONVERT, shown) == CONVERT.replace('"""\n', '"""\nimport math\n', 1)


def test_blocks_skip_shell_and_output_and_find_the_file_they_name():
    text = (
        "Run it:\n```bash\npytest -q\n```\n"
        "```python\n# pkg/convert.py\nx = 1\n```\n"
        "In `app/main.py`:\n```python\ny = 2\n```\n"
        "```py lib/util.py\nz = 3\n```\n"
        "```\n2 failed\n```"
    )

    blocks = code_blocks(text)

    assert [(b.path_hint, b.lines) for b in blocks] == [
        ("pkg/convert.py", ["x = 1"]),
        ("app/main.py", ["y = 2"]),
        ("lib/util.py", ["z = 3"]),
    ]


def test_a_block_that_fits_two_files_is_no_edit_unless_it_names_one():
    same = "def f():\n    return 1\n"
    files = {"a.py": same, "b.py": same}
    fixed = "```python\ndef f():\n    return 2\n```"
    named = "Change `b.py`:\n" + fixed

    assert implied_edits(fixed, list(files), files.get) == []
    [edit] = implied_edits(named, list(files), files.get)
    assert (edit.path, edit.old_string, edit.new_string) == (
        "b.py",
        "def f():\n    return 1",
        "def f():\n    return 2",
    )


def test_files_a_read_rule_denies_are_never_compared(tmp_path):
    (tmp_path / "settings.py").write_text("TOKEN = 'abc'\nDEBUG = False\n")
    (tmp_path / "app.py").write_text("def run():\n    return 1\n")
    text = "```python\nTOKEN = 'abc'\nDEBUG = True\n```\n```python\ndef run():\n    return 2\n```"

    edits = workspace_edits(tmp_path, text, deny_read=("settings.py",))

    assert [e.path for e in edits] == ["app.py"]
    assert [e.path for e in workspace_edits(tmp_path, text)] == ["settings.py", "app.py"]
