"""Plugins from REAL installed distributions: a `*.dist-info` folder with METADATA and
entry_points.txt on a directory put on PYTHONPATH for the subprocess is a distribution
as importlib.metadata sees it. `lathe plugins` lists them with their distribution and
status, a plugin whose module raises on import is reported (by `lathe plugins` and
`lathe doctor`) and skipped while the run goes on, and each group's object is used:
a tool the model calls, a provider kind requests go through, hooks that run, an
executor `permissions.executor` selects."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.fakes.openai_server import Call, Reply
from tests.fakes.user_config import user_config_file

_SRC = Path(__file__).resolve().parents[2] / "src"

_DEMO = '''
from pathlib import Path

from lathe.exec.local import LocalExecutor
from lathe.hooks.base import AgentHooks
from lathe.tools.base import tool


@tool(read_only=True)
async def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper() + "!"


@tool(read_only=True)
async def read(path: str) -> str:
    """A tool whose name a built-in has."""
    return "not the real read"


def tools():
    return [shout, read]


class _Marker(AgentHooks):
    def __init__(self, workspace):
        self.workspace = workspace

    async def on_run_start(self, task):
        (self.workspace / "HOOK_RAN").write_text(task)


def hooks(workspace):
    return _Marker(workspace)


def provider(endpoint):
    from lathe.llm.openai_chat import OpenAIChatProvider

    return OpenAIChatProvider(
        endpoint.model_id, endpoint.base_url, endpoint.api_key or "none",
        api_key_env=endpoint.api_key_env, timeouts=endpoint.timeouts,
        extra_headers={**endpoint.headers, "X-Demo-Plugin": "yes"},
    )


class Logged:
    def __init__(self, *, workspace, hide_env, keep_env):
        self.log = Path(workspace).parent / "executor.log"
        self.inner = LocalExecutor(hide_env=hide_env, keep_env=keep_env)

    async def run(self, command, **options):
        with self.log.open("a") as out:
            out.write(command + "\\n")
        return await self.inner.run(command, **options)
'''


def _distribution(site: Path, name: str, version: str, entry_points: str) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"  # as pip names it
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))


def install_plugins(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    (site / "lathe_demo.py").write_text(_DEMO)
    (site / "lathe_broken.py").write_text("raise RuntimeError('the broken plugin exploded')\n")
    _distribution(site, "lathe-demo", "1.2.0", """
        [lathe.tools]
        demo-tools = lathe_demo:tools

        [lathe.hooks]
        marker = lathe_demo:hooks

        [lathe.providers]
        demo-kind = lathe_demo:provider

        [lathe.executors]
        logged = lathe_demo:Logged
    """)  # fmt: skip
    _distribution(site, "lathe-broken", "0.3", """
        [lathe.tools]
        boom = lathe_broken:tools
    """)  # fmt: skip
    return site


def lathe(tmp_path: Path, site: Path | None, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update({
        "OPENAI_API_KEY": "sk-test",
        "LATHE_HOME": str(tmp_path / "home"),
        "LATHE_CONFIG": user_config_file(tmp_path / "user" / "config.toml"),
        "PYTHONPATH": os.pathsep.join([*([str(site)] if site else []), str(_SRC)]),
    })  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "lathe", *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("a project\n")
    return ws


def test_lathe_plugins_lists_each_with_its_distribution_and_status(tmp_path):
    site = install_plugins(tmp_path)

    result = lathe(tmp_path, site, "plugins")

    assert result.returncode == 1, result.stderr  # one failed
    rows = [line.split() for line in result.stdout.splitlines()]
    assert rows[0] == ["NAME", "GROUP", "DISTRIBUTION", "STATUS"]
    assert ["boom", "lathe.tools", "lathe-broken", "0.3", "failed:", "RuntimeError:", "the",
            "broken", "plugin", "exploded"] in rows  # fmt: skip
    assert ["demo-tools", "lathe.tools", "lathe-demo", "1.2.0", "loaded", "(shout;", "read",
            "skipped:", "lathe's", "own", "name)"] in rows  # fmt: skip
    assert ["marker", "lathe.hooks", "lathe-demo", "1.2.0", "loaded"] in rows
    assert ["demo-kind", "lathe.providers", "lathe-demo", "1.2.0", "loaded"] in rows
    assert ["logged", "lathe.executors", "lathe-demo", "1.2.0", "loaded"] in rows


def test_without_plugins_the_listing_says_so(tmp_path):
    result = lathe(tmp_path, None, "plugins")

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("No plugins installed")


def test_doctor_reports_the_plugin_that_fails_to_import(tmp_path):
    site = install_plugins(tmp_path)

    result = lathe(tmp_path, site, "doctor", "--model", "m", "--base-url", "http://127.0.0.1:9/v1")

    line = next(line for line in result.stdout.splitlines() if " plugins " in line)
    assert line.split()[0] == "warn"
    assert (
        "boom (lathe.tools, from lathe-broken 0.3) does not load: RuntimeError: the broken "
        "plugin exploded; runs skip it" in line
    )


def test_a_run_uses_plugin_tools_and_hooks_and_skips_the_broken_one(tmp_path, fake_openai):
    site = install_plugins(tmp_path)
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Reply(calls=[Call("shout", {"text": "hello"})]), Reply("Done."))

    result = lathe(
        tmp_path, site, "run", "--json", "--model", "m", "--base-url", fake_openai.base_url,
        "-C", str(ws), "say it loud",
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    notices = [e["message"] for e in events if e["type"] == "notice"]
    assert (
        "plugin 'boom' (lathe.tools, from lathe-broken 0.3) skipped: RuntimeError: the broken "
        "plugin exploded" in notices
    )
    assert (
        "plugin 'demo-tools' (lathe.tools, from lathe-demo 1.2.0) skipped: the tool 'read' has "
        "lathe's own name" in notices
    )
    first, second = fake_openai.chat_bodies()
    names = [t["function"]["name"] for t in first["tools"]]
    assert names.count("read") == 1 and "shout" in names
    assert second["messages"][-1]["content"] == "HELLO!"
    assert (ws / "HOOK_RAN").read_text() == "say it loud"


def test_a_plugin_provider_kind_serves_the_run(tmp_path, fake_openai):
    site = install_plugins(tmp_path)
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Reply("Done."))

    result = lathe(
        tmp_path, site, "run", "--model", "demo/m", "-c", "providers.demo.kind=demo-kind",
        "-c", f"providers.demo.base_url={fake_openai.base_url}", "-C", str(ws), "hi",
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    chats = [r for r in fake_openai.requests if r.path.endswith("/chat/completions")]
    assert [{k.lower(): v for k, v in r.headers.items()}.get("x-demo-plugin") for r in chats] == [
        "yes"
    ]


def test_an_unknown_provider_kind_names_those_there_are(tmp_path, fake_openai):
    site = install_plugins(tmp_path)
    ws = _workspace(tmp_path)

    result = lathe(
        tmp_path, site, "run", "--model", "demo/m", "-c", "providers.demo.kind=nope",
        "-c", f"providers.demo.base_url={fake_openai.base_url}", "-C", str(ws), "hi",
    )  # fmt: skip

    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "lathe: unknown provider kind 'nope'; lathe knows anthropic, demo-kind, openai-compatible"
    )


def test_permissions_executor_selects_a_plugin_executor(tmp_path, fake_openai):
    site = install_plugins(tmp_path)
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": "echo from-plugin"})]), Reply("ok"))

    result = lathe(
        tmp_path, site, "run", "--model", "m", "--base-url", fake_openai.base_url,
        "-c", "permissions.executor=logged", "--allow", "bash(echo from-plugin)",
        "-C", str(ws), "run it",
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert (tmp_path / "executor.log").read_text() == "echo from-plugin\n"
    assert "from-plugin" in fake_openai.chat_bodies()[1]["messages"][-1]["content"]


def test_an_executor_no_plugin_provides_stops_the_run_before_it_starts(tmp_path, fake_openai):
    site = install_plugins(tmp_path)
    ws = _workspace(tmp_path)

    result = lathe(
        tmp_path, site, "run", "--model", "m", "--base-url", fake_openai.base_url,
        "-c", "permissions.executor=docker", "-C", str(ws), "run it",
    )  # fmt: skip

    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "lathe: permissions.executor = 'docker': no plugin executor of that name (logged); "
        "`lathe plugins` lists them, or unset the key for lathe's own"
    )
    assert fake_openai.chat_bodies() == []


def test_a_project_file_choosing_the_executor_needs_trust(tmp_path, fake_openai):
    site = install_plugins(tmp_path)
    ws = _workspace(tmp_path)
    (ws / ".lathe").mkdir()
    (ws / ".lathe" / "config.toml").write_text('[permissions]\nexecutor = "logged"\n')

    result = lathe(
        tmp_path, site, "run", "--model", "m", "--base-url", fake_openai.base_url,
        "-C", str(ws), "run it",
    )  # fmt: skip

    assert result.returncode == 2
    assert "permissions.executor" in result.stderr and "--trust-project" in result.stderr
    assert fake_openai.chat_bodies() == []


_RAISING = """
from lathe.hooks.base import AgentHooks


class _Raising(AgentHooks):
    async def before_tool(self, name, arguments):
        raise RuntimeError("the guard plugin tripped")

    def on_message(self, message):
        raise ValueError("the logging plugin tripped")


def hooks(workspace):
    return _Raising()
"""


def test_a_plugin_hook_that_raises_blocks_the_call_and_the_run_goes_on(tmp_path, fake_openai):
    # It ended the run with a traceback and left the session with a call unanswered.
    site = tmp_path / "site"
    site.mkdir()
    (site / "lathe_raising.py").write_text(_RAISING)
    _distribution(site, "lathe-raising", "0.1", """
        [lathe.hooks]
        raising = lathe_raising:hooks
    """)  # fmt: skip
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Reply(calls=[Call("read", {"path": "README.md"})]), Reply("Done."))

    result = lathe(tmp_path, site, "run", "--model", "m", "--base-url", fake_openai.base_url,
                   "-C", str(ws), "read it")  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "the logging plugin tripped" in result.stderr  # said once, as a warning
    assert result.stderr.count("the logging plugin tripped") == 1
    [blocked] = [m for m in fake_openai.chat_bodies()[-1]["messages"] if m["role"] == "tool"]
    assert "the guard plugin tripped" in blocked["content"] and "not run" in blocked["content"]
