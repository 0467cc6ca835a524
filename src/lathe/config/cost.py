"""What a model request cost, from the token counts a provider reported and catalog prices.

Vendors count cached tokens differently, and `lathe.types.Usage` carries what the
provider reported:

- OpenAI-compatible APIs (OpenAI, DeepSeek, vLLM, ...) report `prompt_tokens` *including*
  the tokens served from the cache, so `input_tokens` already contains
  `cache_read_tokens`.
- The Anthropic Messages API reports `input_tokens` *excluding* cache reads and cache
  writes, which come as separate counts.

`cost_usd` therefore takes `input_includes_cache`; `ResolvedModel.cost()` passes the
right value for its provider kind.
"""

from __future__ import annotations

from dataclasses import dataclass

from lathe.types import Usage

_PER = 1_000_000


@dataclass(frozen=True)
class Prices:
    """US dollars per million tokens. None for the cache prices means "as input_price"."""

    input: float = 0.0
    output: float = 0.0
    cached_input: float | None = None
    cache_write: float | None = None

    @property
    def known(self) -> bool:
        """False when nothing is priced: the cost of an unlisted model is unknown, not free."""
        return bool(self.input or self.output or self.cached_input or self.cache_write)


def cost_usd(usage: Usage, prices: Prices, *, input_includes_cache: bool) -> float:
    """Dollar cost of one request's `usage` at `prices`.

    `input_includes_cache` says whether `usage.input_tokens` already counts the cache
    reads and writes (OpenAI-compatible: yes; Anthropic: no) — see the module docstring.
    """
    cached = usage.cache_read_tokens
    written = usage.cache_write_tokens
    uncached = usage.input_tokens
    if input_includes_cache:
        uncached = max(0, uncached - cached - written)
    cached_price = prices.input if prices.cached_input is None else prices.cached_input
    write_price = prices.input if prices.cache_write is None else prices.cache_write
    total = (
        uncached * prices.input
        + cached * cached_price
        + written * write_price
        + usage.output_tokens * prices.output
    )
    return total / _PER
