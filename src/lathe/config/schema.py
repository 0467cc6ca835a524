"""The configuration schema: every key lathe reads, its type, default and meaning.

Each field's docstring (the string literal under it) is its documentation: `field_docs`
reads them, `lathe config init` writes them into the starter file, and a test checks
that no field lacks one. Unknown keys are errors everywhere (`extra="forbid"`).
"""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import math
import re
import textwrap
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from lathe.config import catalog
from lathe.config.secrets import (
    ENV_NAME,
    looks_like_secret,
    refuse_literal_headers,
    refuse_literal_secrets,
    refuse_url_secrets,
)

Approval = Literal["read-only", "ask", "auto", "full"]
# lathe's own kinds, or one a `lathe.providers` plugin adds: checked when the provider
# is made (llm/registry.py), where the plugins are known.
ProviderKind = str

_SERVER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}")
_NUMBER = r"(\d+(?:\.\d*)?|\.\d+)"
_DURATION = re.compile(rf"(?:{_NUMBER}h)?(?:{_NUMBER}m)?(?:{_NUMBER}s)?")
_TOKENS = re.compile(rf"{_NUMBER}([km]?)")


def valid_server_name(name: str) -> bool:
    """Whether `name` may name an MCP server: it becomes part of each tool's name
    (`mcp__NAME__TOOL`, which model APIs limit) and of file names under LATHE_HOME."""
    return bool(_SERVER_NAME.fullmatch(name)) and "__" not in name


def parse_duration(value: object) -> float:
    """Seconds in a duration: "90s", "10m", "1h30m" (parts in that order, spaces
    allowed), or plain seconds (90, "90", 2.5). More than 0. Raises ValueError naming
    the forms it takes."""
    problem = f"expected a duration like 90s, 10m or 1h30m, or plain seconds, got {value!r}"
    seconds = _number(value)
    if seconds is None and isinstance(value, str):
        match = _DURATION.fullmatch(value.lower().replace(" ", ""))
        if match and any(match.groups()):
            hours, minutes, secs = (float(part or 0) for part in match.groups())
            seconds = hours * 3600 + minutes * 60 + secs
    if seconds is None or not 0 < seconds < math.inf:
        raise ValueError(problem)
    return seconds


def parse_tokens(value: object) -> int:
    """A positive whole number of tokens: 50000, "50000", "50k", "1.5M". Raises
    ValueError saying what it takes."""
    problem = f"expected a number of tokens such as 50000 or 50k, got {value!r}"
    count = _number(value)
    if count is None and isinstance(value, str):
        match = _TOKENS.fullmatch(value.lower().replace(",", "").replace("_", "").strip())
        if match:
            count = float(match.group(1)) * {"": 1, "k": 1e3, "m": 1e6}[match.group(2)]
    if count is None or not 0 < count < math.inf or not float(count).is_integer():
        raise ValueError(problem)
    return int(count)


def parse_dollars(value: object) -> float:
    """A positive amount of US dollars: 0.5, "0.50", "$2". Raises ValueError saying
    what it takes."""
    problem = f"expected US dollars such as 0.50 or 2, got {value!r}"
    amount = _number(value.strip().removeprefix("$") if isinstance(value, str) else value)
    if amount is None or not 0 < amount < math.inf:
        raise ValueError(problem)
    return amount


def _unless_unset(parse):  # type: ignore[no-untyped-def]
    """A validator applying `parse` to a value that is set (None stays None)."""
    return BeforeValidator(lambda value: None if value is None else parse(value))


# Budget values, as the config and the flags take them ("50k", "10m", "$2").
Tokens = Annotated[int | None, _unless_unset(parse_tokens)]
Duration = Annotated[float | None, _unless_unset(parse_duration)]
Dollars = Annotated[float | None, _unless_unset(parse_dollars)]


def _number(value: object) -> float | None:
    """A plain number given as a number or as text; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and re.fullmatch(rf"\s*{_NUMBER}\s*", value):
        return float(value)
    return None


class Section(BaseModel):
    # Strict: `max_turns = true` is 1 and `network = "yes"` is True to a lax schema.
    model_config = ConfigDict(extra="forbid", strict=True)


def http_url_problem(url: str) -> str | None:
    """Why `url` cannot be a model endpoint, or None: it must be http(s)://host..."""
    from urllib.parse import urlsplit

    if not url.strip():
        return "empty URL"
    try:
        parts = urlsplit(url.strip())
    except ValueError as exc:
        return f"not a URL ({exc})"
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return "expected an http:// or https:// URL, e.g. http://127.0.0.1:8000/v1"
    return None


def _http_url(url: str) -> str:
    problem = http_url_problem(url)
    if problem:
        raise ValueError(problem)
    return url.strip()


HttpUrl = Annotated[str, AfterValidator(_http_url)]


def _command(text: str) -> str:
    # A blank command exits 0: run as a check it would report `verified` for anything.
    if not text.strip():
        raise ValueError("empty command; give a command to run, or leave it out for no check")
    return text


Command = Annotated[str, AfterValidator(_command)]


class ProviderConfig(Section):
    """One model endpoint: `[providers.NAME]`."""

    kind: ProviderKind = "openai-compatible"
    """Wire protocol: "openai-compatible" (chat completions), "anthropic" (Messages API),
    or a kind an installed provider plugin adds (`lathe plugins` lists them)."""

    base_url: HttpUrl | None = None
    """Endpoint URL, e.g. "http://127.0.0.1:8000/v1"."""

    api_key_env: str | None = None
    """NAME of the environment variable holding the API key (never the key itself);
    unset for servers that need no key. LATHE_API_KEY, when set, takes precedence."""

    headers: dict[str, str] = Field(default_factory=dict)
    """Extra HTTP headers sent with every request. Write ${VAR} to take a secret value
    from the environment at run time."""

    timeout_s: float = Field(default=600.0, gt=0)
    """Seconds one whole streamed reply may take, from sending the request to its last
    byte, before the attempt is abandoned (a Transport error the retry policy retries)."""

    idle_timeout_s: float = Field(default=120.0, gt=0)
    """Seconds without a byte from the server, before the reply starts or in the middle
    of it, before the attempt is abandoned and retried: a server that accepted the
    request and went quiet is caught long before timeout_s."""

    profile: str | None = None
    """Name of the [profiles] entry for this provider's models when their [models] entry
    names none, for requests to this provider's own base_url: a base_url override
    (--base-url) is another server, and so is a built-in provider moved elsewhere
    (OPENAI_BASE_URL) unless a layer names its profile too."""

    @field_validator("api_key_env")
    @classmethod
    def _names_a_variable(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if looks_like_secret(value):
            raise ValueError(
                "this looks like an API key itself; keys are never stored in config files. "
                "Export the key in an environment variable and put the variable's NAME here, "
                'e.g. api_key_env = "OPENAI_API_KEY"'
            )
        if not ENV_NAME.match(value):
            raise ValueError(
                "expected the name of an environment variable (letters, digits and _), "
                'e.g. api_key_env = "OPENAI_API_KEY"'
            )
        return value

    @field_validator("headers")
    @classmethod
    def _no_literal_secrets(cls, headers: dict[str, str]) -> dict[str, str]:
        return refuse_literal_headers(headers)


class ModelConfig(Section):
    """One model: `[models.NAME]`, picked with `--model NAME`."""

    provider: str
    """Name of the entry in [providers] that serves this model."""

    id: str | None = None
    """Model id sent on the wire; defaults to the entry's NAME."""

    context_window: int | None = Field(default=None, gt=0)
    """Tokens the model accepts (prompt plus reply); unset means a default by model family."""

    max_output_tokens: int | None = Field(default=None, gt=0)
    """Most tokens the model may write in one reply; unset means a default by model family."""

    input_price: float = Field(default=0.0, ge=0)
    """US dollars per million uncached input tokens (0 = unknown, cost reported as 0)."""

    output_price: float = Field(default=0.0, ge=0)
    """US dollars per million output tokens, reasoning included."""

    cached_input_price: float | None = Field(default=None, ge=0)
    """US dollars per million input tokens read from the prompt cache; unset = input_price."""

    cache_write_price: float | None = Field(default=None, ge=0)
    """US dollars per million tokens written to the prompt cache; unset = input_price."""

    profile: str | None = Field(default=None, examples=["small"])
    """Name of the [profiles] entry for this model, e.g. "small" for a model of a few
    billion parameters; unset: its provider's, else "default"."""


class ProfileConfig(Section):
    """What lathe does for one kind of model: `[profiles.NAME]`. Built in: "default",
    "small" (models of a few billion parameters), "local" (the embedded models: small,
    plus reasoning before calls) and "openai" (api.openai.com's wire). A table merges key
    by key over the built-in profile of its name; a new name starts from the defaults.
    A model gets the profile named by `profile` (or --profile), else by its [models]
    entry, else by its provider, else "default": never one for its window size."""

    workspace_snapshot_bytes: int = Field(default=8192, ge=0)
    """When every file of the workspace fits in this many bytes together (and in a
    quarter of the window, at about 3 bytes a token), their text goes into the system
    prompt; 0: never. Small models skip reading and edit from guesses otherwise."""

    reason_first: bool = False
    """Ask lathe's local chat template (`--model local`) for a sentence or two of
    reasoning before each tool call, when the system prompt holds the workspace's files.
    Sent as chat_template_kwargs, which only that template reads: set it only for a
    server running it (hosted APIs refuse the field)."""

    apply_reply_code: bool = False
    """With a verify command, after a "done" reply whose check fails: apply code the
    reply shows as edits, when a block is unmistakably a changed copy of part of one
    workspace file, then run the check again (small models show the fix instead of
    calling edit). agent.apply_reply_code, when set, overrides this."""

    write_may_replace: bool = True
    """Whether write may replace an existing file; false: write only creates files and
    every change goes through edit (small models rewrite whole files from memory)."""

    read_default_lines: int | None = Field(default=None, gt=0)
    """Lines read returns when the model gives no limit, when fewer than
    tools.read_default_lines; unset: that key alone. Every model also gets at most
    window/32 lines (at least 100), so one page leaves room for the conversation."""

    output_max_bytes: int | None = Field(default=None, gt=0)
    """Bytes of one tool output kept in context, when fewer than tools.output_max_bytes;
    unset: that key alone. Every model also gets at most window*4/5 bytes."""

    stream_options: bool = True
    """Send stream_options (include_usage) so a streamed reply reports its token usage.
    A server that rejects it gets the request again without it, for the rest of the run."""

    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    """Request field carrying the output limit: "max_tokens" (what compatible servers
    read) or "max_completion_tokens" (api.openai.com, whose newer models reject max_tokens)."""

    thinking_in_text: bool = False
    """The model writes its reasoning into the reply as <think>...</think> (Qwen3 or
    DeepSeek-R1 on a server without a reasoning parser): lathe takes it out as thinking,
    so it is neither shown as the answer nor sent back to the model."""

    temperature: float | None = Field(default=None, ge=0, le=2)
    """Sampling temperature sent with every request; unset: the server's default."""

    repeat_temperature: float | None = Field(default=None, ge=0, le=2)
    """The temperature of the requests after a reply that repeats an earlier one of the
    run (the same calls, code blocks or words), until a reply is new; unset: no change.
    At a low temperature a small model answers the same context the same way."""

    calls_per_reply: int | None = Field(default=None, gt=0)
    """Most tool calls taken from one reply: once the model starts one more, lathe
    closes the stream (the server stops generating) and runs those; unset: every call.
    Told to write one call a reply, the 1.5B wrote a dozen more, at a few tokens a
    second on a CPU, most of them the same command again."""

    subagents: bool = True
    """Offer the task tool, which hands a subtask to a child agent. Off for small models:
    writing a child a whole brief is beyond them, and the tool's description is prompt
    they read slowly."""

    prompts: str = "default"
    """The words lathe says to the model (system prompt, nudges, verify feedback,
    compaction instructions): a built-in template set ("default", or "small": a short
    system prompt), or the path of a folder of NAME.md templates that replace the
    default ones they name (a relative path starts at the workspace)."""

    tools: list[str] | None = None
    """The names of lathe's own tools the model is offered (built-in, memory, recall,
    skill); unset: all of them. Tools you add (plugins, MCP servers) are always offered.
    Every tool's schema is prompt a small model reads at a few dozen tokens a second."""

    tool_descriptions: Literal["full", "brief"] = "full"
    """How tools are described to the model: "full", or "brief" (one line each, and
    parameters without their descriptions), a fraction of the tokens."""

    snapshot_leave_out: list[str] = Field(default_factory=list, examples=[["tests/**"]])
    """Path patterns of files the workspace snapshot never holds (see
    workspace_snapshot_bytes); they stay listed and readable. Measured with the local
    1.5B: shown the tests, it copied their text into its edits or edited the tests."""

    verify_output_bytes: int | None = Field(default=None, gt=0)
    """Bytes of the verify command's output the model is shown, when fewer than the tool
    output limit: the lines that say what failed and the runner's summary, the whole in
    a file it can read; unset: that limit alone, as the head and the tail."""

    failure_code_bytes: int | None = Field(default=None, gt=0)
    """After a failing check's output, show in up to this many bytes the code it ran
    through: the functions its traceback names, and the definitions a failing test
    calls, numbered as read numbers them, from files the model may change and the
    snapshot leaves out of neither; unset, or when the snapshot already holds the code:
    none. The 1.5B edited from guesses rather than read the files a failure names."""


class AgentsConfig(Section):
    """Subagents: children a run starts with the task tool, each on its own copy of the
    workspace, reporting back a status, an answer and the files it changed."""

    max_parallel: int = Field(default=4, gt=0)
    """Children running at once; task calls beyond this wait for a free place."""

    max_depth: int = Field(default=2, gt=0)
    """How deep children may nest: 1 lets the run start children but children none; 2
    lets each child start children of its own, which may start none."""

    max_turns: int = Field(default=30, gt=0)
    """Most model turns of one child before it stops with status out_of_budget."""

    max_tokens: Tokens = Field(default=None, examples=["200k"])
    """Most tokens one child may use, like agent.max_tokens for a run; unset: no limit
    of its own."""

    timeout: Duration = Field(default=None, examples=["10m"])
    """Most wall time one child may take, like agent.timeout; unset: no limit of its own."""

    max_total_tokens: Tokens = Field(default=None, examples=["1M"])
    """Tokens all the children of a run may use together; once spent, a task call
    starts no child and the model is told to do the rest itself. Unset: no limit."""


class ServeConfig(Section):
    """`lathe serve`: the limits shared by all the sessions one server runs."""

    max_commands: int | None = Field(default=None, gt=0, examples=[4])
    """Commands running at once across every session (unset: the machine's core count);
    a command beyond it waits, with a `queued` event, for one to end."""

    max_model_calls: int = Field(default=8, gt=0)
    """Model requests in flight at once to one endpoint (a provider and base URL)
    across every session; a request beyond it waits, with a `queued` event."""

    any_endpoint: bool = False
    """Whether a client may give a session a base_url that is not on this machine: the
    session's model requests carry this server's key wherever the client points them."""


class AgentConfig(Section):
    """How a run proceeds and when it stops."""

    max_turns: int = Field(default=50, gt=0)
    """Most model turns in one run before it stops with status max_turns."""

    verify: Command | None = Field(default=None, examples=["pytest -q"])
    """Shell command lathe runs itself when the model says it is done (e.g. "pytest -q");
    a non-zero exit goes back to the model. Unset: no verification (an empty or blank
    command is an error, never a check)."""

    verify_timeout_s: float = Field(default=900.0, gt=0)
    """Seconds the verify command may run before it counts as failed."""

    verify_first: bool = True
    """With a verify command: run it once before the model's first turn too, and start
    the conversation with its result, so the model works from the real failure rather
    than a guess at it. Costs one more run of the check per conversation."""

    apply_reply_code: bool | None = Field(default=None, examples=[True])
    """With a verify command, after a "done" reply whose check fails: apply code the
    reply shows as edits, when a block is unmistakably a changed copy of part of one
    workspace file, then run the check again. Small models often show the fix instead
    of calling edit. Unset: the model profile's apply_reply_code."""

    attempts: int = Field(default=1, ge=1, le=20)
    """Headless runs with a verify command: how many times the run may start over when
    it ends without the check passing (stuck, failed or out of turns). Each new attempt
    begins from the workspace as the run found it, with a fresh conversation; it pays
    off with a small model that solves a task some of the times it tries. 1: never."""

    stall_repeat_limit: int = Field(default=3, ge=2)
    """The same tool call with the same arguments this many times in a row is a stall:
    the model is nudged once, then the run stops with status stuck."""

    max_cost_usd: Dollars = Field(default=None, examples=[1.0])
    """Most US dollars one run may spend on model replies, at the catalog prices; once
    reached, the run stops with status out_of_budget before its next request (resume it
    with `lathe run --continue` and a larger budget). Needs a model with prices. Unset:
    no limit."""

    max_tokens: Tokens = Field(default=None, examples=[200_000])
    """Most tokens one run may use (input, output and cache, over all its replies), as
    a number or like "50k"; once reached, the run stops with status out_of_budget before
    its next request. Unset: no limit."""

    timeout: Duration = Field(default=None, examples=["30m"])
    """Most wall time one run may take, like "90s", "10m", "1h30m" or plain seconds; it
    cuts a reply still streaming or a command still running, and the run stops with
    status out_of_budget. The attempts of one `lathe run --attempts N` share these
    three budgets. Unset: no limit."""


class RetryConfig(Section):
    """Retrying transient provider failures (rate limits, overload, dropped connections)."""

    max_attempts: int = Field(default=5, ge=1)
    """Attempts per model request, the first included; 1 disables retrying."""

    base_delay_s: float = Field(default=1.0, ge=0)
    """First backoff delay in seconds; doubled per attempt, with jitter."""

    max_delay_s: float = Field(default=60.0, ge=0)
    """Longest single wait in seconds, including a server's Retry-After."""


class ToolsConfig(Section):
    """Limits of the built-in tools."""

    bash_default_timeout_s: float = Field(default=120.0, gt=0)
    """Seconds a bash command may run when the model gives no timeout."""

    bash_max_timeout_s: float = Field(default=600.0, gt=0)
    """Longest timeout in seconds the model may ask bash for."""

    output_max_bytes: int = Field(default=30_000, gt=0)
    """Bytes of one tool output kept in context (head and tail); the rest is spilled to a
    file the model can page through."""

    read_default_lines: int = Field(default=2000, gt=0)
    """Lines `read` returns when the model gives no limit."""

    read_max_line_chars: int = Field(default=2000, gt=0)
    """Characters of one line `read` shows before cutting it."""

    @model_validator(mode="after")
    def _default_within_max(self) -> ToolsConfig:
        if self.bash_default_timeout_s > self.bash_max_timeout_s:
            raise ValueError(
                f"bash_default_timeout_s ({self.bash_default_timeout_s:g}) is larger than "
                f"bash_max_timeout_s ({self.bash_max_timeout_s:g})"
            )
        return self


class ContextConfig(Section):
    """Keeping the conversation within the model's window."""

    output_reserve_tokens: int = Field(default=16_384, ge=0)
    """Tokens kept free for the model's reply when assembling the prompt."""

    prune_budget_tokens: int = Field(default=40_000, ge=0)
    """Tokens of recent tool output kept verbatim; older tool outputs beyond this are
    pruned first when space runs short."""

    compaction: bool = True
    """Summarise the conversation when it nears the window (false: stop with an error)."""

    compact_threshold: float = Field(default=0.85, gt=0, le=1)
    """Fraction of the usable window at which compaction starts."""


class SandboxConfig(Section):
    """The sandbox commands run in."""

    engine: Literal["bubblewrap", "gvisor", "container"] = "bubblewrap"
    """bubblewrap: Linux namespaces (fast, the default); gvisor: gVisor's runsc, a kernel
    in user space between commands and the host's (a stronger boundary, slower start);
    container: a docker or podman container of the [container] table, with a toolchain
    of its own. All show commands the workspace the same way; `lathe doctor` says
    whether each works here."""

    network: bool = False
    """Whether sandboxed commands may use the network."""


class ContainerConfig(Section):
    """The container commands run in with `permissions.sandbox.engine = "container"`
    (`--sandbox container`): one per run, started at its first command, removed at its
    end, the workspace bound at its own path."""

    engine: Literal["docker", "podman"] = "docker"
    """The container engine's command."""

    image: str | None = Field(default=None, examples=["python:3.12"])
    """The image the container runs; it needs bash. Give this or rootfs."""

    rootfs: str | None = Field(default=None, examples=["/srv/rootfs"])
    """podman only: a folder used as the container's root through an overlay (the
    container's writes never reach it), instead of an image."""

    engine_args: list[str] = Field(default_factory=list, examples=[["--runtime", "runsc"]])
    """Options given to the engine before each of its commands, e.g. podman's
    ["--runtime", "runsc"] to run the container under gVisor."""


class PermissionsConfig(Section):
    """What lathe may do without asking."""

    approval: Approval = "ask"
    """read-only: no writes or commands; ask: confirm writes and commands; auto: run
    inside the workspace and sandbox, ask otherwise; full: never ask."""

    allow: list[str] = Field(default_factory=list)
    """Rules for calls that run without asking, e.g. "bash(git status)"."""

    deny: list[str] = Field(default_factory=list)
    """Rules for calls that are always refused; deny wins over allow."""

    ask: list[str] = Field(default_factory=list)
    """Rules for calls that always ask first (headless: refused), e.g. "bash(git push:*)"."""

    protect: list[str] = Field(
        default_factory=lambda: [
            ".envrc", ".vscode/", ".idea/", ".devcontainer/", ".husky/", ".githooks/",
            ".pre-commit-config.yaml",
        ]
    )  # fmt: skip
    """Paths (gitignore-style patterns) that make this machine run code later, such as
    editor tasks, direnv files and git hook folders: edit and write change them only
    with an explicit approval (a person's answer, or an allow rule naming the path);
    sandboxed commands see them read-only, and one that creates such a path has it moved
    aside. Always protected besides these: .git, .lathe/ and .mcp.json. Not enforced
    with approval full."""

    env_passthrough: list[str] = Field(default_factory=list, examples=[["GITHUB_TOKEN"]])
    """Secret-looking environment variables (names holding KEY, TOKEN, SECRET, PASSWORD,
    CREDENTIAL) that commands, the verify command and hooks may still see, by name or
    glob, e.g. ["GITHUB_TOKEN", "NPM_*"]. Every other one is removed from their
    environment; the provider's own key variables are removed always."""

    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    """Sandbox settings."""

    executor: str | None = Field(default=None, examples=["my-container"])
    """Name of an executor from an installed plugin (the `lathe.executors` entry-point
    group; `lathe plugins` lists them) that runs every command in place of lathe's own
    (bubblewrap, or the local one); unset: lathe's own. A project file needs trust to set it."""


class LocalConfig(Section):
    """The embedded local model (`--model local`)."""

    tool_mode: Literal["template", "json_schema"] = "template"
    """How the small model calls tools: "template" (lathe's chat template makes its
    fenced JSON calls parse as native tool calls) or "json_schema" (each reply is
    constrained to one JSON action with response_format)."""

    ctx_size: int = Field(default=8192, ge=2048)
    """Context window the server is started with, in tokens."""

    threads: int | Literal["auto"] = "auto"
    """Generation threads, or "auto": the cores not busy when the server starts (more
    threads than idle cores make generation slower, not faster)."""

    idle_timeout_s: float = Field(default=300.0, gt=0)
    """Seconds without a byte from the local server before an attempt is abandoned, in
    place of the provider's idle_timeout_s: llama-server sends nothing while it reads the
    prompt, which takes the 1.5B model on 2 cores up to ~180 s for a long one. The whole
    reply's limit stays providers.openai.timeout_s, the entry local models resolve to."""

    @field_validator("threads")
    @classmethod
    def _positive_threads(cls, value: int | str) -> int | str:
        if isinstance(value, int) and value < 1:
            raise ValueError('threads must be at least 1, or "auto"')
        return value


class HookCommand(Section):
    """A shell command run at an agent event; the event arrives as JSON on stdin."""

    command: str
    """The command, run with `bash -c` in the workspace (outside the sandbox)."""

    tools: list[str] = Field(default_factory=list)
    """pre_tool/post_tool only: the tool names it applies to; empty means every tool."""

    timeout_s: float = Field(default=30.0, gt=0)
    """Seconds before the hook and everything it started are stopped; a pre_tool hook
    that times out blocks the call."""


class HooksConfig(Section):
    """Commands run at agent events. pre_tool: exit 2 blocks the call (stderr is the
    reason the model sees) and JSON {"arguments": {...}} on stdout rewrites them;
    post_tool: JSON {"content": "..."} on stdout rewrites the result."""

    session_start: list[HookCommand] = Field(default_factory=list)
    """Run when a run starts."""

    pre_tool: list[HookCommand] = Field(default_factory=list)
    """Run before each tool call, after the policy gate allowed it."""

    post_tool: list[HookCommand] = Field(default_factory=list)
    """Run after each tool call."""

    stop: list[HookCommand] = Field(default_factory=list)
    """Run when a run ends."""


def _builtin_providers() -> dict[str, ProviderConfig]:
    return {name: ProviderConfig(**entry) for name, entry in catalog.PROVIDERS.items()}


def _builtin_models() -> dict[str, ModelConfig]:
    return {name: ModelConfig(**entry) for name, entry in catalog.MODELS.items()}


def _builtin_profiles() -> dict[str, ProfileConfig]:
    return {name: ProfileConfig(**entry) for name, entry in catalog.PROFILES.items()}


class SkillsConfig(Section):
    """Skills: folders holding a SKILL.md, in .lathe/skills/, the user's skills/ folder
    beside the user config file, and .claude/skills/."""

    prompt_share: float = Field(default=0.02, ge=0, le=0.5)
    """Share of the model's context window the list of skills (name and description)
    in the system prompt may take, at about 3 bytes a token. Skills past it are left
    out of the list with a line saying how many; the skill tool still lists and reads
    them all. 0: no list."""


class MemoryConfig(Section):
    """Instruction files (AGENTS.md and the like) and the memory the agent keeps across
    sessions."""

    instruction_files: list[str] = Field(
        default_factory=lambda: ["AGENTS.md", "CLAUDE.md"], min_length=1
    )
    """File names read as instructions in each folder from the repository root down to
    the working directory (and below it, when a tool first works there): the first name
    a folder has is read, the others not."""

    instructions_max_bytes: int = Field(default=32 * 1024, ge=0)
    """Bytes of instruction files a run reads in all; what does not fit is cut, with a
    notice that says where."""

    memory_max_bytes: int = Field(default=8 * 1024, gt=0)
    """Bytes one memory file (project or user) may hold; a write past it is refused and
    the model is asked to consolidate its entries."""

    tools: bool = True
    """Give the model the `memory` and `recall` tools (false: memory is still read into
    the prompt, but the model cannot write it or search earlier sessions)."""


class McpServerConfig(Section):
    """One MCP server: `[mcp.servers.NAME]`, its tools offered as `mcp__NAME__TOOL`.
    Give `command` (a local server over stdio) or `url` (a remote one), not both."""

    command: str | None = Field(default=None, examples=["npx"])
    """Program that runs the server over stdio, e.g. "npx" or "uvx"."""

    args: list[str] = Field(default_factory=list)
    """Its arguments, e.g. ["-y", "@modelcontextprotocol/server-github"]."""

    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables for the server, beside HOME, PATH, SHELL, TERM, USER and
    LOGNAME (nothing else of lathe's environment reaches it). Write ${VAR} to take a
    secret from lathe's environment when the server starts; it is never stored."""

    cwd: str | None = None
    """Directory the server runs in (a relative path starts at the workspace); unset:
    the workspace."""

    url: str | None = Field(default=None, examples=["https://mcp.example.com/mcp"])
    """Endpoint of a remote server (streamable HTTP, with the legacy SSE transport as a
    fallback). A key it carries is written ${VAR} (`?api_key=${MCP_KEY}`), never itself."""

    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP headers sent to `url`; write "Bearer ${TOKEN}" to take a secret from the
    environment at use time."""

    transport: Literal["auto", "streamable-http", "sse"] = "auto"
    """For `url`: "streamable-http", "sse" (the legacy transport), or "auto": streamable
    HTTP, then SSE when the server refuses it."""

    enabled: bool = True
    """false: the server is never started and its tools are not offered."""

    startup_timeout_s: float = Field(default=30.0, gt=0)
    """Seconds the server may take to start and answer the handshake (npx servers that
    download themselves need more than 10)."""

    tool_timeout_s: float = Field(default=120.0, gt=0)
    """Seconds one tool call may take before it fails (an error result the model sees)."""

    include_tools: list[str] = Field(default_factory=list)
    """Glob patterns (`list_*`) of the server's tool names to offer; empty: all."""

    exclude_tools: list[str] = Field(default_factory=list)
    """Glob patterns of the server's tool names never to offer (after include_tools)."""

    @field_validator("headers")
    @classmethod
    def _no_literal_secret_headers(cls, headers: dict[str, str]) -> dict[str, str]:
        return refuse_literal_headers(headers)

    @field_validator("env")
    @classmethod
    def _no_literal_secrets(cls, values: dict[str, str]) -> dict[str, str]:
        return refuse_literal_secrets(values)

    @field_validator("url")
    @classmethod
    def _no_secret_in_url(cls, url: str | None) -> str | None:
        return None if url is None else refuse_url_secrets(url)

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError(
                "give either command (a server run over stdio) or url (a remote server)"
            )
        return self


class McpConfig(Section):
    """Model Context Protocol servers whose tools the agent may use."""

    servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    """Servers by NAME (letters, digits, _ and -). A project's `.mcp.json` adds its
    `mcpServers`; servers a project file declares start only once trusted."""

    schema_share: float = Field(default=0.10, gt=0, le=1)
    """Share of the model's window the MCP tools' schemas may take; past it, only their
    names and one-line descriptions are sent, with a tool_search tool for the schemas."""

    trust_project_servers: bool = False
    """true (in the user file): start the MCP servers any project declares without
    asking. Off: each project's servers need trust once (--trust-project-mcp)."""

    @field_validator("servers")
    @classmethod
    def _names_fit_tool_names(
        cls, servers: dict[str, McpServerConfig]
    ) -> dict[str, McpServerConfig]:
        for name in servers:
            if not valid_server_name(name):
                raise ValueError(
                    f"server name {name!r} must be letters, digits, _ and - (no double _): "
                    "it becomes part of each tool's name, mcp__NAME__TOOL"
                )
        return servers


class Config(Section):
    """Everything lathe reads from config files, the environment and flags."""

    model: str = catalog.DEFAULT_MODEL
    """Model to use: a name from [models], or PROVIDER/MODEL-ID for any model a provider
    serves that the catalog does not list."""

    provider: str | None = Field(default=None, examples=["ollama"])
    """Provider to send `model` to, overriding the one its [models] entry names; `model`
    is then the wire id unless it names a [models] entry of this provider."""

    base_url: HttpUrl | None = Field(default=None, examples=["http://127.0.0.1:8000/v1"])
    """Endpoint overriding the selected provider's base_url. With it, a model name that
    is not in [models] is sent as-is to this OpenAI-compatible endpoint."""

    profile: str | None = Field(default=None, examples=["small"])
    """Name of the [profiles] entry for whatever model is selected, over the one its
    [models] entry or provider names: e.g. "small" in the project file of a repository
    you work on with a 7B model on your own server. It applies to every model, so in
    the user file prefer a [models.NAME] entry's or a provider's profile."""

    agent: AgentConfig = Field(default_factory=AgentConfig)
    """Run behaviour."""

    agents: AgentsConfig = Field(default_factory=AgentsConfig)
    """Subagents: the task tool's children."""
    serve: ServeConfig = Field(default_factory=ServeConfig)
    """`lathe serve`: limits shared by all of a server's sessions."""

    container: ContainerConfig = Field(default_factory=ContainerConfig)
    """The container of the container sandbox."""

    retry: RetryConfig = Field(default_factory=RetryConfig)
    """Retry policy for provider requests."""

    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    """Tool limits."""

    context: ContextConfig = Field(default_factory=ContextConfig)
    """Context budget."""

    permissions: PermissionsConfig = Field(default_factory=PermissionsConfig)
    """Approval and sandbox."""

    local: LocalConfig = Field(default_factory=LocalConfig)
    """The embedded local model's server and tool-calling mode."""

    hooks: HooksConfig = Field(default_factory=HooksConfig)
    """Commands run at agent events (session_start, pre_tool, post_tool, stop)."""

    providers: dict[str, ProviderConfig] = Field(default_factory=_builtin_providers)
    """Model endpoints by name; entries merge key by key over the built-in ones."""

    models: dict[str, ModelConfig] = Field(default_factory=_builtin_models)
    """Models by name; entries merge key by key over the built-in ones."""

    profiles: dict[str, ProfileConfig] = Field(default_factory=_builtin_profiles)
    """Model profiles by name; entries merge key by key over the built-in ones."""

    skills: SkillsConfig = Field(default_factory=SkillsConfig)
    """Skills the model is told about and reads with the skill tool."""

    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    """Instruction files and the agent's memory across sessions."""

    mcp: McpConfig = Field(default_factory=McpConfig)
    """MCP servers and how much of the window their tool schemas may take."""


@functools.cache
def field_docs(cls: type[BaseModel]) -> dict[str, str]:
    """Each field of `cls` mapped to its docstring, read from the class's source.

    Read when documentation is wanted, not at import: pydantic's own
    `use_attribute_docstrings` parses every section's source on each start-up."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    docs: dict[str, str] = {}
    for node, following in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[node.target.id] = inspect.cleandoc(following.value.value)
    return docs


def all_sections() -> list[type[BaseModel]]:
    """Every model class in the schema, for documentation and its tests."""
    seen: list[type[BaseModel]] = []
    pending: list[Any] = [Config]
    while pending:
        cls = pending.pop()
        if cls in seen:
            continue
        seen.append(cls)
        for field in cls.model_fields.values():
            pending.extend(_models_in(field.annotation))
    return seen


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in getattr(annotation, "__args__", ()) for m in _models_in(arg)]
