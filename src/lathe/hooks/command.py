"""Config-defined command hooks (`[[hooks.pre_tool]]` and friends).

Each hook gets the event as JSON on stdin and runs with `bash -c` in the workspace,
outside the sandbox, with the environment commands get (no provider keys, no
secret-looking variables: `lathe.exec.env`), under the same supervisor as the `bash`
tool's unsandboxed commands (`lathe.exec.supervision`): at its timeout it is killed with
everything it started, `setsid` descendants included, whatever it leaves running is
stopped when it exits, and nothing of it outlives lathe. pre_tool: exit 2 blocks the call
with stderr as the reason the model sees; other non-zero exits are reported and the call
goes on; JSON `{"arguments": {...}}` on stdout rewrites the arguments. post_tool: JSON
`{"content": "..."}` on stdout replaces the result. A pre_tool hook that times out
blocks the call: a guard that could not decide must not wave a call through.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lathe.exec.supervision import Supervision, reaped_after_kill
from lathe.hooks.base import AgentHooks
from lathe.tools.base import ToolOutput

if TYPE_CHECKING:
    from lathe.config.schema import HookCommand, HooksConfig
    from lathe.events import RunFinished

# SIGTERM first, as for commands, then SIGKILL after a short grace: a hook past its
# timeout, or what it left running, holds up the call it guards.
_KILL_GRACE_S = 1.0


@dataclass(frozen=True)
class HookRun:
    exit_code: int | None  # None: killed at its timeout
    stdout: str
    stderr: str


async def run_hook(
    hook: HookCommand,
    event: dict[str, Any],
    workspace: Path,
    environment: Mapping[str, str] | None = None,
) -> HookRun:
    """Run one hook; `environment` is what it starts with (None: lathe's own)."""
    payload = json.dumps(event).encode()
    argv = ["bash", "-c", hook.command]
    with Supervision(argv, timeout=hook.timeout_s, grace=_KILL_GRACE_S) as supervision:
        process = await asyncio.create_subprocess_exec(
            *supervision.argv,
            cwd=workspace, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, start_new_session=True,
            pass_fds=supervision.pass_fds,
            env=dict(environment) if environment is not None else None,
        )  # fmt: skip
        supervision.spawned()
        try:
            stdout, stderr = await asyncio.wait_for(
                process.communicate(payload), supervision.backstop_s
            )
        except TimeoutError:  # the supervisor itself is stuck: lathe's own bound holds
            supervision.kill_now(process)
            await reaped_after_kill(process.wait())
            return _timed_out(hook)
        except BaseException:  # cancelled: nothing of the hook may outlive the call
            supervision.kill_now(process)
            await reaped_after_kill(process.wait())
            raise
        if supervision.report().timed_out:
            return _timed_out(hook)
    return HookRun(
        process.returncode, stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace")
    )


def _timed_out(hook: HookCommand) -> HookRun:
    return HookRun(None, "", f"the hook `{hook.command}` timed out after {hook.timeout_s}s")


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


class CommandHooks(AgentHooks):
    def __init__(
        self, config: HooksConfig, workspace: Path, environment: Mapping[str, str] | None = None
    ) -> None:
        self._config = config
        self._workspace = workspace
        self._environment = environment

    def _for_tool(self, hooks: list[HookCommand], tool: str) -> list[HookCommand]:
        return [h for h in hooks if not h.tools or tool in h.tools]

    async def on_run_start(self, task: str) -> None:
        for hook in self._config.session_start:
            await run_hook(
                hook,
                {"event": "session_start", "task": task, **self._base()},
                self._workspace,
                self._environment,
            )

    async def on_run_end(self, finished: RunFinished) -> None:
        event = {"event": "stop", "status": finished.status.value, "turns": finished.turns}
        for hook in self._config.stop:
            await run_hook(hook, {**event, **self._base()}, self._workspace, self._environment)

    async def before_tool(
        self, name: str, arguments: dict[str, Any]
    ) -> ToolOutput | dict[str, Any] | None:
        rewritten: dict[str, Any] | None = None
        for hook in self._for_tool(self._config.pre_tool, name):
            event = {"event": "pre_tool", "tool": name, "arguments": rewritten or arguments}
            result = await run_hook(
                hook, {**event, **self._base()}, self._workspace, self._environment
            )
            if result.exit_code is None or result.exit_code == 2:
                reason = result.stderr.strip() or f"the pre_tool hook `{hook.command}` refused it"
                return ToolOutput(
                    content=f"Blocked by a hook: {reason}", is_error=True, summary="blocked"
                )
            reply = _json_object(result.stdout) if result.exit_code == 0 else None
            if reply and isinstance(reply.get("arguments"), dict):
                rewritten = reply["arguments"]
        return rewritten if rewritten is not None and rewritten != arguments else None

    async def after_tool(
        self, name: str, arguments: dict[str, Any], output: ToolOutput
    ) -> ToolOutput:
        for hook in self._for_tool(self._config.post_tool, name):
            event = {
                "event": "post_tool", "tool": name, "arguments": arguments,
                "content": output.content, "is_error": output.is_error,
            }  # fmt: skip
            result = await run_hook(
                hook, {**event, **self._base()}, self._workspace, self._environment
            )
            reply = _json_object(result.stdout) if result.exit_code == 0 else None
            if reply and isinstance(reply.get("content"), str):
                output = ToolOutput(
                    content=reply["content"], is_error=output.is_error,
                    summary=output.summary, details=output.details,
                )  # fmt: skip
        return output

    def _base(self) -> dict[str, Any]:
        return {"workspace": str(self._workspace)}
