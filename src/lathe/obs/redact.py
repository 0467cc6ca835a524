"""Masking the secret values in use (API keys, secret headers) wherever lathe writes text.

`Redactor(model.secrets())` knows the exact values to hide and replaces every occurrence
with `mask_secret(value)` (`sk-…abcd`). It is three things at once:

- an `AgentHooks` whose `after_tool` masks a tool's output before the model, the session
  or any face sees it (a command can print its own environment), including the spill
  file a long output was saved to;
- a wrapper for other hooks (`redactor.guard(recorder)`) that masks each message before
  it is persisted, for text that does not come through a tool (verify output);
- a filter for events and log lines (`event`, `mask`);
- a wrapper for the provider (`redactor.provider(p)`) that masks every request before
  it is sent — the system prompt (which may copy workspace files), messages, tool
  results — so the model is never shown what the session file would not hold.

It masks exact values and the spellings an error or a JSON or Python repr gives
them (`secret_spellings`: `b'Bearer KEY\\n'`): a key that a command re-encodes
(base64, split across lines) is not recognised. Values shorter than `MIN_SECRET_CHARS`
are ignored, because masking every "abc" in a transcript would destroy it and such a
value protects nothing anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import os
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from pathlib import Path
from secrets import token_hex
from typing import Any, BinaryIO, TypeVar

from pydantic import TypeAdapter

from lathe.chunked import ChunkCache, Chunks
from lathe.config.secrets import mask_secret, secret_spellings
from lathe.exec.env import secret_values
from lathe.hooks.base import AgentHooks
from lathe.llm.base import ModelRequest, Provider, StreamEvent
from lathe.tools.base import ToolOutput
from lathe.types import Message

MIN_SECRET_CHARS = 8
_SCRUB_CHUNK = 1024 * 1024
_Value = TypeVar("_Value")


class Redactor(AgentHooks):
    def __init__(self, secrets: Iterable[str]) -> None:
        self._given: set[str] = set()
        self._secrets: list[str] = []  # every spelling of every secret, longest first
        self._masks: dict[str, str] = {}  # each spelling: the mask it is replaced with
        self.generation = 0  # bumped by include(): what was masked before may hold more
        self.include(secrets)

    @classmethod
    def for_run(cls, model_secrets: Iterable[str], environ: Mapping[str, str]) -> Redactor:
        """The model's key and secret headers, plus the values of the environment's
        secret-looking variables (commands never get them, but a file may hold them)."""
        return cls([*model_secrets, *secret_values(environ)])

    def include(self, secrets: Iterable[str]) -> None:
        """Mask these values too (e.g. the key of a model switched to), however text
        spells them (`secret_spellings`: a key with a newline, as an error quotes it)."""
        self._given |= {s for s in secrets if s and len(s) >= MIN_SECRET_CHARS}
        masks: dict[str, str] = {}
        for secret in self._given:
            shown = mask_secret(secret.strip())
            for spelling in secret_spellings(secret):
                if len(spelling) >= MIN_SECRET_CHARS:
                    masks.setdefault(spelling, shown)
        self._masks = masks
        # Longest first, so a secret that contains another is masked whole.
        self._secrets = sorted(masks, key=len, reverse=True)
        self.generation += 1

    def __bool__(self) -> bool:
        return bool(self._secrets)

    def found_in(self, text: str) -> bool:
        return any(secret in text for secret in self._secrets)

    def mask(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, self._masks[secret])
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

    def model(self, value: _Value) -> _Value:
        """A pydantic value (an event model, a message dataclass) with every secret
        masked; the same object when it holds none."""
        if not self._secrets:
            return value
        adapter = _adapter(type(value))
        # JSON text shows a secret holding `"` or `\\` escaped: that is one of the
        # spellings masked (`secret_spellings`); the values themselves are masked below.
        if not self.found_in(adapter.dump_json(value).decode()):
            return value
        return adapter.validate_python(self.mask_data(adapter.dump_python(value, mode="json")))

    event = model
    message = model

    def streamed(self) -> DeltaMasking:
        """A masker for one stream of events (`DeltaMasking`): text and thinking deltas
        are masked across their boundaries, every other event as `event` does."""
        return DeltaMasking(self)

    def safe_cut(self, text: str) -> int:
        """How much of `text`, a stream's text so far, may be let go masked: up to the
        longest end that begins a secret (a later piece may complete it), and never
        through a secret (masked whole before, a shorter secret inside a longer one had
        let the rest of the longer one through)."""
        if not self._secrets:
            return len(text)
        cut, longest = len(text), len(self._secrets[0])
        firsts = {secret[0] for secret in self._secrets}
        for start in range(max(len(text) - longest + 1, 0), len(text)):
            if text[start] in firsts and any(s.startswith(text[start:]) for s in self._secrets):
                cut = start
                break
        moved = True
        while moved:  # a secret across the cut moves it back to where the secret starts
            moved = False
            for secret in self._secrets:
                found = text.find(secret, max(cut - len(secret) + 1, 0), cut + len(secret) - 1)
                if found != -1 and found < cut:
                    cut, moved = found, True
        return cut

    async def after_tool(
        self, name: str, arguments: dict[str, Any], output: ToolOutput
    ) -> ToolOutput:
        if not self._secrets:
            return output
        spill = output.details.get("full_output_path")
        if isinstance(spill, str):  # may be a gigabyte: off the event loop
            await asyncio.to_thread(self._scrub_file, Path(spill))
        return dataclasses.replace(
            output,
            content=self.mask(output.content),
            summary=self.mask(output.summary),
            details=self.mask_data(output.details),
        )

    def _scrub_file(self, path: Path) -> None:
        """Mask the secrets in a file of any size, a chunk at a time; the file is
        rewritten only when it holds one. Bytes, not text, so nothing else changes."""
        needles = [(s.encode(), self._masks[s].encode()) for s in self._secrets]
        tmp = path.with_name(f".{path.name}.{token_hex(4)}.masking")
        try:
            with path.open("rb") as source:
                if not any(changed for _, changed in _masked_chunks(source, needles)):
                    return
            with path.open("rb") as source, tmp.open("wb") as target:
                for data, _ in _masked_chunks(source, needles):
                    target.write(data)
            os.replace(tmp, path)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()

    def provider(self, provider: Provider) -> Provider:
        """`provider` sending only masked requests."""
        return _MaskedProvider(provider, self) if self._secrets else provider

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


class DeltaMasking:
    """Masks a stream of events whose text arrives in pieces. A model that repeats a key
    sends it cut into deltas of a few characters, and each delta masked on its own held
    no whole key: the end of the text that may begin one is held back until the next
    delta completes it or shows it is none (`Redactor.safe_cut`), and is let go, masked,
    before any other event (the complete reply that follows the deltas is masked whole)
    or by `flush` (a run interrupted mid-reply)."""

    def __init__(self, redactor: Redactor) -> None:
        from lathe.events import TextDelta, ThinkingDelta

        self._redactor = redactor
        self._deltas = (TextDelta, ThinkingDelta)
        self._held: Any = None  # a delta of the text held back, or None

    def __call__(self, event: Any) -> list[Any]:
        redactor, held = self._redactor, self._held
        if held is None and not redactor:
            return [event]
        if not isinstance(event, self._deltas):
            return [*self.flush(), redactor.event(event)]
        out: list[Any] = []
        text = event.text
        if held is not None:
            if type(held) is type(event):
                text = held.text + text
                self._held = None
            else:
                out += self.flush()
        cut = redactor.safe_cut(text)
        if cut:
            out.append(event.model_copy(update={"text": redactor.mask(text[:cut])}))
        # Held as it came: masked when let go, whole with what completes it.
        self._held = event.model_copy(update={"text": text[cut:]}) if cut < len(text) else None
        return out

    def flush(self) -> list[Any]:
        """The text held back, masked, as a delta (none when nothing is held)."""
        held, self._held = self._held, None
        if held is None:
            return []
        return [held.model_copy(update={"text": self._redactor.mask(held.text)})]


def _masked_chunks(
    source: BinaryIO, needles: list[tuple[bytes, bytes]]
) -> Iterator[tuple[bytes, bool]]:
    """`source`'s bytes with each needle replaced by its mask, a chunk at a time, and
    whether the chunk held one. A needle cut by a chunk boundary starts in the last
    `keep` bytes, which are held back and searched again with the next chunk."""
    keep = max(len(needle) for needle, _ in needles) - 1
    pending = b""
    while chunk := source.read(_SCRUB_CHUNK):
        data, changed = pending + chunk, False
        for needle, masked in needles:
            if needle in data:
                data, changed = data.replace(needle, masked), True
        cut = max(len(data) - keep, 0)
        yield data[:cut], changed
        pending = data[cut:]
    yield pending, False


# One adapter per type, built on first use: masking runs for every message a run sends.
_adapter: Callable[[type[Any]], TypeAdapter[Any]] = functools.cache(TypeAdapter)


class _MaskedProvider:
    """A Provider (see lathe.llm.base) whose requests pass through a Redactor first.

    A request repeats the whole conversation, so each message is masked once, when it
    is first sent, and its masked copy reused while the conversation holds it; the
    masked request keeps the chunks of the one given (`lathe.chunked`), each masked once
    and the same object while its source chunk is: the cost of a turn stays that of the
    chunks that changed, not of the whole history."""

    def __init__(self, inner: Provider, redactor: Redactor) -> None:
        self._inner = inner
        self._redactor = redactor
        self._generation = -1
        self._system = ("", "")  # the last system prompt, and its masked form
        self._masked: ChunkCache[Message, Message, tuple[Message, ...]] = ChunkCache(
            redactor.message
        )

    @property
    def model(self) -> str:
        return self._inner.model

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        return self._inner.stream(self._request(request))

    def _request(self, request: ModelRequest) -> ModelRequest:
        redactor = self._redactor
        if self._generation != redactor.generation:  # new secrets: mask everything again
            self._generation, self._system = redactor.generation, ("", "")
            self._masked.clear()
        if self._system[0] != request.system:
            self._system = (request.system, redactor.mask(request.system))
        messages = Chunks(self._masked.map(request.messages))
        return dataclasses.replace(request, system=self._system[1], messages=messages)

    async def aclose(self) -> None:
        await self._inner.aclose()
