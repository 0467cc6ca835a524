"""From command-line options to a ready run: config layers, model, endpoint, settings.
Shared by `lathe run` and the interactive face."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lathe.errors import UsageError

if TYPE_CHECKING:
    from lathe.config import Config, LoadedConfig, ResolvedModel
    from lathe.config.trust import ProjectSettings
    from lathe.llm.registry import Endpoint
    from lathe.mcptools.servers import DeclaredServers
    from lathe.words import Words


@dataclass
class RunOptions:
    workspace: Path = Path(".")
    model: str | None = None
    base_url: str | None = None
    profile: str | None = None  # a [profiles] entry for the selected model, over its own
    max_turns: int | None = None
    verify: str | None = None
    attempts: int | None = None
    # Run budgets as typed (`lathe.ui.budgets` parses them): US dollars, tokens, a duration.
    max_cost: str | None = None
    max_tokens: str | None = None
    timeout: str | None = None
    approval: str | None = None
    sandbox: str | None = None  # permissions.sandbox.engine
    overrides: Sequence[str] = ()
    allow: Sequence[str] = ()
    deny: Sequence[str] = ()
    resume: str | None = None
    continue_last: bool = False
    trust_project: bool = False  # trust (and remember) the project file's settings
    trust_project_mcp: bool = False  # trust (and remember) the project's MCP servers
    mcp_eager: bool = False  # start every MCP server when the session starts
    wait: bool = False  # another run holds the workspace: wait for it instead of refusing
    headless: bool = True
    # Asks the user whether to trust a project file's settings (interactive faces only).
    ask_trust: Callable[[ProjectSettings], bool] | None = None


@dataclass
class RunSetup:
    options: RunOptions
    workspace: Path
    loaded: LoadedConfig
    model: ResolvedModel
    endpoint: Endpoint
    notices: list[str] = field(default_factory=list)  # told to the user once the run starts
    # The MCP servers declared for the workspace, their trust decided (lathe.mcptools).
    mcp_servers: DeclaredServers | None = None
    # The workspace the user gave, when this run works in a copy of it (a subagent's
    # worktree): the project's memory and instruction files are that workspace's.
    user_workspace: Path | None = None
    # The session a `--continue` or `--resume` run goes on with, and what it keeps of it.
    continued: Continued | None = None

    @property
    def project_workspace(self) -> Path:
        """Where the project's memory and instruction files are looked up."""
        return self.user_workspace or self.workspace

    def secrets(self) -> list[str]:
        """Every secret value the run's requests carry: the model's key and secret
        headers, and what the MCP servers' settings take from the environment."""
        servers = self.mcp_servers.secrets() if self.mcp_servers is not None else []
        return [*self.model.secrets(), *servers]

    def words(self) -> Words:
        """What lathe says to the model in this run: its model profile's template set."""
        from lathe.words import load_words

        return load_words(self.model.profile.settings.prompts, self.workspace)

    @property
    def approval(self) -> str:
        """The approval mode: the configured one, or the face's default when the user
        set none (`auto` headless, `ask` interactive)."""
        return effective_approval(self.loaded, headless=self.options.headless)


@dataclass(frozen=True)
class Continued:
    """The session a run goes on with, and the settings its last run started
    with that this one keeps (`entries.recorded_run`), by option name: those the user
    did not give again by a flag, a variable or a config file, and an approval only when
    it is `read-only` (`_continued`)."""

    session_id: str
    kept: dict[str, Any]
    unsaid: str = ""  # why the session cannot say what it ran with (an older lathe's)
    # The session's approval, looser than this face's default, that the run did not take,
    # said with how to have it: "approval full was not carried over: give ...".
    not_carried: str = ""

    def said(self) -> str:
        """What the run keeps, and the looser approval it did not take, in one line;
        empty when it keeps nothing and leaves nothing looser behind."""
        if self.unsaid:
            return f"session {self.session_id} goes on with this run's settings: {self.unsaid}"
        kept = dict(self.kept)
        model, base_url = kept.pop("model", None), kept.pop("base_url", None)
        said = [f"model {model}"] if model else []
        if base_url:
            said.append(f"{said.pop()} at {base_url}" if said else f"endpoint {base_url}")
        said += [f"{_SAID[name]} {value}" for name, value in kept.items()]
        line = f"continuing session {self.session_id}"
        if said:
            line += f" with {', '.join(said)} (from the session)"
        if self.not_carried:
            return f"{line}; {self.not_carried}"
        return line if said else ""


# Each recorded run setting: the config key the user gives it by, and the words for it
# (`Continued.said`).
_KEYS = {"model": "model", "base_url": "base_url", "approval": "permissions.approval",
         "verify": "agent.verify", "max_turns": "agent.max_turns"}  # fmt: skip
_SAID = {"approval": "approval", "verify": "check", "max_turns": "max turns"}
# By `RunOptions.headless`: the approval modes no looser than that face's default
# (`effective_approval`: `auto` headless, `ask` in the app). A session's mode other than
# these is said not carried over (`_continued`).
_NO_LOOSER = {True: ("read-only", "ask", "auto"), False: ("read-only", "ask")}


def effective_approval(loaded: LoadedConfig, *, headless: bool) -> str:
    if loaded.origin("permissions.approval") == "default":
        return "auto" if headless else "ask"
    return loaded.config.permissions.approval


def prepare(options: RunOptions) -> RunSetup:
    """Raises UsageError with a message naming what to change."""
    from lathe.config import load_config, resolve_model
    from lathe.ui.budgets import budget_flags, check_cost_budget

    workspace = _workspace(options.workspace)
    flags = {
        "model": options.model,
        "base_url": options.base_url,
        "profile": options.profile,
        "agent.max_turns": options.max_turns,
        "agent.verify": options.verify,
        "agent.attempts": options.attempts,
        "permissions.approval": options.approval,
        "permissions.sandbox.engine": options.sandbox,
        **budget_flags(options),
    }
    loaded = load_config(workspace, flags=flags, overrides=options.overrides)
    continued = _continued(options, workspace, loaded)
    if continued is not None and continued.kept:
        kept = {_KEYS[name]: value for name, value in continued.kept.items()}
        loaded = load_config(workspace, flags=flags | kept, overrides=options.overrides)
        if "model" in continued.kept and not is_local_model(loaded.config.model):
            _check_kept_model(loaded.config, continued.session_id)
    if options.sandbox and effective_approval(loaded, headless=options.headless) == "full":
        raise UsageError(
            f"--sandbox {options.sandbox} has no effect with --approval full, which runs "
            f"commands with no sandbox; use --approval auto to run them in {options.sandbox} "
            "without asking"
        )
    _check_project_trust(loaded, options)
    notices: list[str] = []
    name = loaded.config.model
    if not is_local_model(name) and loaded.origin("model") == "default":
        name = _local_default(loaded, notices) or name
    local = is_local_model(name)
    if local:
        model = _local_model(loaded, name)
    else:  # with the origins, errors name where the base URL was set
        model = resolve_model(loaded.config, origins=loaded.origins)
    check_cost_budget(loaded, model)
    endpoint = endpoint_for(model)
    if local and loaded.config.local.tool_mode == "json_schema":
        endpoint = dataclasses.replace(endpoint, tool_mode="json_schema")
    setup = RunSetup(options, workspace, loaded, model, endpoint, continued=continued)
    setup.notices = notices
    setup.mcp_servers = _mcp_servers(loaded, workspace, options)
    return setup


def _continued(options: RunOptions, workspace: Path, loaded: LoadedConfig) -> Continued | None:
    """For a `--continue` or `--resume` (headless or in the app): the session, and the
    settings of its last run that `loaded` does not set (`Continued`); None when there is
    none to continue. Never a default in place of what the session ran with: a setting it ran
    with that its file keeps masked (an endpoint holding credentials, a check holding a
    secret) is a UsageError until the user gives it again. A file an older lathe wrote
    says none: the run goes on as set now, as it always did, and says so.

    Its approval is kept only when it is `read-only`, tighter than every face's default:
    the file records the mode in effect, the face's default included, so a looser one
    was not necessarily chosen (a headless run's default `auto` continued in the app
    wrote files unasked, its `full` ran commands unsandboxed) and the app's `ask` in a
    headless run refuses every edit. One looser than this face's default is said."""
    if not (options.resume or options.continue_last):
        return None
    from lathe.home import lathe_home
    from lathe.session import SessionStore
    from lathe.session.entries import recorded_run

    store = SessionStore(lathe_home())
    if options.resume:
        session = store.open(options.resume, readonly=True)
    else:
        session = store.latest(workspace, readonly=True)
    if session is None:
        return None
    with session:
        session.check_workspace(workspace)
        recorded = recorded_run(session.branch(), session.header.model)
    if not recorded.settings_said:  # nothing to go by: this run's own, and said so
        return Continued(session.id, {}, unsaid=recorded.unsaid[0][1])
    given = {name for name, key in _KEYS.items() if loaded.origin(key) != "default"}
    for names, why in recorded.unsaid:  # a masked base_url or verify: its flag
        if missing := [name for name in names if name not in given]:
            flags = " and ".join(f"--{name.replace('_', '-')}" for name in missing)
            raise UsageError(
                f"session {session.id} cannot be continued as it ran: {why}; continue it "
                f"giving {flags} again"
            )
    kept = {name: value for name, value in recorded.options.items() if name not in given}
    not_carried = ""
    if (approval := kept.get("approval")) != "read-only":
        kept.pop("approval", None)
        if approval is not None and approval not in _NO_LOOSER[options.headless]:
            also = "" if options.headless else f" (or /approval {approval})"
            not_carried = (
                f"approval {approval} was not carried over: give --approval {approval}"
                f"{also} to go on with it"
            )
    return Continued(session.id, kept, not_carried=not_carried)


def _check_kept_model(config: Config, session_id: str) -> None:
    """A model a session ran with, carried over, that the config no longer knows is a
    UsageError naming the session; any other error of it is said where the model is
    resolved for the run."""
    from lathe.config import resolve_model
    from lathe.config.resolve import UnknownModel

    try:
        resolve_model(config)
    except UnknownModel:
        raise UsageError(
            f"session {session_id} ran with model {config.model}, which is not configured "
            "now; give --model"
        ) from None
    except UsageError:
        pass


def _mcp_servers(loaded: LoadedConfig, workspace: Path, options: RunOptions) -> DeclaredServers:
    """The workspace's MCP servers; a project's servers run once trusted:
    --trust-project-mcp trusts them now, an interactive session asks, and otherwise they
    are not started (a notice says how to trust them)."""
    from lathe.mcptools.servers import declared_servers

    return declared_servers(
        loaded, workspace, trust_now=options.trust_project_mcp, ask=options.ask_trust
    )


def _check_project_trust(loaded: LoadedConfig, options: RunOptions) -> None:
    """Settings of the project file that reach outside the sandbox apply only once
    trusted: --trust-project trusts them now; an interactive session asks; a headless
    run stops before anything runs (UsageError naming how to trust them)."""
    from lathe.config.trust import trust, untrusted_message, untrusted_settings
    from lathe.home import lathe_home

    sandboxed = _commands_sandboxed(loaded, options)
    settings = untrusted_settings(loaded, lathe_home(), commands_sandboxed=sandboxed)
    if settings is None:
        return
    if options.trust_project or (options.ask_trust and options.ask_trust(settings)):
        trust(lathe_home(), settings)
        return
    raise UsageError(untrusted_message(settings, lathe_home()))


def _commands_sandboxed(loaded: LoadedConfig, options: RunOptions) -> bool:
    """Whether commands (the verify command among them) will run in the sandbox."""
    if effective_approval(loaded, headless=options.headless) not in ("ask", "auto", "read-only"):
        return False
    from lathe.exec.sandboxes import configured_sandbox, sandbox_status

    return sandbox_status(*configured_sandbox(loaded.config)).available


def is_local_model(name: str) -> bool:
    """Whether `name` asks for the embedded local model (`local`, `local/1.5b`): what
    run starts or reuses a server for, and doctor checks as run would."""
    return name == "local" or name.startswith("local/")


def _local_default(loaded: LoadedConfig, notices: list[str]) -> str | None:
    """With no model chosen and no key for the default one, the installed local model
    is the default; say so once per LATHE_HOME."""
    from lathe.config import resolve_model
    from lathe.local import DEFAULT_MODEL, is_installed
    from lathe.local.models import local_dir

    default = resolve_model(loaded.config)
    if default.api_key() or not default.api_key_env or not is_installed(DEFAULT_MODEL):
        return None
    marker = local_dir() / "default-notice-shown"
    if not marker.exists():
        notices.append(
            f"no API key is set ({default.api_key_env}), so lathe uses the installed local "
            f"model local/{DEFAULT_MODEL}. Set the key or pass --model to use another."
        )
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    return f"local/{DEFAULT_MODEL}"


def _local_model(loaded: LoadedConfig, name: str) -> ResolvedModel:
    """Start (or reuse) the managed llama-server and describe it as an OpenAI-compatible
    model whose window is the server's context size and whose profile is the local
    model's own unless a key names one."""
    from lathe.config import resolve_model
    from lathe.local import ServerOptions, ensure_local_server, get_model

    settings = loaded.config.local
    known = get_model(name)
    options = ServerOptions(
        ctx_size=settings.ctx_size,
        threads=None if settings.threads == "auto" else settings.threads,
        chat_template="lathe" if settings.tool_mode == "template" else "stock",
    )
    local = ensure_local_server(name, options=options)
    resolved = resolve_model(
        loaded.config,
        local.model,
        base_url_override=local.base_url,
        fallback_profile=known.profile,
    )
    return dataclasses.replace(
        resolved,
        provider="local",
        name=f"local/{known.name}",
        # The server's own window: a warm one started with another size is reused.
        context_window=local.ctx_size,
        # A reply of an eighth of the window is room for any edit; more is a small
        # model rambling, at a few tokens a second on a CPU.
        max_output_tokens=min(resolved.max_output_tokens, local.ctx_size // 8),
        api_key_env=None,
        idle_timeout_s=settings.idle_timeout_s,
        idle_timeout_key="local.idle_timeout_s",
    )


def endpoint_for(model: ResolvedModel) -> Endpoint:
    from lathe.config import is_loopback
    from lathe.llm.registry import Endpoint, Wire
    from lathe.llm.timeouts import Timeouts

    problem = model.key_problem()
    if problem:  # sent, it fails with the key quoted, or crashes the HTTP client
        raise UsageError(problem)
    api_key = model.api_key()
    key_env = model.key_variable() or model.api_key_env or ""
    if not api_key:
        if model.api_key_env and not is_loopback(model.base_url):
            raise UsageError(
                f"no API key for {model.provider} ({model.shown_url}): set {model.api_key_env} "
                "(or LATHE_API_KEY) to your key, or choose another model with --model"
            )
        from lathe.llm.errors_map import NO_KEY

        api_key = NO_KEY  # local servers (llama.cpp, Ollama, vLLM) accept anything
    wire = model.profile.settings
    return Endpoint(
        kind=model.kind,
        model_id=model.model_id,
        base_url=model.base_url,
        api_key=api_key,
        api_key_env=key_env or "LATHE_API_KEY",
        headers=model.headers,
        base_url_fix=model.base_url_fix,
        timeouts=Timeouts(
            total_s=model.timeout_s,
            idle_s=model.idle_timeout_s,
            total_key=model.timeout_key,
            idle_key=model.idle_timeout_key,
        ),
        wire=Wire(
            stream_options=wire.stream_options,
            max_tokens_field=wire.max_tokens_field,
            thinking_in_text=wire.thinking_in_text,
            calls_per_reply=wire.calls_per_reply,
        ),
    )


def _workspace(path: Path) -> Path:
    resolved = path.expanduser().resolve()
    if not resolved.is_dir():
        raise UsageError(f"the workspace {path} is not a directory; pass an existing one with -C")
    return resolved
