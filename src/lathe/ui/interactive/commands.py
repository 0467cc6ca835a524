"""Slash commands of the interactive session.

Each command is an async function `(app, argument) -> bool`; False ends the session.
A command whose usage names no argument refuses any it is given, before it runs: `/undo
5` had reverted the newest turn, not "checkpoint 5".
Commands that change the conversation or the workspace refuse while a turn runs (the
user interrupts first, with Esc), because the running turn holds both.

A name that is not built in may be a prompt command (`lathe.prompt_commands`): its text,
with the arguments, is sent as a message. A built-in of the same name wins, and the
session says so when it starts (`load_prompt_commands`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lathe.errors import LatheError
from lathe.types import AssistantMessage, Usage

if TYPE_CHECKING:
    from pathlib import Path

    from lathe.prompt_commands import PromptCommand
    from lathe.session import Session, SessionStore
    from lathe.ui.interactive.app import InteractiveApp

PromptCommands = dict[str, "PromptCommand"]

Handler = Callable[["InteractiveApp", str], Awaitable[bool]]


@dataclass(frozen=True)
class Command:
    name: str
    usage: str
    help: str
    handler: Handler
    idle_only: bool = False  # refuses while a turn runs
    alone: str = ""  # what the refusal of an argument says instead of "type NAME alone"

    @property
    def takes_argument(self) -> bool:
        return self.usage != self.name


_COMMANDS: dict[str, Command] = {}


def _command(name: str, usage: str, help_text: str, *, idle_only: bool = False, alone: str = ""):
    def register(handler: Handler) -> Handler:
        _COMMANDS[name] = Command(name, usage, help_text, handler, idle_only, alone)
        return handler

    return register


def command_table() -> list[tuple[str, str]]:
    return [(c.name, c.help) for c in _COMMANDS.values()]


def load_prompt_commands(app: InteractiveApp) -> PromptCommands:
    """The workspace's prompt commands but those a built-in shadows, each of which (and
    each file skipped) is told to the user once."""
    from lathe.prompt_commands import discover_commands

    catalog = discover_commands(app.workspace)
    for problem in catalog.problems:
        app.renderer.note(problem, "yellow")
    for name in [n for n in catalog.commands if f"/{n.lower()}" in _COMMANDS]:
        shadowed = catalog.commands.pop(name)
        app.renderer.note(
            f"the prompt command {shadowed.path} is not used: /{name.lower()} is built in "
            "(rename the file to use it)",
            "yellow",
        )
    return catalog.commands


async def dispatch(app: InteractiveApp, line: str) -> bool:
    name, _, argument = line.partition(" ")
    command = _COMMANDS.get(name.lower())
    prompt_command = app.prompt_commands.get(name[1:])
    if command is None and prompt_command is not None:
        app.submit(prompt_command.expand(argument))
        return True
    if command is None:
        names = [*_COMMANDS, *(f"/{n}" for n in app.prompt_commands)]
        close = [c for c in names if c.startswith(name.lower())]
        hint = f"; did you mean {', '.join(close)}?" if close else "; /help lists them"
        app.renderer.error(f"unknown command {name}{hint}")
        return True
    if argument.strip() and not command.takes_argument:
        alone = command.alone or f"type {command.name} alone"
        app.renderer.error(f"{command.name} takes no arguments, not {argument.strip()!r}: {alone}")
        return True
    if command.idle_only and app.running:
        app.renderer.error(f"{name} waits for the turn to finish; press Esc to interrupt it first")
        return True
    return await command.handler(app, argument.strip())


@_command("/help", "/help", "list the commands and keys")
async def _help(app: InteractiveApp, argument: str) -> bool:
    width = max(len(c.usage) for c in _COMMANDS.values())
    for command in _COMMANDS.values():
        app.renderer.note(f"  {command.usage.ljust(width)}  {command.help}", "")
    if app.prompt_commands:
        app.renderer.note("  prompt commands (.lathe/commands/NAME.md; $ARGUMENTS = ARGS):", "")
    for prompt_command in app.prompt_commands.values():
        usage = f"/{prompt_command.name} [ARGS]"
        app.renderer.note(f"  {usage.ljust(width)}  {prompt_command.description}".rstrip(), "")
    app.renderer.note(
        "  keys: Enter send · Alt-Enter/Ctrl-J newline · Ctrl-R history search · Tab complete"
        " · @path attach a file · Esc/Ctrl-C interrupt · Ctrl-Z suspend"
        " · Ctrl-C twice or Ctrl-D exit"
    )
    return True


@_command("/model", "/model [NAME]", "show or switch the model")
async def _model(app: InteractiveApp, argument: str) -> bool:
    if not argument:
        resolved = app.resolved
        app.renderer.note(
            f"model: {resolved.model_id} ({resolved.provider}, {resolved.shown_url}, "
            f"window {app.window:,})",
            "",
        )
        names = sorted(app.setup.loaded.config.models)
        app.renderer.note("catalog: " + ", ".join(names), "")
        return True
    if len(argument.split()) > 1:  # a model name is one word: the rest was a slip
        app.renderer.error(f"/model takes one model name, not {argument!r}: /model NAME")
        return True
    try:
        old, new = app.switch_model(argument)
    except LatheError as exc:
        app.renderer.error(str(exc))
        return True
    when = (
        "from the next message: what runs now keeps its model"
        if app.running
        else "from the next request"
    )
    app.renderer.note(f"model: {old} {app.renderer.glyphs.arrow} {new} ({when})", "green")
    return True


@_command(
    "/approval",
    "/approval [MODE|revoke N]",
    "show the mode and the always-allowed calls, set the mode, or revoke one",
)
async def _approval(app: InteractiveApp, argument: str) -> bool:
    from lathe.policy.gate import Mode

    policy = app.gate.policy
    modes = ", ".join(m.value for m in Mode)
    if not argument:
        app.renderer.note(f"approval: {policy.mode.value}  (modes: {modes})", "")
        _list_always(app)
        return True
    word, _, rest = argument.partition(" ")
    if word == "revoke":
        _revoke(app, rest.strip())
        return True
    try:
        policy.mode = Mode.parse(argument)
    except LatheError as exc:
        app.renderer.error(str(exc))
        return True
    sandbox = "commands run in the sandbox" if app.sandboxed else "commands run unsandboxed"
    app.renderer.note(f"approval: {policy.mode.value} ({sandbox})", "green")
    return True


def _list_always(app: InteractiveApp) -> None:
    """The calls answered "a" (always). Their one scope is this session: the session
    file keeps them for --resume and /fork; /clear starts without them."""
    always = sorted(app.gate.remembered)
    if not always:
        app.renderer.note("no call is allowed always (answer a at an approval to add one)")
        return
    app.renderer.note("allowed always, in this session (kept on --resume and /fork):", "")
    for number, key in enumerate(always, 1):
        app.renderer.note(f"  {number}  {key}", "")
    app.renderer.note("/approval revoke N (or the rule itself) makes it ask again")


def _revoke(app: InteractiveApp, which: str) -> None:
    always = sorted(app.gate.remembered)
    if which.isdigit() and 1 <= int(which) <= len(always):
        key = always[int(which) - 1]
    elif which in app.gate.remembered:
        key = which
    else:
        listed = f"1 to {len(always)}" if always else "none: no call is allowed always"
        app.renderer.error(f"no always-allowed call {which!r}; /approval lists them ({listed})")
        return
    app.gate.remembered.discard(key)
    app.links.revoke_approval(key)
    app.renderer.note(f"revoked: {key}; it asks again", "green")


@_command("/skill", "/skill [NAME [TEXT]]", "list the skills, or send one with your next message")
async def _skill(app: InteractiveApp, argument: str) -> bool:
    from lathe.tools.skill import skill_catalog

    catalog = skill_catalog(app.safety.tools)
    if catalog is None:
        app.renderer.note("no skills here (folders with a SKILL.md in .lathe/skills/)")
        return True
    name, _, text = argument.partition(" ")
    if not name:
        for skill in catalog.skills:
            app.renderer.note(f"  {skill.name}  {skill.description}", "")
        return True
    skill = catalog.get(name)
    if skill is None:
        app.renderer.error(f"no skill {name!r}; the skills are: {', '.join(catalog.names())}")
        return True
    try:
        body = skill.body()
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        app.renderer.error(f"the skill {skill.path} cannot be read: {exc}")
        return True
    app.carried.append(f"Use the skill {skill.name} (folder: {skill.folder}):\n\n{body}")
    if text.strip():
        app.submit(text.strip())
    else:
        app.renderer.note(f"the skill {skill.name} goes with your next message", "green")
    return True


@_command("/compact", "/compact", "summarise the older conversation now", idle_only=True)
async def _compact(app: InteractiveApp, argument: str) -> bool:
    context = app.agent.deps.context
    if context is None:
        app.renderer.error("this agent has no context manager; nothing to compact")
        return True

    async def compact() -> bool:
        done = await context.compact(app.agent.messages, reason="user")
        if not done and context.too_short:  # else a notice said why it kept it as it was
            app.renderer.note("nothing to compact yet: the conversation is still short")
        return done

    # As a job, not awaited here: the model call may take minutes, and the prompt (and
    # with it Esc) is not live while a command is awaited.
    app.start_job(compact, "compacting")
    return True


@_command("/cost", "/cost", "tokens (and cost, where prices are known) so far")
async def _cost(app: InteractiveApp, argument: str) -> bool:
    usage = app.spent.usage  # the subagents' replies too, as the run line counts them
    app.renderer.note(
        f"tokens: {usage.input_tokens:,} in · {usage.output_tokens:,} out · "
        f"{usage.cache_read_tokens:,} cached read · {usage.cache_write_tokens:,} cache write",
        "",
    )
    app.renderer.note(app.cost_line(), "")
    session = app.links.session
    if session is not None:
        # The subagents' sessions are read in a thread; this one's, which a running turn
        # appends to, here.
        children = await asyncio.to_thread(_children, app.links.store, session.id, app.workspace)
        total = sum((_usage(each) for each in [session, *children]), Usage())
        app.renderer.note(
            f"this session so far: {total.input_tokens:,} in · {total.output_tokens:,} out "
            "(every run of it, resumed ones and subagents included)",
            "",
        )
    return True


def _children(store: SessionStore, session_id: str, workspace: Path) -> list[Session]:
    """The sessions of the subagents `session_id` started, at any depth; one that cannot
    be read is left out."""
    started: dict[str, list[str]] = {}
    for summary in store.list(workspace):
        if summary.parent_session and summary.parent_call:  # not a fork
            started.setdefault(summary.parent_session, []).append(summary.id)
    found: list[Session] = []
    waiting = list(started.get(session_id, []))
    while waiting:
        child_id = waiting.pop()
        waiting.extend(started.get(child_id, []))
        with contextlib.suppress(LatheError, OSError):
            found.append(store.open(child_id, readonly=True))
    return found


def _usage(session: Session) -> Usage:
    messages = session.messages()
    return sum((m.usage for m in messages if isinstance(m, AssistantMessage)), Usage())


@_command("/verify", "/verify [CMD|off]", "show, set or turn off the verify command")
async def _verify(app: InteractiveApp, argument: str) -> bool:
    if not argument:
        shown = app.verify_command or "none (lathe reports unverified)"
        app.renderer.note(f"verify: {shown}", "")
        return True
    app.set_verify(None if argument == "off" else argument)
    when = "from the next message: this turn ends as it began" if app.running else ""
    said = "off" if app.verify_command is None else "checked after the model says it is done"
    shown = app.verify_command or "off"
    app.renderer.note(f"verify: {shown}" + (f" ({when})" if when else f" ({said})"), "green")
    return True


@_command("/clear", "/clear", "start a new conversation (and session)", idle_only=True)
async def _clear(app: InteractiveApp, argument: str) -> bool:
    app.agent.messages.clear()
    app.status.last_prompt_tokens = 0
    await app.links.clear(app)
    app.renderer.note("new conversation", "green")
    return True


@_command(
    "/undo",
    "/undo",
    "revert the files the last turn changed",
    idle_only=True,
    alone="/undo alone reverts the newest agent turn, and again the one before; "
    "`lathe checkpoints restore N` goes back to checkpoint N",
)
async def _undo(app: InteractiveApp, argument: str) -> bool:
    await app.links.undo(app)
    return True


@_command("/checkpoints", "/checkpoints", "list the workspace checkpoints")
async def _checkpoints(app: InteractiveApp, argument: str) -> bool:
    await app.links.list_checkpoints(app)
    return True


@_command("/sessions", "/sessions", "list this workspace's sessions")
async def _sessions(app: InteractiveApp, argument: str) -> bool:
    await app.links.list_sessions(app)
    return True


@_command("/agents", "/agents [ID]", "list this session's subagents, or show one's transcript")
async def _agents(app: InteractiveApp, argument: str) -> bool:
    await app.links.show_subagents(app, argument.strip() or None)
    return True


@_command(
    "/resume", "/resume [ID]", "continue another session (default: the latest)", idle_only=True
)
async def _resume(app: InteractiveApp, argument: str) -> bool:
    await app.links.resume(app, argument or None)
    return True


@_command("/fork", "/fork", "copy this session into a new one and continue there", idle_only=True)
async def _fork(app: InteractiveApp, argument: str) -> bool:
    await app.links.fork(app)
    return True


@_command("/memory", "/memory", "list the instruction files read, then the memory files")
async def _memory(app: InteractiveApp, argument: str) -> bool:
    from lathe.hooks.base import HookChain
    from lathe.instructions import NestedInstructions
    from lathe.memory import MemoryStore
    from lathe.ui.memory_cmd import report

    settings = app.setup.loaded.config.memory
    agent = getattr(app, "agent", None)
    hooks = agent.deps.hooks if agent is not None else None
    chain = hooks.hooks if isinstance(hooks, HookChain) else ()
    nested = next((h for h in chain if isinstance(h, NestedInstructions)), None)
    files = nested.instructions.loaded if nested is not None else []
    store = MemoryStore(app.setup.workspace, settings.memory_max_bytes)
    for line in report(files, store, settings):
        app.renderer.note(line, "")
    return True


@_command("/exit", "/exit", "leave (Ctrl-D does the same)")
async def _exit(app: InteractiveApp, argument: str) -> bool:
    return False
