"""Choosing the executor and building the policy gate for a run, from the config, and
the one hook chain both faces run with."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from lathe.config.secrets import env_references
from lathe.errors import UsageError
from lathe.events import Notice
from lathe.exec.base import ExecResult, Executor
from lathe.hooks.base import AgentHooks, HookChain
from lathe.policy.gate import ApprovalRequest, Approver, Mode, Policy, PolicyGate, command_key
from lathe.policy.rules import RuleSet, protected_patterns
from lathe.tools.base import ToolRegistry
from lathe.ui.setup import RunSetup

if TYPE_CHECKING:
    from lathe.config.schema import HooksConfig
    from lathe.obs import Redactor


@dataclass
class Safety:
    executor: Executor
    gate: PolicyGate
    sandboxed: bool
    tools: ToolRegistry  # the run's tools: the gate asks them, the agent runs them
    hooks: list[AgentHooks] = field(default_factory=list)  # config and plugin hooks
    # What ends with the face's session (MCP servers); `aclose` runs them.
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    async def aclose(self) -> None:
        for close in self.closers:
            await close()


def hook_chain(
    safety: Safety,
    redactor: Redactor,
    *,
    taps: Sequence[AgentHooks] = (),
    recorders: Sequence[AgentHooks] = (),
) -> HookChain:
    """The hooks of a run, in the one order every face uses: the policy gate (built with
    the face's approver; headless has none, so the gate refuses what would ask), the
    config and plugin hooks, the redactor (tool output is masked from here on), the
    face's own `taps` (what it shows), then the `recorders` (session, checkpoints), each
    seeing masked messages (one guard for all: each message is masked once). A rewrite
    restarts the chain, so the gate judges it too."""
    masked = [redactor.guard(HookChain(recorders))] if recorders else []
    return HookChain([safety.gate, *safety.hooks, redactor, *taps, *masked])


def _server_files(setup: RunSetup) -> tuple[str, ...]:
    """The workspace files MCP servers run: protected like the user's own list."""
    if setup.mcp_servers is None or not setup.mcp_servers.entries:
        return ()
    from lathe.mcptools.servers import files_they_run

    return files_they_run(setup.mcp_servers.entries, setup.workspace)


def permission_rules(setup: RunSetup) -> RuleSet:
    """The config's rules plus the run's --allow/--deny."""
    config = setup.loaded.config.permissions
    return RuleSet.from_strings(
        allow=[*config.allow, *setup.options.allow],
        ask=config.ask,
        deny=[*config.deny, *setup.options.deny],
    )


def standing_approvals(session) -> set[str]:
    """The rule keys answered "always" on the session's branch and not revoked since."""
    from lathe.session import ApprovalEntry

    standing: set[str] = set()
    for entry in session.branch() if session else []:
        if isinstance(entry, ApprovalEntry):
            (standing.add if entry.decision == "allow" else standing.discard)(entry.rule)
    return standing


def build_safety(
    setup: RunSetup, session, *, approver: Approver | None, emit, start_mcp: bool = True
) -> Safety:
    """The run's executor, gate, tools and hooks. `start_mcp` False (a subagent) keeps
    the declared MCP servers' variables out of commands but starts none of them."""
    from lathe.exec.local import LocalExecutor
    from lathe.hooks.command import files_hooks_run
    from lathe.memory import memory_tools
    from lathe.plugins import load_tool_plugins
    from lathe.session import ApprovalEntry
    from lathe.tools.builtin import builtin_tools
    from lathe.tools.skill import skill_tools

    def warn(message: str) -> None:
        emit(Notice(level="warning", message=message))

    config = setup.loaded.config.permissions
    mode = Mode.parse(setup.approval)
    hide_own_environment()
    rules = permission_rules(setup)
    protect = (
        *config.protect,
        *_server_files(setup),
        *files_hooks_run(setup.loaded.config.hooks, setup.workspace),
    )
    hidden = key_variables(setup)
    keep = config.env_passthrough
    executor: Executor = LocalExecutor(hide_env=hidden, keep_env=keep)
    sandboxed = False
    if config.executor is not None:
        executor = _plugin_executor(config.executor, setup.workspace, hidden, keep)
    elif mode in (Mode.ASK, Mode.AUTO, Mode.READ_ONLY):
        from lathe.exec.sandboxes import configured_sandbox, sandbox_status, sandboxed_executor

        engine, container = configured_sandbox(setup.loaded.config)
        status = sandbox_status(engine, container)
        if status.available:
            executor = sandboxed_executor(
                engine,
                setup.workspace,
                container,
                network=config.sandbox.network,
                deny_read=rules.denied_read_patterns(),
                deny_write=[*rules.denied_edit_patterns(), *protected_patterns(protect)],
                status=status,
                hide_env=hidden,
                keep_env=keep,
                hide_git=_history_reveals(setup.workspace, rules, emit),
                # What an allow rule lets run in read-only mode may not write either.
                **({"read_only": (".",)} if mode is Mode.READ_ONLY else {}),
            )
            sandboxed = True
        else:
            if approver is None and setup.loaded.config.agent.verify:
                raise _check_would_run_unsandboxed(status.message)
            fallback = (
                "commands will be refused in this headless run"
                if setup.options.headless
                else "every command will ask before it runs, unsandboxed"
            )
            if mode is Mode.READ_ONLY:
                fallback = "commands will be refused, even those an allow rule names"
            emit(Notice(level="warning", message=f"{status.message} Until then {fallback}."))
    memory = memory_tools(
        setup.project_workspace, setup.loaded.config.memory, setup.secrets(), session
    )
    profile = setup.model.profile.settings
    skills = skill_tools(setup.workspace, warn, rules.denied_read_patterns())
    own = [*builtin_tools(), *memory, *skills]
    if profile.tools is not None:
        _check_tool_names(setup.model.profile.name, profile.tools)
        own = [t for t in own if t.name in profile.tools]
    tools = ToolRegistry(own, brief=profile.tool_descriptions == "brief")
    for plugin_tool in load_tool_plugins(warn, set(tools.names())):
        tools.register(plugin_tool)
    check_rule_tools(rules, setup.loaded.config.hooks, tools, warn)
    if mode is Mode.FULL:  # once the rules were read: told once, for a run that starts
        _tell_what_full_mode_leaves_open(emit)
    mcp = None
    if start_mcp and setup.mcp_servers is not None and setup.mcp_servers.entries:
        from lathe.mcptools.session import mcp_session

        mcp = mcp_session(setup, tools, emit)
    policy = Policy(
        mode=mode,
        rules=rules,
        workspace=setup.workspace,
        home=Path.home(),
        sandboxed=sandboxed,
        protected=protect,
        tools=tools,
    )
    remembered = standing_approvals(session)

    def remember(key: str) -> None:
        if session is not None:
            session.append(ApprovalEntry(rule=key, decision="allow"))

    gate = PolicyGate(
        policy,
        approver,
        remembered=remembered,
        on_remember=remember,
        words=setup.words(),
    )
    if not sandboxed and approver is not None and config.executor is None:
        executor = _AsksOutsideCalls(executor, gate)
    hooks = _hooks(setup, warn, tools, hide_env=hidden, keep_env=keep)
    if mcp is not None:

        def check_mcp_names() -> None:
            hook_config = setup.loaded.config.hooks
            check_rule_tools(
                rules, hook_config, tools, warn,
                mcp=mcp.server_tools(), cached=mcp.listed_from_cache,
            )  # fmt: skip

        hooks += [mcp, _McpToolNames(check_mcp_names)]
    if tools.get("bash") is not None:
        from lathe.warmup import import_ahead

        # The guard parses every command with tree-sitter: 30 ms of imports at the first.
        import_ahead("lathe.policy.command")
    closers = [mcp.aclose] if mcp else []
    if hasattr(executor, "aclose"):  # a container ends with the run
        closers.append(executor.aclose)
    return Safety(
        executor=executor, gate=gate, sandboxed=sandboxed, tools=tools, hooks=hooks,
        closers=closers,
    )  # fmt: skip


def check_rule_tools(
    rules: RuleSet,
    hooks: HooksConfig,
    tools: ToolRegistry,
    warn: Callable[[str], None],
    *,
    mcp: Mapping[str, Collection[str] | None] | None = None,
    cached: Collection[str] = (),
) -> None:
    """A rule, or a hook's `tools` entry, that matches nothing. A command pattern with a
    stray `*` (`bash(rm *)`) or a known tool's name misspelt or capitalised is a
    UsageError naming the one meant (the deny or the guard the user counts on would be
    off); a tool no plugin provides (its plugin did not load) a warning. Known: every
    tool of lathe's own, whatever the profile offers, the plugins' and those added
    later. MCP tools' names (`mcp__...`) are judged only given `mcp`, each configured
    server's tool names (`McpSession.server_tools`), once the run has listed them, and
    then alone: the others were judged as the run was built. A near miss of a server
    whose list came from the cache (`cached`) is a warning: a newer release of it may
    have the tool, and a refusal would never let the cache be listed again."""
    from lathe.errors import UsageError
    from lathe.policy.rules import command_pattern_problem, misnamed_tool, unknown_tools
    from lathe.tools.builtin import known_tool_names

    every_rule = (*rules.deny, *rules.ask, *rules.allow)
    for rule in every_rule:
        if problem := command_pattern_problem(rule):
            raise UsageError(problem)
    known = known_tool_names(tools.names())
    names = f"Tool names are lower case: {', '.join(sorted(known))}"
    hook_of = {tool: hook for hook in (*hooks.pre_tool, *hooks.post_tool) for tool in hook.tools}
    if mcp is not None:
        every_rule = tuple(r for r in every_rule if r.tool.lower().startswith("mcp__"))
        hook_of = {t: hook for t, hook in hook_of.items() if t.lower().startswith("mcp__")}
        names = "`lathe mcp list` names each MCP server's tools"

    def refuse(refusal: str, meant: str) -> None:
        """Raise `refusal`, or only warn of it where `meant` is a tool of a server whose
        list came from the cache (a newer release may have the tool named)."""
        if any(meant.startswith(f"mcp__{server}__") for server in cached):
            warn(f"{refusal} (the server's tools as last listed)")
        else:
            raise UsageError(f"{refusal} {names}")

    for tool, meant in unknown_tools(hook_of, known, servers=mcp).items():
        said = f"the hook `{hook_of[tool].command}` names the tool {tool!r}"
        if meant is None:
            warn(f"{said}, which this run lacks")
            continue
        refuse(f"{said}, which lathe does not have; did you mean {meant!r}?", meant)
    unknown = unknown_tools((rule.tool for rule in every_rule), known, servers=mcp)
    for rule in every_rule:
        if rule.tool not in unknown:
            continue
        meant = unknown[rule.tool]
        if meant is None:
            warn(f"the permission rule {rule.key!r} names no tool this run has, so it "
                 "matches nothing")  # fmt: skip
            continue
        if mcp is None:
            raise UsageError(misnamed_tool(rule, meant, ", ".join(sorted(known))))
        refuse(
            f"the permission rule {rule.key!r} names no tool this run has; did you mean {meant!r}?",
            meant,
        )


class _McpToolNames(AgentHooks):
    """Judges the rules and hooks naming MCP tools (`check`: `check_rule_tools`) as the
    first run starts, after the MCP session before it in the chain has listed the
    servers' tools; a refusal stops every later run too, as the rules stay."""

    def __init__(self, check: Callable[[], None]) -> None:
        self._check = check
        self._checked = False
        self._refusal: str | None = None

    async def on_run_start(self, task: str) -> None:
        from lathe.errors import UsageError

        if not self._checked:
            self._checked = True
            try:
                self._check()
            except UsageError as exc:
                self._refusal = str(exc)
        if self._refusal is not None:
            raise UsageError(self._refusal)


def _check_tool_names(profile: str, names: list[str]) -> None:
    from lathe.errors import UsageError
    from lathe.tools.builtin import OWN_TOOL_NAMES

    unknown = [name for name in names if name not in OWN_TOOL_NAMES]
    if unknown:
        raise UsageError(
            f"profiles.{profile}.tools names {', '.join(map(repr, unknown))}, which lathe does "
            f"not have; use some of: {', '.join(OWN_TOOL_NAMES)}"
        )


class CheckDeclined(UsageError):
    """The person asked declined to run the verify command unsandboxed: the run stops."""


class _AsksOutsideCalls:
    """The executor of a run whose commands have no sandbox and a person to ask. A
    command a tool call runs was judged with the call by the gate, which asked where the
    mode wants a sandbox; one run outside any call (`CURRENT_CALL` unset: the verify
    check, which runs the model's code) asks the same way, unless the mode is `full` now
    (`/approval` changes it) or its key was allowed always. Declined: `CheckDeclined`."""

    def __init__(self, inner: Executor, gate: PolicyGate) -> None:
        self._inner = inner
        self._gate = gate

    async def run(self, command: str, **options) -> ExecResult:
        from lathe.tools.base import CURRENT_CALL

        if not CURRENT_CALL.get() and self._gate.policy.mode is not Mode.FULL:
            await self._ask(command)
        return await self._inner.run(command, **options)

    async def _ask(self, command: str) -> None:
        gate = self._gate
        key = command_key(command)
        if key in gate.remembered or gate.approver is None:
            return
        reason = "the verify command runs the model's code, and no sandbox can contain it"
        answer = await gate.ask(ApprovalRequest("bash", {"command": command}, reason, key, command))
        if answer.choice == "deny":
            why = f": {answer.reason}" if answer.reason else ""
            said = "nobody answered in time" if answer.by == "timeout" else "it was declined"
            raise CheckDeclined(f"the verify command was not run unsandboxed: {said}{why}")

    def __getattr__(self, name: str):  # the executor's own attributes (aclose ...)
        return getattr(self._inner, name)


def _check_would_run_unsandboxed(why: str):
    """The UsageError of a run with nobody to ask whose verify command would run the
    model's code with no sandbox (`why`: the sandbox's own reason, with its fix)."""
    return UsageError(
        "the verify command would run the model's code unsandboxed, and nobody can be "
        f"asked in this run: {why} Or pass --approval full to run it, and every command, "
        "unsandboxed."
    )


def _plugin_executor(name: str, workspace: Path, hide_env: list[str], keep_env) -> Executor:
    """The executor `permissions.executor` names, from its plugin; a UsageError when no
    plugin has it or it cannot load or start (commands must not run elsewhere)."""
    from lathe.errors import UsageError
    from lathe.plugins import EXECUTORS, named_factory, names_in

    what = f"permissions.executor = {name!r}"
    factory = named_factory(EXECUTORS, name, what)
    if factory is None:
        installed = ", ".join(names_in(EXECUTORS)) or "none is installed"
        raise UsageError(
            f"{what}: no plugin executor of that name ({installed}); `lathe plugins` "
            "lists them, or unset the key for lathe's own"
        )
    from lathe.plugins import LOAD_FAILURES

    try:
        made = factory(workspace=workspace, hide_env=list(hide_env), keep_env=list(keep_env))
    except LOAD_FAILURES as exc:  # the plugin's own failure, told as a setting that cannot work
        raise UsageError(f"{what}: the plugin's executor did not start: {exc}") from exc
    if not callable(getattr(made, "run", None)):  # every command had been an internal error
        raise UsageError(
            f"{what}: the plugin gave {repr(made)[:60]}, which is not an executor (no run); "
            "fix or uninstall the plugin, or unset the key for lathe's own"
        )
    return made


def _tell_what_full_mode_leaves_open(emit) -> None:
    """Once per LATHE_HOME, the first time a run uses --approval full."""
    from lathe.home import lathe_home
    from lathe.policy.full_mode import FULL_MODE_GAPS

    marker = lathe_home() / "full-mode-notice-shown"
    if marker.exists():
        return
    emit(
        Notice(
            level="warning",
            message="--approval full: commands run on this machine with no sandbox and no "
            "prompts, and only the command guard's deny list stands. It does not protect "
            f"against: {'; '.join(FULL_MODE_GAPS)}. (Shown once; `lathe run --help` "
            "repeats it.)",
        )
    )
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    except OSError:
        pass  # shown again next time: better than never


def _history_reveals(workspace: Path, rules: RuleSet, emit) -> bool:
    """Whether the repository's history holds a file a read rule denies; if so, commands
    must not see `.git` (`git show HEAD:.env` would print it), and the user is told."""
    from lathe.policy.history import denied_in_history

    found = denied_in_history(workspace, rules.denied_read_patterns())
    if found == []:
        return False
    why = (
        f"{', '.join(found[:3])}{' and more' if len(found) > 3 else ''}, which a read rule "
        "denies, is in the repository's history"
        if found
        else "git could not say in time whether files a read rule denies are in its history"
    )
    emit(
        Notice(
            level="warning",
            message=f"commands run without .git in this run: {why}, and `git show` would "
            "print it. Remove it from the history (git filter-repo) to give commands git back.",
        )
    )
    return True


def key_variables(setup: RunSetup) -> list[str]:
    """Every variable that may hold a model provider's key: commands never see them."""
    from lathe.config import KEY_OVERRIDE_ENV

    providers = setup.loaded.config.providers.values()
    names = {p.api_key_env for p in providers if p.api_key_env}
    # Variables a provider's headers take their values from (`Bearer ${PROXY_AUTH}`).
    names |= {m for p in providers for v in p.headers.values() for m in env_references(v)}
    if setup.model.api_key_env:
        names.add(setup.model.api_key_env)
    if setup.mcp_servers is not None:  # the secrets the servers that start take from it
        from lathe.mcptools.servers import secret_variables

        runnable = setup.mcp_servers.runnable()
        names |= {n for entry in runnable for n in secret_variables(entry, os.environ)}
    return sorted({KEY_OVERRIDE_ENV, *names})


def _hooks(
    setup: RunSetup,
    warn: Callable[[str], None],
    tools: ToolRegistry,
    *,
    hide_env: list[str],
    keep_env,
) -> list[AgentHooks]:
    """Config command hooks (run unsandboxed through the hook executor, with the
    environment commands get: no keys; `tools` say which of the run's tools a hook on
    `edit` or `read` also guards), then plugin hooks; they run after the gate."""
    from lathe.hooks.command import CommandHooks, hook_executor
    from lathe.hooks.plugins import load_plugin_hooks

    plugins, problems = load_plugin_hooks(setup.workspace, warn)
    for problem in problems:
        warn(problem)
    executor = hook_executor(hide_env=hide_env, keep_env=keep_env)
    config = setup.loaded.config.hooks
    return [CommandHooks(config, setup.workspace, executor, warn, tools), *plugins]


def hide_own_environment() -> None:
    """Make this process non-dumpable (Linux): its /proc/<pid>/environ, which holds the
    API key it was started with, is then readable by root alone, not by the commands it
    runs unsandboxed as the same user (full mode, hooks: `tr '\\0' '\\n' <
    /proc/$PPID/environ` printed the key). A child gets its own flag back at exec."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_dumpable = 4
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_dumpable, 0, 0, 0, 0)
