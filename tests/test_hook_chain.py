"""Both faces run with one hook chain, built by one function, in one order."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import pytest
from tests.fakes.user_config import user_config_file

from lathe.config import ENV_KEYS
from lathe.hooks.command import CommandHooks
from lathe.obs import Redactor
from lathe.policy.gate import PolicyGate
from lathe.ui.headless import _HeadlessRun
from lathe.ui.interactive.app import InteractiveApp
from lathe.ui.interactive.hooks import OutputTap
from lathe.ui.interactive.links import Links
from lathe.ui.recorder import CheckpointRecorder, SessionRecorder
from lathe.ui.safety import build_safety
from lathe.ui.setup import RunOptions

KEY = "sk-test-chain-0123456789"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ENV_KEYS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LATHE_CONFIG", user_config_file(tmp_path / "user" / "config.toml"))
    monkeypatch.setenv("LATHE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)  # a secret, so the recorders are masked


def roles(chain) -> list[str]:
    def role(hook) -> str:
        for kind, name in ((PolicyGate, "gate"), (CommandHooks, "command hooks"),
                           (Redactor, "redactor"), (OutputTap, "tap")):  # fmt: skip
            if isinstance(hook, kind):
                return name
        return "masked recorders" if type(hook).__name__ == "_Masked" else "unmasked"

    return [role(hook) for hook in chain.hooks]


def recorders(chain) -> tuple:
    """The hooks behind the redactor's guard, the chain's last hook."""
    return chain.hooks[-1]._inner.hooks


def options(tmp_path: Path, **more) -> RunOptions:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    return RunOptions(workspace=workspace, model="m", base_url="https://models.test/v1", **more)


def headless_chain(tmp_path: Path):
    from lathe.home import lathe_home
    from lathe.session import SessionStore
    from lathe.ui.setup import prepare

    with ExitStack() as cleanup:
        run = _HeadlessRun(prepare(options(tmp_path)), False, cleanup)
        session = SessionStore(lathe_home()).create(run.setup.workspace, "m")
        cleanup.callback(session.close)
        run.recorder = SessionRecorder(session)
        safety = build_safety(run.setup, session, approver=None, emit=lambda event: None)
        redactor = Redactor.for_run([KEY], {})
        chain = run._hooks(safety, redactor, run._checkpoints())
        return safety, chain


def interactive_chain(tmp_path: Path):
    app = InteractiveApp(options(tmp_path, headless=False))
    safety = build_safety(app.setup, None, approver=app, emit=lambda event: None)
    return safety, app._hooks(safety, Redactor.for_run([KEY], {}))


def test_both_faces_get_the_same_chain_in_the_same_order(tmp_path) -> None:
    headless_safety, headless = headless_chain(tmp_path)
    interactive_safety, interactive = interactive_chain(tmp_path)

    assert roles(headless) == ["gate", "command hooks", "redactor", "masked recorders"]
    assert roles(interactive) == ["gate", "command hooks", "redactor", "tap", "masked recorders"]
    assert [type(hook) for hook in recorders(headless)] == [SessionRecorder, CheckpointRecorder]
    assert [type(hook) for hook in recorders(interactive)] == [Links]
    assert headless.hooks[0] is headless_safety.gate and headless_safety.gate.approver is None
    assert interactive.hooks[0] is interactive_safety.gate
    assert interactive_safety.gate.approver is not None
    # The gate asks the very registry the agent is built with.
    assert headless_safety.gate.policy.tools is headless_safety.tools
