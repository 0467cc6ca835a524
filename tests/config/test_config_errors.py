"""What the user reads when a config is wrong: the file, the key, and what to do."""

from pathlib import Path

import pytest

from lathe.config import load_config
from lathe.errors import UsageError

FAKE_KEY = "sk-proj-Zx81mQ0aLr7TnW3vYc5uHk2ePd9s"


def error_of(workspace: Path, **kwargs: object) -> str:
    with pytest.raises(UsageError) as caught:
        load_config(workspace, **kwargs)  # type: ignore[arg-type]
    return str(caught.value)


def test_unknown_key_names_file_key_and_nearest_valid_key(workspace: Path, user_file: Path) -> None:
    user_file.write_text("[agent]\nmax_turn = 5\n")
    assert error_of(workspace) == (
        f"{user_file}: unknown key 'agent.max_turn' (did you mean 'agent.max_turns'?)"
    )


def test_a_key_in_the_wrong_table_is_pointed_to_the_right_one(
    workspace: Path, project_file: Path
) -> None:
    project_file.write_text("max_turns = 5\n")
    assert error_of(workspace) == (
        f"{project_file}: unknown key 'max_turns' (did you mean 'agent.max_turns'?)"
    )


def test_unknown_key_without_a_near_match_lists_the_valid_ones(
    workspace: Path, user_file: Path
) -> None:
    user_file.write_text("[retry]\nzzz = 1\n")
    assert error_of(workspace) == (
        f"{user_file}: unknown key 'retry.zzz'; valid keys here: "
        "max_attempts, base_delay_s, max_delay_s"
    )


def test_bad_toml_names_the_file_and_line(workspace: Path, user_file: Path) -> None:
    user_file.write_text('model = "gpt-4o"\n\n[agent\nmax_turns = 3\n')
    message = error_of(workspace)
    assert message.startswith(f"{user_file}: invalid TOML: ")
    assert "line 3" in message


def test_type_errors_name_file_key_and_expected_type(workspace: Path, project_file: Path) -> None:
    project_file.write_text('[agent]\nmax_turns = "many"\n')
    assert error_of(workspace) == (
        f"{project_file}: agent.max_turns: expected a valid integer, got 'many'"
    )


def test_a_bad_choice_lists_the_valid_ones(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LATHE_APPROVAL", "yolo")
    assert error_of(workspace) == (
        "env LATHE_APPROVAL: permissions.approval: "
        "expected 'read-only', 'ask', 'auto' or 'full', got 'yolo'"
    )


def test_a_value_where_a_table_belongs_and_the_reverse(workspace: Path, user_file: Path) -> None:
    user_file.write_text("agent = 3\n")
    assert error_of(workspace) == f"{user_file}: agent: expected a table, got 3"
    user_file.write_text("[model]\nname = 3\n")
    assert error_of(workspace) == f"{user_file}: model: expected a valid string, got {{'name': 3}}"


def test_override_errors_name_the_override(workspace: Path) -> None:
    assert error_of(workspace, overrides=["agent.max_turns=0"]) == (
        "-c agent.max_turns: must be greater than 0, got 0"
    )
    assert error_of(workspace, overrides=["agent.max_turns"]) == (
        "-c agent.max_turns: expected KEY=VALUE, e.g. -c agent.max_turns=20"
    )


def test_a_literal_key_in_api_key_env_is_rejected_without_being_echoed(
    workspace: Path, user_file: Path
) -> None:
    user_file.write_text(f'[providers.openai]\napi_key_env = "{FAKE_KEY}"\n')
    message = error_of(workspace)
    assert message.startswith(
        f"{user_file}: providers.openai.api_key_env: this looks like an API key"
    )
    assert "keys are never stored in config files" in message
    assert FAKE_KEY not in message


def test_an_api_key_field_is_explained(workspace: Path, project_file: Path) -> None:
    project_file.write_text(f'[providers.openai]\napi_key = "{FAKE_KEY}"\n')
    message = error_of(workspace)
    assert message.startswith(
        f"{project_file}: unknown key 'providers.openai.api_key' "
        "(did you mean 'providers.openai.api_key_env'?). API keys are never stored"
    )
    assert FAKE_KEY not in message


def test_a_literal_secret_in_a_header_is_rejected_but_a_reference_is_fine(
    workspace: Path, user_file: Path
) -> None:
    user_file.write_text(f'[providers.vllm.headers]\nAuthorization = "Bearer {FAKE_KEY}"\n')
    message = error_of(workspace)
    assert "header 'Authorization' looks like it holds a secret" in message
    assert FAKE_KEY not in message
    user_file.write_text('[providers.vllm.headers]\nAuthorization = "Bearer ${VLLM_TOKEN}"\n')
    assert load_config(workspace).config.providers["vllm"].headers == {
        "Authorization": "Bearer ${VLLM_TOKEN}"
    }


def test_a_model_naming_an_unknown_provider(workspace: Path, user_file: Path) -> None:
    user_file.write_text('[models.mine]\nprovider = "olama"\n')
    assert error_of(workspace) == (
        f"{user_file}: models.mine.provider: unknown provider 'olama' (did you mean 'ollama'?); "
        "known providers: anthropic, deepseek, llamacpp, ollama, openai, vllm"
    )


def test_a_new_model_without_a_provider(workspace: Path, user_file: Path) -> None:
    user_file.write_text('[models.mine]\nid = "mine-7b"\n')
    assert error_of(workspace) == f"{user_file}: models.mine.provider: required key is missing"


def test_inconsistent_timeouts_blame_the_layer_that_set_them(
    workspace: Path, project_file: Path
) -> None:
    project_file.write_text("[tools]\nbash_default_timeout_s = 900\n")
    assert error_of(workspace) == (
        f"{project_file}: tools: bash_default_timeout_s (900) is larger than "
        "bash_max_timeout_s (600)"
    )


def test_an_unreadable_file(workspace: Path, user_file: Path) -> None:
    user_file.write_bytes(b'model = "\xff"\n')
    assert error_of(workspace) == f"{user_file}: invalid TOML: the file is not UTF-8 text"


def test_an_empty_model_table_is_blamed_on_its_file(
    workspace: Path, user_file: Path, project_file: Path
) -> None:
    user_file.write_text('[models.other]\nprovider = "ollama"\n')
    project_file.write_text("[models.mine]\n")
    assert error_of(workspace) == f"{project_file}: models.mine.provider: required key is missing"


def test_local_threads_take_a_count_or_auto(workspace: Path, user_file: Path) -> None:
    user_file.write_text('[local]\nthreads = "auto"\n')
    assert load_config(workspace).config.local.threads == "auto"
    user_file.write_text("[local]\nthreads = 3\n")
    assert load_config(workspace).config.local.threads == 3
    user_file.write_text("[local]\nthreads = 0\n")
    assert error_of(workspace) == (
        f'{user_file}: local.threads: threads must be at least 1, or "auto"'
    )
    user_file.write_text('[local]\nthreads = "many"\n')
    assert "local.threads" in error_of(workspace)


def test_a_base_url_without_its_scheme_names_the_file_and_key(
    workspace: Path, user_file: Path
) -> None:
    user_file.write_text('[providers.ollama]\nbase_url = "localhost:11434/v1"\n')
    assert error_of(workspace) == (
        f"{user_file}: providers.ollama.base_url: expected an http:// or https:// URL, "
        "e.g. http://127.0.0.1:8000/v1"
    )


def test_two_bad_values_are_one_line(workspace: Path, user_file: Path) -> None:
    user_file.write_text("[agent]\nmax_turns = 0\nattempts = 50\n")
    assert error_of(workspace) == (
        f"{user_file}: agent.max_turns: must be greater than 0, got 0; "
        f"{user_file}: agent.attempts: must be less than or equal to 20, got 50"
    )


def test_a_config_variable_naming_a_folder_is_an_error(
    workspace: Path, tmp_path: Path, monkeypatch
) -> None:
    # Every user setting, a deny rule too, was silently dropped.
    monkeypatch.setenv("LATHE_CONFIG", str(tmp_path))
    assert error_of(workspace) == (
        f"LATHE_CONFIG names a folder, {tmp_path}: give the path of the config file"
    )


def test_a_config_variable_naming_no_file_is_an_error(
    workspace: Path, tmp_path: Path, monkeypatch
) -> None:
    # A typo in the path ran with no user config and no notice, its deny rules dropped.
    typo = tmp_path / "user" / "confg.toml"
    monkeypatch.setenv("LATHE_CONFIG", str(typo))
    assert error_of(workspace) == (
        f"LATHE_CONFIG names {typo}, which does not exist; fix the path, create the file "
        "(`lathe config init` writes a starter one there), or set LATHE_CONFIG=/dev/null "
        "for no user file"
    )


def test_a_config_variable_naming_dev_null_means_no_user_file(workspace: Path, monkeypatch) -> None:
    monkeypatch.setenv("LATHE_CONFIG", "/dev/null")
    loaded = load_config(workspace)
    assert loaded.config.permissions.deny == []
    assert loaded.origin("model") == "default"


@pytest.mark.parametrize(
    "url",
    [
        f"https://mcp.example.com/mcp?api_key={FAKE_KEY}",
        f"https://mcp.example.com/mcp/{FAKE_KEY}/sse",
        "https://ada:hunter2-very-secret@mcp.example.com/mcp",
    ],
)
def test_a_literal_secret_in_an_mcp_url_is_rejected_without_being_echoed(
    workspace: Path, user_file: Path, url: str
) -> None:
    user_file.write_text(f'[mcp.servers.remote]\nurl = "{url}"\n')
    message = error_of(workspace)
    assert "mcp.servers.remote.url" in message and "holds a secret" in message
    assert "${" in message  # says how to write it instead
    assert FAKE_KEY not in message and "hunter2" not in message


def test_an_mcp_url_taking_its_secret_from_the_environment_is_fine(
    workspace: Path, user_file: Path
) -> None:
    url = "https://mcp.example.com/mcp/${MCP_PATH_KEY}/sse?api_key=${MCP_KEY}&page=2"
    user_file.write_text(f'[mcp.servers.remote]\nurl = "{url}"\n')
    assert load_config(workspace).config.mcp.servers["remote"].url == url
