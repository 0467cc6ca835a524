"""Provider construction by kind. Concrete providers are imported only here, and only
the one in use, because their HTTP stacks (and Anthropic's SDK) are slow to import.

`make_provider` also queues the provider's warm-up on lathe's warm-up thread
(`lathe.warmup`, which runs it once the face calls `warmup.start()`): a run waits on
other things before its first model call (the baseline check; in the interactive app
the user typing), and importing the HTTP stack and building its client (about 0.5 s
for httpx2, 2 s for the anthropic SDK on this machine) overlaps that wait instead of
delaying the first request. The provider's lock makes the first real use wait for that
warm-up rather than start another; a warm-up that fails is left for that use to report,
through the one error-mapping boundary."""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lathe.errors import UsageError
from lathe.llm.base import Provider
from lathe.llm.timeouts import DEFAULT_TIMEOUTS, Timeouts


@dataclass(frozen=True)
class Wire:
    """What a model's wire needs beyond the protocol, from its profile; for the
    openai-compatible kind, whose provider takes these fields as keyword arguments."""

    stream_options: bool = True
    """Send stream_options (include_usage)."""
    max_tokens_field: str = "max_tokens"
    """The field carrying the output limit: "max_tokens" or "max_completion_tokens"."""
    thinking_in_text: bool = False
    """The model writes <think>...</think> into its text: split it off as thinking."""
    calls_per_reply: int | None = None
    """Stop reading a reply once the model starts a call past this many (None: never)."""


@dataclass(frozen=True)
class Endpoint:
    """Everything needed to build a provider; `api_key` is never logged or stored."""

    kind: str
    model_id: str
    base_url: str | None
    api_key: str = field(repr=False)
    api_key_env: str
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    timeouts: Timeouts = DEFAULT_TIMEOUTS
    tool_mode: str = "native"  # "json_schema": one constrained JSON action per reply
    wire: Wire = Wire()
    base_url_fix: str = "fix the base URL"  # named where it was set: `fix --base-url`


def _sdk_provider(
    module: str, class_name: str, *, takes_wire: bool = False
) -> Callable[[Endpoint], Provider]:
    """A factory for a provider whose constructor takes the endpoint's fields (with
    `takes_wire`, the fields of `Wire` too); the module is imported only when the
    factory is called."""

    def build(endpoint: Endpoint) -> Provider:
        provider_class = getattr(importlib.import_module(module), class_name)
        wire = dataclasses.asdict(endpoint.wire) if takes_wire else {}
        return provider_class(
            endpoint.model_id,
            endpoint.base_url,
            endpoint.api_key,
            api_key_env=endpoint.api_key_env,
            timeouts=endpoint.timeouts,
            extra_headers=dict(endpoint.headers),
            base_url_fix=endpoint.base_url_fix,
            **wire,
        )

    return build


def warm_up_in_background(provider: Provider) -> None:
    """Queue the provider's one-time setup (`Provider.warm_up`) on lathe's warm-up
    thread (`lathe.warmup`), so the client's imports overlap the sandbox probe, the prompt
    and the baseline check instead of delaying the first model call."""
    warm_up = getattr(provider, "warm_up", None)
    if warm_up is None:
        return
    from lathe.warmup import ahead, import_ahead

    ahead(warm_up)
    # The HTTP stack loads its event-loop backend at its first connection (20 ms).
    import_ahead("anyio._backends._asyncio")


_FACTORIES: dict[str, Callable[[Endpoint], Provider]] = {
    "openai-compatible": _sdk_provider(
        "lathe.llm.openai_chat", "OpenAIChatProvider", takes_wire=True
    ),
    "anthropic": _sdk_provider("lathe.llm.anthropic", "AnthropicProvider"),
}


def _plugin_factory(kind: str) -> Callable[[Endpoint], Provider] | None:
    """A `lathe.providers` plugin's factory for `kind`, read only for a kind lathe does
    not have itself (the entry points are not read otherwise)."""
    from lathe.plugins import PROVIDERS, named_factory

    return named_factory(PROVIDERS, kind, f"provider kind {kind!r}")


def register_provider_kind(kind: str, factory: Callable[[Endpoint], Provider]) -> None:
    _FACTORIES[kind] = factory


def _plugin_provider(factory: Callable[[Endpoint], Any], endpoint: Endpoint) -> Provider:
    """A plugin's provider; a UsageError, before the run starts, when its factory fails
    or gives something without a provider's methods (a traceback, or one mid-run)."""
    from lathe.plugins import LOAD_FAILURES

    what = f"provider kind {endpoint.kind!r}"
    try:
        provider = factory(endpoint)
    except LOAD_FAILURES as exc:
        raise UsageError(f"{what}: the plugin's provider did not start: {exc}") from exc
    if not all(callable(getattr(provider, name, None)) for name in ("stream", "aclose")):
        raise UsageError(
            f"{what}: the plugin gave {repr(provider)[:60]}, which is not a provider (no "
            "stream and aclose); fix or uninstall the plugin (`lathe plugins` lists them)"
        )
    return provider


def check_kind(kind: str) -> None:
    """A UsageError, as a run would raise it, when no factory (lathe's or a plugin's)
    serves provider `kind`: for `lathe doctor`, which must not pass what a run refuses."""
    if kind in _FACTORIES:
        return
    from lathe.plugins import PROVIDERS, names_in

    if kind not in names_in(PROVIDERS):
        kinds = ", ".join(sorted({*_FACTORIES, *names_in(PROVIDERS)}))
        raise UsageError(f"unknown provider kind {kind!r}; lathe knows {kinds}")


def make_provider(endpoint: Endpoint) -> Provider:
    check_kind(endpoint.kind)
    factory = _FACTORIES.get(endpoint.kind)
    if factory is not None:
        provider = factory(endpoint)
    else:  # a plugin's: what it gives is checked
        plugin = _plugin_factory(endpoint.kind)
        assert plugin is not None  # check_kind found it
        provider = _plugin_provider(plugin, endpoint)
    warm_up_in_background(provider)
    if endpoint.tool_mode == "json_schema":
        from lathe.llm.json_actions import JsonActionProvider

        return JsonActionProvider(provider)
    return provider
