"""`lathe run`: wire the agent for one headless task and map its end to an exit code."""

from __future__ import annotations

import asyncio
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import click

from lathe.errors import UsageError
from lathe.events import RunFinished, RunStarted, RunStatus

_EXIT_CODES = {
    RunStatus.VERIFIED: 0,
    RunStatus.UNVERIFIED: 0,
    RunStatus.FAILED: 1,
    RunStatus.STUCK: 1,
    RunStatus.MAX_TURNS: 1,
    RunStatus.PROVIDER_ERROR: 3,
    RunStatus.INTERRUPTED: 130,
}


@dataclass
class RunRequest:
    task: str
    workspace: Path
    model: str | None = None
    base_url: str | None = None
    max_turns: int | None = None
    verify: str | None = None
    as_json: bool = False


def run_headless(request: RunRequest) -> int:
    try:
        endpoint = resolve_endpoint(request.model, request.base_url)
        workspace = _workspace(request.workspace)
    except UsageError as exc:
        click.echo(f"lathe: {exc}", err=True)
        return 2
    try:
        finished = asyncio.run(_run(request, endpoint, workspace))
    except KeyboardInterrupt:
        click.echo("lathe: interrupted", err=True)
        return 130
    if not request.as_json and finished.answer:
        sys.stdout.write(finished.answer.rstrip() + "\n")
    return _EXIT_CODES[finished.status]


@dataclass(frozen=True)
class Endpoint:
    model: str
    base_url: str | None
    api_key: str
    api_key_env: str


def resolve_endpoint(model: str | None, base_url: str | None) -> Endpoint:
    env = os.environ
    model = model or env.get("LATHE_MODEL")
    base_url = base_url or env.get("LATHE_BASE_URL") or env.get("OPENAI_BASE_URL")
    if not model:
        raise UsageError("no model chosen: pass --model NAME or set LATHE_MODEL")
    key_env = "LATHE_API_KEY" if env.get("LATHE_API_KEY") else "OPENAI_API_KEY"
    api_key = env.get(key_env, "")
    if not api_key:
        if base_url and _is_loopback(base_url):
            api_key = "no-key"  # local servers (llama.cpp, Ollama, vLLM) accept anything
        else:
            raise UsageError(
                "no API key: set LATHE_API_KEY or OPENAI_API_KEY to the key for "
                f"{base_url or 'the OpenAI API'}"
            )
    return Endpoint(model=model, base_url=base_url, api_key=api_key, api_key_env=key_env)


def _is_loopback(url: str) -> bool:
    from urllib.parse import urlparse

    host = urlparse(url).hostname or ""
    return host in {"localhost", "::1"} or host.startswith("127.")


def _workspace(path: Path) -> Path:
    resolved = path.expanduser().resolve()
    if not resolved.is_dir():
        raise UsageError(f"the workspace {path} is not a directory; pass an existing one with -C")
    return resolved


async def _run(request: RunRequest, endpoint: Endpoint, workspace: Path) -> RunFinished:
    from lathe.llm.openai_chat import OpenAIChatProvider
    from lathe.ui.progress import JsonPrinter, ProgressPrinter
    from lathe.ui.wiring import build_agent

    emit = JsonPrinter() if request.as_json else ProgressPrinter()
    provider = OpenAIChatProvider(
        endpoint.model,
        endpoint.base_url,
        endpoint.api_key,
        api_key_env=endpoint.api_key_env,
    )
    try:
        agent = build_agent(
            provider,
            workspace,
            emit,
            max_turns=request.max_turns,
            verify=request.verify,
        )
        emit(RunStarted(task=request.task, model=endpoint.model, workspace=str(workspace)))
        return await agent.run(request.task)
    finally:
        await provider.aclose()
