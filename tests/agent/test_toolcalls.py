import pytest

from lathe.llm.arguments import parse_arguments


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"path": "a.py"}', {"path": "a.py"}),
        ('{"path": "a.py"', {"path": "a.py"}),
        ('{"a": {"b": 1}', {"a": {"b": 1}}),
        ('```json\n{"path": "a.py"}\n```', {"path": "a.py"}),
        ('{"path": "a.py",}', {"path": "a.py"}),
        ("", {}),
        ('"{\\"path\\": \\"a.py\\"}"', {"path": "a.py"}),
    ],
)
def test_unambiguous_problems_are_repaired(raw, expected):
    assert parse_arguments(raw).value == expected


@pytest.mark.parametrize("raw", ["{path: a.py}", '{"a": 1}}', "[1, 2]", "not json at all"])
def test_ambiguous_text_is_an_error_not_a_guess(raw):
    parsed = parse_arguments(raw)
    assert parsed.value is None
    assert parsed.error


def test_valid_json_is_not_marked_repaired():
    assert parse_arguments('{"a": 1}').repaired_json is None


@pytest.mark.parametrize(
    "raw",
    [
        '{"path": "a.py',
        '{"path": "a.py", "new_string": "    return su',
        '{"edits": [{"a": 1}',
        '{"edits": [{"a": 1}, {"b": "x',
    ],
)
def test_json_cut_inside_a_string_or_a_list_is_not_run(raw):
    parsed = parse_arguments(raw)
    assert parsed.value is None
    assert "cut off" in parsed.error
