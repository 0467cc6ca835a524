"""How a run is put together from a model's profile: what reaches each model request."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from tests.fakes.user_config import user_config_file

from lathe.config import ENV_KEYS
from lathe.config.profiles import resolve_profile
from lathe.exec.local import LocalExecutor
from lathe.llm.scripted import ScriptedProvider, reply
from lathe.ui.setup import RunOptions, RunSetup, prepare
from lathe.ui.wiring import build_agent

SNAPSHOT_END = "----- end of files -----"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ENV_KEYS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LATHE_CONFIG", user_config_file(tmp_path / "user" / "config.toml"))
    monkeypatch.setenv("LATHE_HOME", str(tmp_path / "home"))


def local_setup(workspace: Path) -> RunSetup:
    """What `--model local` resolves to, without starting llama-server: an
    OpenAI-compatible loopback endpoint with the local provider's 8k window and the
    local models' profile."""
    setup = prepare(
        RunOptions(workspace=workspace, model="qwen-local", base_url="http://127.0.0.1:9/v1")
    )
    config = setup.loaded.config
    profile = resolve_profile(
        config, entry=None, provider="openai", own_endpoint=False, fallback="local"
    )
    setup.model = dataclasses.replace(
        setup.model, provider="local", context_window=8192, profile=profile
    )
    return setup


async def first_request(setup: RunSetup) -> tuple[dict, str]:
    """The first request's extra body fields, and its system prompt (a reply that
    holds the snapshot ends with its closing line)."""
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
    assert SNAPSHOT_END not in prompt


async def test_no_template_arguments_for_other_profiles(tmp_path: Path) -> None:
    small = tmp_path / "small"
    small.mkdir()
    (small / "app.py").write_text("x = 1\n")
    for profile in (None, "small"):
        setup = prepare(
            RunOptions(
                workspace=small,
                model="qwen-local",
                base_url="http://127.0.0.1:9/v1",
                profile=profile,
            )
        )

        extra, prompt = await first_request(setup)

        assert extra == {}
        assert SNAPSHOT_END in prompt  # the code is in view: only the profile decides


async def test_json_actions_leave_no_room_for_reasoning_first(tmp_path: Path) -> None:
    small = tmp_path / "small"
    small.mkdir()
    (small / "app.py").write_text("x = 1\n")
    setup = local_setup(small)
    setup.endpoint = dataclasses.replace(setup.endpoint, tool_mode="json_schema")

    extra, _ = await first_request(setup)

    assert extra == {}


async def test_a_profile_without_the_snapshot_keeps_the_files_out_of_the_prompt(
    tmp_path: Path,
) -> None:
    small = tmp_path / "small"
    small.mkdir()
    (small / "stats.py").write_text("def mean(values):\n    return sum(values) / len(values)\n")
    setup = local_setup(small)
    settings = setup.model.profile.settings.model_copy(update={"workspace_snapshot_bytes": 0})
    setup.model = dataclasses.replace(
        setup.model, profile=dataclasses.replace(setup.model.profile, settings=settings)
    )

    extra, prompt = await first_request(setup)

    assert "return sum(values)" not in prompt
    assert extra == {}  # and so no reasoning is asked for either


async def test_the_profile_caps_tool_output_and_read_pages(tmp_path: Path) -> None:
    setup = prepare(
        RunOptions(
            workspace=tmp_path,
            model="m",
            base_url="http://127.0.0.1:9/v1",
            overrides=["profile=mine", "profiles.mine.read_default_lines=120",
                       "profiles.mine.output_max_bytes=5000"],
        )
    )  # fmt: skip
    agent = build_agent(setup, ScriptedProvider([]), lambda event: None, executor=LocalExecutor())
    limits = agent.deps.tool_context.limits
    assert (limits.read_default_lines, limits.output_max_bytes) == (120, 5000)
    assert limits.write_may_replace

    plain = prepare(RunOptions(workspace=tmp_path, model="m", base_url="http://127.0.0.1:9/v1"))
    limits = build_agent(
        plain, ScriptedProvider([]), lambda event: None, executor=LocalExecutor()
    ).deps.tool_context.limits
    # A 32k window: the window's own caps (1,024 lines, 26,214 bytes) and the tools' keys.
    assert (limits.read_default_lines, limits.output_max_bytes) == (1024, 26_214)
