"""Built-in providers, models and model profiles, and the defaults for model ids the
catalog does not list.

Plain data (no pydantic) so the schema can use it as the default of `providers`,
`models` and `profiles`, and user entries merge over it key by key.

Prices are US dollars per million tokens at each vendor's list price when this file was
written. They are approximations for cost reporting only: vendors change them, and
discounts (batch, regional, negotiated) are not modelled. Override any of them with
`[models.NAME] input_price = ...`.
"""

from __future__ import annotations

from typing import Any

# What the loop, the prompt and the wire do for a kind of model; each entry lists only
# what differs from the schema's defaults (`schema.ProfileConfig`), which "default" is.
_SMALL: dict[str, Any] = {
    "apply_reply_code": True,
    "write_may_replace": False,
    "subagents": False,
    "prompts": "small",
    "tools": ["read", "edit", "write", "bash", "grep"],
    "tool_descriptions": "brief",
    "snapshot_leave_out": ["tests/", "test_*.py", "*_test.py", "conftest.py"],
    "workspace_snapshot_bytes": 2600,
    "verify_output_bytes": 800,
    "failure_code_bytes": 1200,
    "calls_per_reply": 1,
    "output_max_bytes": 2000,
}

PROFILES: dict[str, dict[str, Any]] = {
    "default": {},
    # Models of a few billion parameters. Measured with the local 1.5B (docs/architecture.md,
    # "Small-model care"): they show a fix in prose instead of calling edit, rewrite whole
    # files from memory with write, losing code, and read their prompt at a few dozen
    # tokens a second on a CPU, so it is kept short: five tools described in a line each,
    # the short system prompt, the check's output cut to the lines that say what failed,
    # one call a reply, and no test files in the snapshot (shown them, the 1.5B copied
    # their text into its edits). When the snapshot cannot hold the code, a failing
    # check shows the code it ran through: on five development tasks, 3 samples each,
    # the 1.5B's first reply was then an edit 15 times (11 without) and changed a file
    # 3 times (once without); none solved its task either way.
    "small": {**_SMALL},
    # The embedded models behind lathe's own chat template, which can ask for a sentence
    # of reasoning before each call: with the code in view, the 1.5B's first reply led
    # to a passing fix in 16 of 24 samples with it, 0 of 8 without.
    # At the server's default temperature (0.8) the 1.5B solved 0 of the 8 development
    # tasks; at 0.2, 1 of 8, its first reply the fix (one run each). At 0.2 it also
    # answered a failing check with the same reply until the run was stuck, so a
    # reply that repeats an earlier one is followed by samples at 0.8: over the 8
    # tasks, 8 of the 36 replies after a repeat were new (the same reply, before), and
    # still none of the tasks was solved.
    "local": {**_SMALL, "reason_first": True, "temperature": 0.2, "repeat_temperature": 0.8},
    # api.openai.com: its newer models reject max_tokens.
    "openai": {"max_tokens_field": "max_completion_tokens"},
}

PROVIDERS: dict[str, dict[str, Any]] = {
    "openai": {
        "kind": "openai-compatible",
        "base_url": "https://api.openai.com/v1",
        "api_key_env": "OPENAI_API_KEY",
        "profile": "openai",
    },
    "anthropic": {
        "kind": "anthropic",
        "base_url": "https://api.anthropic.com",
        "api_key_env": "ANTHROPIC_API_KEY",
    },
    "deepseek": {
        "kind": "openai-compatible",
        "base_url": "https://api.deepseek.com/v1",
        "api_key_env": "DEEPSEEK_API_KEY",
    },
    # Local servers at their usual addresses; they need no key.
    "ollama": {"kind": "openai-compatible", "base_url": "http://127.0.0.1:11434/v1"},
    "vllm": {"kind": "openai-compatible", "base_url": "http://127.0.0.1:8000/v1"},
    "llamacpp": {"kind": "openai-compatible", "base_url": "http://127.0.0.1:8080/v1"},
}


def _model(
    provider: str,
    wire_id: str,
    context: int,
    max_out: int,
    prices: tuple[float, float, float | None, float | None],
) -> dict[str, Any]:
    input_price, output_price, cached, cache_write = prices
    return {
        "provider": provider,
        "id": wire_id,
        "context_window": context,
        "max_output_tokens": max_out,
        "input_price": input_price,
        "output_price": output_price,
        "cached_input_price": cached,
        "cache_write_price": cache_write,
    }


# (input, output, cached input, cache write) per million tokens — approximations.
MODELS: dict[str, dict[str, Any]] = {
    "gpt-4o": _model("openai", "gpt-4o", 128_000, 16_384, (2.50, 10.00, 1.25, None)),
    "gpt-4o-mini": _model("openai", "gpt-4o-mini", 128_000, 16_384, (0.15, 0.60, 0.075, None)),
    "gpt-4.1": _model("openai", "gpt-4.1", 1_047_576, 32_768, (2.00, 8.00, 0.50, None)),
    "gpt-4.1-mini": _model("openai", "gpt-4.1-mini", 1_047_576, 32_768, (0.40, 1.60, 0.10, None)),
    "gpt-4.1-nano": _model("openai", "gpt-4.1-nano", 1_047_576, 32_768, (0.10, 0.40, 0.025, None)),
    "o3-mini": _model("openai", "o3-mini", 200_000, 100_000, (1.10, 4.40, 0.55, None)),
    "o4-mini": _model("openai", "o4-mini", 200_000, 100_000, (1.10, 4.40, 0.275, None)),
    "claude-sonnet-4": _model(
        "anthropic", "claude-sonnet-4-20250514", 200_000, 64_000, (3.00, 15.00, 0.30, 3.75)
    ),
    "claude-sonnet-4-5": _model(
        "anthropic", "claude-sonnet-4-5-20250929", 200_000, 64_000, (3.00, 15.00, 0.30, 3.75)
    ),
    "claude-opus-4": _model(
        "anthropic", "claude-opus-4-20250514", 200_000, 32_000, (15.00, 75.00, 1.50, 18.75)
    ),
    "claude-opus-4-1": _model(
        "anthropic", "claude-opus-4-1-20250805", 200_000, 32_000, (15.00, 75.00, 1.50, 18.75)
    ),
    "claude-3-5-haiku": _model(
        "anthropic", "claude-3-5-haiku-20241022", 200_000, 8_192, (0.80, 4.00, 0.08, 1.00)
    ),
    "deepseek-chat": _model("deepseek", "deepseek-chat", 128_000, 8_192, (0.28, 0.42, 0.028, None)),
    "deepseek-reasoner": _model(
        "deepseek", "deepseek-reasoner", 128_000, 65_536, (0.28, 0.42, 0.028, None)
    ),
}

DEFAULT_MODEL = "gpt-4.1"

# (wire-id prefix, context window, max output) for ids the catalog does not list; the
# longest matching prefix wins. Unlisted models are priced at 0 (cost unknown).
_FAMILIES: tuple[tuple[str, int, int], ...] = (
    ("gpt-5", 400_000, 128_000),
    ("gpt-4.1", 1_047_576, 32_768),
    ("gpt-4o", 128_000, 16_384),
    ("gpt-4-turbo", 128_000, 4_096),
    ("gpt-4", 8_192, 4_096),
    ("gpt-3.5", 16_385, 4_096),
    ("o1", 200_000, 100_000),
    ("o3", 200_000, 100_000),
    ("o4", 200_000, 100_000),
    ("claude-opus-4", 200_000, 32_000),
    ("claude-sonnet-4", 200_000, 64_000),
    ("claude-haiku-4", 200_000, 64_000),
    ("claude-3-7", 200_000, 64_000),
    ("claude-3-5", 200_000, 8_192),
    ("claude", 200_000, 4_096),
    ("deepseek", 128_000, 8_192),
    ("gemini", 1_048_576, 65_536),
    ("qwen3-coder", 262_144, 65_536),
    ("qwen2.5-coder", 32_768, 8_192),
)
# Local servers often run with a small window; guessing too large makes the first
# overflow a hard error instead of a compaction, so the fallback is modest.
_FALLBACK = (32_768, 4_096)


def family_limits(wire_id: str) -> tuple[int, int]:
    """(context window, max output tokens) for a model id, by its family prefix."""
    bare = wire_id.rsplit("/", 1)[-1].lower()
    best = max(
        (f for f in _FAMILIES if bare.startswith(f[0])), key=lambda f: len(f[0]), default=None
    )
    return (best[1], best[2]) if best else _FALLBACK
