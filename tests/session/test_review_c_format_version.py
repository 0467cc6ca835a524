"""A session file a newer field may be in says so by its format version.

`ModelChangeEntry.settings` came without a new version: a lathe of format 2 (an older
`lathe serve` on the same LATHE_HOME) read every new session as damaged, "line 2:
corrupt entry skipped (Unexpected keyword argument at model_change.settings)" and
"line 3: parent ... is missing; attached to the root instead". Format 3 is format 2 with
that field: an older lathe now refuses the file in one line, naming the upgrade, and
this one reads format 2 files as they are.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lathe.errors import UsageError
from lathe.session import FORMAT_VERSION, SessionStore
from lathe.session import loader as session_loader
from lathe.session.entries import ModelChangeEntry, run_settings
from lathe.types import UserMessage


def _session_with_run_settings(store: SessionStore, workspace: Path) -> Path:
    with store.create(workspace, "m") as session:
        settings = run_settings("http://localhost:1/v1", "auto", "pytest -q", None)
        session.append(ModelChangeEntry(provider="openai", model="m", settings=settings))
        session.append_message(UserMessage(content="fix the tests"))
    return session.path


def _as_format_2(path: Path) -> bytes:
    """`path` as the format-2 lathe wrote it: only the header's version differs."""
    lines = path.read_bytes().splitlines(keepends=True)
    header = json.loads(lines[0])
    header["version"] = 2
    lines[0] = json.dumps(header, separators=(",", ":")).encode() + b"\n"
    path.write_bytes(b"".join(lines))
    return path.read_bytes()


def test_a_file_with_run_settings_is_refused_by_a_format_2_reader(
    store: SessionStore, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _session_with_run_settings(store, workspace)

    assert json.loads(path.read_text().splitlines()[0])["version"] > 2
    monkeypatch.setattr(session_loader, "FORMAT_VERSION", 2)  # the older lathe's check
    with pytest.raises(UsageError, match=r"newer than this lathe understands \(up to 2\); upgrade"):
        session_loader.load_file(path)


def test_a_format_2_file_reads_as_it_is_and_is_converted_only_to_append(
    store: SessionStore, workspace: Path
) -> None:
    path = _session_with_run_settings(store, workspace)
    original = _as_format_2(path)
    session_id = path.stem.rsplit("_", 1)[1]

    read = store.open(session_id, readonly=True)
    assert read.warnings == []
    assert read.header.version == FORMAT_VERSION
    assert [type(entry).__name__ for entry in read.entries] == ["ModelChangeEntry", "MessageEntry"]
    assert path.read_bytes() == original  # reading never rewrites
    assert store.list(workspace)[0].title == "fix the tests"

    with store.open(session_id) as session:
        assert any("converted from format version 2 to" in w for w in session.warnings)
        session.append_message(UserMessage(content="and the docs"))
    assert path.with_suffix(".v2.bak").read_bytes() == original
    assert json.loads(path.read_text().splitlines()[0])["version"] == FORMAT_VERSION
    assert len(store.open(session_id, readonly=True).messages()) == 2


def test_the_cli_refuses_a_newer_file_in_one_line(
    store: SessionStore, home: Path, workspace: Path
) -> None:
    path = _session_with_run_settings(store, workspace)
    header, *rest = path.read_text().splitlines(keepends=True)
    newer = {**json.loads(header), "version": FORMAT_VERSION + 1}
    path.write_text(json.dumps(newer) + "\n" + "".join(rest))
    session_id = path.stem.rsplit("_", 1)[1]

    shown = subprocess.run(
        [sys.executable, "-m", "lathe", "sessions", "show", session_id], cwd=workspace,
        env={"LATHE_HOME": str(home), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip

    assert shown.returncode != 0
    assert "Traceback" not in shown.stderr
    lines = shown.stderr.strip().splitlines()
    assert len(lines) == 1, shown.stderr
    assert lines[0].startswith("lathe: ")
    assert f"version {FORMAT_VERSION + 1}, newer than this lathe" in lines[0]
    assert "upgrade lathe" in lines[0]
