"""A file next to a skill's SKILL.md is read within the tool output cap, like any output."""

from __future__ import annotations

from pathlib import Path

from lathe.exec.local import LocalExecutor
from lathe.skills import ReadScope, Skill
from lathe.tools.base import Limits, ToolContext
from lathe.tools.skill import _folder_file


def test_a_large_file_of_a_skill_folder_is_capped_and_spilled(tmp_path: Path):
    folder = tmp_path / "skills" / "big"
    folder.mkdir(parents=True)
    whole = "".join(f"line {n} of the reference\n" for n in range(20_000))
    (folder / "reference.txt").write_text(whole)
    spill = tmp_path / "spill"
    spill.mkdir()
    ctx = ToolContext(
        workspace=tmp_path / "ws", executor=LocalExecutor(), spill_dir=spill,
        file_state=None, limits=Limits(output_max_bytes=4_000),
    )  # fmt: skip

    scope = ReadScope(root=tmp_path.resolve(), workspace=tmp_path / "ws")
    skill = Skill("big", "a big one", folder / "SKILL.md", "user", scope)

    output = _folder_file(skill, "reference.txt", ctx)

    assert len(output.content) < 6_000
    assert output.content.startswith("line 0 of") and "line 19999 of" in output.content
    [kept] = spill.iterdir()
    assert kept.read_text() == whole and str(kept) in output.content
