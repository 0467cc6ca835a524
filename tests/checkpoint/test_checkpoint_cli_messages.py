"""What `lathe undo`, `lathe checkpoints` and a run's closing lines tell the user, through
the real CLI (`python -m lathe`) against the fake server:

- `checkpoints restore ²` crashed with a traceback, and `restore ٣` restored #3: the
  number was tested with `str.isdigit()`, which takes any Unicode digit;
- a run that changed only an ignored file (which checkpoints do not keep) ended with "no
  file was changed", and the `lathe undo` that followed reverted an earlier run's turn
  without a word of whose turn it was;
- `lathe undo -C par/proj` walked up to `par`, where lathe had run, and reverted files
  outside the folder given without naming the workspace it used.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from tests.checkpoint.helpers import bash, lathe
from tests.fakes.openai_server import Call, Reply


def run(server, ws: Path, tmp_path: Path, task: str, *calls: Call) -> subprocess.CompletedProcess:
    """One `lathe run` (full mode) whose model makes `calls` in one turn, then answers."""
    server.enqueue(Reply(calls=list(calls)), Reply("Done."))
    done = lathe(
        tmp_path, "run", "--model", "m", "--base-url", server.base_url, "--approval", "full",
        "-C", str(ws), task,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.parametrize("number", ["²", "٣", "#٣", "³"])
def test_restore_takes_only_ascii_digits(tmp_path, fake_openai, number):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("0\n")
    for n in (1, 2, 3):
        run(fake_openai, ws, tmp_path, f"step {n}", bash(f"echo {n} > a.txt"))
    assert "#3" in lathe(tmp_path, "checkpoints", "list", "-C", str(ws)).stdout  # a.txt: 2

    restored = lathe(tmp_path, "checkpoints", "restore", number, "-C", str(ws))

    assert restored.returncode == 2, restored
    assert "Traceback" not in restored.stderr, restored.stderr
    assert f"{number!r} is not a checkpoint number such as 7 or #7" in restored.stderr
    assert restored.stdout == ""
    assert (ws / "a.txt").read_text() == "3\n"


def test_a_run_that_changed_only_an_ignored_file_says_so(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".gitignore").write_text(".env\n")
    (ws / "app.py").write_text("v0\n")
    (ws / ".env").write_text("KEY=orig\n")
    run(fake_openai, ws, tmp_path, "task one: update app", bash("echo v1 > app.py"))

    edit = {"path": ".env", "old_string": "KEY=orig", "new_string": "KEY=broken"}
    done = run(
        fake_openai, ws, tmp_path, "task two: fix env",
        Call("read", {"path": ".env"}), Call("edit", edit),
    )  # fmt: skip

    assert (ws / ".env").read_text() == "KEY=broken\n"
    assert "no file was changed" not in done.stderr, done.stderr
    last = done.stderr.splitlines()[-1]
    assert ".env" in last and "checkpoints do not keep" in last and "undo" in last, last


def test_a_write_that_changed_nothing_is_still_no_change(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("v0\n")
    write = {"path": "app.py", "content": "v0\n"}

    done = run(
        fake_openai, ws, tmp_path, "rewrite app.py",
        Call("read", {"path": "app.py"}), Call("write", write),
    )  # fmt: skip

    assert done.stderr.splitlines()[-1] == "  no file was changed", done.stderr


def test_undo_names_the_turn_session_and_task_it_reverts(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".gitignore").write_text(".env\n")
    (ws / "app.py").write_text("v0\n")
    (ws / ".env").write_text("KEY=orig\n")
    run(fake_openai, ws, tmp_path, "task one: update app", bash("echo v1 > app.py"))
    run(fake_openai, ws, tmp_path, "task two: fix env", bash("echo KEY=broken > .env"))
    [first, second] = sorted(
        lathe(tmp_path, "sessions", "list", "-C", str(ws)).stdout.splitlines(),
        key=lambda line: "task two" in line,
    )

    undone = lathe(tmp_path, "undo", "-C", str(ws))

    assert undone.returncode == 0, undone.stderr
    assert (ws / "app.py").read_text() == "v0\n"
    headline = undone.stdout.splitlines()[0]
    first_id = first.split("\t")[0]
    assert headline.startswith(f'Undo of turn 1 of session {first_id} ("task one: update app"'), (
        undone.stdout
    )
    assert "task two" not in undone.stdout
    assert second.split("\t")[0] not in undone.stdout


def test_undo_of_a_turn_with_no_session_names_its_label(tmp_path, fake_openai):
    from lathe.checkpoint import Checkpoints

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("0\n")
    store = Checkpoints(ws, tmp_path / "home")
    store.before_turn(4)
    (ws / "a.txt").write_text("1\n")
    store.after_turn(4)

    undone = lathe(tmp_path, "undo", "-C", str(ws))

    assert undone.returncode == 0, undone.stderr
    assert undone.stdout.splitlines()[0].startswith("Undo of turn 4 (recorded "), undone.stdout
    assert "session" not in undone.stdout.splitlines()[0]


@pytest.mark.parametrize(
    ("command", "doing"), [(("undo",), "undo"), (("checkpoints", "restore", "1"), "restore")]
)
def test_a_command_that_walks_up_names_the_workspace_it_used(tmp_path, fake_openai, command, doing):
    par = tmp_path / "par"
    (par / "proj").mkdir(parents=True)
    (par / "notes.txt").write_text("n0\n")
    (par / "proj" / "main.py").write_text("p0\n")
    run(fake_openai, par, tmp_path, "edit notes", bash("echo n1 > notes.txt"))

    undone = lathe(tmp_path, *command, "-C", str(par / "proj"))

    assert undone.returncode == 0, undone.stderr
    assert (par / "notes.txt").read_text() == "n0\n"
    assert undone.stdout.splitlines()[0] == (
        f"{doing} in {par} (the nearest folder lathe has checkpoints for)"
    ), undone.stdout


def test_a_command_in_its_own_workspace_names_none(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("0\n")
    run(fake_openai, ws, tmp_path, "edit a", bash("echo 1 > a.txt"))

    undone = lathe(tmp_path, "undo", "-C", str(ws))
    listed = lathe(tmp_path, "checkpoints", "list", "-C", str(ws))

    assert "nearest folder" not in undone.stdout + undone.stderr
    assert "nearest folder" not in listed.stdout + listed.stderr


def test_a_piped_list_that_walks_up_names_the_workspace_on_stderr(tmp_path, fake_openai):
    par = tmp_path / "par"
    (par / "proj").mkdir(parents=True)
    (par / "notes.txt").write_text("n0\n")
    run(fake_openai, par, tmp_path, "edit notes", bash("echo n1 > notes.txt"))

    listed = lathe(tmp_path, "checkpoints", "list", "-C", str(par / "proj"))

    assert listed.returncode == 0, listed.stderr
    assert all(line.startswith("#") for line in listed.stdout.splitlines()), listed.stdout
    assert listed.stderr == (
        f"lathe: checkpoints list in {par} (the nearest folder lathe has checkpoints for)\n"
    )


def test_undo_names_the_restore_that_brings_back_a_file_the_turn_ignored(tmp_path, fake_openai):
    # Undo leaves the file (its new content was never recorded, so overwriting it could
    # not be undone), but had said checkpoints do not record it: #1 holds the original.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".gitignore").write_text("*.log\n")
    (ws / "config.json").write_text('{"db": "prod-original"}\n')
    ignore = {"path": ".gitignore", "old_string": "*.log\n", "new_string": "*.log\nconfig.json\n"}
    change = {"path": "config.json", "old_string": "prod-original", "new_string": "CHANGED"}
    run(fake_openai, ws, tmp_path, "ignore it", Call("edit", ignore), Call("edit", change))

    undone = lathe(tmp_path, "undo", "-C", str(ws))

    assert undone.returncode == 0, undone.stderr
    assert (ws / ".gitignore").read_text() == "*.log\n"
    assert (ws / "config.json").read_text() == '{"db": "CHANGED"}\n'
    assert "do not record" not in undone.stderr, undone.stderr
    assert "config.json" in undone.stderr
    assert "checkpoint #1" in undone.stderr and "`lathe checkpoints restore 1`" in undone.stderr
    restored = lathe(tmp_path, "checkpoints", "restore", "1", "-C", str(ws))
    assert restored.returncode == 0, restored.stderr
    assert (ws / "config.json").read_text() == '{"db": "prod-original"}\n'
