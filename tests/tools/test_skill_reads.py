"""Every read of a skill's file is checked when it is made: a link put on the way after
the check is not followed, and a user's skill keeps serving from where the user linked it
but not from where it is linked to later."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lathe.skills import ReadScope, SkillUnreadable, discover_skills


def test_a_folder_swapped_for_a_link_after_the_check_is_not_followed(tmp_path: Path):
    ws = tmp_path / "ws"
    (ws / "skills" / "x").mkdir(parents=True)
    named = ws / "skills" / "x" / "SKILL.md"
    named.write_text("steps\n")
    (tmp_path / "ssh").mkdir()
    (tmp_path / "ssh" / "SKILL.md").write_text("PRIVATE-KEY-TEXT\n")
    scope = ReadScope(root=ws.resolve(), workspace=ws)
    real = named.resolve()  # checked: inside the workspace
    os.rename(ws / "skills" / "x", ws / "skills" / "old")
    (ws / "skills" / "x").symlink_to(tmp_path / "ssh")  # then the race

    with pytest.raises(SkillUnreadable) as refused:
        scope.text(named, real)

    assert (
        str(refused.value)
        == f"it changed as it was read: it leads to {tmp_path.resolve()}/ssh/SKILL.md"
    )


def test_a_named_pipe_is_refused_without_waiting_for_a_writer(tmp_path: Path):
    os.mkfifo(tmp_path / "SKILL.md")
    scope = ReadScope(root=tmp_path.resolve(), workspace=tmp_path)

    with pytest.raises(SkillUnreadable, match="not a regular file"):
        scope.text(tmp_path / "SKILL.md")


def test_a_user_skill_linked_out_of_the_skills_folder_serves_only_from_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    config = tmp_path / "user" / "config.toml"
    config.parent.mkdir()
    config.touch()
    monkeypatch.setenv("LATHE_CONFIG", str(config))
    dotfiles = tmp_path / "dotfiles" / "review"
    dotfiles.mkdir(parents=True)
    (dotfiles / "SKILL.md").write_text("---\nname: review\ndescription: Review\n---\nLook.\n")
    (tmp_path / "user" / "skills" / "review").mkdir(parents=True)
    linked = tmp_path / "user" / "skills" / "review" / "SKILL.md"
    linked.symlink_to(dotfiles / "SKILL.md")
    ws = tmp_path / "ws"
    ws.mkdir()

    [skill] = discover_skills(ws).skills
    assert skill.body() == "Look."
    (tmp_path / "secret").write_text("PRIVATE-KEY-TEXT\n")
    linked.unlink()
    linked.symlink_to(tmp_path / "secret")

    with pytest.raises(SkillUnreadable, match=f"outside {dotfiles.resolve()}$"):
        skill.body()
