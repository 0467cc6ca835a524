"""Config-defined command hooks (`[[hooks.pre_tool]]` and friends).

Each hook gets the event as JSON on stdin and runs with `bash -c` in the workspace,
outside the sandbox, through the same executor as the `bash` tool's unsandboxed
commands (`hook_executor`: a supervised `LocalExecutor` with the environment commands
get — no provider keys, no secret-looking variables: `lathe.exec.env`). So at its
timeout it is stopped with everything it started, `setsid` descendants included
(SIGTERM, then SIGKILL after `HOOK_KILL_GRACE_S`), whatever it leaves running is stopped
when it exits, nothing of it outlives lathe, and its stdout and stderr are capped
(`HOOK_STDOUT_MAX_BYTES`, `HOOK_STDERR_MAX_BYTES`: a head and a tail are kept) however
much it prints. pre_tool: exit 2 blocks the call with stderr as the reason the model
sees; other non-zero exits are reported and the call goes on; JSON `{"arguments":
{...}}` on stdout rewrites the arguments. post_tool: JSON `{"content": "..."}` on stdout
replaces the result. A pre_tool hook that times out blocks the call: a guard that could
not decide must not wave a call through (the user is warned once per hook, and each
refusal's summary gives the reason). Stdout cut by the cap is not JSON, so it rewrites
nothing.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lathe.exec.local import LocalExecutor
from lathe.exec.terminal import visible_text
from lathe.hooks.base import AgentHooks
from lathe.policy.rules import covers_path_tool, names_tool
from lathe.tools.base import Tool, ToolOutput, ToolRegistry

if TYPE_CHECKING:
    from lathe.config.schema import HookCommand, HooksConfig
    from lathe.events import RunFinished

# A hook past its timeout, or what it left running, holds up the call it guards: a
# shorter grace than a command's.
HOOK_KILL_GRACE_S = 1.0
HOOK_STDOUT_MAX_BYTES = 1024 * 1024  # room for a rewritten tool result
HOOK_STDERR_MAX_BYTES = 16 * 1024  # a reason the model reads


@dataclass(frozen=True)
class HookRun:
    exit_code: int | None  # None: killed at its timeout
    stdout: str
    stderr: str


def hook_executor(*, hide_env: Iterable[str] = (), keep_env: Iterable[str] = ()) -> LocalExecutor:
    """The executor hooks run through: on this machine, supervised, with the environment
    commands get (`hide_env`, `keep_env` as for `LocalExecutor`)."""
    return LocalExecutor(hide_env=hide_env, keep_env=keep_env, kill_grace_s=HOOK_KILL_GRACE_S)


async def run_hook(
    hook: HookCommand,
    event: dict[str, Any],
    workspace: Path,
    executor: LocalExecutor | None = None,
) -> HookRun:
    """Run one hook through `executor` (None: `hook_executor()` with lathe's own
    environment, keys and secret-looking variables left out)."""
    result = await (executor or hook_executor()).run(
        hook.command,
        cwd=workspace,
        timeout=hook.timeout_s,
        max_output_bytes=HOOK_STDOUT_MAX_BYTES,
        spill_dir=None,
        stdin=json.dumps(event).encode(),
        stderr_max_bytes=HOOK_STDERR_MAX_BYTES,
    )
    if result.timed_out:
        return _timed_out(hook)
    return HookRun(result.exit_code, result.output, result.stderr)


def _timed_out(hook: HookCommand) -> HookRun:
    return HookRun(None, "", f"the hook `{hook.command}` timed out after {hook.timeout_s}s")


def files_hooks_run(hooks: HooksConfig, workspace: Path) -> tuple[str, ...]:
    """The workspace files the hooks' commands name, as `rules.files_named` gives them:
    a hook runs on the host, outside the sandbox, so they are protected. Each command
    is split as the shell splits it (`./guard.sh>/dev/null; true` names guard.sh), in
    the workspace, where hooks run ($PWD is it)."""
    import shlex

    from lathe.policy.rules import files_named

    found: dict[str, None] = {}  # in the order named, once each
    for hook in (*hooks.session_start, *hooks.pre_tool, *hooks.post_tool, *hooks.stop):
        command = hook.command.replace("${PWD}", "$PWD").replace("$PWD", str(workspace))
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        try:
            words = list(lexer)
        except ValueError:  # quotes the shell would refuse too
            continue
        found |= dict.fromkeys(files_named(words, workspace, workspace))
    return tuple(found)


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _names(hook: HookCommand, tool: str) -> bool:
    """Whether `hook`'s `tools` name `tool` (exactly or as a glob, as `rules.names_tool`
    matches), or are empty: every tool."""
    return not hook.tools or any(names_tool(t, tool) for t in hook.tools)


def _blocked(hook: HookCommand, result: HookRun) -> ToolOutput:
    """A call a pre_tool hook refused (exit 2, or no answer in time), with its reason for
    the model and the first line of it for the faces (`!! blocked` alone left the user
    guessing while the run went stuck)."""
    reason = result.stderr.strip() or f"the pre_tool hook `{hook.command}` refused it"
    first = visible_text(reason.splitlines()[0].strip())
    first = first if len(first) <= _REASON_SHOWN else f"{first[: _REASON_SHOWN - 1]}…"
    return ToolOutput(
        content=f"Blocked by a hook: {reason}",
        is_error=True,
        summary=f"blocked by hook: {first}",
        details={"denied": first, "denied_by": "hook"},
    )


_REASON_SHOWN = 100  # characters of a refusal's reason in its one-line summary


class CommandHooks(AgentHooks):
    """The config's hooks. `warn` hears of each that failed (an exit other than 0, or 2
    of a pre_tool hook) or ran out of time (a pre_tool hook once, however many calls
    it blocks so), and what the run did instead: a failing guard must not go unseen
    while the calls it guards go on, nor one that refuses them all."""

    def __init__(
        self,
        config: HooksConfig,
        workspace: Path,
        executor: LocalExecutor | None = None,
        warn: Callable[[str], None] = lambda message: None,
        tools: ToolRegistry | None = None,
    ) -> None:
        """`tools`: the run's, which say which tools name a path and change files (None:
        the built-in tools)."""
        self._config = config
        self._registry = tools
        self._workspace = workspace
        self._executor = executor or hook_executor()
        self._warn = warn
        self._timed_out: list[HookCommand] = []  # pre_tool hooks warned of for a timeout
        self._not_rewriting: list[tuple[HookCommand, str]] = []  # warned of, see `_guards`

    async def _run(
        self, kind: str, hook: HookCommand, event: dict[str, Any], instead: str
    ) -> HookRun:
        """`hook` on `event`; a failure other than a pre_tool refusal is reported, with
        `instead` (what the run does about it)."""
        result = await run_hook(hook, {**event, **self._base()}, self._workspace, self._executor)
        refused = kind == "pre_tool" and result.exit_code in (None, 2)
        if result.exit_code != 0 and not refused:
            how = (
                f"ran past its {hook.timeout_s:g} s"
                if result.exit_code is None
                else f"exited {result.exit_code}"
            )
            said = next(iter(result.stderr.strip().splitlines()), "")
            self._warn(
                f"the {kind} hook `{hook.command}` {how}{f' ({said})' if said else ''}; {instead}"
            )
        return result

    def _reply(self, hook: HookCommand, result: HookRun, key: str, instead: str) -> dict | None:
        """The JSON object a hook that exited 0 printed; one that names `key` but is not
        one whole object (a log line before it, a brace lost) is warned of, not dropped
        unseen."""
        if result.exit_code != 0:
            return None
        reply = _json_object(result.stdout)
        if reply is None and f'"{key}"' in result.stdout:
            self._warn(
                f"the hook `{hook.command}` printed {key!r} but not as one JSON object (its "
                f"whole output must be the object); {instead}"
            )
        return reply

    def _guards(self, tool: str) -> list[tuple[HookCommand, bool]]:
        """The pre_tool hooks that guard `tool`, each with whether it may rewrite its
        calls. A hook's `tools` cover `tool` as a deny rule's tool part would: one on
        `edit` guards `write` too, one on `read` every tool that names a path (a guard on
        `edit` had let `write gen/out.py` through). But it rewrites only the tools they
        name: its arguments are those of another tool (a hook on `read` had turned
        `write a.py` into `{"path": "other.py"}`, the content dropped)."""
        found: Tool | None = None
        guards = []
        for hook in self._config.pre_tool:
            if _names(hook, tool):
                guards.append((hook, True))
                continue
            found = found or self._tools().get(tool)
            if (
                found is not None
                and found.path_argument is not None
                and any(
                    covers_path_tool(t, tool, changes_files=not found.read_only, denies=True)
                    for t in hook.tools
                )
            ):
                guards.append((hook, False))
        return guards

    def _tools(self) -> ToolRegistry:
        if self._registry is None:
            from lathe.tools.builtin import builtin_tools

            self._registry = ToolRegistry(builtin_tools())
        return self._registry

    async def on_run_start(self, task: str) -> None:
        for hook in self._config.session_start:
            event = {"event": "session_start", "task": task}
            await self._run("session_start", hook, event, "the run goes on")

    async def on_run_end(self, finished: RunFinished) -> None:
        event = {"event": "stop", "status": finished.status.value, "turns": finished.turns}
        for hook in self._config.stop:
            await self._run("stop", hook, event, "the run has ended as it was")

    async def before_tool(
        self, name: str, arguments: dict[str, Any]
    ) -> ToolOutput | dict[str, Any] | None:
        rewritten: dict[str, Any] | None = None
        for hook, rewrites in self._guards(name):
            current = arguments if rewritten is None else rewritten
            event = {"event": "pre_tool", "tool": name, "arguments": current}
            result = await self._run("pre_tool", hook, event, f"the {name} call went on")
            if result.exit_code is None and hook not in self._timed_out:
                # Said once: it refuses each call it guards while it runs out of time, and
                # a line per call would bury everything else.
                self._timed_out.append(hook)
                self._warn(
                    f"the pre_tool hook `{hook.command}` ran past its {hook.timeout_s:g} s; "
                    f"the {name} call was blocked, as is every call it guards that it does "
                    "not answer in time"
                )
            if result.exit_code is None or result.exit_code == 2:
                return _blocked(hook, result)
            reply = self._reply(hook, result, "arguments", "the call went on as the model made it")
            if not reply or not isinstance(reply.get("arguments"), dict):
                continue
            if rewrites:
                rewritten = reply["arguments"]
            elif reply["arguments"] != current and (hook, name) not in self._not_rewriting:
                # Said once: the hook may answer so for every call of the tool.
                self._not_rewriting.append((hook, name))
                self._warn(
                    f"the pre_tool hook `{hook.command}` rewrote a {name} call; its tools "
                    f"({', '.join(hook.tools)}) let it block {name} calls, as a deny rule's "
                    f"would, but rewrite only the tools they name, so its rewrites of {name} "
                    "calls are ignored"
                )
        return rewritten if rewritten is not None and rewritten != arguments else None

    async def after_tool(
        self, name: str, arguments: dict[str, Any], output: ToolOutput
    ) -> ToolOutput:
        instead = f"the {name} result went to the model as it was"
        for hook in (h for h in self._config.post_tool if _names(h, name)):
            event = {
                "event": "post_tool", "tool": name, "arguments": arguments,
                "content": output.content, "is_error": output.is_error,
            }  # fmt: skip
            result = await self._run("post_tool", hook, event, instead)
            reply = self._reply(hook, result, "content", instead)
            if reply and isinstance(reply.get("content"), str):
                output = dataclasses.replace(output, content=reply["content"])
        return output

    def _base(self) -> dict[str, Any]:
        return {"workspace": str(self._workspace)}
