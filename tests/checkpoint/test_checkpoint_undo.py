"""Undo and restore against real files and real git, in a workspace that is not a repo."""

from __future__ import annotations

import os
import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from tests.checkpoint.helpers import files, shell, write

from lathe.checkpoint import Checkpoints, FileChange
from lathe.errors import UsageError


def agent_turn(cp: Checkpoints, turn: int, change: str, ws: Path) -> None:
    cp.before_turn(turn)
    shell(ws, change)
    cp.after_turn(turn)


def test_undo_reverts_an_edit(cp: Checkpoints, ws: Path) -> None:
    write(ws, "src/app.py", "print('one')\n")
    write(ws, "README", "readme\n")
    before = files(ws)

    cp.before_turn(1)
    (ws / "src/app.py").write_text("print('two')\n")  # what the edit tool does
    cp.after_turn(1)
    report = cp.undo()

    assert files(ws) == before
    assert report.restored == ["src/app.py"]
    assert (report.recreated, report.deleted, report.kept) == ([], [], [])
    assert report.target.label == "before turn 1"


def test_undo_reverts_a_shell_command(cp: Checkpoints, ws: Path) -> None:
    write(ws, "f", "f content\n")
    write(ws, "keep", "untouched\n")
    before = files(ws)

    agent_turn(cp, 1, "rm f; echo x > g", ws)
    assert set(files(ws)) == {"g", "keep"}
    report = cp.undo()

    assert files(ws) == before
    assert report.recreated == ["f"]
    assert report.deleted == ["g"]


def test_undo_removes_directories_the_turn_created(cp: Checkpoints, ws: Path) -> None:
    write(ws, "a", "a\n")
    (ws / "empty-before").mkdir()
    agent_turn(cp, 1, "mkdir -p new/deep && echo x > new/deep/file && echo y > new/top", ws)

    cp.undo()

    assert files(ws) == {"a": b"a\n"}
    assert not (ws / "new").exists()
    assert (ws / "empty-before").is_dir()  # not ours: it held nothing the turn added


def test_undo_swaps_file_and_directory_back(cp: Checkpoints, ws: Path) -> None:
    write(ws, "thing", "a file\n")
    write(ws, "dir/inner", "inner\n")
    before = files(ws)

    swap = "rm thing && mkdir thing && echo n > thing/x && rm -r dir && echo d > dir"
    agent_turn(cp, 1, swap, ws)
    cp.undo()

    assert files(ws) == before
    assert (ws / "thing").is_file() and (ws / "dir").is_dir()


def test_undo_keeps_files_the_user_changed_since(cp: Checkpoints, ws: Path) -> None:
    write(ws, "agent.txt", "v1\n")
    write(ws, "shared.txt", "v1\n")
    write(ws, "mine.txt", "v1\n")
    agent_turn(cp, 1, "echo agent > agent.txt; echo agent > shared.txt", ws)
    # The user, outside lathe: the same file the agent changed, and another one.
    write(ws, "shared.txt", "user\n")
    write(ws, "mine.txt", "user\n")

    report = cp.undo()

    assert report.restored == ["agent.txt"]
    assert report.kept == ["shared.txt"]
    assert report.forced == []
    assert files(ws) == {"agent.txt": b"v1\n", "shared.txt": b"user\n", "mine.txt": b"user\n"}


def test_undo_with_force_overwrites_the_users_change(cp: Checkpoints, ws: Path) -> None:
    write(ws, "agent.txt", "v1\n")
    write(ws, "shared.txt", "v1\n")
    write(ws, "mine.txt", "v1\n")
    agent_turn(cp, 1, "echo agent > agent.txt; echo agent > shared.txt", ws)
    write(ws, "shared.txt", "user\n")
    write(ws, "mine.txt", "user\n")

    report = cp.undo(force=True)

    assert report.kept == []
    assert report.forced == ["shared.txt"]
    assert sorted(report.restored) == ["agent.txt", "shared.txt"]
    # force reverts the turn completely, but a file the turn never touched stays yours.
    assert files(ws) == {"agent.txt": b"v1\n", "shared.txt": b"v1\n", "mine.txt": b"user\n"}
    # Nothing is lost even so: the user's version is in the backup checkpoint.
    assert any(c.commit == report.backup.commit for c in cp.list())


def test_user_recreating_a_deleted_file_is_kept(cp: Checkpoints, ws: Path) -> None:
    write(ws, "f", "original\n")
    agent_turn(cp, 1, "rm f", ws)
    write(ws, "f", "the user's new f\n")

    report = cp.undo()

    assert report.kept == ["f"]
    assert (ws / "f").read_text() == "the user's new f\n"


def test_undo_of_the_undo_brings_the_turn_back(cp: Checkpoints, ws: Path) -> None:
    write(ws, "f", "f\n")
    write(ws, "a", "before\n")
    agent_turn(cp, 1, "rm f; echo x > g; echo after > a", ws)
    after_turn = files(ws)

    undone = cp.undo()
    assert files(ws) == {"f": b"f\n", "a": b"before\n"}
    assert {c.n: c.commit for c in cp.list()}[undone.backup.n] == undone.backup.commit
    redone = cp.restore(undone.backup.n)

    assert files(ws) == after_turn
    assert redone.target.label == "after turn 1"  # the state the undo had left
    # Taking back the undo was itself an operation: undo reverts it.
    cp.undo()
    assert files(ws) == {"f": b"f\n", "a": b"before\n"}


def test_undo_again_goes_one_turn_further_back(cp: Checkpoints, ws: Path) -> None:
    write(ws, "a", "0\n")
    agent_turn(cp, 1, "echo 1 > a", ws)
    agent_turn(cp, 2, "echo 2 > a; echo b > b", ws)
    agent_turn(cp, 3, "true", ws)  # read-only turn: records nothing

    first = cp.undo()
    assert files(ws) == {"a": b"1\n"}
    assert first.target.label == "after turn 1"
    second = cp.undo()
    assert files(ws) == {"a": b"0\n"}
    assert second.target.label == "before turn 1"
    with pytest.raises(UsageError, match="nothing to undo"):
        cp.undo()


def test_plain_undo_after_a_partial_undo_goes_further_back(cp: Checkpoints, ws: Path) -> None:
    write(ws, "a", "0\n")
    agent_turn(cp, 1, "echo older > a", ws)
    agent_turn(cp, 2, "echo agent > a; echo agent > b", ws)
    write(ws, "b", "user\n")

    partial = cp.undo()
    assert partial.kept == ["b"] and files(ws) == {"a": b"older\n", "b": b"user\n"}
    again = cp.undo()

    assert again.target.label == "before turn 1"
    assert files(ws) == {"a": b"0\n", "b": b"user\n"}


def test_force_right_after_a_partial_undo_finishes_it(cp: Checkpoints, ws: Path) -> None:
    write(ws, "a", "0\n")
    agent_turn(cp, 1, "echo older > a", ws)
    agent_turn(cp, 2, "echo agent > a; echo agent > b", ws)
    write(ws, "b", "user\n")

    cp.undo()
    forced = cp.undo(force=True)

    assert forced.forced == ["b"] and forced.deleted == ["b"]
    assert files(ws) == {"a": b"older\n"}


def test_an_undo_with_nothing_left_to_change_still_counts(cp: Checkpoints, ws: Path) -> None:
    write(ws, "a", "0\n")
    agent_turn(cp, 1, "echo 1 > a", ws)
    agent_turn(cp, 2, "echo b > b", ws)
    (ws / "b").unlink()  # the user reverted turn 2 by hand

    nothing = cp.undo()
    assert not nothing.changed and nothing.result is not None
    cp.undo()
    assert files(ws) == {"a": b"0\n"}


def test_restore_n_goes_further_back(cp: Checkpoints, ws: Path) -> None:
    write(ws, "a", "0\n")
    agent_turn(cp, 1, "echo 1 > a; echo new > b", ws)
    agent_turn(cp, 2, "echo 2 > a; rm b", ws)
    listed = cp.list()
    assert [c.label for c in listed] == ["after turn 2", "after turn 1", "before turn 1"]

    report = cp.restore(1)  # the first checkpoint recorded here

    assert files(ws) == {"a": b"0\n"}
    assert report.target.commit == listed[2].commit
    assert report.restored == ["a"]
    # ...and that restore is itself undoable.
    cp.undo()
    assert files(ws) == {"a": b"2\n"}


def test_undo_does_not_go_back_into_an_attempt_a_reset_discarded(cp: Checkpoints, ws: Path) -> None:
    write(ws, "a", "0\n")
    agent_turn(cp, 1, "echo earlier > a", ws)  # a run before this one
    start = cp.snapshot("before the run")  # unchanged: that run's last turn
    agent_turn(cp, 1, "echo 1 > b", ws)
    agent_turn(cp, 2, "echo 1 > c", ws)
    cp.start_over(start, 2)
    assert files(ws) == {"a": b"earlier\n"}
    agent_turn(cp, 1, "echo 2 > b", ws)
    assert cp.list()[1].kind == "reset" and cp.list()[1].label == (
        "reset to #2 (after turn 1) for attempt 2"
    )

    cp.undo()
    assert files(ws) == {"a": b"earlier\n"}
    earlier = cp.undo()  # the turn before the run, not the discarded attempt's

    assert earlier.target.label == "before turn 1"
    assert files(ws) == {"a": b"0\n"}
    with pytest.raises(UsageError, match="nothing to undo"):
        cp.undo()


def test_restore_keeps_changes_made_since_lathes_last_operation(cp: Checkpoints, ws: Path) -> None:
    write(ws, "a", "0\n")
    agent_turn(cp, 1, "echo 1 > a", ws)
    write(ws, "a", "user\n")

    kept = cp.restore(1)
    assert kept.kept == ["a"] and (ws / "a").read_text() == "user\n"
    assert kept.result is None

    forced = cp.restore(1, force=True)  # the backup did not shift the numbers
    assert forced.forced == ["a"] and (ws / "a").read_text() == "0\n"


def test_list_is_newest_first_numbered_in_order_of_creation(cp: Checkpoints, ws: Path) -> None:
    write(ws, "a", "0\n")
    write(ws, "f", "f\n")
    agent_turn(cp, 1, "echo 1 > a; rm f; echo g > g", ws)
    write(ws, "user-file", "u\n")
    cp.before_turn(2)

    first, second, third = cp.list()

    assert (first.n, first.label, first.kind, first.turn) == (3, "before turn 2", "before", 2)
    assert first.files == (FileChange("added", "user-file"),)
    assert (second.n, second.label, second.kind) == (2, "after turn 1", "after")
    assert set(second.files) == {
        FileChange("modified", "a"),
        FileChange("deleted", "f"),
        FileChange("added", "g"),
    }
    assert (third.n, third.parent, third.files) == (1, None, ())
    assert first.time >= second.time >= third.time


def test_unchanged_snapshot_reuses_the_newest_checkpoint(cp: Checkpoints, ws: Path) -> None:
    write(ws, "a", "a\n")
    first = cp.snapshot("one")
    again = cp.snapshot("two", kind="after")

    assert again.commit == first.commit
    assert len(cp.list()) == 1


def test_nothing_to_undo_is_a_usage_error(cp: Checkpoints, ws: Path) -> None:
    with pytest.raises(UsageError, match="no checkpoints for"):
        cp.undo()
    write(ws, "a", "a\n")
    cp.before_turn(1)
    cp.after_turn(1)  # the turn changed nothing
    with pytest.raises(UsageError, match="nothing to undo"):
        cp.undo()


def test_restore_out_of_range_is_a_usage_error(cp: Checkpoints, ws: Path) -> None:
    write(ws, "a", "a\n")
    cp.before_turn(1)
    with pytest.raises(UsageError, match=r"no checkpoint #5 .* choose 1 to 1"):
        cp.restore(5)
    with pytest.raises(UsageError, match="choose 1 to 1"):
        cp.restore(0)


def test_missing_git_is_a_usage_error(
    cp: Checkpoints, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(UsageError, match="git was not found on PATH"):
        cp.snapshot("x")


def test_not_a_git_repo_stays_not_a_git_repo(cp: Checkpoints, ws: Path, home: Path) -> None:
    write(ws, "a", "a\n")
    agent_turn(cp, 1, "echo b > a", ws)
    cp.undo()

    assert not (ws / ".git").exists()
    assert files(ws) == {"a": b"a\n"}
    stores = list((home / "checkpoints").iterdir())
    assert len(stores) == 1 and (stores[0] / "git" / "HEAD").is_file()


def test_ignored_files_are_neither_recorded_nor_deleted(cp: Checkpoints, ws: Path) -> None:
    write(ws, ".gitignore", "*.log\nbuild/\n")
    write(ws, "src.py", "v1\n")
    write(ws, "old.log", "before\n")
    agent_turn(
        cp,
        1,
        "echo v2 > src.py; mkdir build; echo out > build/o.bin; "
        "echo more >> old.log; echo n > new.log",
        ws,
    )
    recorded = {f.path for c in cp.list() for f in c.files}
    assert recorded == {"src.py"}

    report = cp.undo()

    assert report.restored == ["src.py"]
    assert files(ws) == {
        ".gitignore": b"*.log\nbuild/\n",
        "src.py": b"v1\n",
        "old.log": b"before\nmore\n",
        "new.log": b"n\n",
        "build/o.bin": b"out\n",
    }


def test_a_file_ignored_later_is_dropped_from_checkpoints(cp: Checkpoints, ws: Path) -> None:
    write(ws, "cache.dat", "1\n")
    cp.before_turn(1)
    write(ws, ".gitignore", "cache.dat\n")
    write(ws, "cache.dat", "2\n")
    newest = cp.after_turn(1)

    assert set(newest.files) == {
        FileChange("added", ".gitignore"),
        FileChange("deleted", "cache.dat"),
    }
    report = cp.undo(force=True)
    # Undo removes .gitignore; the ignored file's content was never recorded, so it is
    # not overwritten with the old one, even with force.
    assert report.deleted == [".gitignore"]
    # Not ignored any more, it is recorded now: a restore to the turn's start brings
    # the old content back (`RestoreReport.held`).
    assert (report.held, report.skipped) == (["cache.dat"], [])
    assert files(ws) == {"cache.dat": b"2\n"}


def test_a_file_a_kept_rule_still_ignores_is_unrecorded(cp: Checkpoints, ws: Path) -> None:
    write(ws, "config.json", "original\n")
    cp.before_turn(1)
    write(ws, ".gitignore", "config.json\n")
    write(ws, "config.json", "changed\n")
    cp.after_turn(1)
    write(ws, ".gitignore", "config.json\n*.tmp\n")  # the user's edit: undo keeps it

    report = cp.undo()

    assert report.kept == [".gitignore"]
    assert (report.held, report.skipped) == ([], ["config.json"])
    assert files(ws) == {".gitignore": b"config.json\n*.tmp\n", "config.json": b"changed\n"}


def test_bytes_modes_and_symlinks_are_restored_exactly(cp: Checkpoints, ws: Path) -> None:
    write(ws, ".gitattributes", "* text eol=crlf\n")
    (ws / "lf.txt").write_bytes(b"one\ntwo\n")
    (ws / "blob.bin").write_bytes(bytes(range(256)))
    write(ws, "run.sh", "#!/bin/sh\n")
    (ws / "run.sh").chmod(0o755)
    (ws / "link").symlink_to("lf.txt")
    before = files(ws)

    agent_turn(cp, 1, "rm lf.txt blob.bin link; echo x > run.sh; chmod -x run.sh", ws)
    cp.undo()

    assert files(ws) == before
    assert (ws / "link").is_symlink()
    assert os.stat(ws / "run.sh").st_mode & stat.S_IXUSR


def test_unreadable_file_does_not_stop_a_snapshot(cp: Checkpoints, ws: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root can read any file")
    write(ws, "secret", "s\n")
    (ws / "secret").chmod(0)
    write(ws, "a", "a\n")
    assert cp.snapshot("x").tree


def test_lathe_home_inside_the_workspace_is_not_recorded(ws: Path) -> None:
    home = ws / ".lathe-home"
    cp = Checkpoints(ws, home)
    write(ws, "a", "a\n")
    agent_turn(cp, 1, "echo b > a", ws)

    assert {f.path for c in cp.list() for f in c.files} == {"a"}
    cp.undo()
    assert (ws / "a").read_text() == "a\n"
    assert (home / "checkpoints").is_dir()


def test_unusual_file_names_round_trip(cp: Checkpoints, ws: Path) -> None:
    names = ["with space.txt", "new\nline", "ünïcode.txt", "-dash", 'quote"s', "tab\tname"]
    for name in names:
        write(ws, f"d ir/{name}", name + "\n")
    (ws / os.fsdecode(b"latin1-\xe9")).write_bytes(b"not utf-8 name\n")
    before = files(ws)

    agent_turn(cp, 1, 'rm -r "d ir"; rm latin1-*; echo n > "ne w"', ws)
    report = cp.undo()

    assert files(ws) == before
    assert sorted(report.recreated) == sorted(
        [f"d ir/{n}" for n in names] + [os.fsdecode(b"latin1-\xe9")]
    )
    assert report.deleted == ["ne w"]


def test_concurrent_snapshots_are_serialised(ws: Path, home: Path) -> None:
    write(ws, "a", "a\n")

    def snap(i: int) -> str:
        write(ws, f"f{i}", f"{i}\n")
        return Checkpoints(ws, home).snapshot(f"s{i}").commit

    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(snap, range(12)))

    chain = Checkpoints(ws, home).list()
    assert [c.parent for c in chain[:-1]] == [c.commit for c in chain[1:]]
    assert set(Path(ws).iterdir()) >= {ws / f"f{i}" for i in range(12)}
    assert chain[0].tree == Checkpoints(ws, home).snapshot("final").tree


def test_looking_at_the_store_while_another_turn_is_open_leaks_no_file(tmp_path: Path) -> None:
    # Each look opened the turn's lock file to probe it and never closed it: a server
    # that lists checkpoints would run out of file descriptors.
    from lathe.checkpoint import Checkpoints

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    working, looking = Checkpoints(ws, tmp_path / "home"), Checkpoints(ws, tmp_path / "home")
    working.before_turn(1)
    opened = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        looking.list()
        looking.before_turn(2)
    assert len(os.listdir("/proc/self/fd")) <= opened
    working.after_turn(1)


def test_force_after_an_undo_that_kept_every_file_finishes_that_one(cp: Checkpoints, ws: Path):
    # An undo that kept every file was not recorded, so --force finished the older
    # partial undo instead: the user's edit of c.txt was deleted, a.txt left alone.
    agent_turn(cp, 1, "echo A > a.txt", ws)
    agent_turn(cp, 2, "echo B > b.txt; echo C > c.txt", ws)
    write(ws, "c.txt", "C edited\n")
    assert cp.undo().kept == ["c.txt"]
    write(ws, "a.txt", "A edited\n")
    all_kept = cp.undo()
    assert (all_kept.kept, all_kept.changed) == (["a.txt"], False)
    assert cp.undo().kept == ["a.txt"]  # again: the same turn, not an older one

    forced = cp.undo(force=True)

    assert forced.forced == ["a.txt"]
    assert files(ws) == {"c.txt": b"C edited\n"}


def test_a_turn_whose_undo_kept_every_file_can_be_undone_after_later_turns(
    cp: Checkpoints, ws: Path
):
    # Recorded as undone though nothing was reverted: after another turn and its undo,
    # "nothing to undo", and --force could not reach it either.
    agent_turn(cp, 1, "echo A > a.txt", ws)
    write(ws, "a.txt", "A edited\n")
    assert cp.undo().changed is False
    agent_turn(cp, 2, "echo B > b.txt", ws)
    assert cp.undo().deleted == ["b.txt"]

    forced = cp.undo(force=True)

    assert forced.forced == ["a.txt"] and files(ws) == {}
