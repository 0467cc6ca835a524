"""Running the task tool's children for a face: `LocalChildren` is the `ChildRunner`
(`subagents/task_tool.py`) every face builds for its run.

A child gets the parent's provider, configuration and rules, never a looser approval (it
has no one to ask, so what would ask is refused), a turn limit of its own
(`agents.max_turns`), no verify command, the parent's MCP tools its profile allows (over
the parent's connections: it starts no server, `subagents/parent_tools.py`), and its own
session, linked to the parent's session and call. A child that may change files works in
its own worktree (`subagents/worktree.py`) behind its own sandbox bound to that folder;
when it ends, its changes come back as one patch, applied to the parent's workspace as
one checkpoint when it applies whole or merges three ways with what the workspace has
since, kept as a file and reported when it does not. The `explore` profile (and any
profile that changes nothing, `subagents/profiles.py`) runs in the parent's workspace
with the read-only tools and no worktree.
Children run at once up to `agents.max_parallel`; nesting stops at `agents.max_depth`.
Its events reach the parent's stream wrapped in `ChildEvent`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lathe.agent.budget import RunBudget, Spend, tokens_of
from lathe.config.loader import Origin
from lathe.config.schema import AgentsConfig
from lathe.errors import ToolError
from lathe.events import (
    AgentEvent,
    ChildEvent,
    ModelRequestFinished,
    Notice,
    RunFinished,
    RunStarted,
    RunStatus,
)
from lathe.subagents.parent_tools import (
    Allowed,
    lacking_mcp_tools,
    register_shared,
    shared_mcp_tools,
)
from lathe.subagents.profiles import AgentProfile, Profiles, find_profiles, stricter_approval
from lathe.subagents.result import (
    ChildResult,
    ChildStatus,
    Merge,
    capped_answer,
    child_status,
    left_behind,
    one_line,
)
from lathe.subagents.task_tool import ChildRequest, TaskTool
from lathe.subagents.worktree import (
    Changes,
    Worktree,
    apply_command,
    apply_patch,
    child_changes,
    create_worktree,
    keep_for_user,
    remove_worktree,
)
from lathe.tools.base import Tool, ToolRegistry
from lathe.types import Usage
from lathe.ui.recorder import RunTally
from lathe.ui.setup import RunSetup


@dataclass
class _Family:
    """What every child of one user's run shares, at any depth: the places and the
    merging lock (merges and worktree creations one at a time), the slots
    (`agents.max_parallel` children at once in the whole tree), what they spent in
    the current run (`agents.max_total_tokens`, the run's budgets), the workspace the sessions and
    patches are filed under, and the profiles found there (looked for once the task
    tool is offered, not at the start of every run)."""

    config: AgentsConfig
    home: Path
    root: Path
    merging: asyncio.Lock = field(default_factory=asyncio.Lock)
    # The user's run's own replies so far (its face's tally, None: unknown), and every
    # child's replies as they come: what the run's budgets judge in each child
    # (`RunBudget.shared`), from the run the tally counts (a session runs many).
    run_tally: RunTally | None = None
    children_spent: Spend = field(default_factory=Spend)
    _children_run: int = 0  # the tally's run that `children_spent` is of
    # What the face puts around each child's executor and own-model provider: the
    # service's shared limits (`lathe.service.limits`); as they are elsewhere.
    wrap_executor: Callable[[Any], Any] = lambda executor: executor
    wrap_provider: Callable[[Any, Any], Any] = lambda provider, endpoint: provider
    _profiles: Profiles | None = None

    def __post_init__(self) -> None:
        self.slots = asyncio.Semaphore(self.config.max_parallel)

    def total_spent(self) -> Spend:
        """What the whole run has spent so far: the user's run's replies and every
        child's at any depth."""
        children = self.children_of_this_run()
        own = self.run_tally.spend() if self.run_tally is not None else Spend()
        return own.plus(children.tokens, children.cost_usd, 0.0)

    def children_of_this_run(self) -> Spend:
        """What the children of the current run have spent, each reply counted once."""
        self._new_run_starts_afresh()
        return self.children_spent

    def count_child_reply(self, event: ModelRequestFinished) -> None:
        self._new_run_starts_afresh()
        self.children_spent = self.children_spent.plus(tokens_of(event.usage), event.cost_usd, 0.0)

    def _new_run_starts_afresh(self) -> None:
        runs = self.run_tally.runs if self.run_tally is not None else 0
        if runs != self._children_run:  # the last run's children spent nothing of this one
            self._children_run, self.children_spent = runs, Spend()

    def find_profiles(self, tool_names: Iterable[str]) -> Profiles:
        """The profiles, found once the task tool is first offered: a profile's `tools`
        may name lathe's own, `tool_names` (the offering run's, its plugins' among
        them) and those a run adds later."""
        from lathe.tools.builtin import known_tool_names

        if self._profiles is None:
            self._profiles = find_profiles(self.root, known_tools=known_tool_names(tool_names))
        return self._profiles

    @property
    def patches(self) -> Path:
        """Where the children's changes that did not land are kept."""
        from lathe.home import project_slug

        return self.home / "patches" / project_slug(self.root)

    @property
    def profiles(self) -> Profiles:
        assert self._profiles is not None, "found when the task tool is offered"
        return self._profiles


class LocalChildren:
    """A `ChildRunner` for one run at nesting depth `depth` (0: the user's run).

    `parent_session_id` is called when a child starts (the interactive face's session
    changes with /clear and /resume); `allowed_tools` bounds the tools of every child
    below (a profile's allow list holds for its descendants too)."""

    def __init__(
        self,
        setup: RunSetup,
        provider,
        redactor,
        emit,
        *,
        parent_session_id: Callable[[], str] | str,
        checkpoints,
        home: Path | None = None,
        depth: int = 0,
        family: _Family | None = None,
        allowed_tools: Allowed | None = None,
        wrap_executor: Callable[[Any], Any] | None = None,
        wrap_provider: Callable[[Any, Any], Any] | None = None,
        run_tally: RunTally | None = None,
        approval: Callable[[], str] | None = None,
    ) -> None:
        """`home`: lathe's data dir, for a user's run; a child's run shares its
        parent's `family` instead. `wrap_executor` and `wrap_provider` go around every
        child's executor and own provider (the service's shared limits). `run_tally`:
        the user's run's, whose replies its children's budgets count (None: only the
        children's own count). `approval`: the run's mode as it is now, where the face
        lets the user change it (`/approval`); else the setup's."""
        self._setup = setup
        self._approval = approval or (lambda: setup.approval)
        self._provider = provider
        self._redactor = redactor
        self._emit = emit
        self._session_id = (
            parent_session_id if callable(parent_session_id) else lambda: parent_session_id
        )
        self._checkpoints = checkpoints
        self._depth = depth
        self._allowed = allowed_tools or Allowed()
        self._run_tools = ToolRegistry()  # the run's, once `register` is given it
        if family is None:
            assert home is not None, "a user's run names lathe's data dir"
            family = _Family(config=setup.loaded.config.agents, home=home, root=setup.workspace)
            if wrap_executor is not None:
                family.wrap_executor = wrap_executor
            if wrap_provider is not None:
                family.wrap_provider = wrap_provider
            family.run_tally = run_tally
        self._family = family
        self._waiting_on = 0  # this run's children still running (see _lending_my_slot)

    def offered(self) -> bool:
        """Whether this run may start children at all: its model's profile, the depth
        limit, and an allow list above it that names the task tool."""
        return (
            self._setup.model.profile.settings.subagents
            and self._depth < self._family.config.max_depth
            and TaskTool.name in self._allowed
        )

    def register(self, tools: ToolRegistry) -> None:
        """Offer the task tool in `tools` when this run may start children, whatever
        the approval mode now (it may change), and say which profile files cannot be
        read. A user's run first saves what the children of a killed lathe left in the
        workspace, and says where (`subagents/orphans.py`).
        `tools` is the run's registry: its MCP tools, there once the run starts, are
        those its children may share."""
        self._run_tools = tools
        if self._depth == 0:
            self._save_orphans()
        if not self.offered():
            return
        profiles = self._family.find_profiles(tools.names())
        for problem in profiles.problems:
            self._emit(Notice(level="warning", message=f"subagent profile skipped: {problem}"))
        # The rule of each mode, not the mode now: the user may change it (`/approval`),
        # and the description is part of the cached prompt. The gate refuses a call the
        # mode of the moment does not allow.
        readers = ", ".join(p.name for p in profiles.by_name.values() if p.read_only)
        note = (
            "In ask mode subagents cannot change files (they have no one to ask): "
            "use them to read and explore. In read-only mode "
            + (f"only {readers} may run: they change nothing." if readers else "none may run.")
        )
        tools.register(TaskTool(self, self._profile_list(), note))

    def _save_orphans(self) -> None:
        from lathe.subagents.orphans import save_orphans

        family = self._family
        for orphan in save_orphans(family.root, family.home, family.patches):
            cut = (
                f"subagent {orphan.name} was cut off: the lathe running it ended without "
                "cleaning up (killed?)"
            )
            if orphan.kept:
                message = (
                    f"{cut}, and its changes could not be saved as a patch ({orphan.kept}); "
                    "its folder is kept with them, for you to copy what you need from and "
                    f"then delete: {orphan.path}"
                )
            elif orphan.patch_file is not None:
                how = apply_command(family.root, orphan.patch_file)
                message = (
                    f"{cut}; its changes were never applied and are kept in "
                    f"{orphan.patch_file}: `{how}` in the workspace applies them"
                )
            elif orphan.left_behind:
                message = f"{cut}; it had changed nothing a patch carries"
            else:
                continue  # it had changed nothing: its folder simply went
            if orphan.left_behind:
                message += f". {left_behind(orphan.left_behind)}"
            self._emit(Notice(level="warning", message=message))

    def changes_files(self, agent: str | None) -> bool:
        profile = self._family.profiles.get(agent or "general")
        return profile is None or not profile.read_only

    def _profile_list(self) -> str:
        profiles = self._family.profiles.by_name.values()
        return "; ".join(f"{p.name}: {p.description}" for p in profiles)

    async def run_child(self, request: ChildRequest) -> ChildResult:
        name = request.agent or "general"
        profile = self._family.profiles.get(name)
        if profile is None and name in self._family.profiles.refused:
            raise ToolError(
                f"the subagent profile {name!r} cannot be used (fix its file, or name another "
                f"profile): {self._family.profiles.refused[name]}"
            )
        if profile is None:
            raise ToolError(
                f"there is no subagent profile named {request.agent!r}; profiles: "
                f"{self._profile_list()}"
            )
        if not self.offered():
            raise ToolError(
                f"subagents may nest {self._family.config.max_depth} deep (agents.max_depth); "
                "do this part yourself"
            )
        lacking = lacking_mcp_tools(
            profile.tools or (), self._run_tools, self._setup.mcp_servers, self._allowed
        )
        if lacking:  # the child would run without them, and end `completed`
            where = f" ({profile.path})" if profile.path is not None else ""
            raise ToolError(
                f"the subagent profile {name!r}{where} names MCP tools this run does not "
                f"have: {'; '.join(lacking)}. Name another profile, or do this part yourself"
            )
        async with self._lending_my_slot(), self._family.slots:
            self._check_total()
            return await _Child(self, request, profile).run()

    @contextlib.asynccontextmanager
    async def _lending_my_slot(self) -> AsyncIterator[None]:
        """A child waiting on children of its own does no work meanwhile, so its slot
        goes to them until the last of them ends (held, a tree as wide as the slots
        hung for good: each child waited for a slot its siblings held). The user's run
        (depth 0) holds none."""
        if self._depth == 0:
            yield
            return
        self._waiting_on += 1
        if self._waiting_on == 1:
            self._family.slots.release()
        try:
            yield
        finally:
            self._waiting_on -= 1
            if self._waiting_on == 0:
                # Shielded: cancelled, the slot is still taken back once free, to be
                # given up by the `async with` that holds this child's.
                await asyncio.shield(self._family.slots.acquire())

    def _check_total(self) -> None:
        limit = self._family.config.max_total_tokens
        spent = self._family.children_of_this_run().tokens
        if limit is not None and spent >= limit:
            raise ToolError(
                f"the subagents of this run have used {spent:,} tokens, their budget "
                f"(agents.max_total_tokens = {limit:,}); start no more subagents and do the "
                "rest yourself"
            )


class _Child:
    """One child, from its start to its merged result."""

    def __init__(self, parent: LocalChildren, request: ChildRequest, profile: AgentProfile):
        self.parent = parent
        self.request = request
        self.profile = profile
        self.tree: Worktree | None = None
        self.session = None
        self.finished: RunFinished | None = None
        self.merged: Merge | None = None  # set once its changes went through a merge
        self.tally = RunTally()  # its turns and usage, for an end it never reports
        self.keep_folder = False  # its changes could not be read back: the folder stays

    async def run(self) -> ChildResult:
        from lathe.session import SessionStore

        parent, family = self.parent, self.parent._family
        setup = parent._setup
        model = setup.model.name or setup.model.model_id
        # Filed under the user's workspace at any depth, so `sessions` finds them.
        self.session = SessionStore(family.home).create(
            family.root,
            model,
            parent_session=parent._session_id(),
            parent_call=self.request.call_id,
        )
        saving: asyncio.Future[Any] | None = None
        try:
            try:
                if not self.profile.read_only:
                    async with family.merging:  # never from a half-applied sibling patch
                        self.tree = await self._made_worktree()
                self.finished = await self._work()
                return await self._result()
            except asyncio.CancelledError:
                saving = asyncio.ensure_future(self._end_interrupted())
                await asyncio.shield(saving)
                raise
            except Exception as exc:  # lathe's own failure: the parent hears it as an end
                saving = asyncio.ensure_future(self._failed(exc))
                return await asyncio.shield(saving)
        finally:
            await asyncio.shield(asyncio.ensure_future(self._close_after(saving)))

    async def _made_worktree(self) -> Worktree:
        """The child's worktree. Cancelled while it is made, the copy goes on in its
        thread: it is waited for and kept in `self.tree`, so that `_close_after` removes
        it (a full copy of the workspace, its .env too, had stayed behind)."""
        setup, family = self.parent._setup, self.parent._family
        assert self.session is not None
        making = asyncio.ensure_future(
            asyncio.to_thread(create_worktree, setup.workspace, family.home, self.session.id)
        )
        try:
            return await asyncio.shield(making)
        except asyncio.CancelledError:
            while not making.done():  # a second Ctrl-C too: the copy is not left behind
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.shield(making)
            if not making.cancelled() and making.exception() is None:
                self.tree = making.result()
            raise

    async def _close_after(self, saving: asyncio.Future[Any] | None) -> None:
        """Once what the child changed is saved (`saving`), its worktree goes and its
        session closes. A second Ctrl-C does not cut this short: it cut the wait for the
        save, and the worktree went while the patch was still being written. Should the
        save itself be stopped (the loop shutting down) or fail, or the changes not be
        read back at all (`keep_folder`), the worktree stays, with the work in it, left to
        the user (`keep_for_user`): no later run takes it for a killed lathe's."""
        if saving is not None:
            try:
                await saving
            except Exception:  # not known to be saved: the work stays where it is
                self.keep_folder = True
        if self.tree is not None:
            done = keep_for_user if self.keep_folder else remove_worktree
            await asyncio.to_thread(done, self.tree)
        assert self.session is not None
        self.session.close()

    async def _work(self) -> RunFinished:
        from lathe.exec.sandboxed import SandboxedExecutor
        from lathe.obs import Observer
        from lathe.ui.recorder import SessionRecorder
        from lathe.ui.safety import build_safety, hook_chain
        from lathe.ui.wiring import build_agent, spill_dir

        parent, session = self.parent, self.session
        assert session is not None
        child_setup = self._setup()
        observer = Observer(session.path, session.id, parent._redactor, self._forward)
        try:
            safety = build_safety(
                child_setup, session, approver=None, emit=observer, start_mcp=False
            )
            if self.tree is not None and isinstance(safety.executor, SandboxedExecutor):
                # Beside the user's run's own, not in the child's folder, which goes
                # when it ends: the output had named a path that no longer existed.
                aside = spill_dir(parent._family.root) / "set-aside" / f"subagent-{session.id}"
                safety.executor.set_aside_dir = aside
            tools = self._tools(safety.tools, child_setup)
            if not self.profile.read_only:
                LocalChildren(
                    child_setup, parent._provider, parent._redactor, observer,
                    parent_session_id=session.id, checkpoints=None, depth=parent._depth + 1,
                    family=parent._family,
                    allowed_tools=self._allowed_below(),
                ).register(tools)  # fmt: skip
            recorder = SessionRecorder(session)
            provider = self._provider(child_setup)
            agent = build_agent(
                child_setup,
                provider,
                observer,
                executor=parent._family.wrap_executor(safety.executor),
                hooks=hook_chain(safety, parent._redactor, recorders=[recorder]),
                tools=tools,
            )
            budget = agent.deps.settings.budget or RunBudget()
            own_cap = child_setup.loaded.config.agents.max_tokens
            if budget.limited or own_cap is not None:  # the run's, shared with every agent
                agent.deps.settings.budget = dataclasses.replace(
                    budget, shared=parent._family.total_spent, own_max_tokens=own_cap
                )
            brief = self._brief()
            started = RunStarted(
                task=brief,
                model=child_setup.model.model_id,
                workspace=str(child_setup.workspace),
                session_id=session.id,
                origin="parent",
            )
            observer(started)
            try:
                finished = parent._redactor.event(await agent.run(brief))
            finally:
                await safety.aclose()
                if provider is not parent._provider:
                    await provider.aclose()
            recorder.record_end(finished)
            return finished
        finally:
            observer.close()

    def _allowed_below(self) -> Allowed:
        """The tools this child and its descendants may have: its profile's allow list
        within those from above."""
        return self.parent._allowed.within(self.profile.tools, self.profile.name)

    def _tools(self, own: ToolRegistry, child_setup: RunSetup) -> ToolRegistry:
        """The tools the profile allows (within any allow list from above), read-only
        ones only for a child that changes nothing: of `own`, built as the parent's
        were, and of the parent's MCP tools, over the parent's connections. Those are
        registered in `own` too, which the child's gate judges a call by: a tool it
        does not find there it takes for one that changes files."""
        allowed = self._allowed_below()

        def fits(tool: Tool) -> bool:
            return tool.name in allowed and (tool.read_only or not self.profile.read_only)

        shared = [t for t in shared_mcp_tools(self.parent._run_tools) if fits(t)]
        kept = [t for name in own.names() if (t := own.get(name)) is not None and fits(t)]
        brief = child_setup.model.profile.settings.tool_descriptions == "brief"
        tools = ToolRegistry(kept, brief=brief)
        window = child_setup.model.context_window
        share = child_setup.loaded.config.mcp.schema_share
        register_shared((own, tools), shared, window_tokens=window, schema_share=share)
        return tools

    def _provider(self, child_setup: RunSetup):
        """The parent's provider, or one for the profile's own model."""
        parent = self.parent
        if self.profile.model is None:
            return parent._provider
        from lathe.llm.registry import make_provider

        endpoint = child_setup.endpoint
        own = parent._family.wrap_provider(make_provider(endpoint), endpoint)
        return parent._redactor.provider(own)

    def _setup(self) -> RunSetup:
        """The parent's setup for the child: its folder, its turns, no verify command,
        the stricter of the parent's and the profile's approval, the profile's model, no
        MCP servers of its own, the tool hooks but not the start and stop hooks."""
        setup = self.parent._setup
        loaded = setup.loaded
        config = loaded.config
        profile = self.profile
        approval = stricter_approval(self.parent._approval(), profile.approval)
        if self.profile.read_only:
            approval = "read-only"
        child_config = config.model_copy(
            update={
                "model": profile.model or config.model,
                "agent": config.agent.model_copy(
                    update={
                        "max_turns": profile.max_turns or config.agents.max_turns,
                        # The run's, judged on the whole run's spend (`_work`);
                        # agents.max_tokens is the child's own cap beside it.
                        "max_tokens": config.agent.max_tokens,
                        "timeout": config.agents.timeout or config.agent.timeout,
                        "verify": None,
                        "attempts": 1,
                    }
                ),
                "permissions": config.permissions.model_copy(update={"approval": approval}),
                # The tool hooks guard a child's calls too; the start and stop hooks are
                # the user's run's (a "run finished" hook fired once per child, and more).
                "hooks": config.hooks.model_copy(update={"session_start": [], "stop": []}),
            }
        )
        origins = {**loaded.origins, ("permissions", "approval"): Origin("flag")}
        child_loaded = dataclasses.replace(loaded, config=child_config, origins=origins)
        workspace = self.tree.path if self.tree is not None else setup.workspace
        options = dataclasses.replace(
            setup.options, verify=None, max_turns=None, resume=None, continue_last=False,
            headless=True, ask_trust=None,
        )  # fmt: skip
        child = dataclasses.replace(
            setup, options=options, workspace=workspace, loaded=child_loaded, notices=[],
            user_workspace=setup.project_workspace,
        )  # fmt: skip
        if profile.model is None:
            return child
        from lathe.config import resolve_model
        from lathe.ui.budgets import check_cost_budget
        from lathe.ui.setup import endpoint_for

        model = resolve_model(child_config)
        # A cost budget judges every agent of the run: a child whose cost is unknown
        # would spend outside it.
        check_cost_budget(child_loaded, model)
        return dataclasses.replace(child, model=model, endpoint=endpoint_for(model))

    def _brief(self) -> str:
        """The profile's instructions, the parent's brief, the files to start from."""
        request = self.request
        parts = [self.profile.instructions] if self.profile.instructions else []
        parts.append(request.prompt)
        if request.files:
            listed = "\n".join(f"- {path}" for path in request.files)
            parts.append(f"Start from these files:\n{listed}")
        return "\n\n".join(parts)

    def _forward(self, event: AgentEvent) -> None:
        assert self.session is not None
        self.tally(event)
        if isinstance(event, ModelRequestFinished):  # its own (a grandchild's come wrapped)
            self.parent._family.count_child_reply(event)
        self.parent._emit(
            ChildEvent(
                child_id=self.session.id,
                parent_call_id=self.request.call_id,
                description=self.request.description,
                event=event,
            )
        )

    async def _end_interrupted(self) -> None:
        """Stopped from outside: the session says so, and what the child changed and
        did not land is kept as a patch file (not applied: the parent is stopping too)."""
        from lathe.session import RunEndEntry

        assert self.session is not None
        if self.tree is not None and self.merged is None:
            await self._save_unlanded("the run stopped before they landed")
        self.session.append(
            RunEndEntry(
                status=RunStatus.INTERRUPTED.value,
                turns=self.tally.turns,
                # Its children's too, as a normal end counts them.
                usage=self.tally.total_usage,
                reason="the parent stopped",
            )
        )

    async def _failed(self, exc: Exception) -> ChildResult:
        """lathe failed around the child: an error, with what it changed kept as a
        patch file and named, never applied half-way nor lost (when its changes cannot
        even be read back, its folder stays, named); the turns and usage it had spent,
        and its answer if it had ended."""
        assert self.session is not None
        changes, kept = None, None
        if self.tree is not None and self.merged is None:
            changes, kept = await self._save_unlanded("lathe failed before they landed")
        finished = self.finished
        what = one_line(str(exc))
        if finished is not None:
            status = child_status(finished.status).value
            reason = f"the subagent ended ({status}), then lathe failed: {what}"
        elif self.tally.turns:
            reason = f"lathe failed while the subagent ran: {what}"
        else:
            reason = f"the subagent could not run: {what}"
        answer, answer_file = capped_answer(
            finished.answer if finished is not None else "",
            self.session.path.with_suffix(".answer.md"),
        )
        return ChildResult(
            child_id=self.session.id,
            description=self.request.description,
            status=ChildStatus.ERROR,
            answer=answer,
            answer_file=answer_file,
            reason=reason,
            files=changes.files if changes is not None else (),
            left_behind=changes.left_behind if changes is not None else (),
            evidence=finished.evidence if finished is not None else None,
            merge=Merge(False, kept, reason="lathe failed before they landed") if kept else None,
            kept_in=self.tree.path if self.keep_folder and self.tree is not None else None,
            usage=(finished.usage or Usage()) if finished is not None else self.tally.total_usage,
            cost_usd=finished.cost_usd if finished is not None else self.tally.cost_usd,
            turns=finished.turns if finished is not None else self.tally.turns,
            session_path=self.session.path,
        )

    async def _save_unlanded(self, why: str) -> tuple[Changes | None, Path | None]:
        """What the child changed and did not land, kept as its patch file with the user
        told where and why (`why`): its changes, and the file (None: it changed
        nothing). When they cannot be read back or written, its folder stays
        (`keep_folder`) and the user is told where: (None, None)."""
        assert self.tree is not None
        tree = self.tree
        try:
            changes = await asyncio.to_thread(child_changes, tree)
            kept = await asyncio.to_thread(self._keep, changes.patch)
        except Exception as exc:  # lathe's own failure: its folder still holds the work
            self.keep_folder = True
            self.parent._emit(
                Notice(
                    level="warning",
                    message=f"the changes of subagent {self.request.description!r} could not "
                    f"be saved as a patch ({one_line(str(exc))}); its folder is kept with "
                    f"them, for you to copy what you need from and then delete: {tree.path}",
                )
            )
            return None, None
        if kept is not None:
            self._tell_kept(kept, why)
        return changes, kept

    def _keep(self, patch: bytes) -> Path | None:
        """`patch` written to the child's patch file; None when it changed nothing."""
        from lathe.subagents.worktree import keep_patch

        assert self.session is not None
        return keep_patch(self.parent._family.patches, self.session.id, patch)

    async def _result(self) -> ChildResult:
        finished = self.finished
        assert finished is not None and self.session is not None
        files, merge, left_behind = (), None, ()
        if self.tree is not None:
            changes = await asyncio.to_thread(child_changes, self.tree)
            files, left_behind = changes.files, changes.left_behind
            if files:
                merge = await self._merge(changes.patch)
        answer, answer_file = capped_answer(
            finished.answer, self.session.path.with_suffix(".answer.md")
        )
        return ChildResult(
            child_id=self.session.id,
            description=self.request.description,
            status=child_status(finished.status),
            answer=answer,
            answer_file=answer_file,
            reason=finished.reason,
            files=files,
            left_behind=left_behind,
            evidence=finished.evidence,
            merge=merge,
            usage=finished.usage or Usage(),
            cost_usd=finished.cost_usd,
            turns=finished.turns,
            session_path=self.session.path,
        )

    async def _merge(self, patch: bytes) -> Merge:
        """The child's changes into the parent's workspace, one merge at a time. Once
        begun, a merge runs to its end even if the run is stopped meanwhile (a
        checkpoint before, the patch whole or not at all, a checkpoint of the result),
        so a stop never leaves the workspace changed without its checkpoint."""
        family = self.parent._family
        async with family.merging:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise asyncio.CancelledError
            job = asyncio.ensure_future(asyncio.to_thread(self._merge_now, patch))
            try:
                self.merged = await asyncio.shield(job)
            except asyncio.CancelledError:
                self.merged = await job
                raise
            if not self.merged.applied and self.merged.patch_file is not None:
                self._tell_kept(self.merged.patch_file, self.merged.reason, self.merged.marked)
            return self.merged

    def _tell_kept(self, patch_file: Path, why: str, marked: Path | None = None) -> None:
        """Tell the user where a child's changes that did not land are (the model is
        told in its result; the user, who may have stopped the run, was not), and the
        command that applies them: for a clash, the merge with its conflict markers
        (the child's own patch no longer applies to what the workspace has)."""
        workspace = self.parent._setup.workspace
        how = (
            f"`{apply_command(workspace, marked)}` in the workspace applies them merged with "
            "your changes, the clashes between conflict markers for you to resolve"
            if marked is not None
            else f"`{apply_command(workspace, patch_file)}` in the workspace applies them"
        )
        self.parent._emit(
            Notice(
                level="warning",
                message=f"the changes of subagent {self.request.description!r} were not "
                f"applied ({why}); they are kept in {patch_file}: {how}",
            )
        )

    def _merge_now(self, patch: bytes) -> Merge:
        assert self.session is not None
        parent = self.parent
        checkpoints = parent._checkpoints
        label = f"subagent {self.session.id}: {self.request.description}"
        if checkpoints is not None:
            checkpoints.snapshot(f"before {label}", kind="before")
        applied = apply_patch(parent._setup.workspace, patch, self._patch_file(), self.tree)
        if applied.clashes:
            return Merge(False, applied.patch_file, reason=applied.reason, marked=applied.marked)
        if not applied.applied:
            return Merge(False, applied.patch_file, reason=_conflict(applied.reason))
        number = checkpoints.snapshot(label, kind="after").n if checkpoints is not None else None
        return Merge(True, applied.patch_file, checkpoint=number)

    def _patch_file(self) -> Path:
        from lathe.subagents.worktree import patch_file

        assert self.session is not None
        return patch_file(self.parent._family.patches, self.session.id)


def _conflict(reason: str) -> str:
    first = next((line for line in reason.splitlines() if line.strip()), reason)
    return f"it no longer applies to your workspace (git: {first.strip()})"
