from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from lathe.session import ENTRY_ADAPTER, RunEndEntry, SessionStore
from lathe.types import Usage
from lathe.ui.sessions_cmd import sessions

from .helpers import call, reply, result, user


@pytest.fixture
def cli(home: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("LATHE_HOME", str(home))
    monkeypatch.setenv("COLUMNS", "160")

    def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
        return CliRunner().invoke(sessions, list(args), env=env)

    return invoke


@pytest.fixture
def recorded(store: SessionStore, workspace: Path) -> str:
    with store.create(workspace, "test-model") as session:
        session.append_message(user("make the tests pass\nthey fail on CI"))
        session.append_message(
            reply("Running the suite.", call("c1", command="pytest -q tests"), tokens=1200)
        )
        output = "\n".join(f"line {n}" for n in range(40))
        session.append_message(result("c1", output))
        session.append_message(reply("All green now.", tokens=800))
        session.append(RunEndEntry(status="verified", turns=2, usage=Usage(input_tokens=2000)))
    return session.id


def test_list_shows_this_workspaces_sessions(cli, recorded: str, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    outcome = cli("list", "-C", str(workspace))
    assert outcome.exit_code == 0, outcome.output
    row = next(line for line in outcome.stdout.splitlines() if recorded in line)
    for cell in ("make the tests pass", "2", "2,200", "verified"):
        assert cell in row
    assert "they fail on CI" not in outcome.stdout


def test_list_all_includes_other_workspaces(  # type: ignore[no-untyped-def]
    cli, recorded: str, tmp_path: Path, workspace: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    here = cli("list", "-C", str(elsewhere))
    assert here.exit_code == 0
    assert here.stdout == ""  # piped: nothing a script could take for an id
    assert "no sessions for" in here.stderr and "--all" in here.stderr
    everywhere = cli("list", "--all", "-C", str(elsewhere))
    row = next(line for line in everywhere.stdout.splitlines() if recorded in line)
    assert str(workspace) in row.split("\t")  # piped: id, ..., workspace, task


def test_list_piped_is_plain_tab_separated_rows(cli, recorded: str, workspace: Path) -> None:  # type: ignore[no-untyped-def]
    # On a terminal (and NO_COLOR there): tests/test_cli_tables.py.
    outcome = cli("list", "-C", str(workspace), env={"FORCE_COLOR": "1"})
    assert "\x1b[" not in outcome.stdout
    assert outcome.stdout.split("\t")[0] == recorded


def test_show_prints_a_readable_transcript(cli, recorded: str) -> None:  # type: ignore[no-untyped-def]
    outcome = cli("show", recorded[:5])
    assert outcome.exit_code == 0, outcome.output
    text = outcome.stdout
    assert f"session {recorded}" in text
    assert "make the tests pass\nthey fail on CI" in text
    assert "Running the suite." in text
    assert "→ bash(pytest -q tests)" in text
    assert "    line 5\n" in text and "line 6\n" not in text
    assert "… (34 more lines)" in text
    assert "[run ended verified after 2 turns" in text
    assert text.index("make the tests pass") < text.index("All green now.")


def test_export_json_holds_every_entry(cli, recorded: str, store: SessionStore) -> None:  # type: ignore[no-untyped-def]
    outcome = cli("export", recorded, "--format", "json")
    assert outcome.exit_code == 0, outcome.output
    document = json.loads(outcome.stdout)
    session = store.open(recorded, readonly=True)
    assert document["header"] == session.header.model_dump(mode="json")
    assert document["entries"] == [
        ENTRY_ADAPTER.dump_python(entry, mode="json") for entry in session.entries
    ]


def test_export_markdown_keeps_tool_output_whole(cli, recorded: str) -> None:  # type: ignore[no-untyped-def]
    outcome = cli("export", recorded)
    assert outcome.exit_code == 0, outcome.output
    text = outcome.stdout
    assert text.startswith(f"# Session {recorded}\n")
    assert "## User\n\nmake the tests pass" in text
    assert "**bash**\n\n```\n" in text
    assert "### Result: bash\n\n```\nline 0\n" in text
    assert "line 39\n```" in text


def test_fork_prints_the_new_id(cli, recorded: str, store: SessionStore) -> None:  # type: ignore[no-untyped-def]
    original = store.open(recorded, readonly=True)
    at = original.entries[1].id
    outcome = cli("fork", recorded, "--at", at[:6])
    assert outcome.exit_code == 0, outcome.output
    new_id = outcome.stdout.strip()
    forked = store.open(new_id)  # writable: the CLI released its lock
    with forked:
        assert forked.messages() == original.messages()[:2]
        assert forked.header.parent_entry == at


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("show", "fff"), "no session id starts with 'fff'"),
        (("export", "../x"), "is not a session id"),
        (("fork", "RECORDED", "--at", "nope"), "has no entry starting with 'nope'"),
    ],
)
def test_errors_exit_2_and_say_what_to_do(  # type: ignore[no-untyped-def]
    cli, recorded: str, args: tuple[str, ...], message: str
) -> None:
    args = tuple(recorded if arg == "RECORDED" else arg for arg in args)
    outcome = cli(*args)
    assert outcome.exit_code == 2
    assert outcome.stdout == ""
    assert outcome.stderr.startswith("lathe: ")
    assert message in outcome.stderr


def test_show_reports_a_torn_line_on_stderr(  # type: ignore[no-untyped-def]
    cli, recorded: str, store: SessionStore
) -> None:
    path = store.find(recorded)
    with path.open("ab") as handle:
        handle.write(b'{"type": "mess')
    outcome = cli("show", recorded)
    assert outcome.exit_code == 0
    assert "torn last line skipped" in outcome.stderr
    assert "All green now." in outcome.stdout


def test_show_of_a_session_in_use_still_works(  # type: ignore[no-untyped-def]
    cli, recorded: str, store: SessionStore
) -> None:
    with store.open(recorded):
        assert cli("show", recorded).exit_code == 0
        listed = cli("list", "--all")
        assert "running" in listed.stdout
