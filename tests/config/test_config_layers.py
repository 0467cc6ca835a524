"""Layering: each layer overrides the one below, and every value knows its origin."""

from pathlib import Path

import pytest

from lathe.config import load_config


def test_one_key_set_at_every_layer_takes_the_highest_and_names_it(
    workspace: Path, user_file: Path, project_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def turns(**kwargs: object) -> tuple[int, str]:
        loaded = load_config(workspace, **kwargs)  # type: ignore[arg-type]
        return loaded.config.agent.max_turns, loaded.origin("agent.max_turns")

    user_file.write_text("")
    assert turns() == (50, "default")
    user_file.write_text("[agent]\nmax_turns = 11\n")
    assert turns() == (11, f"user file {user_file}")
    project_file.write_text("[agent]\nmax_turns = 12\n")
    assert turns() == (12, f"project file {project_file}")
    monkeypatch.setenv("LATHE_MAX_TURNS", "13")
    assert turns() == (13, "env LATHE_MAX_TURNS")
    assert turns(flags={"agent.max_turns": 14}) == (14, "flag")
    assert turns(flags={"agent.max_turns": 14}, overrides=["agent.max_turns=15"]) == (
        15,
        "-c agent.max_turns",
    )


def test_layers_merge_key_by_key_and_keep_each_origin(
    workspace: Path, user_file: Path, project_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_file.write_text('model = "gpt-4o"\n[tools]\nbash_default_timeout_s = 30\n')
    project_file.write_text('[agent]\nverify = "pytest -q"\n')
    monkeypatch.setenv("LATHE_APPROVAL", "auto")
    loaded = load_config(workspace, flags={"model": None})  # None: the flag was not given

    config = loaded.config
    assert (config.model, loaded.origin("model")) == ("gpt-4o", f"user file {user_file}")
    assert config.tools.bash_default_timeout_s == 30
    assert config.tools.bash_max_timeout_s == 600  # the rest of [tools] is untouched
    assert loaded.origin("tools.bash_max_timeout_s") == "default"
    assert loaded.origin("agent.verify") == f"project file {project_file}"
    assert (config.permissions.approval, loaded.origin("permissions.approval")) == (
        "auto",
        "env LATHE_APPROVAL",
    )


def test_a_user_model_entry_merges_over_the_builtin_one(workspace: Path, user_file: Path) -> None:
    user_file.write_text('[models."gpt-4o"]\ninput_price = 9.5\n')
    loaded = load_config(workspace)
    entry = loaded.config.models["gpt-4o"]
    assert entry.input_price == 9.5
    assert entry.context_window == 128_000  # from the catalog
    assert loaded.origin('models."gpt-4o".input_price') == f"user file {user_file}"
    assert loaded.origin(("models", "gpt-4o", "context_window")) == "default"


def test_dash_c_overrides_parse_toml_values_and_nested_keys(workspace: Path) -> None:
    loaded = load_config(
        workspace,
        overrides=[
            "context.compaction=false",
            "tools.output_max_bytes=4096",
            'permissions.allow=["bash(git status)", "read"]',
            "model=o3-mini",  # not a TOML value: taken as a string
            "agent.verify=pytest -q",
            'models."my.model".provider="ollama"',
            "providers.ollama.headers.X-Team=core",
        ],
    )
    config = loaded.config
    assert config.context.compaction is False
    assert config.tools.output_max_bytes == 4096
    assert config.permissions.allow == ["bash(git status)", "read"]
    assert config.model == "o3-mini"
    assert config.agent.verify == "pytest -q"
    assert config.models["my.model"].provider == "ollama"
    assert config.providers["ollama"].headers == {"X-Team": "core"}
    assert loaded.origin('models."my.model".provider') == '-c models."my.model".provider'


def test_environment_variables_map_to_their_keys(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LATHE_MODEL", "deepseek-chat")
    monkeypatch.setenv("LATHE_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://proxy.internal/v1")
    monkeypatch.setenv("LATHE_MAX_TURNS", "")  # empty means unset (not LATHE_VERIFY's)
    loaded = load_config(workspace)
    assert loaded.config.model == "deepseek-chat"
    assert loaded.config.base_url == "http://127.0.0.1:9/v1"
    assert loaded.config.providers["openai"].base_url == "http://proxy.internal/v1"
    assert loaded.origin("providers.openai.base_url") == "env OPENAI_BASE_URL"
    assert loaded.config.agent.max_turns == 50


def test_project_file_is_found_from_a_subdirectory_but_not_above_the_repo(
    tmp_path: Path, workspace: Path, project_file: Path
) -> None:
    project_file.write_text("[agent]\nmax_turns = 7\n")
    (tmp_path / ".lathe").mkdir()
    (tmp_path / ".lathe" / "config.toml").write_text("[agent]\nmax_turns = 99\n")
    sub = workspace / "src" / "pkg"
    sub.mkdir(parents=True)

    assert load_config(sub).config.agent.max_turns == 7
    (project_file).unlink()
    assert load_config(sub).config.agent.max_turns == 50  # the file above the repo is ignored


def test_values_lists_every_leaf_once_with_its_origin(workspace: Path) -> None:
    loaded = load_config(workspace, overrides=["retry.max_attempts=2"])
    values = {key: (value, str(origin)) for key, value, origin in loaded.values()}
    assert values[("retry", "max_attempts")] == (2, "-c retry.max_attempts")
    assert values[("models", "claude-sonnet-4", "id")] == ("claude-sonnet-4-20250514", "default")
    assert values[("agent", "verify")] == (None, "default")
    with pytest.raises(KeyError):
        loaded.origin("agent")  # a table, not a value


def test_an_unquoted_dotted_model_name_means_the_quoted_one(workspace: Path) -> None:
    loaded = load_config(workspace, overrides=["models.gpt-4.1.input_price=2.5"])
    assert loaded.config.models["gpt-4.1"].input_price == 2.5
    assert loaded.origin("models.gpt-4.1.input_price") == '-c models."gpt-4.1".input_price'


def test_set_by_lists_what_a_layer_changed(workspace: Path, project_file: Path) -> None:
    project_file.write_text('base_url = "http://x/v1"\n[agent]\nverify = "make test"\n')
    assert sorted(load_config(workspace).set_by("project")) == [
        ("agent", "verify"),
        ("base_url",),
    ]
