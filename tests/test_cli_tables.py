"""`lathe sessions list` and `lathe stats` on a terminal of 80 and 60 columns, and piped.

Reproduced on main with the real CLI: at 80 columns `sessions list` cut every id to
"1…" (nothing left to pass to `--resume`) and dropped the other columns; `stats` cut its
durations, tool names and session ids to "…" and split each slow call over two lines;
piped, both were cut at 80 columns and drew box characters.
"""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.fakes.openai_server import Call, Reply

from lathe.session import SessionStore
from lathe.ui import table

LONG_TASK = "Rename the variable in app.py " + "and keep going " * 12 + "END"
WIDE_TASK = "修复测试 in app.py, then explain what changed"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.pop("COLUMNS", None)
    env.update({"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(home), **extra})
    return env


def _lathe(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lathe", *args], cwd=cwd, env=env, capture_output=True,
        text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def on_terminal(*args: str, cwd: Path, env: dict[str, str], columns: int) -> str:
    """What `lathe ARGS` shows on a terminal COLUMNS wide (a pseudo-terminal)."""
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "lathe", *args], cwd=cwd, env={**env, "COLUMNS": str(columns)},
        stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.PIPE,
    )  # fmt: skip
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the program closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr.decode()
    return b"".join(chunks).decode().replace("\r\n", "\n")


def _cells(text: str) -> int:
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in text
    )


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> tuple[Path, Path, list[str]]:
    """A workspace and LATHE_HOME with three sessions made by real runs, newest first."""
    from tests.fakes.openai_server import FakeOpenAIServer

    root = tmp_path_factory.mktemp("tables")
    ws, home = root / "ws", root / "home"
    ws.mkdir()
    (ws / "app.py").write_text("value = 1\nprint(value)\n")
    with FakeOpenAIServer() as server:
        server.enqueue(
            Reply(calls=[Call("edit", {"path": "app.py", "old_string": "value = 1",
                                       "new_string": "count = 1"})]),
            Reply(calls=[Call("bash", {"command": "sleep 1; echo " + "x" * 150})]),
            Reply("Renamed."),
            Reply("It prints the value."),
            Reply("Nothing to fix."),
        )  # fmt: skip
        for task in (LONG_TASK, "what does\napp.py print?", WIDE_TASK):
            result = _lathe(
                "run", "-m", "m", "--base-url", server.base_url, "-C", str(ws), task,
                cwd=root, env=_env(home),
            )  # fmt: skip
            assert result.returncode == 0, result.stderr
    ids = [summary.id for summary in SessionStore(home).list(ws)]
    assert len(ids) == 3
    return ws, home, ids


@pytest.mark.parametrize("columns", [80, 60])
def test_sessions_list_on_a_terminal_keeps_every_id_and_fits(recorded, columns):
    ws, home, ids = recorded

    shown = on_terminal("sessions", "list", cwd=ws, env=_env(home), columns=columns)

    lines = [_ANSI.sub("", line) for line in shown.splitlines()]
    assert lines[0].split()[:2] == ["ID", "UPDATED"] and lines[0].split()[-1] == "TASK"
    assert [line.split()[0] for line in lines[1:]] == ids
    assert all(_cells(line) <= columns for line in lines), lines
    long_row = next(line for line in lines if line.startswith(ids[2]))
    assert "Rename the" in long_row and long_row.endswith("…")
    assert "修复" in next(line for line in lines if line.startswith(ids[0]))
    assert "\x1b[1m" in shown  # the header stands out...
    plain = on_terminal("sessions", "list", cwd=ws, env=_env(home, NO_COLOR="1"), columns=80)
    assert "\x1b[" not in plain  # ...unless NO_COLOR


def test_sessions_list_piped_is_one_whole_row_per_line(recorded):
    ws, home, ids = recorded
    lathe = f"{sys.executable} -m lathe"

    piped = _lathe("sessions", "list", cwd=ws, env=_env(home, COLUMNS="60"))
    first_fields = subprocess.run(
        f"{lathe} sessions list | awk '{{print $1}}'", shell=True, cwd=ws, env=_env(home),
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout.split()  # fmt: skip
    grepped = subprocess.run(
        f"{lathe} sessions list | grep 'what does'", shell=True, cwd=ws, env=_env(home),
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip

    assert piped.returncode == 0, piped.stderr
    assert "\x1b" not in piped.stdout
    rows = piped.stdout.splitlines()
    assert [row.split("\t")[0] for row in rows] == ids == first_fields
    assert rows[2].split("\t")[-1] == LONG_TASK  # nothing cut, whatever COLUMNS says
    assert rows[1].split("\t")[-1] == "what does"  # the first line of the task
    assert rows[0].split("\t")[2:5] == ["unverified", "1", "19"]
    assert grepped.split("\t")[0] == ids[1]


def test_checkpoints_list_fits_a_terminal_and_is_whole_when_piped(recorded):
    ws, home, _ = recorded

    shown = on_terminal("checkpoints", "list", cwd=ws, env=_env(home), columns=60)
    piped = _lathe("checkpoints", "list", cwd=ws, env=_env(home))

    lines = [_ANSI.sub("", line) for line in shown.splitlines()]
    assert all(_cells(line) <= 60 for line in lines), lines
    assert [line.split()[0] for line in lines[2:]] == ["#2", "#1"]
    rows = [row.split("\t") for row in piped.stdout.splitlines()]
    assert [row[0] for row in rows] == ["#2", "#1"]
    assert rows[1][3:] == ["before turn 1", "(first checkpoint)"]


@pytest.mark.parametrize("columns", [80, 60])
def test_stats_on_a_terminal_fits_and_keeps_numbers_and_ids(recorded, columns):
    ws, home, ids = recorded

    shown = on_terminal("stats", cwd=ws, env=_env(home), columns=columns)

    lines = [_ANSI.sub("", line) for line in shown.splitlines()]
    assert all(_cells(line) <= columns for line in lines), lines
    assert "runs            3 (unverified 3)" in lines
    tools = lines[lines.index("tool calls") + 1 :]
    assert tools[0].split() == ["TOOL", "CALLS", "FAILED", "FAILURE", "RATE", "MEAN", "MAX"]
    assert any(line.split()[:4] == ["bash", "1", "0", "0%"] for line in tools)
    slowest = lines[lines.index("slowest tool calls") + 2 :]
    assert len(slowest) == 2  # one line per call
    assert slowest[0].split()[2:4] == ["bash", ids[2]]
    assert slowest[0].endswith("…")


def test_stats_piped_is_whole_and_plain(recorded):
    ws, home, ids = recorded

    piped = _lathe("stats", cwd=ws, env=_env(home, COLUMNS="60"))

    assert piped.returncode == 0, piped.stderr
    assert "\x1b" not in piped.stdout
    assert not set("┏━┃│└─…") & set(piped.stdout)
    slowest = piped.stdout.splitlines()[-2:]
    assert slowest[0].split()[2:4] == ["bash", ids[2]]
    assert slowest[0].endswith("x" * 150)


@given(st.text())
def test_the_ascii_and_printable_shortcuts_change_no_width_and_no_cleaning(text: str) -> None:
    # `cell_width` and `_clean` skip their per-character work for text that needs none.
    assert table.cell_width(text) == sum(table._char_width(char) for char in text)
    cleaned = "".join(c if c.isprintable() else " " for c in text)
    assert table._clean(text) == " ".join(cleaned.split())


@pytest.mark.parametrize(
    ("args", "sentence"),
    [
        (("sessions", "list"), "no sessions for"),
        (("sessions", "list", "--all"), "no sessions"),
        (("checkpoints", "list"), "no checkpoints for"),
    ],
)
def test_an_empty_list_piped_prints_nothing_on_stdout(tmp_path, args, sentence):
    # `--resume $(lathe sessions list | head -1 | cut -f1)` had taken the sentence as an id.
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()

    piped = _lathe(*args, "-C", str(ws), cwd=tmp_path, env=_env(home))
    shown = on_terminal(*args, "-C", str(ws), cwd=tmp_path, env=_env(home), columns=80)

    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == ""
    assert piped.stderr.startswith(f"lathe: {sentence}")
    assert shown.lower().startswith(sentence)  # a person at a terminal still reads it there
