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


def test_new_code_next_to_the_copy_is_no_edit():
    # Where it would go is a guess: a usage example, a new function, an extra import.
    assert apply(CONVERT, '"""Temperature conversion."""\nimport math') is None
    usage = "def fahrenheit_to_celsius(fahrenheit: float) -> float:\n    return (fahr"
    assert apply(CONVERT, usage + "enheit - 32) * 5 / 9\nprint(fahrenheit_to_celsius(212))") is None


def test_a_new_function_is_not_swapped_for_a_similar_one():
    tests = "from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n"
    shown = "from calc import add\n\n\ndef test_add_negative():\n    assert add(-2, -2) == -4"
    assert apply(tests, shown) is None


def test_a_shorter_body_at_the_end_of_the_copy_is_no_edit():
    total = (
        "def total(items):\n    result = 0\n    for item in items:\n"
        "        result += item\n    return result\n"
    )
    shown = "def total(items):\n    return sum(item.price * item.qty for item in items)"
    assert apply(total, shown) is None


def test_a_method_the_copy_leaves_out_is_not_deleted():
    calc = (
        "class Calc:\n    def add(self, a, b):\n        return a + b\n\n"
        "    def sub(self, a, b):\n        return a - b\n\n"
        "    def div(self, a, b):\n        return a * b\n"
    )
    shown = (
        "class Calc:\n    def add(self, a, b):\n        return a + b\n\n"
        "    def div(self, a, b):\n        return a / b"
    )
    assert apply(calc, shown) is None


def test_a_copy_of_a_region_that_is_not_unique_is_no_edit():
    shapes = (
        "class Rect:\n    def area(self):\n        return self.w * self.h\n\n\n"
        "class Tri:\n    def area(self):\n        return 0.5 * self.w * self.h\n"
    )
    assert apply(shapes, "    def area(self):\n        return self.w * self.h / 2") is None


def test_comment_elisions_of_other_languages_are_no_edit():
    c_code = "int f(int a) {\n    int x = a + 1;\n    int y = a + 2;\n    return x - y;\n}\n"
    for marker in ("/* ... */", "// keep the rest as is", "// existing setup"):
        shown = f"int f(int a) {{\n    {marker}\n    return x + y;\n}}"
        assert apply(c_code, shown) is None, marker


def test_a_leading_blank_line_does_not_anchor_the_copy_elsewhere():
    text = "```python\n# stats.py\n\ndef g():\n    return 3\n```"
    original = "def f():\n    return 1\n\nLIMIT = 10\ndef g():\n    return 2\n"
    [edit] = implied_edits(text, ["stats.py"], {"stats.py": original}.get)
    assert original.replace(edit.old_string, edit.new_string) == original.replace(
        "return 2", "return 3"
    )


def test_before_and_after_copies_of_one_region_change_nothing():
    # "I changed this ... to this ...", after the change was made: the "before" block
    # is a changed copy of the file now, and must not undo the change.
    fixed = (
        "def mean(values):\n    if not values:\n        return 0.0\n"
        "    return sum(values) / len(values)\n"
    )
    before = "def mean(values):\n    return sum(values) / len(values)"
    text = f"I changed\n```python\n{before}\n```\nto\n```python\n{fixed}```"
    assert implied_edits(text, ["stats.py"], {"stats.py": fixed}.get) == []


def test_a_block_naming_a_file_that_is_not_there_is_no_edit():
    tests = "def test_add():\n    assert add(2, 2) == 4\n"
    text = "```python\n# tests/test_negative.py\ndef test_add():\n    assert add(2, 2) == 5\n```"
    assert implied_edits(text, ["tests/test_calc.py"], {"tests/test_calc.py": tests}.get) == []


def test_blocks_skip_shell_and_output_and_find_the_file_they_name():
    text = (
        "Run it:\n```bash\npytest -q\n```\n"
        "```python\n# pkg/convert.py\nx = 1\n```\n"
        "In `app/main.py`:\n```python\ny = 2\n```\n"
        "```py lib/util.py\nz = 3\n```\n"
        "```\n2 failed\n```"
    )

    blocks = code_blocks(text)

    assert [(b.named, b.mentioned, b.lines) for b in blocks] == [
        ("pkg/convert.py", (), ["x = 1"]),
        (None, ("app/main.py",), ["y = 2"]),
        ("lib/util.py", (), ["z = 3"]),
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


def test_tests_and_files_a_read_rule_denies_are_never_compared(tmp_path):
    settings = "TOKEN = 'abc'\nHOST = 'example.org'\nDEBUG = False\n"
    (tmp_path / "settings.py").write_text(settings)
    (tmp_path / "app.py").write_text("def run():\n    return 1\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_app.py").write_text("def test_run():\n    assert run() == 2\n")
    text = (
        "```python\nTOKEN = 'abc'\nHOST = 'example.org'\nDEBUG = True\n```\n"
        "```python\ndef run():\n    return 2\n```\n"
        "```python\ndef test_run():\n    assert run() == 1\n```"
    )

    edits = workspace_edits(tmp_path, text, deny_read=("settings.py",))

    assert [e.path for e in edits] == ["app.py"]
    assert [e.path for e in workspace_edits(tmp_path, text)] == ["settings.py", "app.py"]


def test_the_test_runners_configuration_is_never_changed_from_prose(tmp_path):
    # `addopts = "-q -k zero"` shown in a "done" reply was applied, and the run verified.
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "calc"\nversion = "0.1"\n\n[tool.pytest.ini_options]\n'
        'addopts = "-q"\ntestpaths = ["tests"]\nminversion = "7.0"\n'
    )
    text = (
        '```toml\n[tool.pytest.ini_options]\naddopts = "-q -k zero"\ntestpaths = ["tests"]\n'
        'minversion = "7.0"\n```'
    )

    assert workspace_edits(tmp_path, text) == []
