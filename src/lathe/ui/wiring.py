"""Assembling an Agent from a prepared run; shared by every face."""

from __future__ import annotations

import os
from pathlib import Path

from lathe.agent.loop import Agent, AgentDeps, AgentSettings, Emit
from lathe.agent.prompt import system_prompt
from lathe.events import Notice
from lathe.exec.base import Executor
from lathe.hooks.base import AgentHooks, HookChain
from lathe.llm.base import Provider
from lathe.tools.base import Limits, ToolContext, ToolRegistry
from lathe.types import Message
from lathe.ui.setup import RunSetup


def spill_dir(workspace: Path) -> Path:
    """Where full tool outputs go: inside the workspace so the model can page them with
    `read`, and git-ignored so they never end up in the user's commits. Nothing is made
    here: the folder and its `.gitignore` are made when output is first spilled
    (`exec.output.make_spill_folder`), so a run that spills nothing leaves no trace. A
    workspace lathe cannot write to (a read-only mount, someone else's files) gets one
    under LATHE_HOME instead; `read` may open it all the same."""
    path = workspace / ".lathe" / "tmp"
    if _may_hold_spills(path):
        return path
    from lathe.home import lathe_home, project_slug

    return lathe_home() / "spill" / project_slug(workspace)


def _may_hold_spills(path: Path) -> bool:
    """Whether lathe may make `path`, a workspace's `.lathe/tmp`, its spill folder: none
    of `.lathe`, the folder and its `.gitignore` is a link, and the nearest of them that
    exists is a folder lathe can write in."""
    # A link a repository ships would send lathe's writes wherever it points: the
    # folder, or its .gitignore (a dangling one, which `exists()` calls missing).
    if any(p.is_symlink() for p in (path.parent, path, path / ".gitignore")):
        return False
    nearest = next((p for p in (path, path.parent, path.parent.parent) if p.exists()), None)
    return nearest is not None and nearest.is_dir() and os.access(nearest, os.W_OK | os.X_OK)


def agent_settings(setup: RunSetup) -> AgentSettings:
    from lathe.llm.retry import RetryPolicy
    from lathe.ui.budgets import run_budget

    config = setup.loaded.config
    return AgentSettings(
        max_turns=config.agent.max_turns,
        verify_command=config.agent.verify,
        verify_timeout_s=config.agent.verify_timeout_s,
        verify_first=config.agent.verify_first,
        apply_reply_code=setup.model.profile.settings.apply_reply_code,
        verify_output_bytes=setup.model.profile.settings.verify_output_bytes,
        failure_code_bytes=setup.model.profile.settings.failure_code_bytes,
        failure_code_leave_out=setup.model.profile.settings.snapshot_leave_out,
        temperature=setup.model.profile.settings.temperature,
        repeat_temperature=setup.model.profile.settings.repeat_temperature,
        stall_repeat_limit=config.agent.stall_repeat_limit,
        retry=RetryPolicy(
            max_attempts=config.retry.max_attempts,
            base_delay_s=config.retry.base_delay_s,
            max_delay_s=config.retry.max_delay_s,
        ),
        max_output_tokens=setup.model.max_output_tokens,
        price=setup.model.cost if setup.model.prices.known else None,
        budget=run_budget(config.agent),
    )


def _request_extra(setup: RunSetup, code_in_view: bool) -> dict[str, object]:
    """lathe's local chat template asks for a sentence or two of reasoning before each
    call when the profile says `reason_first`; it is asked only when the prompt already
    holds the workspace's code. Measured: the 1.5B then finds the fix far more often (it
    writes the fix out, which `apply_reply_code` can apply); without the code in view it
    described files it had not read instead of reading them. Replies constrained to one
    JSON action (`tool_mode = "json_schema"`) have no room for it."""
    json_actions = setup.endpoint.tool_mode == "json_schema"
    if setup.model.profile.settings.reason_first and code_in_view and not json_actions:
        return {"chat_template_kwargs": {"reason_first": True}}
    return {}


def _instructions(
    setup: RunSetup, tools: ToolRegistry, no_read: list[str], emit: Emit
) -> tuple[str | None, list[str], AgentHooks]:
    """The instruction files for the system prompt and their labels, and the hook that
    appends those of folders below the workspace to the first tool result that reaches
    them. All share one budget, within a share of the window; what it cuts is said in
    a notice."""
    from lathe.instructions import (
        Instructions,
        NestedInstructions,
        prompt_section,
        user_instructions_path,
    )

    config = setup.loaded.config.memory
    found = Instructions(
        setup.project_workspace,
        names=config.instruction_files,
        max_bytes=config.instructions_max_bytes,
        no_read=no_read,
        user_file=user_instructions_path(),
        window_tokens=setup.model.context_window,
    )
    standing = found.standing()

    def tell(cut: str) -> None:
        emit(Notice(level="warning", message=cut))

    for cut in found.notes:
        tell(cut)
    labels = [f.label for f in standing]
    return prompt_section(standing), labels, NestedInstructions(found, tools, tell)


def _memory(setup: RunSetup) -> str | None:
    """The memory files as they are now: read once, when the agent is built."""
    from lathe.memory import MemoryStore, prompt_section

    store = MemoryStore(setup.project_workspace, setup.loaded.config.memory.memory_max_bytes)
    return prompt_section(store)


def _cap(*limits: int | None) -> int:
    """The smallest of the limits that are set."""
    return min(limit for limit in limits if limit is not None)


def build_agent(
    setup: RunSetup,
    provider: Provider,
    emit: Emit,
    *,
    executor: Executor,
    hooks: AgentHooks | None = None,
    messages: list[Message] | None = None,
    tools: ToolRegistry | None = None,
) -> Agent:
    from lathe.agent.compaction import ContextManager
    from lathe.agent.context import Budget
    from lathe.tools.builtin import builtin_tools
    from lathe.tools.files import FileState
    from lathe.tools.skill import skill_catalog
    from lathe.ui.safety import permission_rules

    config = setup.loaded.config
    window = setup.model.context_window
    profile = setup.model.profile.settings
    tools = tools or ToolRegistry(builtin_tools())  # the faces pass the one the gate asks
    rules = permission_rules(setup)
    no_read = rules.denied_read_patterns()
    context = ToolContext(
        workspace=setup.workspace,
        executor=executor,
        spill_dir=spill_dir(setup.workspace),
        file_state=FileState(),
        limits=Limits(
            # A small window cannot hold a 2,000-line page or 30 KB of output, whatever
            # the model: one tool result must leave room for the rest of the conversation.
            read_default_lines=_cap(
                config.tools.read_default_lines, profile.read_default_lines, max(100, window // 32)
            ),
            read_max_line_chars=config.tools.read_max_line_chars,
            output_max_bytes=_cap(
                config.tools.output_max_bytes, profile.output_max_bytes, window * 4 // 5
            ),
            reply_outputs_max_bytes=window * 3 // 2,  # half the window, at 3 bytes a token
            bash_default_timeout_s=config.tools.bash_default_timeout_s,
            bash_max_timeout_s=config.tools.bash_max_timeout_s,
            write_may_replace=profile.write_may_replace,
        ),
        deny_read=tuple(no_read),
        deny_edit=tuple(rules.denied_edit_patterns()),
    )
    settings = agent_settings(setup)
    instructions, instruction_labels, nested = _instructions(setup, tools, no_read, emit)
    memory = _memory(setup)
    hooks = HookChain([nested, hooks or AgentHooks()])
    words = setup.words()
    skills = skill_catalog(tools)
    prompt = system_prompt(
        setup.workspace,
        tools.names(),
        verify_command=settings.verify_command,
        # A quarter of the window, at about 3 bytes a token.
        snapshot_max_bytes=min(window * 3 // 4, profile.workspace_snapshot_bytes),
        no_edit=rules.denied_edit_patterns(),
        no_read=no_read,
        words=words,
        skills=[(s.name, s.description) for s in skills.skills] if skills else (),
        # A share of the window, at about 3 bytes a token.
        skills_max_bytes=int(window * config.skills.prompt_share * 3),
        instructions=instructions,
        memory=memory,
        instruction_names=config.memory.instruction_files,
        snapshot_leave_out=profile.snapshot_leave_out,
    )
    if prompt.has_snapshot:
        settings.failure_code_bytes = None  # the code is in view already
    settings.request_extra = _request_extra(setup, prompt.has_snapshot)
    manager = None
    if config.context.compaction:
        manager = ContextManager(
            Budget.fitted(
                window,
                output_reserve=config.context.output_reserve_tokens,
                tool_output_keep_tokens=config.context.prune_budget_tokens,
                compact_threshold=config.context.compact_threshold,
            ),
            provider,
            emit,
            fixed_tokens=_fixed_tokens(prompt.text, tools),
            retry=settings.retry,
            on_compaction=hooks.on_compaction,
            words=words,
            kept_verbatim=hooks.kept_verbatim,
            prompt_parts=_prompt_parts(instructions, instruction_labels, memory, tools),
        )
    deps = AgentDeps(
        provider=provider,
        tools=tools,
        tool_context=context,
        system_prompt=prompt.text,
        settings=settings,
        hooks=hooks,
        context=manager,
        words=words,
    )
    return Agent(deps, emit, messages)


def _prompt_parts(
    instructions: str | None, labels: list[str], memory: str | None, tools: ToolRegistry
):
    """The parts of the system prompt the user wrote, and the MCP servers' tool
    definitions, for the error of a first request that does not fit to name (it had
    advised a smaller task message where a server's tools filled the request)."""
    from lathe.agent.compaction import PromptPart
    from lathe.agent.context import estimate_tokens

    parts = []
    if instructions:
        parts.append(
            PromptPart(
                f"the instruction files ({', '.join(labels)})",
                estimate_tokens(instructions),
                "shorten the instruction files or lower memory.instructions_max_bytes",
            )
        )
    if memory:
        parts.append(
            PromptPart(
                "the memory", estimate_tokens(memory), "empty the memory (`lathe memory clear`)"
            )
        )
    return lambda: [*parts, *_mcp_definitions(tools)]


def _mcp_definitions(tools: ToolRegistry):
    """The advertised specs of MCP servers' tools (`tool_search`'s listing of the
    deferred ones included) as one part, when there are any."""
    from lathe.agent.compaction import PromptPart
    from lathe.agent.context import estimate_tokens
    from lathe.mcptools.tools import McpResourceTool, McpTool, ToolSearchTool

    servers: dict[str, None] = {}
    specs = []
    for spec in tools.specs():
        tool = tools.get(spec.name)
        if isinstance(tool, McpTool):
            servers[tool.connection.name] = None
        elif isinstance(tool, ToolSearchTool):
            servers.update((deferred.connection.name, None) for deferred in tool.deferred)
        elif not isinstance(tool, McpResourceTool):
            continue
        specs.append([spec.name, spec.description, spec.parameters])
    if not servers:
        return []
    return [
        PromptPart(
            f"the MCP servers' tool definitions ({', '.join(servers)})",
            estimate_tokens(str(specs)),
            "offer fewer MCP tools (enabled = false for a server the task does not need, "
            "or include_tools) or lower mcp.schema_share",
        )
    ]


def _fixed_tokens(system: str, tools: ToolRegistry):
    """The tokens of the system prompt and the advertised tool specs — names and
    descriptions too: `tool_search`'s description lists every deferred MCP tool —,
    counted again only when the specs change (MCP tools are registered when the first
    run starts)."""
    from lathe.agent.compaction import fixed_prompt_tokens

    counted: list = [None, 0]

    def tokens() -> int:
        specs = tools.specs()  # the same list until a tool is registered
        if counted[0] is not specs:
            text = str([[s.name, s.description, s.parameters] for s in specs])
            counted[:] = [specs, fixed_prompt_tokens(system, text)]
        return counted[1]

    return tokens
