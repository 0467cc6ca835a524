"""The hook protocol: the loop's extension points. Sessions, the context budget,
checkpoints and the policy gate arrive as hooks, so the loop itself never names them.

Every method has a do-nothing default; subclass and override what you need, or combine
several with `HookChain`. This module sits beside the loop rather than in `lathe.agent`
so that what implements a hook (the policy gate, command and plugin hooks, the faces)
never imports the agent: it imports only tools and types.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lathe.tools.base import ToolOutput
from lathe.types import Message

if TYPE_CHECKING:
    from lathe.events import RunFinished

_MAX_REWRITES = 3


class AgentHooks:
    def on_message(self, message: Message) -> None:
        """A message entered the conversation (persist it)."""

    def on_compaction(
        self, opening: str, kept_messages: int, tokens_before: int, tokens_after: int
    ) -> None:
        """The history was compacted: one user message, `opening` (the task and the
        summary), now stands for everything before the last `kept_messages` messages."""

    async def on_run_start(self, task: str) -> None:
        """A run starts with `task` (the session_start hook point)."""

    async def on_run_end(self, finished: RunFinished) -> None:
        """A run ended (the stop hook point)."""

    async def before_tool(
        self, name: str, arguments: dict[str, Any]
    ) -> ToolOutput | dict[str, Any] | None:
        """None runs the call; a ToolOutput stops it (a denial the model sees); a dict
        runs it with these arguments instead (they are validated again)."""
        return None

    async def after_tool(
        self, name: str, arguments: dict[str, Any], output: ToolOutput
    ) -> ToolOutput:
        return output

    async def before_changes(self, turn: int) -> None:
        """Called once before the first tool of a turn that may change files."""

    async def after_changes(self, turn: int) -> None:
        """Called after the tools of a turn that may have changed files."""

    def kept_verbatim(self) -> list[str]:
        """Texts the hook put into the conversation that must reach the model word for
        word however the conversation is shortened (instructions loaded mid-run): a
        compaction carries them into the message that opens the shortened history."""
        return []


class HookChain(AgentHooks):
    """Runs several hook objects in order; a denial or a rewrite stops the chain."""

    def __init__(self, hooks: Sequence[AgentHooks]) -> None:
        self._hooks = list(hooks)

    @property
    def hooks(self) -> tuple[AgentHooks, ...]:
        """The hooks, in the order they run."""
        return tuple(self._hooks)

    def on_message(self, message: Message) -> None:
        for hook in self._hooks:
            hook.on_message(message)

    def on_compaction(
        self, opening: str, kept_messages: int, tokens_before: int, tokens_after: int
    ) -> None:
        for hook in self._hooks:
            hook.on_compaction(opening, kept_messages, tokens_before, tokens_after)

    async def on_run_start(self, task: str) -> None:
        for hook in self._hooks:
            await hook.on_run_start(task)

    async def on_run_end(self, finished: RunFinished) -> None:
        for hook in self._hooks:
            await hook.on_run_end(finished)

    async def before_tool(
        self, name: str, arguments: dict[str, Any]
    ) -> ToolOutput | dict[str, Any] | None:
        """A rewrite restarts the chain, so the policy gate (first) judges the
        arguments that will really run. A hook is asked once about each set of
        arguments: not again about those it let through (the gate would ask a person
        twice), nor about those it made itself (a rewriting hook ran three times, once
        more for each chain nested in this one, on its own result)."""
        # Each hook's keys of the arguments it was asked about, kept from the first
        # rewrite on: until then each is asked once about the model's arguments, and
        # encoding them for every hook cost 30 ms on an 840 KB write. Not empty once
        # something rewrote them.
        judged: list[set[str]] = []
        key = ""  # the arguments' key, once there are keys to compare
        for _ in range(_MAX_REWRITES + 1):
            for index, hook in enumerate(self._hooks):
                if judged:
                    if key in judged[index]:
                        continue
                    judged[index].add(key)
                verdict = await hook.before_tool(name, arguments)
                if isinstance(verdict, dict):
                    if not judged:  # those asked so far were asked about the model's
                        first = _key(arguments)
                        judged = [{first} if i <= index else set() for i in range(len(self._hooks))]
                    arguments, key = verdict, _key(verdict)
                    judged[index].add(key)
                    break
                if verdict is not None:
                    return verdict
            else:
                return arguments if judged else None
        return ToolOutput(
            content="Error: the pre_tool hooks kept rewriting this call's arguments.",
            is_error=True,
            summary="hooks looped",
        )

    async def after_tool(
        self, name: str, arguments: dict[str, Any], output: ToolOutput
    ) -> ToolOutput:
        for hook in self._hooks:
            output = await hook.after_tool(name, arguments, output)
        return output

    async def before_changes(self, turn: int) -> None:
        for hook in self._hooks:
            await hook.before_changes(turn)

    async def after_changes(self, turn: int) -> None:
        for hook in self._hooks:
            await hook.after_changes(turn)

    def kept_verbatim(self) -> list[str]:
        return [text for hook in self._hooks for text in hook.kept_verbatim()]


def _key(arguments: dict[str, Any]) -> str:
    """Arguments as one comparable text (the same whatever the order of their keys)."""
    return json.dumps(arguments, sort_keys=True, default=repr)
