"""Every config field is documented, and the catalog is consistent."""

from lathe.config import Config
from lathe.config.catalog import MODELS, PROVIDERS, family_limits
from lathe.config.schema import all_sections, field_docs


def test_every_field_has_a_description() -> None:
    undocumented = [
        f"{section.__name__}.{name}"
        for section in all_sections()
        for name in section.model_fields
        if not field_docs(section).get(name, "").strip()
    ]
    assert undocumented == []


def test_every_builtin_model_names_a_builtin_provider_and_has_limits() -> None:
    for name, entry in MODELS.items():
        assert entry["provider"] in PROVIDERS, name
        assert entry["context_window"] > entry["max_output_tokens"] > 0, name
    assert Config().model in Config().models


def test_family_defaults_take_the_longest_prefix() -> None:
    assert family_limits("gpt-4o-2024-08-06") == (128_000, 16_384)
    assert family_limits("gpt-4-0613") == (8_192, 4_096)
    assert family_limits("claude-sonnet-4-5-20250929") == (200_000, 64_000)
    assert family_limits("some-local-model") == (32_768, 4_096)
