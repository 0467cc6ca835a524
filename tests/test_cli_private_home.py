"""What lathe keeps of a workspace under LATHE_HOME is readable by its user alone.

Reproduced with the real CLI under umask 022: after one `lathe run` the session index
(each session's title and workspace) was 0644, and the checkpoint repository held a copy
of the workspace's 0600 file as a 0444 object in 0755 folders, all readable by any
other local user.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from tests.fakes.openai_server import Call, Reply


def _lathe(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update({"OPENAI_API_KEY": "sk-test-private", "LATHE_HOME": str(home)})
    return subprocess.run(
        [sys.executable, "-m", "lathe", *args], cwd=cwd, env=env, capture_output=True,
        text=True, timeout=120, stdin=subprocess.DEVNULL, umask=0o022,
    )  # fmt: skip


def _run_a_turn(fake_openai, ws: Path, home: Path) -> None:
    fake_openai.enqueue(
        Reply(calls=[Call("write", {"path": "notes.txt", "content": "written\n"})]),
        Reply("Done."),
    )
    result = _lathe(
        "run", "--base-url", fake_openai.base_url, "-m", "fake-model", "-C", str(ws),
        "keep notes", cwd=ws, home=home,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def _project_folders(home: Path) -> list[Path]:
    return [*(home / "sessions").iterdir(), *(home / "checkpoints").iterdir()]


def _readable_by_others(home: Path) -> set[Path]:
    """What another user can read below `home`: each folder on the way lets them
    through (o+x) and the thing itself is o+r."""
    found = set()
    for folder, dirs, files in os.walk(home):
        dirs[:] = [d for d in dirs if _mode(Path(folder, d)) & stat.S_IXOTH]
        for name in (*dirs, *files):
            if _mode(Path(folder, name)) & stat.S_IROTH:
                found.add(Path(folder, name))
    return found


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir(mode=0o755)
    secret = ws / "secret.txt"
    secret.write_text("token\n")
    secret.chmod(0o600)
    return ws


def test_a_run_keeps_the_index_and_the_checkpoints_private(tmp_path, fake_openai):
    ws, home = _workspace(tmp_path), tmp_path / "home"

    _run_a_turn(fake_openai, ws, home)

    [index] = (home / "sessions").glob("*/.index.json")
    assert _mode(index) == 0o600
    folders = _project_folders(home)
    assert len(folders) == 2
    assert [_mode(folder) for folder in folders] == [0o700, 0o700]
    assert not {
        path
        for path in _readable_by_others(home)
        if path.is_relative_to(home / "sessions") or path.is_relative_to(home / "checkpoints")
    }


def test_folders_an_older_lathe_left_open_are_closed_on_the_next_run(tmp_path, fake_openai):
    ws, home = _workspace(tmp_path), tmp_path / "home"
    _run_a_turn(fake_openai, ws, home)
    for folder in _project_folders(home):  # as lathe made them before
        folder.chmod(0o755)
    [index] = (home / "sessions").glob("*/.index.json")
    index.chmod(0o644)
    home.chmod(0o755)
    above = _mode(tmp_path)

    _run_a_turn(fake_openai, ws, home)

    assert [_mode(folder) for folder in _project_folders(home)] == [0o700, 0o700]
    assert _mode(index) == 0o600
    # What is not lathe's own, LATHE_HOME itself included, keeps its modes.
    assert (_mode(home), _mode(ws), _mode(tmp_path)) == (0o755, 0o755, above)


def test_the_workspace_locks_are_private_too(tmp_path, fake_openai):
    # LATHE_HOME/locks was 0755: each lock's name ends in its workspace's path, and its
    # record says what lathe is doing there.
    ws, home = _workspace(tmp_path), tmp_path / "home"

    _run_a_turn(fake_openai, ws, home)

    assert _mode(home / "locks") == 0o700
