"""`lathe run` with a pre_tool hook whose `tools` name `edit` or `read`: it guards every
tool a rule of that tool part covers."""

from __future__ import annotations

from tests.e2e.test_hook_refusals import REFUSE_UNDER
from tests.e2e.test_hook_rewrites import pre_tool_hook, run_with_hooks, tool_results
from tests.fakes.openai_server import Call, Reply


def test_a_hook_guarding_edit_guards_write(tmp_path, fake_openai) -> None:
    # A rule `edit(gen/**)` covers every tool that changes files; the hook's `edit` let
    # `write gen/out.py` through.
    write = Call("write", {"path": "gen/out.py", "content": "x = 1\n"})
    fake_openai.enqueue(Reply(calls=[write]), Reply("ok"))

    ws, result = run_with_hooks(
        tmp_path, fake_openai, pre_tool_hook(REFUSE_UNDER.format(top="gen"), ["edit"])
    )

    assert result.returncode == 0, result.stderr[-2000:]
    assert not (ws / "gen" / "out.py").exists()
    [told] = tool_results(fake_openai)
    assert "nothing under gen/" in told["content"]


def test_a_hook_guarding_read_guards_grep(tmp_path, fake_openai) -> None:
    # A deny rule `read(secret/**)` holds for every tool that could reveal the files.
    (tmp_path / "ws" / "secret").mkdir(parents=True)
    (tmp_path / "ws" / "secret" / "key.txt").write_text("TOKEN=hunter2\n")
    grep = Call("grep", {"pattern": "TOKEN", "path": "secret/"})
    fake_openai.enqueue(Reply(calls=[grep]), Reply("ok"))

    _, result = run_with_hooks(
        tmp_path, fake_openai, pre_tool_hook(REFUSE_UNDER.format(top="secret"), ["read"])
    )

    assert result.returncode == 0, result.stderr[-2000:]
    [told] = tool_results(fake_openai)
    assert "hunter2" not in told["content"] and "nothing under secret/" in told["content"]
