"""Model profiles: which one a model gets, how config layers change one, and where each
of its values came from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from lathe.config import Config, load_config, resolve_model
from lathe.config.catalog import PROFILES
from lathe.config.profiles import profile_values, resolve_profile
from lathe.config.schema import ProfileConfig
from lathe.errors import UsageError
from lathe.ui.config_cmd import config_group


def profile_of(workspace: Path, model: str, **flags: object):
    loaded = load_config(workspace, flags={"model": model, **flags})  # type: ignore[dict-item]
    return resolve_model(loaded.config).profile


# which profile a model gets


def test_built_in_profiles_include_default_small_and_local() -> None:
    assert {"default", "small", "local"} <= set(PROFILES)
    small = Config().profiles["small"]
    assert (small.apply_reply_code, small.write_may_replace, small.reason_first) == (
        True,
        False,
        False,
    )
    assert Config().profiles["local"].reason_first
    assert Config().profiles["default"] == ProfileConfig()


def test_the_openai_providers_models_send_max_completion_tokens(workspace: Path) -> None:
    profile = profile_of(workspace, "gpt-4.1")
    assert profile.name == "openai"
    assert profile.chosen_by == ("providers", "openai", "profile")
    assert profile.settings.max_tokens_field == "max_completion_tokens"
    assert not profile.settings.apply_reply_code
    assert profile_of(workspace, "claude-sonnet-4").name == "default"


def test_another_url_is_not_the_providers_server(workspace: Path) -> None:
    # gpt-4o is an openai model, but the requests go elsewhere: the wire is the default's.
    profile = profile_of(workspace, "gpt-4o", base_url="http://127.0.0.1:9/v1")
    assert (profile.name, profile.settings.max_tokens_field) == ("default", "max_tokens")


def test_the_providers_own_server_named_by_base_url_keeps_its_profile(workspace: Path) -> None:
    # The same host as the provider's base_url, however the path is written.
    for url in ("https://api.openai.com/v1", "https://API.openai.com/v1/"):
        assert profile_of(workspace, "gpt-5", base_url=url).name == "openai"


def test_a_built_in_provider_moved_elsewhere_loses_its_built_in_profile(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    assert profile_of(workspace, "gpt-4o").name == "default"


def test_a_moved_provider_keeps_a_profile_the_user_names(
    workspace: Path, user_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    user_file.write_text('[providers.openai]\nprofile = "small"\n')
    assert profile_of(workspace, "gpt-4o").name == "small"


def test_a_models_entry_beats_its_provider_and_the_top_level_key_beats_both(
    workspace: Path, user_file: Path
) -> None:
    user_file.write_text('[models.gpt-4o]\nprofile = "small"\n')
    profile = profile_of(workspace, "gpt-4o")
    assert (profile.name, profile.chosen_by) == ("small", ("models", "gpt-4o", "profile"))

    profile = profile_of(workspace, "gpt-4o", profile="local")
    assert (profile.name, profile.chosen_by) == ("local", ("profile",))


def test_a_small_window_is_no_reason_for_the_small_profile(
    workspace: Path, user_file: Path
) -> None:
    user_file.write_text('[models.tiny]\nprovider = "ollama"\ncontext_window = 4096\n')
    profile = profile_of(workspace, "tiny")
    assert profile.name == "default"
    assert profile.settings.write_may_replace and not profile.settings.apply_reply_code


def test_the_local_models_fall_back_to_the_local_profile() -> None:
    config = Config()
    profile = resolve_profile(config, entry=None, provider="openai", own_endpoint=False,
                              fallback="local")  # fmt: skip
    assert (profile.name, profile.chosen_by) == ("local", ())
    chosen = resolve_profile(config.model_copy(update={"profile": "default"}), entry=None,
                             provider="openai", own_endpoint=False, fallback="local")  # fmt: skip
    assert chosen.name == "default"


def test_agent_apply_reply_code_still_overrides_the_profile(workspace: Path) -> None:
    loaded = load_config(
        workspace, flags={"model": "gpt-4o"}, overrides=["agent.apply_reply_code=true"]
    )
    assert resolve_model(loaded.config).profile.settings.apply_reply_code is True


# layers


def test_a_profiles_table_merges_key_by_key_over_the_built_in_one(
    workspace: Path, user_file: Path, project_file: Path
) -> None:
    user_file.write_text("[profiles.small]\nwrite_may_replace = true\n")
    project_file.write_text("[profiles.small]\nworkspace_snapshot_bytes = 0\n")
    small = load_config(workspace).config.profiles["small"]
    assert small.write_may_replace is True  # the user's
    assert small.workspace_snapshot_bytes == 0  # the project's
    assert small.apply_reply_code is True  # still the built-in value


def test_a_new_profile_starts_from_the_defaults(workspace: Path, user_file: Path) -> None:
    user_file.write_text('profile = "mine"\n[profiles.mine]\nthinking_in_text = true\n')
    profile = resolve_model(load_config(workspace, flags={"model": "gpt-4o"}).config).profile
    assert profile.name == "mine"
    assert profile.settings.thinking_in_text
    assert profile.settings.model_dump(exclude={"thinking_in_text"}) == (
        Config().profiles["default"].model_dump(exclude={"thinking_in_text"})
    )


@pytest.mark.parametrize(
    ("text", "blamed"),
    [
        ('profile = "smal"\n', "profile"),
        ('[models.m]\nprovider = "openai"\nprofile = "tiny"\n', "models.m.profile"),
        ('[providers.openai]\nprofile = "fast"\n', "providers.openai.profile"),
    ],
)
def test_an_unknown_profile_names_the_file_the_key_and_the_known_ones(
    workspace: Path, user_file: Path, text: str, blamed: str
) -> None:
    user_file.write_text(text)
    with pytest.raises(UsageError) as caught:
        load_config(workspace)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{user_file}: {blamed}: unknown profile ")
    assert message.endswith("known profiles: default, local, openai, small")


def test_an_unknown_profile_flag_suggests_the_nearest(workspace: Path) -> None:
    expected = r"--profile: unknown profile 'smal' \(did you mean 'small'\?\)"
    with pytest.raises(UsageError, match=expected):
        load_config(workspace, flags={"profile": "smal"})


# origins


def test_each_profile_value_says_where_it_came_from(workspace: Path, user_file: Path) -> None:
    user_file.write_text(
        '[models.m]\nprovider = "ollama"\nprofile = "small"\n'
        "[profiles.small]\nworkspace_snapshot_bytes = 4096\n"
    )
    loaded = load_config(
        workspace, flags={"model": "m"}, overrides=["profiles.small.thinking_in_text=true"]
    )
    profile = resolve_model(loaded.config).profile
    values = {name: (value, origin) for name, value, origin in profile_values(loaded, profile)}

    assert values["workspace_snapshot_bytes"] == (
        4096,
        f"user file {user_file}: profiles.small.workspace_snapshot_bytes",
    )
    assert values["thinking_in_text"] == (True, "-c profiles.small.thinking_in_text")
    assert values["write_may_replace"] == (False, 'built-in profile "small"')
    assert values["stream_options"] == (True, 'built-in profile "small"')


def test_a_user_profiles_unset_values_are_defaults(workspace: Path, user_file: Path) -> None:
    user_file.write_text('profile = "mine"\n[profiles.mine]\nreason_first = true\n')
    loaded = load_config(
        workspace, flags={"model": "gpt-4o"}, overrides=["agent.apply_reply_code=true"]
    )
    values = {n: (v, o) for n, v, o in profile_values(loaded, resolve_model(loaded.config).profile)}
    assert values["reason_first"] == (True, f"user file {user_file}: profiles.mine.reason_first")
    assert values["write_may_replace"] == (True, "default")
    assert values["apply_reply_code"] == (True, "-c agent.apply_reply_code")


# config show


def show(workspace: Path, *args: str) -> str:
    result = CliRunner().invoke(config_group, ["show", "-C", str(workspace), *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_config_show_prints_the_selected_models_profile(workspace: Path, user_file: Path) -> None:
    user_file.write_text(
        'model = "m"\n[models.m]\nprovider = "ollama"\nprofile = "small"\n'
        "[profiles.small]\nwrite_may_replace = true\n"
    )
    out = show(workspace)
    section = out[out.index("# profile:") :].splitlines()
    assert section[0] == (f"# profile: small, chosen by models.m.profile (user file {user_file})")
    lines = {line.split(" = ")[0]: line for line in section[1:] if " = " in line}
    assert lines["write_may_replace"].split("#")[0].strip() == "write_may_replace = true"
    assert lines["write_may_replace"].endswith(
        f"# user file {user_file}: profiles.small.write_may_replace"
    )
    assert lines["apply_reply_code"].endswith('# built-in profile "small"')
    assert lines["max_tokens_field"].startswith('max_tokens_field = "max_tokens"')


def test_config_show_says_when_nothing_names_a_profile(workspace: Path) -> None:
    out = show(workspace, "-c", "model=claude-sonnet-4")
    assert "# profile: default (no key names one: the built-in choice for this model)" in out


def test_config_show_json_carries_the_profile_with_origins(workspace: Path) -> None:
    data = json.loads(show(workspace, "--json", "-c", "model=gpt-4o"))
    profile = data["profile"]
    assert (profile["name"], profile["chosen_by"]) == ("openai", "providers.openai.profile")
    assert profile["chosen_by_origin"] == "default"
    assert profile["values"]["max_tokens_field"] == {
        "value": "max_completion_tokens",
        "origin": 'built-in profile "openai"',
    }
    assert data["model"]["model_id"] == "gpt-4o"
    assert data["values"]["agent.max_turns"] == {"value": 50, "origin": "default"}
