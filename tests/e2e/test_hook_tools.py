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


# Refuses a path under gen/ and otherwise rewrites the call to name other.py: a guard
# written for `edit`'s arguments.
REFUSE_OR_REDIRECT = (
    """python3 -c 'import json,sys; a=json.load(sys.stdin)["arguments"]; """
    """p=str(a.get("path") or ""); bad=p.startswith("gen/"); """
    """bad and print("nothing under gen/", file=sys.stderr); """
    """bad or print(json.dumps({"arguments": {"path": "other.py"}})); """
    """sys.exit(2 if bad else 0)'"""
)


def test_a_hook_on_read_rewrites_no_other_tools_call(tmp_path, fake_openai) -> None:
    # Its rewrite, made for `read`, had turned `write a.py` into `write {"path": "other.py"}`
    # with the content dropped.
    redirect = """echo '{"arguments": {"path": "other.py"}}'"""
    writes = [Call("write", {"path": p, "content": "x\n"}) for p in ("a.py", "b.py")]
    fake_openai.enqueue(Reply(calls=writes), Reply("ok"))

    ws, result = run_with_hooks(tmp_path, fake_openai, pre_tool_hook(redirect, ["read"]))

    assert result.returncode == 0, result.stderr[-2000:]
    assert (ws / "a.py").read_text() == (ws / "b.py").read_text() == "x\n"
    assert not (ws / "other.py").exists()
    warned = [line for line in result.stderr.splitlines() if "hook" in line and "warning" in line]
    assert len(warned) == 1 and redirect in warned[0] and "ignored" in warned[0], result.stderr


def test_a_hook_on_edit_blocks_write_but_does_not_rewrite_it(tmp_path, fake_openai) -> None:
    writes = [Call("write", {"path": p, "content": "x\n"}) for p in ("gen/out.py", "a.py")]
    fake_openai.enqueue(Reply(calls=writes), Reply("ok"))

    ws, result = run_with_hooks(tmp_path, fake_openai, pre_tool_hook(REFUSE_OR_REDIRECT, ["edit"]))

    assert result.returncode == 0, result.stderr[-2000:]
    assert not (ws / "gen" / "out.py").exists() and not (ws / "other.py").exists()
    assert (ws / "a.py").read_text() == "x\n"
    blocked, ran = tool_results(fake_openai)
    assert "nothing under gen/" in blocked["content"] and "hook changed" not in ran["content"]


def test_a_post_tool_hook_on_read_replaces_only_reads_results(tmp_path, fake_openai) -> None:
    # `{"content": ...}` from a hook on `read` had replaced the results of write and grep.
    toml = (
        "[[hooks.post_tool]]\n"
        """command = '''echo '{"content": "READ-ONLY ANNOTATION"}' '''\n"""
        'tools = ["read"]\n'
    )
    calls = [
        Call("write", {"path": "a.py", "content": "x = 1\n"}),
        Call("grep", {"pattern": "x", "path": "."}),
        Call("read", {"path": "a.py"}),
    ]
    fake_openai.enqueue(Reply(calls=calls), Reply("ok"))

    ws, result = run_with_hooks(tmp_path, fake_openai, toml)

    assert result.returncode == 0, result.stderr[-2000:]
    assert (ws / "a.py").read_text() == "x = 1\n"
    wrote, grepped, read = tool_results(fake_openai)
    assert "ANNOTATION" not in wrote["content"] + grepped["content"], (wrote, grepped)
    assert read["content"] == "READ-ONLY ANNOTATION"
