"""Masking the secret values in use (API keys, secret headers) wherever lathe writes text.

`Redactor(model.secrets())` knows the exact values to hide and replaces every occurrence
with `mask_secret(value)` (`sk-…abcd`). It is three things at once:

- an `AgentHooks` whose `after_tool` masks a tool's output before the model, the session
  or any face sees it (a command can print its own environment), including the spill
  file a long output was saved to;
- a wrapper for other hooks (`redactor.guard(recorder)`) that masks each message before
  it is persisted, for text that does not come through a tool (verify output);
- a filter for events and log lines (`event`, `mask`).

It masks exact values only: a key that a command re-encodes (base64, split across lines)
is not recognised. Values shorter than `MIN_SECRET_CHARS` are ignored, because masking
every "abc" in a transcript would destroy it and such a value protects nothing anyway.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from lathe.agent.hooks import AgentHooks
from lathe.config.secrets import mask_secret
from lathe.tools.base import ToolOutput
from lathe.types import Message

MIN_SECRET_CHARS = 8
_Model = TypeVar("_Model", bound=BaseModel)


class Redactor(AgentHooks):
    def __init__(self, secrets: Iterable[str]) -> None:
        unique = {s for s in secrets if s and len(s) >= MIN_SECRET_CHARS}
        # Longest first, so a secret that contains another is masked whole.
        self._secrets = sorted(unique, key=len, reverse=True)

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def found_in(self, text: str) -> bool:
        return any(secret in text for secret in self._secrets)

    def mask(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, mask_secret(secret))
        return text

    def mask_data(self, value: Any) -> Any:
        """Masks every string inside dicts, lists and tuples (keys included)."""
        if isinstance(value, str):
            return self.mask(value)
        if isinstance(value, dict):
            return {self.mask_data(k): self.mask_data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self.mask_data(v) for v in value)
        return value

    def model(self, value: _Model) -> _Model:
        """A pydantic value (an event, a message) with every secret masked; the same object
        when it holds none."""
        if not self._secrets:
            return value
        text = value.model_dump_json()
        if not self.found_in(text):
            return value
        return type(value).model_validate_json(self.mask(text))

    event = model
    message = model

    async def after_tool(
        self, name: str, arguments: dict[str, Any], output: ToolOutput
    ) -> ToolOutput:
        if not self._secrets:
            return output
        spill = output.details.get("full_output_path")
        if isinstance(spill, str):
            self._scrub_file(Path(spill))
        return dataclasses.replace(
            output,
            content=self.mask(output.content),
            summary=self.mask(output.summary),
            details=self.mask_data(output.details),
        )

    def _scrub_file(self, path: Path) -> None:
        try:
            text = path.read_text(encoding="utf-8", errors="surrogateescape")
        except OSError:
            return
        if self.found_in(text):
            path.write_text(self.mask(text), encoding="utf-8", errors="surrogateescape")

    def guard(self, hooks: AgentHooks) -> AgentHooks:
        """`hooks` seeing masked messages and compaction summaries (for a recorder)."""
        return _Masked(hooks, self) if self._secrets else hooks


class _Masked(AgentHooks):
    def __init__(self, inner: AgentHooks, redactor: Redactor) -> None:
        self._inner = inner
        self._redactor = redactor

    def on_message(self, message: Message) -> None:
        self._inner.on_message(self._redactor.message(message))

    def on_compaction(
        self, opening: str, kept_messages: int, tokens_before: int, tokens_after: int
    ) -> None:
        self._inner.on_compaction(
            self._redactor.mask(opening), kept_messages, tokens_before, tokens_after
        )

    async def before_tool(self, name: str, arguments: dict[str, Any]) -> ToolOutput | None:
        return await self._inner.before_tool(name, arguments)

    async def after_tool(
        self, name: str, arguments: dict[str, Any], output: ToolOutput
    ) -> ToolOutput:
        return await self._inner.after_tool(name, arguments, output)

    async def before_changes(self, turn: int) -> None:
        await self._inner.before_changes(turn)

    async def on_run_start(self, task: str) -> None:
        await self._inner.on_run_start(task)

    async def on_run_end(self, finished: Any) -> None:
        await self._inner.on_run_end(finished)

    async def after_changes(self, turn: int) -> None:
        await self._inner.after_changes(turn)
