"""Configuration: the schema, its layered loading with origins, the model catalog,
model resolution (profiles included) and cost.

    loaded = load_config(workspace, flags={"model": "gpt-4o"}, overrides=["agent.max_turns=9"])
    model = resolve_model(loaded.config)          # -> ResolvedModel
    dollars = model.cost(message.usage)
"""

from lathe.config.cost import Prices, cost_usd
from lathe.config.loader import ENV_KEYS, LoadedConfig, Origin, load_config
from lathe.config.profiles import Profile
from lathe.config.resolve import KEY_OVERRIDE_ENV, ResolvedModel, resolve_model
from lathe.config.schema import Config
from lathe.config.secrets import looks_like_secret, mask_secret
from lathe.net import is_loopback

__all__ = [
    "ENV_KEYS",
    "KEY_OVERRIDE_ENV",
    "Config",
    "LoadedConfig",
    "Origin",
    "Prices",
    "Profile",
    "ResolvedModel",
    "cost_usd",
    "is_loopback",
    "load_config",
    "looks_like_secret",
    "mask_secret",
    "resolve_model",
]
