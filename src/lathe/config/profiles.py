"""Which model profile a model gets, and where each of its values came from.

A profile (`schema.ProfileConfig`, built-in ones in `catalog.PROFILES`) says what the
loop, the prompt and the wire do for a model. It is chosen once, when the model is
resolved, by the first of:

1. the top-level `profile` key (or `--profile`), for whatever model is selected;
2. the model's [models] entry's `profile`;
3. its provider's `profile`, only for requests to that provider's own server (the same
   host as its base_url): a base_url override to another host is another server, and
   so is a built-in provider whose base_url a layer moved to another host
   (OPENAI_BASE_URL) while its profile stayed the built-in one;
4. the fallback: "default", or what setup names for a model it starts itself (the
   embedded local models: "local").

Nothing is inferred from the window size, and a host only decides whether a provider's
own profile describes the server a request goes to.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lathe.config import catalog
from lathe.config.keys import KeyPath, format_key
from lathe.config.schema import Config, ProfileConfig
from lathe.errors import UsageError

if TYPE_CHECKING:
    from lathe.config.loader import LoadedConfig

# Older keys that still override one profile value when set.
_OVERRIDDEN_BY: dict[str, KeyPath] = {"apply_reply_code": ("agent", "apply_reply_code")}


@dataclass(frozen=True)
class Profile:
    """A model's resolved profile."""

    name: str = "default"
    settings: ProfileConfig = field(default_factory=ProfileConfig)
    """The values in effect, agent.apply_reply_code folded in."""
    chosen_by: KeyPath = ()
    """The key that named it, e.g. ("models", "m", "profile"); empty when none did and
    the fallback applies."""


def resolve_profile(
    config: Config,
    *,
    entry: str | None,
    provider: str,
    own_endpoint: bool,
    fallback: str = "default",
) -> Profile:
    """The profile for a model by the rules in the module docstring. `entry`: its
    [models] entry, if any; `own_endpoint`: whether requests go to the provider's own
    base_url. Raises UsageError for a profile name no [profiles] entry has."""
    candidates: list[tuple[KeyPath, str | None]] = [(("profile",), config.profile)]
    if entry is not None and entry in config.models:
        candidates.append((("models", entry, "profile"), config.models[entry].profile))
    if own_endpoint and not _moved_builtin(config, provider):
        candidates.append((("providers", provider, "profile"), config.providers[provider].profile))
    key, name = next(((k, n) for k, n in candidates if n), ((), fallback))
    if name not in config.profiles:
        raise UsageError(unknown_profile(config, name))
    settings = config.profiles[name]
    overrides = {
        field_name: value
        for field_name, path in _OVERRIDDEN_BY.items()
        if (value := _get(config, path)) is not None
    }
    if overrides:
        settings = settings.model_copy(update=overrides)
    return Profile(name=name, settings=settings, chosen_by=key)


def _moved_builtin(config: Config, provider: str) -> bool:
    """A built-in provider whose base_url a layer changed, its profile left as built:
    the built-in profile describes the built-in server (api.openai.com), not this one."""
    builtin = catalog.PROVIDERS.get(provider)
    if builtin is None or provider not in config.providers:
        return False
    entry = config.providers[provider]
    moved = not same_host(entry.base_url, builtin.get("base_url"))
    return moved and entry.profile == builtin.get("profile")


def same_host(url: str | None, other: str | None) -> bool:
    """Whether two URLs name the same server (scheme, host and port; not the path, so
    "https://api.openai.com/v1/" is api.openai.com's)."""
    from urllib.parse import urlsplit

    if not url or not other:
        return False
    a, b = urlsplit(url.strip()), urlsplit(other.strip())
    return (a.scheme.lower(), a.netloc.lower()) == (b.scheme.lower(), b.netloc.lower())


def unknown_profile(config: Config, name: str) -> str:
    """One line naming the unknown profile, the nearest known one and all of them."""
    from difflib import get_close_matches

    close = get_close_matches(name, list(config.profiles), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return (
        f"unknown profile {name!r}{hint}; define it with a [profiles.{name}] table or use "
        f"one of the known profiles: {', '.join(sorted(config.profiles))}"
    )


def check_profile_names(config: Config) -> list[tuple[KeyPath, str]]:
    """Every (key, name) where a key names a profile no [profiles] entry has."""
    named: list[tuple[KeyPath, str | None]] = [(("profile",), config.profile)]
    named += [(("models", n, "profile"), e.profile) for n, e in config.models.items()]
    named += [(("providers", n, "profile"), e.profile) for n, e in config.providers.items()]
    return [(key, name) for key, name in named if name is not None and name not in config.profiles]


def profile_values(loaded: LoadedConfig, profile: Profile) -> list[tuple[str, Any, str]]:
    """(field, value, origin) for each value of `profile`, in schema order. The origin
    is the layer and key that set it ("user file PATH: profiles.small.reason_first",
    "-c profiles.small.reason_first"), else 'built-in profile "NAME"', else "default"
    for a profile the catalog does not have."""
    rows = []
    for name, value in profile.settings.model_dump().items():
        rows.append((name, value, _origin(loaded, profile.name, name)))
    return rows


def _origin(loaded: LoadedConfig, profile: str, name: str) -> str:
    override = _OVERRIDDEN_BY.get(name)
    if override is not None and _get(loaded.config, override) is not None:
        return loaded.origin(override)
    key = ("profiles", profile, name)
    origin = loaded.origins.get(key)
    if origin is not None and origin.layer != "default":
        shown = str(origin)
        return shown if origin.layer == "override" else f"{shown}: {format_key(key)}"
    return f'built-in profile "{profile}"' if profile in catalog.PROFILES else "default"


def _get(config: Config, path: KeyPath) -> Any:
    value: Any = config
    for part in path:
        value = getattr(value, part)
    return value
