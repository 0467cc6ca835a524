"""A plugin hook that returns the wrong thing, without raising, is handled as one that
raises (`hooks.plugins.PluginGuard`): one warning per hook point, then what the run
would have done without it. An `after_tool` returning None ended the run mid-way
(`AttributeError: 'NoneType' object has no attribute 'details'`), a `kept_verbatim`
returning None before the first request (`TypeError`)."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.openai_server import Call, Reply
from tests.plugins.test_plugins import _distribution, _workspace, lathe

_WRONG = """
from lathe.hooks.base import AgentHooks


class Wrong(AgentHooks):
    async def after_tool(self, name, arguments, output):
        return None

    def kept_verbatim(self):
        return None

    async def before_tool(self, name, arguments):
        return "let it run" if name == "ls" else None

    async def on_message(self, message):  # not async in the protocol
        raise AssertionError("never awaited")


class WrongItems(AgentHooks):
    def kept_verbatim(self):
        return [b"bytes, not text"]


def hooks(workspace):
    return Wrong()


def items(workspace):
    return WrongItems()
"""


def _site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    (site / "lathe_wrong.py").write_text(_WRONG)
    _distribution(site, "lathe-wrong", "0.1", """
        [lathe.hooks]
        wrong = lathe_wrong:hooks
        items = lathe_wrong:items
    """)  # fmt: skip
    return site


def test_a_plugin_hook_returning_the_wrong_thing_is_warned_of_once(tmp_path, fake_openai):
    site = _site(tmp_path)
    ws = _workspace(tmp_path)
    fake_openai.enqueue(
        Reply(calls=[Call("read", {"path": "README.md"})]),
        Reply(calls=[Call("read", {"path": "README.md"}), Call("ls", {})]),
        Reply("Done."),
    )

    result = lathe(tmp_path, site, "run", "--model", "m", "--base-url", fake_openai.base_url,
                   "-C", str(ws), "read it")  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    said = "the plugin hook wrong (lathe_wrong:hooks) failed in"
    for point, why in (
        ("after_tool", "it returned None, not a ToolOutput"),
        ("kept_verbatim", "it returned None, not a list of texts"),
        ("before_tool", "it returned 'let it run', not None, arguments or a ToolOutput"),
        ("on_message", "it returned a coroutine: this hook point is not async"),
    ):
        assert result.stderr.count(f"{said} {point} ({why}); fix or uninstall") == 1, point
    assert (
        "the plugin hook items (lathe_wrong:items) failed in kept_verbatim (it returned "
        "[b'bytes, not text'], not a list of texts)" in result.stderr
    )
    _, second, last = fake_openai.chat_bodies()
    assert "a project" in second["messages"][-1]["content"]  # the read's own result
    read, ls = [m["content"] for m in last["messages"][-2:]]
    assert "a project" in read
    assert "failed before this call" in ls and "not run" in ls
    assert "never awaited" not in result.stderr
