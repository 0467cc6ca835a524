"""Setting a file's bits back never goes through a symlink put in its place.

Reproduced on main: `_set_bits` looked at the file (`lstat`: a regular file), then set
its bits by name (`os.chmod`, which follows a symlink): a file, or a folder above it,
swapped for a link between the two had the link's target chmodded, outside the
workspace maybe. The swap is a race; here it is made to happen at the chmod itself.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from tests.checkpoint.helpers import shell, write

from lathe.checkpoint import Checkpoints
from lathe.checkpoint import restore as restore_module


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _outside(tmp_path: Path, rel: str) -> Path:
    """A 0644 file outside the workspace, as `rel` under a folder there."""
    path = tmp_path / "outside" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("not lathe's\n")
    path.chmod(0o644)
    return path


def _bits_only_turn(cp: Checkpoints, ws: Path, rel: str) -> None:
    """A turn that made `rel` (0600 before) 0644: its undo sets 0600 back, by chmod alone."""
    write(ws, rel, "TOKEN=abc\n")
    (ws / rel).chmod(0o600)
    cp.before_turn(1)
    shell(ws, f"chmod 644 {rel}")
    cp.after_turn(1)


def _swap_at_the_chmod(monkeypatch, swap) -> list[bool]:
    """Run `swap` once, just before the first chmod of a file (by name, through
    /proc/self/fd or by handle): the moment between looking at the file and setting its
    bits. The list it returns gets True when it ran."""
    done: list[bool] = []
    chmod, fchmod = os.chmod, os.fchmod

    def once() -> None:
        if not done:
            done.append(True)
            swap()

    def chmod_after_swap(path, *args, **kwargs):
        once()
        return chmod(path, *args, **kwargs)

    def fchmod_after_swap(fd, *args, **kwargs):
        once()
        return fchmod(fd, *args, **kwargs)

    monkeypatch.setattr(os, "chmod", chmod_after_swap)
    monkeypatch.setattr(os, "fchmod", fchmod_after_swap)
    return done


def test_a_file_swapped_for_a_link_before_its_chmod_leaves_the_target_alone(
    cp: Checkpoints, ws: Path, tmp_path: Path, monkeypatch
) -> None:
    target = _outside(tmp_path, "victim.txt")
    _bits_only_turn(cp, ws, "secret.env")

    def swap() -> None:
        os.rename(ws / "secret.env", tmp_path / "moved.env")
        os.symlink(target, ws / "secret.env")

    swapped = _swap_at_the_chmod(monkeypatch, swap)
    cp.undo()

    assert swapped
    assert oct(mode(target)) == oct(0o644)
    assert (ws / "secret.env").is_symlink()


def test_a_folder_swapped_for_a_link_before_the_chmod_leaves_the_target_alone(
    cp: Checkpoints, ws: Path, tmp_path: Path, monkeypatch
) -> None:
    target = _outside(tmp_path, "secret.env")
    _bits_only_turn(cp, ws, "conf/secret.env")

    def swap() -> None:
        os.rename(ws / "conf", tmp_path / "moved-conf")
        os.symlink(target.parent, ws / "conf")

    swapped = _swap_at_the_chmod(monkeypatch, swap)
    cp.undo()

    assert swapped
    assert oct(mode(target)) == oct(0o644)


@pytest.mark.parametrize("rel", ["secret.env", "conf/secret.env"])
def test_a_link_in_the_files_place_when_bits_are_set_is_kept_not_followed(
    cp: Checkpoints, ws: Path, tmp_path: Path, monkeypatch, rel: str
) -> None:
    target = _outside(tmp_path, "secret.env")
    _bits_only_turn(cp, ws, rel)
    set_bits = restore_module._set_bits
    replaced = ws / rel.partition("/")[0]

    def set_bits_after_a_swap(*args, **kwargs):
        os.rename(replaced, tmp_path / "moved")
        os.symlink(target if replaced.name == "secret.env" else target.parent, replaced)
        return set_bits(*args, **kwargs)

    monkeypatch.setattr(restore_module, "_set_bits", set_bits_after_a_swap)
    report = cp.undo()

    assert oct(mode(target)) == oct(0o644)
    assert rel in report.kept and rel not in report.modes


def test_bits_are_still_set_back_on_a_file_that_may_not_be_read(cp: Checkpoints, ws: Path) -> None:
    write(ws, "drop/box.txt", "x\n")
    (ws / "drop/box.txt").chmod(0o200)
    cp.before_turn(1)
    shell(ws, "chmod 600 drop/box.txt")
    cp.after_turn(1)

    report = cp.undo()

    assert report.modes == ["drop/box.txt"]
    assert oct(mode(ws / "drop/box.txt")) == oct(0o200)
