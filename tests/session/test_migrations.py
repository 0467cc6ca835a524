from __future__ import annotations

from pathlib import Path

from lathe.home import project_slug
from lathe.session import FORMAT_VERSION, SessionStore
from lathe.types import AssistantMessage, ToolCall, ToolResultMessage, UserMessage

VERSION_1 = """\
{"version": 1, "id": "0ld5e5510000", "cwd": "%s", "created": "2024-03-01T10:00:00Z", "model": "gpt-4o"}
{"ts": "2024-03-01T10:00:01Z", "message": {"role": "user", "content": "rename foo to bar"}}
{"ts": "2024-03-01T10:00:05Z", "message": {"role": "assistant", "content": "Looking.", "tool_calls": [{"id": "call_1", "name": "grep", "arguments": "{\\"pattern\\": \\"foo\\"}"}]}}
{"ts": "2024-03-01T10:00:06Z", "message": {"role": "tool", "tool_call_id": "call_1", "name": "grep", "content": "src/a.py:3: foo()"}}
{"ts": "2024-03-01T10:00:09Z", "message": {"role": "assistant", "content": "Renamed."}}
"""  # noqa: E501

EXPECTED = [
    UserMessage(content="rename foo to bar"),
    AssistantMessage(
        text="Looking.",
        tool_calls=(ToolCall(id="call_1", name="grep", arguments='{"pattern": "foo"}'),),
    ),
    ToolResultMessage(tool_call_id="call_1", name="grep", content="src/a.py:3: foo()"),
    AssistantMessage(text="Renamed."),
]


def _write_v1(home: Path, workspace: Path) -> Path:
    directory = home / "sessions" / project_slug(workspace)
    directory.mkdir(parents=True)
    path = directory / "20240301T100000Z_0ld5e5510000.jsonl"
    path.write_text(VERSION_1 % workspace.resolve())
    return path


def test_version_1_file_loads_as_the_current_format(
    store: SessionStore, home: Path, workspace: Path
) -> None:
    path = _write_v1(home, workspace)
    before = path.read_bytes()

    session = store.open("0ld5", readonly=True)
    assert session.warnings == []
    assert session.header.version == FORMAT_VERSION
    assert session.header.model == "gpt-4o"
    assert session.messages() == EXPECTED
    ids = [entry.id for entry in session.entries]
    assert ids == ["00000001", "00000002", "00000003", "00000004"]
    assert [entry.parent for entry in session.entries] == [None, *ids[:-1]]
    assert path.read_bytes() == before  # reading never rewrites


def test_opening_a_version_1_file_for_writing_converts_it_and_keeps_a_backup(
    store: SessionStore, home: Path, workspace: Path
) -> None:
    path = _write_v1(home, workspace)
    original = path.read_bytes()

    with store.open("0ld5e5510000") as session:
        assert any("converted from format version 1" in w for w in session.warnings)
        added = session.append_message(UserMessage(content="also rename baz"))
    assert added.parent == "00000004"
    assert path.with_suffix(".v1.bak").read_bytes() == original

    reloaded = store.open("0ld5e5510000", readonly=True)
    assert reloaded.warnings == []
    assert reloaded.messages() == [*EXPECTED, UserMessage(content="also rename baz")]
    summary = store.list(workspace)[0]
    assert (summary.title, summary.turns) == ("rename foo to bar", 2)


def test_fork_of_a_version_1_file_is_written_in_the_current_format(
    store: SessionStore, home: Path, workspace: Path
) -> None:
    _write_v1(home, workspace)
    with store.fork("0ld5", "00000002") as forked:
        pass
    assert '"version":3' in forked.path.read_text().splitlines()[0]
    assert store.open(forked.id, readonly=True).messages() == EXPECTED[:2]
