"""What a sandboxed run leaves in the temporary folder once it ends: nothing. The stand-in
file bound over denied paths lived in a `lathe-mask-*` folder that every such run left
behind (160 of them here after a day of tests)."""

from __future__ import annotations

from tests.e2e.test_calculator import run_against, workspace
from tests.fakes.openai_server import Call, Reply
from tests.sandboxes import needs

from lathe.exec.bwrap import check_bubblewrap

pytestmark = needs(check_bubblewrap(), "bubblewrap")


def test_a_run_that_masks_a_denied_file_leaves_no_folder_in_tmp(tmp_path, fake_openai):
    ws = workspace(tmp_path)
    (ws / "secret.txt").write_text("hunter2\n")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    peek = "python3 -c \"print(open('sec' + 'ret.txt').read())\""
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": peek})]), Reply("done"))

    result = run_against(
        fake_openai, ws, tmp_path, "--deny", "read(secret.txt)", "--approval", "auto", "look",
        env_extra={"TMPDIR": str(scratch)},
    )  # fmt: skip

    assert result.returncode == 0, result.stderr[-2000:]
    output = next(m["content"] for m in fake_openai.chat_bodies()[-1]["messages"]
                  if m["role"] == "tool")  # fmt: skip
    assert "Permission denied" in output and "hunter2" not in output  # the mask was bound
    assert list(scratch.glob("lathe-mask-*")) == []
