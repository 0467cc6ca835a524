"""The `task` tool: hand a part of the work to a child agent and get its result back.

The tool only describes the call and turns a `ChildResult` into what the model reads;
starting, running and merging a child is a `ChildRunner`'s job, which the face builds
(it owns the provider, the sandbox and the session store). Several `task` calls in one
reply run at the same time (`concurrent`): each child works in its own folder and its
changes land one at a time, so they cannot interleave.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Protocol

from pydantic import Field

from lathe.plural import plural
from lathe.subagents.result import ChildResult
from lathe.tools.base import CURRENT_CALL, Params, Tool, ToolContext, ToolOutput


class TaskParams(Params):
    description: Annotated[str, Field(description="A few words naming the subtask.")]
    prompt: Annotated[
        str,
        Field(
            description="The whole brief: the child sees nothing of this conversation, so "
            "say what to do, where, what done means and how to check it."
        ),
    ]
    agent: Annotated[
        str | None,
        Field(description="A subagent profile, e.g. explore (read-only) or general."),
    ] = None
    files: list[str] = Field(
        default_factory=list, description="Workspace paths the child should start from."
    )


@dataclass(frozen=True)
class ChildRequest:
    """One `task` call: the parent's call id, and what the model asked for."""

    call_id: str
    description: str
    prompt: str
    agent: str | None = None
    files: tuple[str, ...] = ()


class ChildRunner(Protocol):
    """Runs a child to its end and merges what it changed.

    Contract: `run_child` returns a `ChildResult` for every end, interruption included
    (it may re-raise a cancellation only after the result is recorded); it raises only
    `ToolError` for a request it refuses before starting (an unknown profile, the depth
    limit), with a message the model can act on."""

    async def run_child(self, request: ChildRequest) -> ChildResult: ...

    def changes_files(self, agent: str | None) -> bool:
        """Whether a child of the profile `agent` names (None: the default) may change
        files: the approval gate judges a task call by it. True for a profile it does
        not know (the call is refused when it runs)."""
        ...


class TaskTool(Tool):
    name = "task"
    description = (
        "Hand a self-contained part of the work to a subagent that works on its own copy "
        "of the workspace and reports back: its status, its answer, the files it changed "
        "(applied to your workspace when they fit) and what checked its work. Several "
        "task calls in one reply run in parallel. Use it for independent subtasks; do "
        "small or tightly coupled work yourself."
    )
    parameters = TaskParams
    concurrent: ClassVar[bool] = True
    # A child's result depends on the workspace (and on its own sampling): the same call
    # after a change is new work, not the same file change made again.
    repeatable: ClassVar[bool] = True

    def __init__(self, runner: ChildRunner, profiles: str = "", note: str = "") -> None:
        """`profiles`: what `agent` may name here; `note`, what children may do in each
        approval mode that bounds them, never the mode of the moment: the user may change
        it while the description, part of the cached prompt, stays (the gate judges each
        call by the mode then, `read_only_call`)."""
        self._runner = runner
        listed = f" Profiles (agent): {profiles}." if profiles else ""
        if listed or note:
            self.description = f"{TaskTool.description}{listed}{f' {note}' if note else ''}"

    def read_only_call(self, arguments: dict[str, Any]) -> bool:
        """A call whose profile changes nothing (`explore`) only reads: the approval
        mode lets it run where children cannot change files (headless `ask`,
        `read-only`), as the description says; before, every task call was refused there."""
        agent = arguments.get("agent")
        if agent is not None and not isinstance(agent, str):
            return False
        return not self._runner.changes_files(agent)

    def summarize_call(self, args: TaskParams) -> str:
        return args.description

    async def execute(self, args: TaskParams, ctx: ToolContext) -> ToolOutput:
        request = ChildRequest(
            call_id=CURRENT_CALL.get(),
            description=args.description,
            prompt=args.prompt,
            agent=args.agent,
            files=tuple(args.files),
        )
        result = await self._runner.run_child(request)
        return ToolOutput(
            content=result.for_model(),
            is_error=result.is_error,
            summary=f"{result.status.value}: {plural(len(result.files), 'file')} changed",
            spent=result.usage,
            spent_usd=result.cost_usd,
            details={
                "child_id": result.child_id,
                "status": result.status.value,
                "files": [f.path for f in result.files],
                "session": str(result.session_path) if result.session_path else None,
            },
        )
