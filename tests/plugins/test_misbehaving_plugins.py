"""Plugins that give lathe the wrong thing, or exit as they load. Each once crashed or
crippled a run through the real CLI:

- a `sys.exit()` at a plugin's import ended `lathe run`, `plugins` and `doctor` (exit 1,
  the plugin's words alone);
- a hooks factory returning an object that is not `AgentHooks` blocked every call;
- a provider factory that raises, or returns no provider, ended in a traceback;
- an executor factory returning None made every command an internal error.
"""

from __future__ import annotations

from pathlib import Path

from tests.fakes.openai_server import Call, Reply
from tests.plugins.test_plugins import _distribution, _workspace, lathe

_ODD = """
import sys


class NotHooks:
    async def on_run_start(self, task):
        pass


def hooks(workspace):
    return NotHooks()


def raising_provider(endpoint):
    raise ValueError("cannot build the provider")


def no_provider(endpoint):
    return 42


def no_executor(*, workspace, hide_env, keep_env):
    return None
"""


def _site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    (site / "lathe_odd.py").write_text(_ODD)
    (site / "lathe_quits.py").write_text(
        "import sys\nsys.exit('lathe-quits needs some_missing_dependency')\n"
    )
    _distribution(site, "lathe-odd", "0.1", """
        [lathe.hooks]
        nothooks = lathe_odd:hooks

        [lathe.providers]
        raises = lathe_odd:raising_provider
        wrong = lathe_odd:no_provider

        [lathe.executors]
        nothing = lathe_odd:no_executor
    """)  # fmt: skip
    _distribution(site, "lathe-quits", "0.1", """
        [lathe.tools]
        quits = lathe_quits:tools
    """)  # fmt: skip
    return site


def test_a_plugin_that_exits_as_it_loads_is_skipped_and_reported(tmp_path, fake_openai):
    site = _site(tmp_path)
    ws = _workspace(tmp_path)
    (ws / "a.txt").write_text("hello\n")
    fake_openai.enqueue(Reply(calls=[Call("read", {"path": "a.txt"})]), Reply("Done."))

    ran = lathe(tmp_path, site, "run", "--model", "m", "--base-url", fake_openai.base_url,
                "-C", str(ws), "read it")  # fmt: skip
    listed = lathe(tmp_path, site, "plugins")

    assert ran.returncode == 0, ran.stderr
    assert "plugin 'quits'" in ran.stderr and "skipped" in ran.stderr
    assert "not run" not in ran.stderr  # the hooks that are no AgentHooks are skipped
    assert "plugin 'nothooks'" in ran.stderr and "AgentHooks" in ran.stderr
    assert listed.returncode == 1, listed.stderr
    rows = {line.split()[0]: line for line in listed.stdout.splitlines()[1:] if line.strip()}
    assert "some_missing_dependency" in rows["quits"]
    assert "AgentHooks" in rows["nothooks"]


def test_a_provider_plugin_that_gives_no_provider_is_one_line(tmp_path, fake_openai):
    site = _site(tmp_path)
    ws = _workspace(tmp_path)
    for kind, words in (("raises", "cannot build the provider"), ("wrong", "not a provider")):
        ran = lathe(tmp_path, site, "run", "--model", "p/m", "-c", f"providers.p.kind={kind}",
                    "-c", f"providers.p.base_url={fake_openai.base_url}",
                    "-C", str(ws), "hi")  # fmt: skip
        assert ran.returncode == 2, ran.stderr
        [line] = ran.stderr.strip().splitlines()[-1:]
        assert line.startswith("lathe: ") and words in line, ran.stderr
        assert "Traceback" not in ran.stderr
    assert fake_openai.chat_bodies() == []


def test_an_executor_plugin_that_gives_no_executor_stops_the_run(tmp_path, fake_openai):
    site = _site(tmp_path)
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": "echo hi"})]), Reply("Done."))
    ran = lathe(tmp_path, site, "run", "--model", "m", "--base-url", fake_openai.base_url,
                "-c", "permissions.executor=nothing", "-C", str(ws), "run it")  # fmt: skip
    assert ran.returncode == 2, ran.stderr
    assert "not an executor" in ran.stderr.strip().splitlines()[-1]
    assert fake_openai.chat_bodies() == []
