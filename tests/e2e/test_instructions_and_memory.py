"""Instruction files, memory and recall through the real `lathe run` against the fake
OpenAI-compatible server: what the model received is read off the server's requests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.fakes.openai_server import Call, Reply
from tests.fakes.user_config import user_config_file

KEY = "sk-live-0123456789abcdef"


def lathe(
    tmp_path: Path, *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    clean = ("LATHE_", "OPENAI_", "VISUAL", "EDITOR")
    env = {k: v for k, v in os.environ.items() if not k.startswith(clean)} | (env or {})
    env.update(
        OPENAI_API_KEY=KEY,
        LATHE_HOME=str(tmp_path / "home"),
        LATHE_CONFIG=user_config_file(tmp_path / "config" / "config.toml"),
    )
    return subprocess.run(
        [sys.executable, "-m", "lathe", *args], cwd=tmp_path, env=env, capture_output=True,
        text=True, timeout=120, input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
    )  # fmt: skip


def run(server, ws: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return lathe(
        tmp_path, "run", "--model", "m", "--base-url", server.base_url, "-C", str(ws), *args
    )


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """A git repository whose workspace is one folder down: repo/AGENTS.md,
    repo/app/CLAUDE.md (the workspace), repo/app/sub/AGENTS.md below it."""
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "AGENTS.md").write_text("ROOT: use tabs.\n")
    ws = repo / "app"
    (ws / "sub").mkdir(parents=True)
    (ws / "CLAUDE.md").write_text("APP: run `make check`.\n")
    (ws / "sub" / "AGENTS.md").write_text("SUB: never touch generated.py.\n")
    (ws / "sub" / "one.py").write_text("one = 1\n")
    (ws / "sub" / "two.py").write_text("two = 2\n")
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "AGENTS.md").write_text("USER: answer in English.\n")
    return ws


@pytest.fixture
def memory_file(tmp_path, ws, monkeypatch):
    """Where a run in `ws` keeps a memory scope ("user", "project"), its folder made."""
    from lathe.memory import memory_path

    monkeypatch.setenv("LATHE_HOME", str(tmp_path / "home"))  # as the run's own

    def place(scope: str) -> Path:
        path = memory_path(scope, ws)
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    return place


def _memory_call(action: str, **arguments: str) -> Call:
    return Call("memory", {"action": action, "scope": "user", **arguments})


def _tool_messages(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def test_root_files_come_first_and_a_nested_one_arrives_once_with_the_first_read_below(
    tmp_path, ws, fake_openai
):
    fake_openai.enqueue(
        Reply(calls=[Call("read", {"path": "sub/one.py"})]),
        Reply(calls=[Call("read", {"path": "sub/two.py"})]),
        Reply("Done."),
    )

    result = run(fake_openai, ws, tmp_path, "look at sub")

    assert result.returncode == 0, result.stderr
    first, second, third = fake_openai.chat_bodies()
    system = first["messages"][0]["content"]
    assert system.index("USER: answer") < system.index("ROOT: use") < system.index("APP: run")
    assert "SUB:" not in system and "SUB:" not in json.dumps(first["messages"][1:])
    assert _tool_messages(second)[0].endswith(
        "[Instructions from sub/AGENTS.md, for the work under sub/; follow them there:]\n"
        "SUB: never touch generated.py."
    )
    assert [m.count("SUB:") for m in _tool_messages(third)] == [1, 0]


def test_a_budget_cut_is_a_visible_notice(tmp_path, ws, fake_openai):
    fake_openai.enqueue(Reply("Done."))

    result = run(fake_openai, ws, tmp_path, "-c", "memory.instructions_max_bytes=40", "hi")

    assert result.returncode == 0, result.stderr
    assert "CLAUDE.md was left out (23 bytes): the instruction files of a run share 40" in (
        result.stderr
    )
    system = fake_openai.chat_bodies()[0]["messages"][0]["content"]
    assert "[CLAUDE.md is left out, 23 bytes: the budget is spent]" in system


def test_what_one_run_remembers_the_next_run_starts_with(tmp_path, ws, fake_openai):
    entry = f"Run the tests with `make check` (the key was {KEY})."
    fake_openai.enqueue(
        Reply(calls=[Call("memory", {"action": "add", "scope": "project", "text": entry})]),
        Reply(calls=[Call("memory", {"action": "add", "scope": "user", "text": "Be brief."})]),
        Reply("Noted."),
    )
    first = run(fake_openai, ws, tmp_path, "learn")
    assert first.returncode == 0, first.stderr
    bodies = fake_openai.chat_bodies()
    assert "make check` (the" not in bodies[0]["messages"][0]["content"]
    assert "secret in the text was masked" in _tool_messages(bodies[1])[0]
    # Written mid-run, the memory did not change this run's system prompt.
    assert bodies[2]["messages"][0]["content"] == bodies[0]["messages"][0]["content"]

    fake_openai.enqueue(Reply("Hello."))
    second = run(fake_openai, ws, tmp_path, "hello")

    assert second.returncode == 0, second.stderr
    system = fake_openai.chat_bodies()[-1]["messages"][0]["content"]
    assert "Project memory:\n- Run the tests with `make check` (the key was sk-" in system
    assert "User memory:\n- Be brief." in system
    assert KEY not in system
    stored = list((tmp_path / "home" / "memory" / "projects").glob("*.md"))
    assert len(stored) == 1 and KEY not in stored[0].read_text()


def test_memory_show_and_clear_through_the_cli(tmp_path, ws, fake_openai):
    fake_openai.enqueue(
        Reply(calls=[Call("memory", {"action": "add", "scope": "project", "text": "Use tox."})]),
        Reply("Noted."),
    )
    assert run(fake_openai, ws, tmp_path, "learn").returncode == 0

    shown = lathe(tmp_path, "memory", "show", "-C", str(ws))

    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert (
        lines[0] == "Instruction files, in the order they are read (3 files, budget 32,768 bytes):"
    )
    assert [line.split()[1] for line in lines[1:4]] == [
        str(tmp_path / "config" / "AGENTS.md"), "../AGENTS.md", "CLAUDE.md",
    ]  # fmt: skip
    assert lines[3].split()[-2:] == ["23", "bytes"]
    assert "Project memory: " in shown.stdout and "(1 entry, 11 of 8,192 bytes)" in shown.stdout
    assert "  - Use tox." in lines

    refused = lathe(tmp_path, "memory", "clear", "-C", str(ws), stdin="n\n")
    assert refused.returncode == 0 and refused.stdout.endswith("nothing was cleared\n")
    assert "Use tox." in lathe(tmp_path, "memory", "show", "-C", str(ws)).stdout

    cleared = lathe(tmp_path, "memory", "clear", "-C", str(ws), "--yes")
    assert cleared.returncode == 0, cleared.stderr
    assert "removed 1 entry from the project memory" in cleared.stdout
    assert "Use tox." not in lathe(tmp_path, "memory", "show", "-C", str(ws)).stdout


def test_recall_finds_an_earlier_session_and_never_the_current_one(tmp_path, ws, fake_openai):
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": "python -m pytest --version"})]),
        Reply("The flaky import came from a stale .pyc; clearing __pycache__ fixed it."),
    )
    earlier = run(fake_openai, ws, tmp_path, "fix the flaky import in the loader")
    assert earlier.returncode == 0, earlier.stderr
    fake_openai.enqueue(
        Reply(calls=[Call("recall", {"query": "flaky import pytest"})]),
        Reply("Found it."),
    )

    later = run(fake_openai, ws, tmp_path, "how did we fix the flaky import last week?")

    assert later.returncode == 0, later.stderr
    sessions = sorted((tmp_path / "home" / "sessions").glob("*/*.jsonl"))
    ids = [json.loads(p.read_text().splitlines()[0])["id"] for p in sessions]
    (found,) = _tool_messages(fake_openai.chat_bodies()[-1])
    assert "stale .pyc" in found and "fix the flaky import in the loader" in found
    assert "passing command:\npython -m pytest --version" in found
    assert sum(found.count(f"session {sid},") for sid in ids) == found.count("session ")
    current = next(
        sid for sid, p in zip(ids, sessions, strict=True) if "last week" in p.read_text()
    )
    assert f"session {current}" not in found


def test_memory_edit_opens_the_editor_on_the_file(tmp_path, ws):
    editor = """sh -c 'echo "- written in the editor" >> "$0"'"""

    edited = lathe(
        tmp_path, "memory", "edit", "--scope", "user", "-C", str(ws), env={"EDITOR": editor}
    )
    unset = lathe(tmp_path, "memory", "edit", "-C", str(ws))

    assert edited.returncode == 0, edited.stderr
    assert (tmp_path / "home" / "memory" / "user.md").read_text() == "- written in the editor\n"
    assert unset.returncode == 2
    assert unset.stderr.startswith("lathe: set $VISUAL or $EDITOR to edit ")
    assert len(unset.stderr.splitlines()) == 1


def test_memory_clear_with_no_answer_and_an_editor_that_fails_say_so(tmp_path, ws):
    memory = tmp_path / "home" / "memory" / "user.md"
    memory.parent.mkdir(parents=True)
    memory.write_text("- keep me\n")

    unanswered = lathe(tmp_path, "memory", "clear", "--scope", "user", "-C", str(ws))
    failed = lathe(tmp_path, "memory", "edit", "--scope", "user", "-C", str(ws),
                   env={"EDITOR": "false"})  # fmt: skip

    assert unanswered.returncode == 1, unanswered.stderr  # no terminal, no --yes
    assert unanswered.stderr.strip() == (
        "lathe: nothing was cleared: no answer came (--yes clears without asking)"
    )
    assert failed.returncode == 1
    assert failed.stderr.strip() == "lathe: the editor 'false' exited with status 1"
    assert memory.read_text() == "- keep me\n"


@pytest.mark.parametrize(
    "written",
    [
        "* Answer in French.\n* Never push to main.\n* Tests: use pytest -q, not tox.\n",
        "- Tests: use pytest -q, not tox.\nAlways answer in French.\n1. Never push to main.\n",
    ],
)
def test_removing_one_entry_keeps_the_notes_the_user_wrote_by_hand(
    tmp_path, ws, fake_openai, written, memory_file
):
    # `*` bullets, or plain lines after a `-` one, were all one entry: the model removed
    # "tox" and the whole file went.
    user = memory_file("user")
    user.write_text(written)
    fake_openai.enqueue(Reply(calls=[_memory_call("remove", old_text="tox")]), Reply("Done."))
    done = run(fake_openai, ws, tmp_path, "--approval", "full", "forget the tox note")
    assert done.returncode == 0, done.stderr
    left = user.read_text()
    assert "tox" not in left
    assert "nswer in French." in left and "Never push to main." in left


def test_a_memory_file_lathe_cannot_read_is_one_line(tmp_path, ws, fake_openai, memory_file):
    # A folder where the project memory file goes ended every run with a traceback.
    memory_file("project").mkdir()
    done = run(fake_openai, ws, tmp_path, "Look")
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("lathe: cannot read the memory file ") and "Traceback" not in line


def test_a_memory_change_keeps_the_bytes_of_other_entries(tmp_path, ws, fake_openai, memory_file):
    # A latin-1 entry became U+FFFD on disk at the next unrelated `memory add`.
    user = memory_file("user")
    user.write_bytes("- Order at the caf\u00e9.\n".encode("latin-1"))
    fake_openai.enqueue(Reply(calls=[_memory_call("add", text="Use tabs.")]), Reply("Done."))
    done = run(fake_openai, ws, tmp_path, "--approval", "full", "Remember tabs")
    assert done.returncode == 0, done.stderr
    assert user.read_bytes() == b"- Order at the caf\xe9.\n- Use tabs.\n"


def test_a_memory_file_that_is_a_link_is_written_through(tmp_path, ws, fake_openai, memory_file):
    # The first `memory add` put a plain copy in the link's place: the dotfiles file
    # the link led to never got the entry.
    dotfiles = tmp_path / "dotfiles" / "lathe-user.md"
    dotfiles.parent.mkdir()
    dotfiles.write_text("- Answer in English.\n")
    user = memory_file("user")
    user.symlink_to(dotfiles)
    fake_openai.enqueue(Reply(calls=[_memory_call("add", text="Use tabs.")]), Reply("Done."))
    done = run(fake_openai, ws, tmp_path, "--approval", "full", "Remember tabs")
    assert done.returncode == 0, done.stderr
    assert user.is_symlink()
    assert dotfiles.read_text() == "- Answer in English.\n- Use tabs.\n"


def test_an_instruction_file_linked_out_of_the_repository_is_named_when_skipped(
    tmp_path, ws, fake_openai
):
    # It was left out without a word, and `lathe memory show` said there were none.
    team = tmp_path / "team" / "AGENTS.md"
    team.parent.mkdir()
    team.write_text("TEAM: squash merges.\n")
    (ws / "CLAUDE.md").unlink()
    (ws / "AGENTS.md").symlink_to(team)
    fake_openai.enqueue(Reply("Done."))
    done = run(fake_openai, ws, tmp_path, "Look")
    assert done.returncode == 0, done.stderr
    assert "TEAM" not in json.dumps(fake_openai.chat_bodies()[0])
    assert "AGENTS.md skipped: it is a link to" in done.stderr
    shown = lathe(tmp_path, "memory", "show", "-C", str(ws))
    assert shown.returncode == 0, shown.stderr
    assert "AGENTS.md skipped: it is a link to" in shown.stdout
