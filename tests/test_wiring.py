"""How a run is put together for the local model: what reaches each model request."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from lathe.agent.prompt import shows_workspace
from lathe.config import ENV_KEYS
from lathe.exec.local import LocalExecutor
from lathe.llm.scripted import ScriptedProvider, reply
from lathe.ui.setup import RunOptions, RunSetup, prepare
from lathe.ui.wiring import build_agent


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ENV_KEYS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LATHE_CONFIG", str(tmp_path / "user" / "config.toml"))
    monkeypatch.setenv("LATHE_HOME", str(tmp_path / "home"))


def local_setup(workspace: Path) -> RunSetup:
    """What `--model local` resolves to, without starting llama-server: an
    OpenAI-compatible loopback endpoint with the local provider's 8k window."""
    setup = prepare(
        RunOptions(workspace=workspace, model="qwen-local", base_url="http://127.0.0.1:9/v1")
    )
    setup.model = dataclasses.replace(setup.model, provider="local", context_window=8192)
    return setup


async def first_request(setup: RunSetup) -> tuple[dict, str]:
    """The first request's extra body fields, and its system prompt."""
    provider = ScriptedProvider([reply("done")])
    agent = build_agent(setup, provider, lambda event: None, executor=LocalExecutor())
    await agent.run("task")
    return provider.requests[0].extra, provider.requests[0].system


async def test_the_local_template_is_asked_for_reasoning_when_the_code_is_in_the_prompt(
    tmp_path: Path,
) -> None:
    small = tmp_path / "small"
    small.mkdir()
    (small / "stats.py").write_text("def mean(values):\n    return sum(values) / len(values)\n")

    extra, _ = await first_request(local_setup(small))

    assert extra == {"chat_template_kwargs": {"reason_first": True}}


async def test_no_reasoning_request_when_the_model_must_read_the_code_first(
    tmp_path: Path,
) -> None:
    # Too large for the prompt: a model asked to reason first described files it had
    # not read.
    large = tmp_path / "large"
    large.mkdir()
    for n in range(20):
        (large / f"module_{n}.py").write_text(f"VALUE_{n} = {'1' * 1000}\n")

    extra, prompt = await first_request(local_setup(large))

    assert extra == {}
    assert not shows_workspace(prompt)


async def test_no_template_arguments_for_other_servers(tmp_path: Path) -> None:
    small = tmp_path / "small"
    small.mkdir()
    (small / "app.py").write_text("x = 1\n")
    setup = prepare(
        RunOptions(workspace=small, model="qwen-local", base_url="http://127.0.0.1:9/v1")
    )

    extra, prompt = await first_request(setup)

    assert extra == {}
    assert shows_workspace(prompt)  # the code is in view: only the server kind decides
