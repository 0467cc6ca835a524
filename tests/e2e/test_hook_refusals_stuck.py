"""`lathe run` whose pre_tool hook refuses every call: the run ends stuck saying the
hook refused them, not blaming the model. Hooks come from a user config named by
LATHE_CONFIG."""

from __future__ import annotations

from tests.e2e.test_calculator import run_against
from tests.fakes.openai_server import Call, Reply


def test_a_run_a_hook_refused_throughout_ends_saying_the_hook_refused(
    tmp_path, fake_openai
) -> None:
    # It ended `stuck ... the model kept asking for edit calls that are refused`: the
    # model had done nothing wrong, the guard timed out on every call.
    ws = tmp_path / "ws"
    ws.mkdir()
    user = tmp_path / "user.toml"
    user.write_text("[[hooks.pre_tool]]\ncommand = 'sleep 30'\ntools = ['edit']\ntimeout_s = 0.3\n")
    edits = [
        Reply(calls=[Call("edit", {"path": "y.py", "old_string": f"{n}", "new_string": "b"})])
        for n in range(8)
    ]
    fake_openai.enqueue(*edits, Reply("ok"))

    result = run_against(
        fake_openai, ws, tmp_path, "--approval", "full", "go",
        env_extra={"LATHE_CONFIG": str(user)},
    )  # fmt: skip

    assert result.returncode == 1, result.stderr[-2000:]
    [reason] = [line for line in result.stderr.splitlines() if line.startswith("  reason: ")]
    assert "the model" not in reason, reason
    assert "a pre_tool hook refused every edit call" in reason, reason
    assert "`sleep 30` timed out after 0.3s" in reason, reason
