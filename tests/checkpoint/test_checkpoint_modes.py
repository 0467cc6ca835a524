"""A file undo, restore or a run's start-over writes back gets the permission bits it had
in the state restored to, through the real CLI against the fake server. `git
checkout-index` kept only the exec bit: a 0600 secret.env came back 0644, readable by
every local user, and a 0444 file came back writable; under a umask of 000 a file came
back 0666.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tests.checkpoint.helpers import bash, lathe, run, shell, write
from tests.fakes.openai_server import Reply

from lathe.checkpoint import Checkpoints


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def private_files(ws: Path) -> None:
    (ws / "secret.env").write_text("TOKEN=abc\n")
    (ws / "secret.env").chmod(0o600)
    (ws / "id_key").write_text("KEY\n")
    (ws / "id_key").chmod(0o600)
    (ws / "ro.txt").write_text("ro\n")
    (ws / "ro.txt").chmod(0o444)
    (ws / "plain.txt").write_text("plain\n")
    (ws / "plain.txt").chmod(0o644)


AGENT = (
    "echo TOKEN=new > secret.env; rm -f id_key plain.txt; "
    "chmod u+w ro.txt; echo x >> ro.txt; chmod 444 ro.txt"
)


def assert_modes_back(ws: Path) -> None:
    assert (ws / "secret.env").read_text() == "TOKEN=abc\n"
    assert (ws / "id_key").read_text() == "KEY\n"
    assert (ws / "ro.txt").read_text() == "ro\n"
    assert {p: oct(mode(ws / p)) for p in ("secret.env", "id_key", "ro.txt", "plain.txt")} == {
        "secret.env": oct(0o600),
        "id_key": oct(0o600),
        "ro.txt": oct(0o444),
        "plain.txt": oct(0o644),
    }


def test_undo_gives_back_the_modes_files_had(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    private_files(ws)
    fake_openai.enqueue(Reply(calls=[bash(AGENT)]), Reply("Done."))
    assert run(fake_openai, ws, tmp_path, "change them").returncode == 0

    undone = lathe(tmp_path, "undo", "-C", str(ws), umask=0)

    assert undone.returncode == 0, undone.stderr
    assert_modes_back(ws)


def test_restore_gives_back_the_modes_files_had(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    private_files(ws)
    fake_openai.enqueue(Reply(calls=[bash(AGENT)]), Reply("Done."))
    assert run(fake_openai, ws, tmp_path, "change them").returncode == 0

    restored = lathe(tmp_path, "checkpoints", "restore", "1", "-C", str(ws))

    assert restored.returncode == 0, restored.stderr
    assert_modes_back(ws)


def test_the_start_over_between_attempts_gives_back_the_modes_files_had(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    private_files(ws)
    requests = []

    def script(body):
        requests.append(body)
        return Reply(calls=[bash(AGENT)]) if len(requests) == 1 else Reply("Done.")

    fake_openai.responder = script
    done = run(fake_openai, ws, tmp_path, "--verify", "false", "--attempts", "2", "go")

    assert "starting over" in done.stderr, done.stderr
    assert_modes_back(ws)


def test_a_file_the_agent_made_read_only_is_writable_again(cp: Checkpoints, ws: Path) -> None:
    write(ws, "a.txt", "a\n")
    (ws / "a.txt").chmod(0o640)
    write(ws, "b.txt", "b\n")
    cp.before_turn(1)
    shell(ws, "echo A > a.txt; chmod 400 a.txt; echo B > b.txt; chmod 444 b.txt")
    cp.after_turn(1)

    cp.undo()

    assert (mode(ws / "a.txt"), mode(ws / "b.txt")) == (0o640, 0o644)
    assert (ws / "a.txt").read_text() == "a\n" and (ws / "b.txt").read_text() == "b\n"


def test_modes_hold_when_most_files_are_private(cp: Checkpoints, ws: Path) -> None:
    # The common bits are recorded once: here every file but one is 0600.
    for n in range(5):
        write(ws, f"f{n}", f"{n}\n")
        (ws / f"f{n}").chmod(0o600)
    write(ws, "open.txt", "o\n")
    (ws / "open.txt").chmod(0o644)
    write(ws, "run.sh", "#!/bin/sh\n")
    (ws / "run.sh").chmod(0o700)
    cp.before_turn(1)
    shell(ws, "rm f0 open.txt run.sh")
    cp.after_turn(1)

    cp.undo()

    assert (mode(ws / "f0"), mode(ws / "open.txt"), mode(ws / "run.sh")) == (0o600, 0o644, 0o700)


def test_undo_gives_back_the_bits_a_turn_changed_with_chmod(tmp_path, fake_openai):
    # A non-exec bit is in no git tree: undo compared trees only, so it reverted app.py
    # and left secret.env readable by every local user.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "secret.env").write_text("TOKEN=abc\n")
    (ws / "secret.env").chmod(0o600)
    (ws / "app.py").write_text("x = 1\n")
    fake_openai.enqueue(
        Reply(calls=[bash("chmod 666 secret.env; echo 'x = 2' > app.py")]), Reply("Done.")
    )
    assert run(fake_openai, ws, tmp_path, "change them").returncode == 0
    assert mode(ws / "secret.env") == 0o666

    undone = lathe(tmp_path, "undo", "-C", str(ws))

    assert undone.returncode == 0, undone.stderr
    assert (ws / "app.py").read_text() == "x = 1\n"
    assert oct(mode(ws / "secret.env")) == oct(0o600)
    assert "reverted   app.py" in undone.stdout
    assert "mode restored secret.env" in undone.stdout


def test_a_turn_that_only_changed_bits_is_undone(cp: Checkpoints, ws: Path) -> None:
    write(ws, "secret.env", "TOKEN=abc\n")
    (ws / "secret.env").chmod(0o600)
    cp.before_turn(1)
    shell(ws, "chmod 644 secret.env")
    cp.after_turn(1)

    report = cp.undo()

    assert report.modes == ["secret.env"] and report.changed
    assert mode(ws / "secret.env") == 0o600


def test_bits_the_user_changed_after_the_turn_are_kept(cp: Checkpoints, ws: Path) -> None:
    write(ws, "secret.env", "TOKEN=abc\n")
    (ws / "secret.env").chmod(0o600)
    write(ws, "app.py", "x = 1\n")
    cp.before_turn(1)
    shell(ws, "chmod 666 secret.env; echo 'x = 2' > app.py")
    cp.after_turn(1)
    (ws / "secret.env").chmod(0o640)

    report = cp.undo()

    assert report.kept == ["secret.env"] and report.modes == []
    assert mode(ws / "secret.env") == 0o640
    cp.undo(force=True)
    assert mode(ws / "secret.env") == 0o600


def test_restore_gives_back_bits_alone(cp: Checkpoints, ws: Path) -> None:
    write(ws, "secret.env", "TOKEN=abc\n")
    (ws / "secret.env").chmod(0o600)
    write(ws, "run.sh", "#!/bin/sh\n")
    (ws / "run.sh").chmod(0o700)
    first = cp.before_turn(1)
    shell(ws, "chmod 644 secret.env; chmod 755 run.sh")
    cp.after_turn(1)

    report = cp.restore(first.n)

    assert report.modes == ["run.sh", "secret.env"] and report.result is not None
    assert (mode(ws / "secret.env"), mode(ws / "run.sh")) == (0o600, 0o700)
    assert cp.undo().modes == ["run.sh", "secret.env"]  # a restore that set bits alone
    assert (mode(ws / "secret.env"), mode(ws / "run.sh")) == (0o644, 0o755)


def test_restore_keeps_bits_the_user_set_since(cp: Checkpoints, ws: Path) -> None:
    write(ws, "secret.env", "TOKEN=abc\n")
    (ws / "secret.env").chmod(0o600)
    write(ws, "notes.txt", "n\n")
    first = cp.before_turn(1)
    shell(ws, "chmod 644 secret.env")
    cp.after_turn(1)
    (ws / "secret.env").chmod(0o640)
    (ws / "notes.txt").chmod(0o600)

    report = cp.restore(first.n)

    assert report.kept == ["notes.txt", "secret.env"] and not report.changed
    assert (mode(ws / "secret.env"), mode(ws / "notes.txt")) == (0o640, 0o600)
    assert cp.restore(first.n, force=True).forced == ["notes.txt", "secret.env"]
    assert (mode(ws / "secret.env"), mode(ws / "notes.txt")) == (0o600, 0o644)
