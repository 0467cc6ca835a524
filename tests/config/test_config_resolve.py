"""Turning --model (and --provider, --base-url) into an endpoint, a wire id and limits."""

from pathlib import Path

import pytest

from lathe.config import Config, Prices, ResolvedModel, load_config, resolve_model
from lathe.errors import UsageError


def test_a_catalog_name_resolves_to_its_entry() -> None:
    assert resolve_model(Config(), "claude-sonnet-4") == ResolvedModel(
        provider="anthropic",
        kind="anthropic",
        base_url="https://api.anthropic.com",
        model_id="claude-sonnet-4-20250514",
        context_window=200_000,
        max_output_tokens=64_000,
        prices=Prices(input=3.0, output=15.0, cached_input=0.3, cache_write=3.75),
        api_key_env="ANTHROPIC_API_KEY",
        headers={},
        timeout_s=600.0,
        idle_timeout_s=120.0,
        timeout_key="providers.anthropic.timeout_s",
        idle_timeout_key="providers.anthropic.idle_timeout_s",
        name="claude-sonnet-4",
        base_url_key="providers.anthropic.base_url",
    )


def test_the_configured_model_is_the_default(workspace: Path, user_file: Path) -> None:
    user_file.write_text('model = "deepseek-reasoner"\n')
    model = resolve_model(load_config(workspace).config)
    assert (model.provider, model.model_id, model.base_url) == (
        "deepseek",
        "deepseek-reasoner",
        "https://api.deepseek.com/v1",
    )


def test_provider_slash_id_works_for_unlisted_models_with_family_defaults() -> None:
    model = resolve_model(Config(), "ollama/qwen2.5-coder:7b")
    assert (model.provider, model.model_id, model.base_url, model.api_key_env) == (
        "ollama",
        "qwen2.5-coder:7b",
        "http://127.0.0.1:11434/v1",
        None,
    )
    assert (model.context_window, model.max_output_tokens) == (32_768, 8_192)
    assert model.prices == Prices() and not model.prices.known
    assert model.name is None

    dated = resolve_model(Config(), "openai/gpt-4o-2024-11-20")
    assert (dated.model_id, dated.context_window, dated.max_output_tokens) == (
        "gpt-4o-2024-11-20",
        128_000,
        16_384,
    )


def test_provider_slash_id_of_a_listed_model_keeps_its_prices() -> None:
    model = resolve_model(Config(), "anthropic/claude-opus-4-20250514")
    assert model.name == "claude-opus-4"
    assert model.prices.input == 15.0


def test_an_unknown_name_suggests_near_matches_and_the_provider_form() -> None:
    with pytest.raises(UsageError) as caught:
        resolve_model(Config(), "gpt4o")
    assert str(caught.value) == (
        "unknown model 'gpt4o' (did you mean 'gpt-4o', 'gpt-4.1', 'gpt-4o-mini'?). "
        "For a model the catalog does not list, write PROVIDER/MODEL-ID, e.g. "
        "--model openai/gpt4o or --model ollama/gpt4o (providers: anthropic, deepseek, "
        "llamacpp, ollama, openai, vllm), or give --base-url for an OpenAI-compatible "
        "endpoint. `lathe config show` lists the catalog."
    )


def test_an_unknown_provider_prefix() -> None:
    with pytest.raises(UsageError) as caught:
        resolve_model(Config(), "olama/llama3")
    assert str(caught.value) == (
        "model 'olama/llama3': unknown provider 'olama' (did you mean 'ollama'?); known "
        "providers: anthropic, deepseek, llamacpp, ollama, openai, vllm. "
        "Add one with a [providers.NAME] table"
    )


def test_a_base_url_override_sends_an_unknown_name_as_is() -> None:
    model = resolve_model(Config(), "my-model", base_url_override="http://host:9000/v1")
    assert (model.kind, model.base_url, model.model_id, model.api_key_env) == (
        "openai-compatible",
        "http://host:9000/v1",
        "my-model",
        "OPENAI_API_KEY",
    )


def test_a_base_url_override_keeps_a_catalog_entry_but_moves_its_endpoint() -> None:
    model = resolve_model(Config(), "gpt-4o-mini", "http://proxy/v1")
    assert (model.base_url, model.model_id, model.prices.input) == (
        "http://proxy/v1",
        "gpt-4o-mini",
        0.15,
    )


def test_base_url_and_model_from_the_environment(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LATHE_BASE_URL", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("LATHE_MODEL", "served-model")
    model = resolve_model(load_config(workspace).config)
    assert (model.base_url, model.model_id) == ("http://127.0.0.1:8000/v1", "served-model")


def test_a_provider_override_picks_the_endpoint_for_a_bare_id() -> None:
    model = resolve_model(Config(), "llama3.1:8b", provider="ollama")
    assert (model.provider, model.model_id) == ("ollama", "llama3.1:8b")
    assert resolve_model(Config(), "deepseek-chat", provider="deepseek").name == "deepseek-chat"
    with pytest.raises(UsageError, match="unknown provider 'nope'"):
        resolve_model(Config(), "x", provider="nope")


def test_a_user_defined_provider_and_model(workspace: Path, user_file: Path) -> None:
    user_file.write_text(
        "[providers.lab]\n"
        'base_url = "http://10.0.0.5:8000/v1"\n'
        'api_key_env = "LAB_KEY"\n'
        'headers = { "X-Org" = "${LAB_ORG}" }\n'
        "[models.coder]\n"
        'provider = "lab"\n'
        "context_window = 65536\n"
    )
    config = load_config(workspace).config
    model = resolve_model(config, "coder", environ={"LAB_KEY": "k-123", "LAB_ORG": "team-7"})
    assert (model.base_url, model.model_id, model.context_window) == (
        "http://10.0.0.5:8000/v1",
        "coder",  # the id defaults to the entry's name
        65_536,
    )
    assert model.headers == {"X-Org": "team-7"}
    assert model.secrets({"LAB_KEY": "k-123", "LAB_ORG": "team-7"}) == ["k-123", "team-7"]
    assert "team-7" not in repr(model)
    with pytest.raises(UsageError) as caught:
        resolve_model(config, "coder", environ={})
    assert str(caught.value) == (
        "providers.lab.headers.X-Org uses ${LAB_ORG}, but the environment variable "
        "LAB_ORG is not set"
    )


def test_a_provider_without_base_url_is_reported_at_resolution(
    workspace: Path, user_file: Path
) -> None:
    user_file.write_text('[providers.bare]\nkind = "openai-compatible"\n')
    config = load_config(workspace).config
    with pytest.raises(UsageError) as caught:
        resolve_model(config, "bare/some-model")
    assert str(caught.value) == "provider 'bare' has no base_url: set providers.bare.base_url"


def test_the_api_key_comes_from_the_environment_with_lathe_api_key_first() -> None:
    model = resolve_model(Config(), "gpt-4o")
    assert model.api_key({}) is None
    assert model.api_key({"OPENAI_API_KEY": "sk-a"}) == "sk-a"
    assert model.api_key({"OPENAI_API_KEY": "sk-a", "LATHE_API_KEY": "sk-b"}) == "sk-b"
    assert model.secrets({"OPENAI_API_KEY": "sk-a"}) == ["sk-a"]
    assert resolve_model(Config(), "vllm/x").api_key({}) is None
