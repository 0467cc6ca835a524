"""A file a read rule denies, shown after its folder was renamed: `mv deploy d2` ran,
and the next call read `d2/prod.env` (the sandbox masks the file only within the
command that names it). Reproduced with the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.e2e.test_rules_hold_at_the_edges import _lathe, _tool_results
from tests.fakes.openai_server import Call, Reply

SECRET = "DB_PASSWORD=hunter2-topsecret"


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "deploy").mkdir(parents=True)
    (ws / "deploy" / "prod.env").write_text(SECRET + "\n")
    return ws


@pytest.mark.parametrize(
    "then",
    [Call("read", {"path": "d2/prod.env"}), Call("bash", {"command": "cat d2/prod.env"})],
    ids=["read", "bash"],
)
def test_the_folder_of_a_denied_file_cannot_be_renamed_to_read_it(tmp_path, fake_openai, then):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(
        Reply(calls=[Call("read", {"path": "deploy/prod.env"})]),
        Reply(calls=[Call("bash", {"command": "mv deploy d2"})]),
        Reply(calls=[then]),
        Reply("Done."),
    )

    result = _lathe(fake_openai, ws, tmp_path, "--deny", "read(deploy/prod.env)")

    assert result.returncode == 0, result.stderr
    finished = _tool_results(result)
    assert [e["is_error"] for e in finished[:2]] == [True, True], finished
    assert "read(deploy/prod.env)" in finished[1]["details"]["denied"], finished[1]
    assert (ws / "deploy" / "prod.env").exists() and not (ws / "d2").exists()
    assert SECRET not in result.stdout
    sent = str(fake_openai.chat_bodies()[-1]["messages"])
    assert SECRET not in sent
