"""A file the user changed by hand since lathe last wrote it is kept by `checkpoints
restore` and by a run's start-over between `--attempts`, as by `undo`; each reproduced
with the real CLI against the fake server:

- `restore 1` said it kept the user's b.txt, and the `restore 2` that followed put the
  agent's b.txt back, listed as "reverted", without a word;
- an `undo` before the restore did the same: the undo's checkpoint recorded the whole
  workspace, the user's edit with it, and the restore judged "changed by the user"
  against that checkpoint;
- the start-over between attempts set back a file the user edited between two turns
  (the next "before turn" checkpoint had recorded it), and `lathe undo` then said there
  was nothing to undo.
"""

from __future__ import annotations

from pathlib import Path

from tests.checkpoint.helpers import bash, lathe, run, shell, write
from tests.fakes.openai_server import Reply

from lathe.checkpoint import Checkpoints


def two_turns(server, ws: Path, tmp_path: Path) -> None:
    """The agent writes a.txt and b.txt (turn 1), then c.txt (turn 2)."""
    for name in "abc":
        (ws / f"{name}.txt").write_text(f"{name}0\n")
    server.enqueue(
        Reply(calls=[bash("echo a1 > a.txt; echo b1 > b.txt")]),
        Reply(calls=[bash("echo c1 > c.txt")]),
        Reply("Done."),
    )
    done = run(server, ws, tmp_path, "write them")
    assert done.returncode == 0, done.stderr


def test_a_second_restore_keeps_the_file_the_first_one_kept(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    two_turns(fake_openai, ws, tmp_path)
    (ws / "b.txt").write_text("USER WORK\n")

    first = lathe(tmp_path, "checkpoints", "restore", "1", "-C", str(ws))
    assert "b.txt" in first.stderr and "kept" in first.stderr, first
    second = lathe(tmp_path, "checkpoints", "restore", "2", "-C", str(ws))

    assert (ws / "b.txt").read_text() == "USER WORK\n"
    assert "b.txt" not in second.stdout  # not among the files it reverted
    assert "kept" in second.stderr and "b.txt" in second.stderr, second
    assert (ws / "a.txt").read_text() == "a1\n"  # the rest of the restore went ahead


def test_an_undo_before_a_restore_does_not_make_the_users_edit_lathes(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    two_turns(fake_openai, ws, tmp_path)
    (ws / "b.txt").write_text("USER WORK\n")

    undone = lathe(tmp_path, "undo", "-C", str(ws))  # turn 2: c.txt only
    assert undone.returncode == 0, undone.stderr
    restored = lathe(tmp_path, "checkpoints", "restore", "1", "-C", str(ws))

    assert (ws / "b.txt").read_text() == "USER WORK\n"
    assert "kept" in restored.stderr and "b.txt" in restored.stderr, restored
    assert (ws / "a.txt").read_text() == "a0\n"
    forced = lathe(tmp_path, "checkpoints", "restore", "1", "--force", "-C", str(ws))
    assert forced.returncode == 0, forced.stderr
    assert (ws / "b.txt").read_text() == "b0\n"


def test_the_start_over_between_attempts_keeps_a_file_edited_between_turns(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in "abc":
        (ws / f"{name}.txt").write_text(f"{name}0\n")
    requests = []

    def script(body):
        requests.append(body)
        match len(requests):
            case 1:
                return Reply(calls=[bash("echo a1 > a.txt")])
            case 2:  # between the turns, while the model "thinks": the user's edit
                (ws / "b.txt").write_text("USER EDIT during the run\n")
                return Reply(calls=[bash("echo c1 > c.txt")])
        return Reply("Done.")

    fake_openai.responder = script
    done = run(fake_openai, ws, tmp_path, "--verify", "false", "--attempts", "2", "go")

    assert done.returncode == 1, done.stderr
    assert (ws / "b.txt").read_text() == "USER EDIT during the run\n"
    started_over = [line for line in done.stderr.splitlines() if "starting over" in line]
    assert started_over and "b.txt" in started_over[0], done.stderr
    assert (ws / "a.txt").read_text() == "a0\n" and (ws / "c.txt").read_text() == "c0\n"


# The same rule through the API, where each step can be named.


def turn(cp: Checkpoints, n: int, ws: Path, script: str) -> None:
    cp.before_turn(n)
    shell(ws, script)
    cp.after_turn(n)


def test_a_file_lathe_wrote_last_is_restored_whatever_the_user_did_before(
    cp: Checkpoints, ws: Path
) -> None:
    write(ws, "u.txt", "0\n")
    turn(cp, 1, ws, "echo 1 > a.txt")
    write(ws, "u.txt", "user\n")  # recorded by "before turn 2"...
    turn(cp, 2, ws, "echo agent > u.txt")  # ...then overwritten by the agent

    report = cp.restore(3)  # "before turn 2": the user's version

    assert (report.restored, report.kept) == (["u.txt"], [])
    assert (ws / "u.txt").read_text() == "user\n"


def test_a_file_the_user_made_is_not_deleted_by_a_restore(cp: Checkpoints, ws: Path) -> None:
    turn(cp, 1, ws, "echo 1 > a.txt")
    write(ws, "notes.txt", "mine\n")
    turn(cp, 2, ws, "echo 2 > a.txt")

    report = cp.restore(1)

    assert report.kept == ["notes.txt"] and report.deleted == ["a.txt"]
    assert (ws / "notes.txt").read_text() == "mine\n"


def test_a_file_the_user_changed_and_changed_back_is_lathes_again(
    cp: Checkpoints, ws: Path
) -> None:
    turn(cp, 1, ws, "echo 1 > a.txt")
    write(ws, "a.txt", "user\n")
    cp.before_turn(2)  # recorded
    write(ws, "a.txt", "1\n")

    report = cp.restore(1)

    assert (report.deleted, report.kept) == (["a.txt"], [])
