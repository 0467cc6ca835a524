"""A repository decides what is in `.lathe/tmp`, lathe's spill folder: a `.gitignore`
there that is a dangling link made lathe write `*` wherever it pointed, outside the
workspace, before any tool ran and in read-only mode too. Reproduced with the real CLI."""

from __future__ import annotations

from tests.e2e.test_calculator import run_against, workspace
from tests.fakes.openai_server import Call, Reply


def test_a_gitignore_link_in_the_spill_folder_is_not_followed(tmp_path, fake_openai) -> None:
    ws = workspace(tmp_path)
    (ws / ".lathe" / "tmp").mkdir(parents=True)
    planted = tmp_path / "victim" / "planted"
    planted.parent.mkdir()
    (ws / ".lathe" / "tmp" / ".gitignore").symlink_to(planted)
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": "seq 1 200000"})]), Reply("Looked."))

    result = run_against(fake_openai, ws, tmp_path, "--approval", "full", "look around")

    assert result.returncode == 0, result.stderr[-2000:]
    assert not planted.exists()
    # The cut output still names a full copy the model can page.
    tool = [m for m in fake_openai.chat_bodies()[1]["messages"] if m["role"] == "tool"][-1]
    assert "the full output is in" in tool["content"]
