"""Turning a model name into everything a provider needs to talk to it.

Rules, in order (`name` defaults to `config.model`, the overrides to `config.provider`
and `config.base_url`):

1. A provider override: `name` is that provider's [models] entry when one has that
   name, else the wire id as-is (a leading "PROVIDER/" is dropped).
2. A [models] entry called `name`.
3. A base_url override: `name` is sent as-is to that OpenAI-compatible endpoint, with
   the `openai` provider's key variable and headers (the `--base-url` + `--model` case).
4. `PROVIDER/ID`: the id as-is on that provider, for models the catalog does not list.
5. Anything else is a UsageError listing near matches.

Ids not in the catalog get a context window and output limit by model family and are
priced at 0 (`prices.known` is False). Each model gets its profile here too
(`lathe.config.profiles`).
"""

from __future__ import annotations

import dataclasses
import os
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field

from lathe.config.catalog import family_limits
from lathe.config.cost import Prices, cost_usd
from lathe.config.keys import KeyPath, parse_key
from lathe.config.loader import Origin, flag_name
from lathe.config.profiles import Profile, resolve_profile, same_host
from lathe.config.schema import Config, ModelConfig, ProviderKind
from lathe.config.secrets import env_references, expand_references
from lathe.errors import UsageError
from lathe.types import Usage


class UnknownModel(UsageError):
    """`resolve_model` finds no model of the name: not in `[models]`, no base URL or
    provider to send it to, or a `PROVIDER/` prefix no provider is configured for."""


# Takes precedence over every provider's own key variable: one place to put the key for
# a proxy or a one-off run.
KEY_OVERRIDE_ENV = "LATHE_API_KEY"


@dataclass(frozen=True)
class ResolvedModel:
    provider: str
    """Name of the [providers] entry."""
    kind: ProviderKind
    base_url: str
    model_id: str
    """The id sent on the wire."""
    context_window: int
    max_output_tokens: int
    prices: Prices
    api_key_env: str | None
    """Variable the key is read from; None when the endpoint needs no key."""
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    """Extra headers with ${VAR} references expanded: may hold secrets, so kept out of repr."""
    timeout_s: float = 600.0
    """Seconds one whole reply may take, per attempt."""
    idle_timeout_s: float = 120.0
    """Seconds without a byte from the server before an attempt is abandoned."""
    timeout_key: str = "timeout_s"
    """The config key that sets `timeout_s`, for the error a user sees to name."""
    idle_timeout_key: str = "idle_timeout_s"
    """The config key that sets `idle_timeout_s`."""
    name: str | None = None
    """The [models] entry used, or None for an unlisted id."""
    header_secrets: tuple[str, ...] = field(default=(), repr=False)
    """Values that ${VAR} references in `headers` expanded to."""
    profile: Profile = field(default_factory=Profile)
    """What the loop, the prompt and the wire do for this model."""
    base_url_key: str = ""
    """The config key `base_url` was read from (`base_url`, or `providers.NAME.base_url`);
    empty when the caller gave the URL (lathe's own local server)."""
    base_url_origin: Origin | None = None
    """Where that key was set, when the caller passed the config's origins."""

    def api_key(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The value of `key_variable`, without surrounding whitespace (the newline of a
        key read from a file); None when no variable is set. Whether a missing key is
        fatal is the provider's call: local servers need none. `key_problem` says what
        else keeps the key from being sent."""
        environ = os.environ if environ is None else environ
        variable = self.key_variable(environ)
        return environ[variable].strip() if variable else None

    def key_variable(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The variable the key is read from: LATHE_API_KEY if set, else the provider's
        key variable if set; None when neither is."""
        environ = os.environ if environ is None else environ
        if environ.get(KEY_OVERRIDE_ENV):
            return KEY_OVERRIDE_ENV
        if self.api_key_env and environ.get(self.api_key_env):
            return self.api_key_env
        return None

    def key_problem(self, environ: Mapping[str, str] | None = None) -> str | None:
        """Why the key set cannot be sent, in one line naming its variable and never its
        value (a control or a non-ASCII character; for a remote server also a space
        inside, or nothing but spaces); None when it can, or when none is set. A server
        on this machine (llama.cpp, vLLM) takes any key, so a placeholder such as " " or
        "not needed" is no problem there: it had stopped every run."""
        from lathe.net import is_loopback

        variable = self.key_variable(environ)
        key = self.api_key(environ)
        if variable is None or key is None:
            return None
        remote = not is_loopback(self.base_url)
        if not key:
            return (
                f"{variable} is set but blank; set it to your key, or unset it" if remote else None
            )
        problem = unsendable(key, spaces=remote)
        return f"{variable} {problem}; set it to the key alone" if problem else None

    def secrets(self, environ: Mapping[str, str] | None = None) -> list[str]:
        """Every secret value this model's requests carry, for masking wherever lathe writes."""
        from lathe.config.secrets import url_secrets

        key = self.api_key(environ)
        found = [v for v in self.header_secrets if v] + url_secrets(self.base_url)
        return [key, *found] if key else found

    @property
    def shown_url(self) -> str:
        """`base_url` as output may show it: credentials in it masked."""
        from lathe.config.secrets import masked_url

        return masked_url(self.base_url)

    @property
    def base_url_fix(self) -> str:
        """What to change when nothing answers at `base_url`, named where it was set:
        `fix --base-url`, `fix LATHE_BASE_URL`, `fix -c base_url`, `fix
        providers.ollama.base_url in FILE`, `set providers.ollama.base_url` for a
        default, `fix providers.ollama.base_url` when the origin is not known."""
        key, origin = self.base_url_key, self.base_url_origin
        if not key:
            return "fix the base URL"
        if origin is None:
            return f"fix {key}"
        if origin.layer == "default":
            return f"set {key}"
        if origin.layer == "flag":
            return f"fix {flag_name(key)}"
        if origin.layer == "env":
            return f"fix {origin.source}"
        if origin.layer in ("user", "project"):
            return f"fix {key} in {origin.source}"
        return f"fix {origin}"  # -c KEY

    @property
    def input_includes_cache(self) -> bool:
        """Whether reported input tokens already count cache hits. Every provider lathe
        ships normalises `Usage` so they do not (see `lathe.types.Usage`)."""
        return False

    def cost(self, usage: Usage) -> float:
        return cost_usd(usage, self.prices, input_includes_cache=self.input_includes_cache)


def resolve_model(
    config: Config,
    name: str | None = None,
    base_url_override: str | None = None,
    *,
    provider: str | None = None,
    environ: Mapping[str, str] | None = None,
    fallback_profile: str = "default",
    origins: Mapping[KeyPath, Origin] | None = None,
) -> ResolvedModel:
    """Resolve `name` (default `config.model`) by the rules in the module docstring.
    `fallback_profile`: the profile when no key names one (setup names "local" for the
    embedded models). `origins` (`LoadedConfig.origins`) lets the model's errors name
    where its base URL was set (`ResolvedModel.base_url_fix`)."""
    resolved = _resolve(
        config, name, base_url_override, provider=provider, environ=environ,
        fallback_profile=fallback_profile,
    )  # fmt: skip
    if base_url_override:
        return resolved
    key = "base_url" if config.base_url else f"providers.{resolved.provider}.base_url"
    origin = (origins or {}).get(parse_key(key))
    return dataclasses.replace(resolved, base_url_key=key, base_url_origin=origin)


def _resolve(
    config: Config,
    name: str | None,
    base_url_override: str | None,
    *,
    provider: str | None,
    environ: Mapping[str, str] | None,
    fallback_profile: str,
) -> ResolvedModel:
    environ = os.environ if environ is None else environ
    name = name or config.model
    base_url = base_url_override or config.base_url
    provider = provider or config.provider
    profile = fallback_profile

    if provider is not None:
        if provider not in config.providers:
            raise UsageError(_unknown_provider(config, provider))
        entry = config.models.get(name)
        if entry is not None and entry.provider == provider:
            return _build(config, name, entry, base_url, environ, profile)
        wire_id = name.removeprefix(f"{provider}/")
        return _unlisted(config, provider, wire_id, base_url, environ, profile)
    if name in config.models:
        return _build(config, name, config.models[name], base_url, environ, profile)
    if base_url:
        return _unlisted(config, "openai", name, base_url, environ, profile)
    prefix, slash, wire_id = name.partition("/")
    if slash and wire_id:
        if prefix not in config.providers:
            raise UnknownModel(f"model {name!r}: {_unknown_provider(config, prefix)}")
        return _unlisted(config, prefix, wire_id, None, environ, profile)
    raise UnknownModel(_unknown_model(config, name))


def _unlisted(
    config: Config,
    provider: str,
    wire_id: str,
    base_url: str | None,
    environ: Mapping[str, str],
    fallback_profile: str,
) -> ResolvedModel:
    # A catalog entry for the same provider and id still knows the window and prices.
    for entry_name, entry in config.models.items():
        if entry.provider == provider and (entry.id or entry_name) == wire_id:
            return _build(config, entry_name, entry, base_url, environ, fallback_profile)
    entry = ModelConfig(provider=provider, id=wire_id)
    return _build(config, None, entry, base_url, environ, fallback_profile)


def _build(
    config: Config,
    name: str | None,
    entry: ModelConfig,
    base_url: str | None,
    environ: Mapping[str, str],
    fallback_profile: str,
) -> ResolvedModel:
    provider = config.providers[entry.provider]
    wire_id = entry.id or name or ""
    url = base_url or provider.base_url
    if not url:
        raise UsageError(
            f"provider {entry.provider!r} has no base_url: set providers.{entry.provider}.base_url"
        )
    context, max_out = family_limits(wire_id)
    secrets: list[str] = []
    headers = {
        k: _expand(entry.provider, k, v, environ, secrets) for k, v in provider.headers.items()
    }
    return ResolvedModel(
        provider=entry.provider,
        kind=provider.kind,
        base_url=url,
        model_id=wire_id,
        context_window=entry.context_window or context,
        max_output_tokens=entry.max_output_tokens or max_out,
        prices=Prices(
            input=entry.input_price,
            output=entry.output_price,
            cached_input=entry.cached_input_price,
            cache_write=entry.cache_write_price,
        ),
        api_key_env=provider.api_key_env,
        headers=headers,
        timeout_s=provider.timeout_s,
        idle_timeout_s=provider.idle_timeout_s,
        timeout_key=f"providers.{entry.provider}.timeout_s",
        idle_timeout_key=f"providers.{entry.provider}.idle_timeout_s",
        name=name,
        header_secrets=tuple(secrets),
        profile=resolve_profile(
            config,
            entry=name,
            provider=entry.provider,
            own_endpoint=same_host(url, provider.base_url),
            fallback=fallback_profile,
        ),
    )


def _expand(
    provider: str, header: str, value: str, environ: Mapping[str, str], secrets: list[str]
) -> str:
    """`value` with each `${VAR}` from `environ`, and each `${VAR:-default}` its default
    when VAR is unset or empty, as the shell and MCP settings (`servers.expanded`) do; a
    variable's value goes to `secrets`. Surrounding whitespace is dropped (a variable
    read from a file ends in a newline); a UsageError naming the header and its
    variables, never the value, when what is left cannot be sent in a header."""
    key = f"providers.{provider}.headers.{header}"

    def missing(var: str) -> str:
        raise UsageError(f"{key} uses ${{{var}}}, but the environment variable {var} is not set")

    expanded = expand_references(value, environ, missing, secrets).strip()
    problem = unsendable(expanded, spaces=False)
    if problem:
        variables = env_references(value)
        if variables:
            uses = ", ".join(f"${{{var}}}" for var in variables)
            fix = f"set {' and '.join(variables)} to the value alone"
            raise UsageError(f"{key} {problem} once {uses} is expanded; {fix}")
        raise UsageError(f"{key} {problem}; fix it in the config")
    return expanded


def unsendable(value: str, *, spaces: bool) -> str | None:
    """What in `value` an HTTP header cannot carry, as the words after its name ("holds
    a line break"); None when nothing. With `spaces`, a space inside counts too (no key
    holds one); control characters and non-ASCII ones always count (httpx refuses them,
    quoting the value, or fails to encode them)."""
    if any(c in "\r\n" for c in value):
        return "holds a line break"
    if any(unicodedata.category(c) == "Cc" for c in value):
        return "holds a control character"
    if not value.isascii():
        return (
            "holds a non-ASCII character (a non-breaking space or a curly quote, "
            "copied from a web page?)"
        )
    if spaces and any(c.isspace() for c in value):
        return "holds a space"
    return None


def _unknown_provider(config: Config, provider: str) -> str:
    from difflib import get_close_matches

    close = get_close_matches(provider, list(config.providers), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return (
        f"unknown provider {provider!r}{hint}; known providers: "
        f"{', '.join(sorted(config.providers))}. Add one with a [providers.NAME] table"
    )


def _unknown_model(config: Config, name: str) -> str:
    from difflib import get_close_matches

    close = get_close_matches(name, list(config.models), n=3, cutoff=0.5)
    hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
    providers = ", ".join(sorted(config.providers))
    return (
        f"unknown model {name!r}{hint}. For a model the catalog does not list, write "
        f"PROVIDER/MODEL-ID, e.g. --model openai/{name} or --model ollama/{name} "
        f"(providers: {providers}), or give --base-url for an OpenAI-compatible endpoint. "
        "`lathe config show` lists the catalog."
    )
