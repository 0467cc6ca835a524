"""`lathe` with no subcommand: the interactive session.

One prompt stays open for the whole session. A sent message starts a turn (an
`Agent.run` task); while it runs, the prompt keeps accepting input: messages are queued
and sent, joined, as the next run; `y`/`a`/`n` answer an approval; Esc or Ctrl-C cancel
the run task (the executor kills a running command's process group on cancellation),
and the partial reply plus an interruption note enter the conversation. Output is
printed above the prompt (prompt_toolkit's `patch_stdout`), so nothing the agent prints
ever tears the line being typed.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from lathe.errors import UsageError
from lathe.events import ChildEvent, ModelRequestFinished
from lathe.types import AssistantMessage, ToolResultMessage, Usage
from lathe.ui.interactive.approval import parse_answer
from lathe.ui.recorder import RunTally
from lathe.ui.setup import RunOptions

_INTERRUPTED = "[interrupted by the user]"
# Lines of a proposed change shown when asked to approve it; `v` shows all of one longer.
_APPROVAL_DIFF_LINES = 80


def run_interactive(options: RunOptions) -> int:
    """Run the interactive session until the user leaves; the exit code (0, or 2 for a
    usage problem such as no model or no terminal)."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        sys.stderr.write(
            "lathe: the interactive session needs a terminal; use `lathe run TASK` in "
            "scripts and pipes\n"
        )
        return 2
    try:
        app = InteractiveApp(dataclasses.replace(options, ask_trust=_ask_trust))
    except UsageError as exc:
        sys.stderr.write(f"lathe: {exc}\n")
        return 2
    try:
        return asyncio.run(app.main())
    except UsageError as exc:
        sys.stderr.write(f"lathe: {exc}\n")
        return 2


def _ask_trust(settings: Any) -> bool:
    """Show what the project file asks of this machine; the user's yes or no (default no)."""
    import click

    click.echo(f"The project file {settings.file} sets what reaches outside the sandbox:")
    for line in settings.describe():
        click.echo(f"  {line}")
    return click.confirm("Trust these settings (asked again if they change)?", default=False)


class InteractiveApp:
    def __init__(self, options: RunOptions) -> None:
        from lathe.ui.interactive.links import Links
        from lathe.ui.setup import prepare

        self.options = options
        self._log: Any = None  # the structured log of the current session
        self.setup = prepare(dataclasses.replace(options, headless=False))
        self.workspace = self.setup.workspace
        self.resolved = self.setup.model
        self.links = Links(self.workspace, self._model_label(self.resolved), self.resolved.provider)
        self.queue: list[str] = []
        self.pending_approval: Asking | None = None
        self.spent = Spent()  # every reply since the session started, subagents' included
        # What the current (or last) run spent, shown against its budget when one is set:
        # each message's run has the budget `--max-cost` and the others give.
        self.run_tally = RunTally()  # its turns, and its own replies for its subagents' budget
        self.run_spent = Spent()  # its replies and its subagents' (what the budget counts)
        self._run_task: asyncio.Task[Any] | None = None
        self._drive_task: asyncio.Task[None] | None = None
        self._interrupt_requested = False
        self._interrupted_by = "Esc"  # what stopped the last interrupted turn
        self._switch_after_turn: Any = None  # a ResolvedModel /model named mid-turn or mid-job
        self._rebuild_after_turn = False  # a setting the prompt names changed mid-turn
        self._exit_armed = False
        self._leaving = False  # a stop signal came: end the session (see _leave)
        # The calls (ids) whose whole diff the person saw and approved: their results
        # do not show it again. Emptied as each run starts, so one an interrupt left
        # behind (the call never finished) cannot hide a diff of a later conversation.
        self._diffs_seen: set[str] = set()
        self.carried: list[str] = []  # text sent ahead of the next message (/skill)
        self.prompt_commands: dict[str, Any] = {}  # /NAME from .lathe/commands/NAME.md

    @property
    def window(self) -> int:
        """The model's window as lathe works within it: the server's, once it said a
        smaller one than the config's (`ContextManager` narrowed its budget)."""
        context = self.agent.deps.context if getattr(self, "agent", None) else None
        if context is not None:
            return int(context.budget.context_window)
        return int(self.resolved.context_window)

    @staticmethod
    def _model_label(resolved: Any) -> str:
        return str(resolved.name or resolved.model_id)

    def switch_model(self, name: str) -> tuple[str, str]:
        """Use model `name` from the next request on, or, while a turn or a job
        (/compact) runs, once it ends (`_step`: the running agent holds the conversation,
        and one built now would copy it and miss the rest of the turn); (old id, new id).
        Raises a LatheError for a name the config cannot resolve or a missing key."""
        from lathe.config import resolve_model
        from lathe.ui.setup import endpoint_for

        resolved = resolve_model(self.setup.loaded.config, name)
        endpoint_for(resolved)  # a missing key fails now, not after the turn
        if self.running:
            self._switch_after_turn = resolved
            return self.resolved.model_id, resolved.model_id
        return self._switch_to(resolved)

    def _switch_to(self, resolved: Any) -> tuple[str, str]:
        from lathe.llm.registry import make_provider
        from lathe.ui.setup import endpoint_for

        self.redactor.include(resolved.secrets())
        endpoint = endpoint_for(resolved)
        provider = self.redactor.provider(make_provider(endpoint))
        old = self.provider
        self.provider, self.resolved = provider, resolved
        # Rebuilt for the new model, the conversation kept: its profile (reply code,
        # write, limits, words, request extras), its prices and its window all follow.
        self.setup = dataclasses.replace(self.setup, model=resolved, endpoint=endpoint)
        self._rebuild_agent()
        self.status.model = resolved.model_id
        self.links.record_model_change(resolved.provider, self._model_label(resolved))
        asyncio.get_running_loop().create_task(old.aclose())
        return old.model, resolved.model_id

    def set_verify(self, command: str | None) -> None:
        """The session's verify command (None: none), for the agent now and every one
        built after it: they are built from `setup` (`/model` builds one), so the choice
        lives there, not only in the current agent's settings, which a switch dropped."""
        config = self.setup.loaded.config
        agent = config.agent.model_copy(update={"verify": command})
        loaded = dataclasses.replace(
            self.setup.loaded, config=config.model_copy(update={"agent": agent})
        )
        self.setup = dataclasses.replace(self.setup, loaded=loaded)
        # The system prompt names the check, and a run's finish handlers are built as it
        # starts: a running turn keeps its own, and the agent is built again after it.
        if self.running:
            self._rebuild_after_turn = True
        else:
            self._rebuild_agent()

    @property
    def verify_command(self) -> str | None:
        """The session's verify command (None: none), set with /verify: the running
        turn's own until it ends."""
        return self.setup.loaded.config.agent.verify

    def _rebuild_agent(self) -> None:
        """The agent built again from `setup` (a new model, a new check), the
        conversation and its spend kept."""
        seen = self.agent.deps.tool_context.file_state
        self.agent = self._agent_for(self.agent.messages, usage=self.agent.usage)
        # What the conversation read and wrote still counts: a whole-file write of a
        # file read before the rebuild was refused as never read.
        self.agent.deps.tool_context.file_state = seen

    def emit(self, event: Any) -> None:
        masking = getattr(self, "_masking", None)
        if masking is None:  # before the redactor is made: nothing secret yet
            self._show(event)
            return
        for masked in masking(event):
            self._session_log(self.redactor)(masked)
            self._show(masked)

    def _show(self, event: Any) -> None:
        """An event, its secrets masked, to the tallies, the screen and the links."""
        from lathe.events import ToolFinished

        self.run_tally(event)
        self.spent.add(event)
        self.run_spent.add(event)
        if isinstance(event, ToolFinished) and event.call_id in self._diffs_seen:
            self._diffs_seen.discard(event.call_id)
            if not event.is_error:  # the person approving saw this very diff already
                event = event.model_copy(update={"details": {**event.details, "diff": None}})
        self.renderer(event)
        self.links.observe(event)

    # life cycle

    async def main(self) -> int:
        from prompt_toolkit.patch_stdout import patch_stdout

        from lathe.llm.registry import make_provider
        from lathe.ui.interactive.render import Glyphs, Renderer, Status, make_console, unicode_ok

        self.status = Status(model=self.resolved.model_id, glyphs=Glyphs.pick(unicode_ok()))
        with patch_stdout(raw=True):
            self.console = make_console(sys.stdout)
            self.renderer = Renderer(self.console, self.status)
            self._banner()
            for notice in self.setup.notices:
                self.renderer.note(notice)
            from lathe.ui.interactive.commands import load_prompt_commands

            self.prompt_commands = load_prompt_commands(self)
            history = self.links.open_at_start(
                self.options.resume, self.options.continue_last, self.setup.continued
            )
            if (self.options.resume or self.options.continue_last) and not history:
                self.renderer.note("no earlier session in this workspace; this is a new one")
            self.provider = make_provider(self.setup.endpoint)
            self.agent = self._build_agent(history)
            self.prompt = self._build_prompt()
            # What start-up imported and loaded (a resumed session included) lives as
            # long as the process: the collector need not walk it again at every pass.
            gc.freeze()
            # The prompt is up: the user types while the warm-up imports the SDK.
            from lathe import warmup

            warmup.start()
            if history:
                from lathe.ui.interactive.links import show_last_exchanges

                self.status.last_prompt_tokens = context_tokens(history)
                self.renderer.note(f"session {self.links.session.id} · {len(history)} messages")
                if self.setup.continued is not None and (kept := self.setup.continued.said()):
                    self.renderer.note(kept)
                show_last_exchanges(self, self.links.session.messages())
            self._note_kept_approvals()
            self._leave_on_stop_signals()
            try:
                await self._input_loop()
            finally:
                await self._shutdown()
        return 0

    def _note_kept_approvals(self) -> None:
        """A resumed session's calls allowed always, said once: they had come back
        without a word, so `a` given to one file's write long ago let every write run."""
        from lathe.ui.interactive.approval import always_scope

        if kept := sorted(self.gate.remembered):
            scopes = ", ".join(always_scope(key, self.gate.policy.tools) for key in kept)
            self.renderer.note(
                f"allowed always, kept from before: {scopes} · /approval revoke N makes one "
                "ask again",
                "yellow",
            )

    def _leave_on_stop_signals(self) -> None:
        """SIGHUP (the terminal closed) and SIGTERM end the session as Ctrl-D does: a
        running turn is stopped and recorded, its checkpoint included, so `lathe undo`
        reverts that turn. Killed where it stood, lathe recorded neither."""
        loop = asyncio.get_running_loop()
        for number in (signal.SIGHUP, signal.SIGTERM):
            if signal.getsignal(number) is not signal.SIG_IGN:  # nohup keeps SIGHUP off
                loop.add_signal_handler(number, self._leave)

    def _leave(self) -> None:
        self._leaving = True
        if self.prompt.app.is_running:
            self.prompt.app.exit(exception=EOFError)

    def _build_agent(self, history: list[Any]) -> Any:
        from lathe.ui.safety import build_safety

        safety = build_safety(self.setup, self.links.session, approver=self, emit=self.emit)
        self.gate = safety.gate
        self.gate.on_remember = self.links.remember_approval
        self.sandboxed = safety.sandboxed
        from lathe.obs import Redactor

        secrets = [*self.resolved.secrets(), *self.setup.secrets()]
        self.redactor = Redactor.for_run(secrets, os.environ)
        self._masking = self.redactor.streamed()
        self.provider = self.redactor.provider(self.provider)
        from lathe.home import lathe_home
        from lathe.ui.children import LocalChildren

        LocalChildren(
            self.setup, self.provider, self.redactor, self.emit,
            parent_session_id=lambda: self.links.session.id,
            checkpoints=self.links.checkpoints,
            home=lathe_home(), run_tally=self.run_tally,
            approval=lambda: self.gate.policy.mode.value,  # /approval changes it
        ).register(safety.tools)  # fmt: skip
        self.safety, self.chain = safety, self._hooks(safety, self.redactor)
        return self._agent_for(history)

    def _agent_for(self, history: list[Any], usage: Any = None) -> Any:
        """An agent for the current model over `history`, with this session's safety and
        hooks (built once in `_build_agent`)."""
        from lathe.ui.recorder import files_before_conversation
        from lathe.ui.wiring import build_agent
        from lathe.words import load_words

        agent = build_agent(
            self.setup,
            self.provider,
            self.emit,
            executor=self.safety.executor,
            hooks=self.chain,
            messages=history,
            tools=self.safety.tools,
        )
        self.gate.words = load_words(self.resolved.profile.settings.prompts, self.workspace)
        agent.deps.settings.files_before_conversation = files_before_conversation(
            self.links.checkpoints, lambda: getattr(self.links.session, "id", None)
        )
        if usage is not None:
            agent.usage = usage
        return agent

    def _hooks(self, safety: Any, redactor: Any) -> Any:
        """The shared chain (`safety.hook_chain`), with the command output tap this face
        shows and the session and checkpoints it records to."""
        from lathe.ui.interactive.hooks import OutputTap
        from lathe.ui.safety import hook_chain

        return hook_chain(safety, redactor, taps=[OutputTap(safety.tools)], recorders=[self.links])

    def _build_prompt(self) -> Any:
        from lathe.ui.interactive.commands import command_table
        from lathe.ui.interactive.input import KeyActions, build_prompt

        prompt = build_prompt(
            self.workspace,
            message=self._prompt_message,
            toolbar=self._toolbar,
            commands=lambda: [
                *command_table(),
                *((f"/{c.name}", c.description) for c in self.prompt_commands.values()),
            ],
            actions=KeyActions(
                ctrl_c=self._on_ctrl_c,
                escape=lambda event: self.interrupt("Esc"),
                interrupt_active=lambda: self.running,
            ),
        )

        def _typed(_buffer: Any) -> None:
            self._exit_armed = False

        prompt.default_buffer.on_text_changed += _typed
        return prompt

    def _banner(self) -> None:
        from lathe import __version__

        self.renderer.note(
            f"lathe {__version__} · {self.resolved.model_id} · {self.workspace}", "bold"
        )
        self.renderer.note(
            "Enter sends · Alt-Enter newline · @file attaches · /help · "
            "Esc interrupts · Ctrl-D exits"
        )

    async def _input_loop(self) -> None:
        from lathe.ui.interactive.commands import dispatch

        while True:
            if self._leaving:
                return
            try:
                text = await self.prompt.prompt_async()
            except EOFError:
                return
            except KeyboardInterrupt:  # only if a binding lets one through
                continue
            self._exit_armed = False
            if self.pending_approval is not None:
                self._answer_approval(text)
                continue
            if not text.strip():
                continue
            if text.startswith("/") and not text.startswith("//"):
                if not await dispatch(self, text.strip()):
                    return
                continue
            self.submit(text.removeprefix("/") if text.startswith("//") else text)

    def _session_log(self, redactor: Any) -> Any:
        """The structured log of the current session (it changes on /clear, /resume)."""
        from lathe.obs import SessionLog, log_path

        session = self.links.session
        if session is None:
            return lambda event: None
        if self._log is None or self._log.session_id != session.id:
            if self._log is not None:
                self._log.close()
            self._log = SessionLog(log_path(session.path), session.id, redactor)
        return self._log

    async def _shutdown(self) -> None:
        if self._drive_task is not None and not self._drive_task.done():
            self.queue.clear()
            self.interrupt()
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._drive_task), timeout=10)
        session = self.links.session
        if session is not None and session.entries:  # an empty one is removed on close
            self.renderer.note(self._resume_hint(session.id), "")
        await self.links.close()
        if self._log is not None:
            self._log.close()
        safety = getattr(self, "safety", None)  # unset when the agent was never built
        if safety is not None:
            await safety.aclose()
        await self.provider.aclose()

    def _resume_hint(self, session_id: str) -> str:
        """How to come back to this session: the command, with `-C` when the workspace
        is not the directory lathe was started in."""
        import shlex
        from pathlib import Path

        where = (
            ""
            if self.workspace == Path.cwd().resolve()
            else f" -C {shlex.quote(str(self.workspace))}"
        )
        return f"session {session_id} · continue it with: lathe{where} --resume {session_id}"

    # turns

    @property
    def running(self) -> bool:
        return self._drive_task is not None and not self._drive_task.done()

    def submit(self, text: str) -> None:
        if self.running:
            self.queue.append(text)
            self.status.queued = [*self.queue]
            return
        self._drive_task = asyncio.create_task(self._drive(text))

    def start_job(self, job: Callable[[], Awaitable[bool]], phase: str) -> None:
        """Run `job` (a slash command's slow work, e.g. /compact's model call) the way a
        turn runs: the prompt stays live, Esc or Ctrl-C stops it, and messages sent
        meanwhile are queued for after it. `job` returns whether it finished its work;
        stopped, it must have changed nothing."""
        self._drive_task = asyncio.create_task(self._drive(None, job=(job, phase)))

    async def _job(self, job: Callable[[], Awaitable[bool]], phase: str) -> None:
        self.status.begin()
        self.status.set_phase(phase)
        self._run_task = asyncio.create_task(job())
        try:
            await self._run_task
        except asyncio.CancelledError:
            if not self._interrupt_requested:
                raise
            self.renderer.note(f"{phase} stopped: nothing changed", "yellow")
        except Exception as exc:  # the session must survive it; say what failed
            self.renderer.error(f"{phase} failed: {_said(exc)}")
        finally:
            self._run_task = None
            self.status.end()

    async def _drive(
        self, text: str | None, *, job: tuple[Callable[[], Awaitable[bool]], str] | None = None
    ) -> None:
        message: str | None = text
        try:
            if job is not None:
                await self._step(self._job(*job))
                message = self._take_queue()
            while message is not None:
                await self._step(self._turn(message))
                message = self._take_queue()
        except Exception as exc:  # past a turn's own handling (recording an interrupt):
            self.renderer.error(f"the turn failed: {_said(exc)}")  # said, never a silent end

    async def _step(self, work: Awaitable[None]) -> None:
        """A turn or a job; then the model a `/model` named meanwhile takes over, before
        anything queued is sent (only a turn's end had applied it: after /compact the
        next message still went to the old model)."""
        try:
            await work
        finally:
            rebuild, self._rebuild_after_turn = self._rebuild_after_turn, False
            if self._switch_after_turn is not None:  # builds the agent again itself
                resolved, self._switch_after_turn = self._switch_after_turn, None
                self._switch_to(resolved)
            elif rebuild:
                self._rebuild_agent()

    def _take_queue(self) -> str | None:
        """The messages queued during a turn or a job, as one, or None; the queue
        emptied. After an interrupt they go back into the input line instead."""
        if self._interrupt_requested:
            self._interrupt_requested = False
            if self.queue:  # the cursor after it: what is typed next goes on its end
                from prompt_toolkit.document import Document

                # Before the draft being typed, which stays (it had been replaced).
                draft = self.prompt.default_buffer.text
                text = "\n".join([*self.queue, *([draft] if draft.strip() else [])])
                self.prompt.default_buffer.document = Document(text, len(text))
            message = None
        else:
            message = "\n\n".join(self.queue) if self.queue else None
        self.queue.clear()
        self.status.queued = []
        return message

    async def _turn(self, text: str) -> None:
        from lathe.ui.interactive.input import expand_references

        message, attached, problems = expand_references(text, self.workspace, self.gate.policy)
        if self.carried:
            message = "\n\n".join([*self.carried, message])
            self.carried.clear()
        self.renderer.user_echo(text)
        for problem in problems:
            self.renderer.note(problem, "yellow")
        if attached:
            self.renderer.note("attached: " + ", ".join(attached))
        with contextlib.ExitStack() as held:
            if self.gate.policy.mode.value != "read-only":
                try:
                    held.enter_context(self.workspace_lock())
                except UsageError as exc:  # another run holds the workspace
                    self.renderer.error(f"not run: {exc}")
                    return
            await self._run(message)

    def workspace_lock(self) -> Any:
        """Held while this session changes the workspace (a run, /undo); refused while
        another lathe process holds it."""
        from lathe.workspace_lock import hold_workspace

        return hold_workspace(
            self.workspace,
            doing="lathe session",
            when_busy="then try again (Up recalls what you typed)",
        )

    async def _run(self, message: str) -> None:
        """One turn, from the status line's start to its end. Everything it does is inside
        the handling that says what failed and ends it: the run's start is written to
        the session too, and a write that failed there (a full disk) had killed the task
        unseen, the status line "thinking" for ever and Esc stopping nothing."""
        from lathe.events import RunStarted

        try:
            self.status.begin()
            session = self.links.session
            self.run_spent = Spent()
            self.run_tally.reset()
            self._diffs_seen.clear()
            self.emit(
                RunStarted(
                    task=message,
                    model=self.resolved.model_id,
                    workspace=str(self.workspace),
                    session_id=session.id if session is not None else None,
                )
            )
            if session is not None:  # for `lathe serve`'s resume, as `lathe run` records them
                from lathe.ui.recorder import record_run_start

                record_run_start(
                    session,
                    self.setup,
                    approval=self.gate.policy.mode.value,
                    verify=self.agent.deps.settings.verify_command,
                    redactor=self.redactor,  # it knows the keys of models switched from too
                )
            for note in self.links.take_notes():  # the model reads them with the message
                self.agent.append(note)
            self._run_task = asyncio.create_task(self.agent.run(message))
            await self._run_task
        except asyncio.CancelledError:
            if not self._interrupt_requested:
                raise
            self._record_interruption()
        except Exception as exc:  # the session must survive a failing turn; say what failed
            self.renderer.error(f"the turn failed: {_said(exc)}")
        finally:
            self._run_task = None
            self.status.end()

    def interrupt(self, by: str = "the session ending") -> None:
        """Stop the running turn; `by` is what stopped it, for the records."""
        if self._run_task is not None and not self._run_task.done():
            self._interrupt_requested = True
            self._interrupted_by = by
            self._run_task.cancel()

    def _record_interruption(self) -> None:
        """Keep the conversation valid and truthful after a cancelled run: every tool
        call gets a result, and the partial reply is kept with a note."""
        agent, renderer = self.agent, self.renderer
        if (masking := getattr(self, "_masking", None)) is not None:
            for held in masking.flush():  # the reply's end, held back as a secret's start
                self._show(held)
        partial = renderer.partial_reply
        renderer.markdown(renderer.stream.flush())
        renderer.partial_reply = ""
        last_call_message = next(
            (
                m
                for m in reversed(agent.messages)
                if isinstance(m, AssistantMessage) and m.tool_calls
            ),
            None,
        )
        if last_call_message is not None:
            answered = {m.tool_call_id for m in agent.messages if isinstance(m, ToolResultMessage)}
            for call in last_call_message.tool_calls:
                if call.id not in answered:
                    agent.append(
                        ToolResultMessage(
                            tool_call_id=call.id,
                            name=call.name,
                            content="interrupted: the user stopped the run before this tool "
                            "finished; check the workspace state before repeating it",
                            is_error=True,
                        )
                    )
        text = f"{partial.rstrip()}\n\n{_INTERRUPTED}" if partial.strip() else _INTERRUPTED
        agent.append(AssistantMessage(text=text, model=self.provider.model))
        reason = f"interrupted by the user ({self._interrupted_by})"
        self.links.record_interruption(self.run_tally, reason)
        if self._log is not None:  # the structured log `lathe stats` reads ends the run too
            self._log.record_interrupt(reason)
        self.renderer.note("interrupted · the prompt is yours", "yellow")

    # approvals: the app is the terminal's Approver

    async def ask(self, request: Any) -> Any:
        """`lathe.policy.gate.Approver`: show the request, wait for the answer typed at
        the prompt (see `_answer_approval`)."""
        from lathe.exec.terminal import visible_name
        from lathe.tools.base import CURRENT_CALL
        from lathe.ui.interactive.approval import always_scope, arguments_text

        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        tools = self.gate.policy.tools
        tool = tools.get(request.tool)
        command = tool.shell_command(request.arguments) if tool else None
        asking = Asking(future, always=always_scope(request.key, tools, command))
        title = (
            "run command"
            if command is not None
            else f"{request.tool} {visible_name(request.preview)}"
        )
        self.renderer.note(f"approve: {title.strip()}  ({request.reason})", "bold yellow")
        if command is not None:
            self.renderer.note(f"    $ {request.preview}", "bold")
        elif diff := tool.preview_change(request.arguments, self.workspace) if tool else None:
            cut = self.renderer.diff(
                diff, limit=_APPROVAL_DIFF_LINES, left_out=" · answer v to see them all"
            )
            asking.view, asking.is_diff, asking.shown_whole = diff, True, not cut
        elif tool is None or not tool.read_only_call(request.arguments):
            # No diff (a binary file, a server's tool): what the call carries, not a
            # title alone, is what the person approves.
            self.renderer.note("    no diff to show; the call:", "dim")
            view = arguments_text(request.arguments)
            cut = self.renderer.diff(
                view, limit=_APPROVAL_DIFF_LINES, left_out=" · answer v to see them all", plain=True
            )
            asking.view, asking.shown_whole = view, not cut
        self.pending_approval = asking
        running = self.status.phase  # the call's label: it runs once approved
        self.status.set_phase("waiting for approval")
        try:
            answer = await future
        finally:
            self.pending_approval = None
            self.status.set_phase(running)
        if asking.is_diff and asking.shown_whole and answer.choice != "deny":
            # By call id: a tool's name had hidden the diff of its next call when this
            # one never finished (an interrupt at the approval).
            self._diffs_seen.add(CURRENT_CALL.get())
        return answer

    def _answer_approval(self, text: str) -> None:
        from lathe.policy.gate import ApprovalAnswer

        asking = self.pending_approval
        assert asking is not None
        if text.strip().lower() in ("v", "view"):  # never a message: it was queued as one
            if asking.view is None:
                self.renderer.note("all of it is shown above; answer y, a or n [reason]", "yellow")
                return
            self.renderer.diff(asking.view, limit=None, plain=not asking.is_diff)
            asking.shown_whole = True
            return
        future = asking.future
        answer = parse_answer(text)
        if answer is None and text.strip().startswith("/"):  # not a message for the model
            self.renderer.note(
                f"answer the approval first (y, a or n [reason]), then type {_fit(text, 30)} again",
                "yellow",
            )
            return
        if answer is None:
            if text.strip():  # a message, not an answer: it waits for the turn, as one typed
                self.submit(text)  # while the model writes does (it was thrown away)
                self.renderer.note(f"queued for after this turn: {_fit(text, 60)}", "cyan")
            self.renderer.note("answer y (once), a (always) or n [reason] (deny)", "yellow")
            return
        choice, reason = answer
        label = {"once": "allowed once", "always": f"allowed always: {asking.always}"}.get(
            choice, "denied" + (f": {reason}" if reason else "")
        )
        self.renderer.note(f"  {label}", "red" if choice == "deny" else "green")
        if not future.done():
            future.set_result(ApprovalAnswer(choice, reason))  # type: ignore[arg-type]

    # keys and screen

    def _on_ctrl_c(self, event: Any) -> None:
        buffer = event.current_buffer
        if self.running:
            self.interrupt("Ctrl-C")
        elif buffer.text:
            buffer.reset()
        elif self._exit_armed:
            event.app.exit(exception=EOFError())
        else:
            self._exit_armed = True
            self.renderer.note("press Ctrl-C again (or Ctrl-D) to exit")

    def _prompt_message(self) -> Any:
        width = max(self._columns() - 2, 20)
        parts: list[tuple[str, str]] = []
        if self.status.running:
            for line in self.renderer.live_tail():
                parts.append(("", _fit(line, width) + "\n"))
            for queued in self.queue:
                parts.append(("fg:ansicyan", _fit(f"queued: {queued}", width) + "\n"))
            parts.append(("fg:ansiyellow", _fit(self.status.line(), width) + "\n"))
        if self.pending_approval is not None:
            asking = self.pending_approval
            whole = ""
            if asking.view and not asking.shown_whole:
                whole = " · v whole change" if asking.is_diff else " · v whole call"
            parts.append(
                ("bold", f"allow? y once · a always: {asking.always} · n [reason] deny{whole}\n")
            )
        parts.append(("bold fg:ansicyan", "> "))
        return parts

    def _toolbar(self) -> Any:
        used = self.status.last_prompt_tokens
        percent = min(100, round(100 * used / self.window)) if self.window else 0
        text = (
            f" {self.provider.model} · ctx {percent}% of {self.window // 1000}k · "
            f"{self.usage_text()}{self._budget_text()} · {self.gate.policy.mode.value}"
            + (" · sandboxed" if self.sandboxed else "")
        )
        if self.verify_command:
            text += " · verify on"
        return _fit(text, self._columns() - 1)

    def usage_text(self) -> str:
        """The session's spend for the footer: dollars, "$0.12 + unpriced" when some
        replies had no prices, or tokens when none had."""
        spent = self.spent
        cost = spent.cost(priced_now=self.resolved.prices.known)
        if cost is not None:
            return f"${cost:.4f}"
        if spent.priced:
            return f"${spent.cost_usd:.4f} + unpriced"
        return f"{spent.usage.total:,} tokens"

    def _budget_text(self) -> str:
        """What the run spent against its budget, like " · run: $0.12 of $0.50 · 12k of
        50k tokens"; empty when the run has no budget."""
        from lathe.ui.budgets import spend_text

        budget = self.agent.deps.settings.budget
        if budget is None:
            return ""
        run = self.run_spent
        cost = run.cost(priced_now=self.resolved.prices.known)
        elapsed = time.monotonic() - self.status.started if self.status.running else None
        spent = spend_text(budget, run.usage, cost, elapsed)
        return f" · run: {spent}" if spent else ""

    def cost_line(self) -> str:
        spent = self.spent
        cost = spent.cost(priced_now=self.resolved.prices.known)
        if cost is not None:
            return f"cost: ${cost:.4f} (catalog list prices; an estimate)"
        unpriced = ", ".join(sorted(spent.unpriced)) or self.resolved.model_id
        missing = f"no prices for {unpriced} in the model catalog"
        if not spent.priced:
            return f"cost: unknown: {missing}"
        return (
            f"cost: at least ${spent.cost_usd:.4f} (catalog list prices; an estimate): "
            f"{missing}, so those replies are not counted"
        )

    def _columns(self) -> int:
        try:
            return int(self.prompt.app.output.get_size().columns)
        except Exception:  # before the prompt exists, or no terminal size
            return 80


@dataclasses.dataclass
class Asking:
    """An approval waiting for the person's answer."""

    future: asyncio.Future[Any]  # set to the ApprovalAnswer
    always: str = ""  # what answering `a` allows, in words (`always_scope`)
    view: str | None = None  # what `v` shows whole: the change's diff, or the call
    is_diff: bool = False  # `view` is the change as its tool predicts it
    shown_whole: bool = False  # every line of `view` has been on the screen (`v`)


@dataclasses.dataclass
class Spent:
    """What replies used and cost, a subagent's (wrapped in `ChildEvent`, at any depth)
    as the parent's own: what the run line and `run_finished` count. A reply without
    prices names its model in `unpriced` and adds nothing to `cost_usd`: unknown, not
    free. Call `add` with each event."""

    usage: Usage = dataclasses.field(default_factory=Usage)
    cost_usd: float = 0.0  # the priced replies'
    priced: bool = False  # a reply had prices
    unpriced: set[str] = dataclasses.field(default_factory=set)

    def add(self, event: Any) -> None:
        while isinstance(event, ChildEvent):
            event = event.event
        if not isinstance(event, ModelRequestFinished):
            return
        self.usage = self.usage + event.usage
        if event.cost_usd is None:
            self.unpriced.add(event.model)
        else:
            self.cost_usd += event.cost_usd
            self.priced = True

    def cost(self, *, priced_now: bool) -> float | None:
        """The whole cost, or None when part of it is unknown; with no reply yet, known
        when the model in use has prices (`priced_now`)."""
        if self.unpriced or not (self.priced or priced_now):
            return None
        return self.cost_usd


def context_tokens(history: list[Any]) -> int:
    """What a resumed conversation holds, for the footer before its first request: the
    last reply's reported usage, else lathe's estimate."""
    from lathe.agent.context import conversation_tokens

    for message in reversed(history):
        if isinstance(message, AssistantMessage) and message.usage.input_tokens:
            usage = message.usage
            return usage.input_tokens + usage.cache_read_tokens + usage.output_tokens
    return conversation_tokens(history)


def _said(exc: Exception) -> str:
    """What failed, for a line of the screen: lathe's own words for its errors (they
    name the problem and what to do), the exception's type with anything else."""
    from lathe.errors import LatheError

    return str(exc) if isinstance(exc, LatheError) else f"{type(exc).__name__}: {exc}"


def _fit(text: str, width: int) -> str:
    text = text.replace("\t", "    ")
    return text if len(text) <= width else text[: max(width - 3, 1)] + "..."
