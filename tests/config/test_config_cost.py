"""Cost of one request from its usage and the catalog prices."""

import pytest

from lathe.config import Config, Prices, cost_usd, resolve_model
from lathe.types import Usage

PRICES = Prices(input=2.0, output=8.0, cached_input=0.5, cache_write=2.5)


def test_plain_input_and_output() -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=500_000)
    assert cost_usd(usage, PRICES, input_includes_cache=True) == pytest.approx(2.0 + 4.0)


def test_openai_style_input_already_counts_cached_tokens() -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=0, cache_read_tokens=800_000)
    # 200k uncached at 2.0 + 800k cached at 0.5
    assert cost_usd(usage, PRICES, input_includes_cache=True) == pytest.approx(0.4 + 0.4)


def test_anthropic_style_input_excludes_cache_reads_and_writes() -> None:
    usage = Usage(
        input_tokens=100_000,
        output_tokens=10_000,
        cache_read_tokens=1_000_000,
        cache_write_tokens=200_000,
    )
    expected = 0.2 + 0.08 + 0.5 + 0.5  # input, output, cache read, cache write
    assert cost_usd(usage, PRICES, input_includes_cache=False) == pytest.approx(expected)


def test_unset_cache_prices_fall_back_to_the_input_price() -> None:
    usage = Usage(input_tokens=1_000_000, cache_read_tokens=1_000_000)
    assert cost_usd(usage, Prices(input=3.0), input_includes_cache=False) == pytest.approx(6.0)


def test_resolved_models_price_normalised_usage_the_same_for_every_vendor() -> None:
    # Providers report input_tokens without the cached part, whatever the vendor.
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000, cache_read_tokens=1_000_000)
    gpt = resolve_model(Config(), "gpt-4o")  # 2.50 in, 10.00 out, 1.25 cached
    assert gpt.cost(usage) == pytest.approx(2.5 + 1.25 + 10.0)
    claude = resolve_model(Config(), "claude-sonnet-4")  # 3 in, 15 out, 0.30 cached
    assert claude.cost(usage) == pytest.approx(3.0 + 0.30 + 15.0)
    assert resolve_model(Config(), "ollama/llama3").cost(usage) == 0.0
