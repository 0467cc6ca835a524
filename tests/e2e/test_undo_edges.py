"""`lathe undo` at the edges of real repositories, each reproduced with the real CLI:

- a turn that rewrote `.gitignore` made the files it had ignored (`.env`, node_modules)
  look created by the turn, and undo deleted them;
- a file the user's repository tracks although it matches `.gitignore` (added with
  `git add -f`) was never recorded: the agent's overwrite of it could not be undone;
- a relative LATHE_HOME crashed the run with a traceback and left a git repository
  inside the workspace;
- a run ended by SIGHUP (the terminal closed) skipped the checkpoint after its turn, so
  undo reverted the turn before it;
- lathe's start-over between `--attempts` was undoable like a user's restore: undo after
  the run brought the failed attempts' files back, one attempt at a time.
"""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import sys
from pathlib import Path

from tests.e2e.test_run_edges import _env, lathe_run
from tests.fakes.openai_server import Call, Hang, Reply
from tests.waiting import while_running


def git(ws: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=u", "-c", "user.email=u@example.com", *args],
        cwd=ws, check=True, capture_output=True,
    )  # fmt: skip


def lathe(tmp_path: Path, *args: str, env: dict[str, str] | None = None):
    return subprocess.run(
        [sys.executable, "-m", "lathe", *args], cwd=tmp_path, env=env or _env(tmp_path),
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_undo_of_a_turn_that_rewrote_gitignore_keeps_the_files_it_had_ignored(
    tmp_path, fake_openai
):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".gitignore").write_text(".env\nnode_modules/\n")
    (ws / "app.py").write_text("x = 1\n")
    git(ws, "init", "-q")
    git(ws, "add", ".")
    git(ws, "commit", "-qm", "init")
    (ws / ".env").write_text("API_KEY=secret\n")
    (ws / "node_modules" / "p").mkdir(parents=True)
    (ws / "node_modules" / "p" / "index.js").write_text("module.exports = 1\n")
    rewrite = "printf '__pycache__/\\n' > .gitignore"
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": rewrite})]), Reply("Done."))
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Tidy .gitignore")
    assert done.returncode == 0, done.stderr

    undone = lathe(tmp_path, "undo", "-C", str(ws))

    assert undone.returncode == 0, undone.stderr
    assert (ws / ".gitignore").read_text() == ".env\nnode_modules/\n"
    assert (ws / ".env").read_text() == "API_KEY=secret\n"
    assert (ws / "node_modules" / "p" / "index.js").is_file()
    assert "deleted" not in undone.stdout


def test_a_relative_lathe_home_is_taken_from_where_lathe_was_started(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    env = {**_env(tmp_path), "LATHE_HOME": "relhome"}
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": "echo b > a.txt"})]), Reply("Changed it.")
    )
    done = subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url",
         fake_openai.base_url, "-C", str(ws), "--approval", "full", "change a.txt"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert not (ws / "relhome").exists()
    assert (tmp_path / "relhome" / "sessions").is_dir()

    undone = lathe(tmp_path, "undo", "-C", str(ws), env=env)
    assert undone.returncode == 0, undone.stderr
    assert (ws / "a.txt").read_text() == "a\n"


def test_a_run_ended_by_sighup_records_its_turn_so_undo_reverts_that_turn(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("0\n")
    started = ws / "started"
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": "echo first > b.txt"})]),
        Reply(calls=[Call("bash", {"command": "echo agent > a.txt; touch started; sleep 60"})]),
        Reply("Done."),
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url",
         fake_openai.base_url, "-C", str(ws), "--approval", "full", "two turns"],
        cwd=tmp_path, env=_env(tmp_path), stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    while_running(process, started.exists, "turn 2 never ran")

    process.send_signal(signal.SIGHUP)
    _, errors = process.communicate(timeout=60)
    assert process.returncode == 129, errors
    assert "Traceback" not in errors

    undone = lathe(tmp_path, "undo", "-C", str(ws))
    assert undone.returncode == 0, undone.stderr
    assert (ws / "a.txt").read_text() == "0\n"  # turn 2's change reverted
    assert (ws / "b.txt").read_text() == "first\n"  # turn 1's kept


def test_after_a_kill_mid_turn_undo_reverts_the_turn_that_was_cut(tmp_path, fake_openai):
    # No "after" checkpoint was written for the killed turn: undo reverted the turn
    # before it and kept the cut turn's changes, as if the user had made them.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("0\n")
    started = ws / "started"
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": "echo first > b.txt"})]),
        Reply(calls=[Call("bash", {"command": "echo agent > a.txt; touch started; sleep 60"})]),
        Reply("Done."),
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url",
         fake_openai.base_url, "-C", str(ws), "--approval", "full", "two turns"],
        cwd=tmp_path, env=_env(tmp_path), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    while_running(process, started.exists, "turn 2 never ran")

    process.kill()
    process.wait(timeout=60)
    (ws / "b.txt").write_text("edited by hand after the kill\n")

    # Where the cut turn left off is not known: what changed since could be the user's
    # work, so nothing is reverted until they say so.
    undone = lathe(tmp_path, "undo", "-C", str(ws))
    assert undone.returncode == 1, undone.stderr  # every file kept: nothing undone yet
    assert "was cut short (lathe was killed)" in undone.stderr, undone.stderr
    assert (ws / "a.txt").read_text() == "agent\n"
    assert (ws / "b.txt").read_text() == "edited by hand after the kill\n"
    listed = lathe(tmp_path, "checkpoints", "list", "-C", str(ws))
    assert "after turn 2 (cut short)" in listed.stdout, listed.stdout

    forced = lathe(tmp_path, "undo", "--force", "-C", str(ws))
    assert forced.returncode == 0, forced.stderr
    assert (ws / "a.txt").read_text() == "0\n"  # the cut turn's change reverted
    assert (ws / "b.txt").read_text() == "first\n"  # as turn 1 left it


def test_undo_brings_back_a_tracked_file_that_matches_gitignore(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".gitignore").write_text("config/\n")
    (ws / "config").mkdir()
    (ws / "config" / "app.ini").write_text("s=1\n")
    git(ws, "init", "-q")
    git(ws, "add", ".gitignore")
    git(ws, "add", "-f", "config/app.ini")
    git(ws, "commit", "-qm", "init")
    (ws / "config" / "app.ini").write_text("s=USER-UNCOMMITTED\n")
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": "echo BROKE > config/app.ini"})]), Reply("Done.")
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "Reset the config")
    assert done.returncode == 0, done.stderr

    undone = lathe(tmp_path, "undo", "-C", str(ws))

    assert undone.returncode == 0, undone.stderr
    assert (ws / "config" / "app.ini").read_text() == "s=USER-UNCOMMITTED\n"


def test_undo_while_a_run_works_says_what_undo_can_do(tmp_path, fake_openai):
    # It said "or pass --wait to start when it is done", and `lathe undo --wait` is no
    # option.
    ws = tmp_path / "ws"
    ws.mkdir()
    fake_openai.enqueue(Hang(60))
    process = subprocess.Popen(
        [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url",
         fake_openai.base_url, "-C", str(ws), "--approval", "full", "wait"],
        cwd=tmp_path, env=_env(tmp_path), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        while_running(process, fake_openai.chat_bodies, "no model request")
        busy = lathe(tmp_path, "undo", "-C", str(ws))
    finally:
        process.kill()
        process.wait(timeout=10)

    assert busy.returncode == 2
    [line] = busy.stderr.splitlines()
    assert line.startswith("lathe: another lathe run") and "--wait" not in line, line
    assert "run this again" in line


def test_a_leftover_git_lock_in_the_store_does_not_block_the_next_run(tmp_path, fake_openai):
    # A kill -9 during a snapshot leaves git's index.lock in the store: every later run
    # failed with git's seven-line complaint.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    change = Reply(calls=[Call("bash", {"command": "echo b > a.txt"})])
    fake_openai.enqueue(change, Reply("Changed."))
    assert lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "go").returncode == 0
    [store] = (tmp_path / "home" / "checkpoints").iterdir()
    (store / "git" / "index.lock").write_text("")

    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": "echo c > a.txt"})]), Reply("ok"))
    again = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "again")

    assert again.returncode == 0, again.stderr
    undone = lathe(tmp_path, "undo", "-C", str(ws))
    assert undone.returncode == 0, undone.stderr
    assert (ws / "a.txt").read_text() == "b\n"


def test_continue_after_an_undo_tells_the_model_which_files_went_back(tmp_path, fake_openai):
    # The model went on believing feature.py existed: nothing said it was undone.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("x = 1\n")
    fake_openai.enqueue(
        Reply(calls=[Call("write", {"path": "feature.py", "content": "def f():\n    pass\n"})]),
        Reply("Created feature.py."),
    )
    assert lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "add f").returncode == 0
    undone = lathe(tmp_path, "undo", "-C", str(ws))
    assert undone.returncode == 0 and not (ws / "feature.py").exists(), undone.stderr

    fake_openai.enqueue(Reply("I will write it again."))
    resumed = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "--continue", "test f")

    assert resumed.returncode == 0, resumed.stderr
    users = [m["content"] for m in fake_openai.chat_bodies()[-1]["messages"] if m["role"] == "user"]
    assert "feature.py" in users[-1] and "test f" in users[-1]


def test_an_undo_that_kept_every_file_does_not_say_it_already_matched(tmp_path, fake_openai):
    # The user changed the file after the run: undo kept it, and said the workspace
    # "already matches" the checkpoint, which it did not.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    edit = {"path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}
    fake_openai.enqueue(Reply(calls=[Call("edit", edit)]), Reply("Done."))
    assert lathe_run(fake_openai, ws, tmp_path, "set x").returncode == 0
    (ws / "a.py").write_text("x = 42\n")

    undone = lathe(tmp_path, "undo", "-C", str(ws))

    assert "already matches" not in undone.stdout, undone.stdout
    assert "Nothing was changed" in undone.stdout and "a.py" in undone.stderr
    assert (ws / "a.py").read_text() == "x = 42\n"


def test_a_resumed_fork_is_told_the_files_changed_since_its_branch_point(tmp_path, fake_openai):
    # The fork has its own id, which no checkpoint names: it went on believing x = 2.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    fake_openai.enqueue(
        Reply(calls=[Call("edit", {"path": "a.py", "old_string": "x = 1", "new_string": "x = 2"})]),
        Reply(calls=[Call("edit", {"path": "a.py", "old_string": "x = 2", "new_string": "x = 3"})]),
        Reply("x is 3."),
    )
    assert lathe_run(fake_openai, ws, tmp_path, "set x").returncode == 0
    [session] = (tmp_path / "home" / "sessions").rglob("*.jsonl")
    entries = [json.loads(line) for line in session.read_text().splitlines()[1:]]
    first_result = next(e["id"] for e in entries if e.get("message", {}).get("role") == "tool")
    forked = lathe(tmp_path, "sessions", "fork", session.stem.split("_")[-1], "--at", first_result)
    assert forked.returncode == 0, forked.stderr
    fork_id = forked.stdout.split()[-1]

    fake_openai.enqueue(Reply("x is 2."))
    resumed = lathe_run(fake_openai, ws, tmp_path, "--resume", fork_id, "what is x?")

    assert resumed.returncode == 0, resumed.stderr
    users = [m["content"] for m in fake_openai.chat_bodies()[-1]["messages"] if m["role"] == "user"]
    assert "a.py" in users[-1] and "what is x?" in users[-1]


def test_a_change_inside_a_nested_repository_is_not_called_no_change(tmp_path, fake_openai):
    # Checkpoints record a nested repository as its commit alone: an edit inside it
    # ended with "no file was changed", and `lathe undo` had nothing to undo.
    ws = tmp_path / "ws"
    lib = ws / "vendor" / "lib"
    lib.mkdir(parents=True)
    (lib / "lib.py").write_text("k = 1\n")
    git(lib, "init", "-q")
    git(lib, "add", ".")
    git(lib, "commit", "-qm", "lib")
    edit = {"path": "vendor/lib/lib.py", "old_string": "k = 1", "new_string": "k = 2"}
    fake_openai.enqueue(Reply(calls=[Call("edit", edit)]), Reply("Done."))

    done = lathe_run(fake_openai, ws, tmp_path, "edit lib")

    assert done.returncode == 0, done.stderr
    assert (lib / "lib.py").read_text() == "k = 2\n"
    assert "no file was changed" not in done.stderr, done.stderr
    assert "vendor/lib" in done.stderr and "undo" in done.stderr
    undone = lathe(tmp_path, "undo", "-C", str(ws))
    assert "vendor/lib" in undone.stdout + undone.stderr, undone


def test_undo_keeps_an_empty_folder_the_user_had(tmp_path, fake_openai):
    # Snapshots hold files, not folders: the empty logs/ the user had looked made by the
    # turn that wrote into it, and undo removed it (so did an --attempts start-over).
    ws = tmp_path / "ws"
    (ws / "logs").mkdir(parents=True)
    (ws / "a.py").write_text("x = 1\n")
    write = {"path": "logs/run.txt", "content": "hi\n"}
    fake_openai.enqueue(Reply(calls=[Call("write", write)]), Reply("Done."))
    assert lathe_run(fake_openai, ws, tmp_path, "log it").returncode == 0
    assert (ws / "logs" / "run.txt").exists()

    undone = lathe(tmp_path, "undo", "-C", str(ws))

    assert undone.returncode == 0, undone.stderr
    assert not (ws / "logs" / "run.txt").exists()
    assert (ws / "logs").is_dir()


def test_undo_still_removes_a_folder_the_turn_made(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    write = {"path": "made/deep/run.txt", "content": "hi\n"}
    fake_openai.enqueue(Reply(calls=[Call("write", write)]), Reply("Done."))
    assert lathe_run(fake_openai, ws, tmp_path, "log it").returncode == 0

    assert lathe(tmp_path, "undo", "-C", str(ws)).returncode == 0
    assert not (ws / "made").exists()


def test_undo_keeps_an_empty_folder_made_after_the_last_checkpoint(tmp_path, fake_openai):
    # With no file changed since the last run's checkpoint, the turn started from that
    # checkpoint, whose folders were named before `logs/` was made: undo removed it.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    edit = {"path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}
    fake_openai.enqueue(Reply(calls=[Call("edit", edit)]), Reply("Done."))
    assert lathe_run(fake_openai, ws, tmp_path, "set x").returncode == 0
    (ws / "logs").mkdir()
    (ws / "logs\udcff").mkdir()  # a name that is not UTF-8 is named too
    write = {"path": "logs/run.txt", "content": "hi\n"}
    fake_openai.enqueue(Reply(calls=[Call("write", write)]), Reply("Done."))
    assert lathe_run(fake_openai, ws, tmp_path, "log it").returncode == 0

    undone = lathe(tmp_path, "undo", "-C", str(ws))

    assert undone.returncode == 0, undone.stderr
    assert not (ws / "logs" / "run.txt").exists()
    assert (ws / "logs").is_dir()


def test_an_undo_that_kept_every_file_leaves_the_turn_to_undo(tmp_path, fake_openai):
    # It was recorded as done: a second plain undo reverted the turn before, deleting
    # run A's file while run B's change, the one asked about, stayed.
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    for name in ("a.txt", "b.txt"):
        fake_openai.enqueue(
            Reply(calls=[Call("write", {"path": name, "content": "made\n"})]), Reply("Done.")
        )
        done = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", f"write {name}")
        assert done.returncode == 0, done.stderr
    (ws / "b.txt").write_text("made\nand edited by me\n")

    first = lathe(tmp_path, "undo", "-C", str(ws))
    again = lathe(tmp_path, "undo", "-C", str(ws))

    assert first.returncode == again.returncode == 1
    assert "Nothing was changed" in again.stdout and "--force" in again.stderr
    assert (ws / "a.txt").is_file() and (ws / "b.txt").is_file()
    forced = lathe(tmp_path, "undo", "--force", "-C", str(ws))
    assert forced.returncode == 0, forced.stderr
    assert (ws / "a.txt").is_file() and not (ws / "b.txt").exists()


def test_undo_after_attempts_goes_back_before_the_run_not_into_a_failed_attempt(
    tmp_path, fake_openai
):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "o.txt").write_text("orig\n")
    attempt = itertools.count(1)
    fake_openai.responder = lambda body: (
        Reply(calls=[Call("write", {"path": "a.txt", "content": f"attempt {next(attempt)}\n"})])
        if len(body["messages"]) == 2  # an attempt's first request: system, task
        else Reply("Done.")
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--verify", "false", "--attempts", "3",
                     "--max-turns", "2", "write a.txt")  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert (ws / "a.txt").read_text() == "attempt 3\n"

    first = lathe(tmp_path, "undo", "-C", str(ws))
    assert first.returncode == 0, first.stderr
    assert not (ws / "a.txt").exists()
    again = lathe(tmp_path, "undo", "-C", str(ws))

    # Before, this undo brought back attempt 2's a.txt, the next one took it away, the
    # next brought back attempt 1's...
    assert again.returncode == 2 and "nothing to undo" in again.stderr, again
    assert {p.name: p.read_text() for p in ws.iterdir() if p.is_file()} == {"o.txt": "orig\n"}
    # The list says what lathe did between the attempts.
    listed = lathe(tmp_path, "checkpoints", "list", "-C", str(ws)).stdout.splitlines()
    resets = [line.split("\t")[2:4] for line in listed if "\treset\t" in line]
    assert resets == [
        ["reset", "reset to #1 (before the run) for attempt 3"],
        ["reset", "reset to #1 (before the run) for attempt 2"],
    ]
