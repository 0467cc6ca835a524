"""`lathe config show|path|init` as a user runs them."""

import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from lathe.config import Config, load_config
from lathe.ui.config_cmd import config_group

SECRET = "sk-live-9fQ2mXv7Lr0pT4zKw8Yb3NcA6eHs"


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(config_group, list(args))
    return result.exit_code, result.output


def test_show_prints_values_with_origins(
    workspace: Path, user_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_file.write_text('model = "gpt-4o"\n')
    monkeypatch.setenv("LATHE_MAX_TURNS", "9")
    code, out = run("show", "-C", str(workspace), "-c", "retry.max_attempts=2")
    assert code == 0, out
    lines = out.splitlines()
    assert lines[:2] == [f"# user file: {user_file}  (exists)", "# project file: none found"]
    assert any(
        line.startswith('model = "gpt-4o"') and line.endswith(f"# user file {user_file}")
        for line in lines
    )
    assert any(
        line.startswith("agent.max_turns = 9 ") and line.endswith("# env LATHE_MAX_TURNS")
        for line in lines
    )
    assert any(
        line.startswith("retry.max_attempts = 2 ") and line.endswith("# -c retry.max_attempts")
        for line in lines
    )
    assert any(line.startswith("agent.verify = (unset) ") for line in lines)
    assert "# selected model: gpt-4o -> openai (openai-compatible) gpt-4o at" in out


def test_show_masks_a_key_set_in_the_environment(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    code, out = run("show", "-C", str(workspace))
    assert code == 0
    assert SECRET not in out
    assert SECRET[4:-4] not in out
    openai_line = next(line for line in out.splitlines() if line.startswith("openai "))
    assert openai_line.split() == ["openai", "OPENAI_API_KEY", "sk-…6eHs"]
    anthropic_line = next(line for line in out.splitlines() if line.startswith("anthropic "))
    assert anthropic_line.split() == ["anthropic", "ANTHROPIC_API_KEY", "not", "set"]
    assert next(line for line in out.splitlines() if line.startswith("ollama ")).split() == [
        "ollama",
        "no",
        "key",
        "needed",
    ]


def test_show_reports_a_config_error_with_exit_code_2(workspace: Path, user_file: Path) -> None:
    user_file.write_text("[agent]\nmax_turn = 5\n")
    code, out = run("show", "-C", str(workspace))
    assert code == 2
    assert out == (
        f"lathe: {user_file}: unknown key 'agent.max_turn' (did you mean 'agent.max_turns'?)\n"
    )


def test_path_names_both_files_and_whether_they_exist(
    workspace: Path, user_file: Path, project_file: Path
) -> None:
    project_file.write_text("")
    code, out = run("path", "-C", str(workspace))
    assert code == 0
    assert out.splitlines() == [
        f"user file:    {user_file}  (not found)",
        f"project file: {project_file}  (exists)",
    ]


def test_init_writes_a_starter_file_that_loads_back_as_the_defaults(
    workspace: Path, user_file: Path
) -> None:
    code, out = run("init")
    assert (code, out) == (0, f"wrote {user_file}\n")
    loaded = load_config(workspace)
    assert loaded.config == Config()
    assert "api_key_env is the NAME of the\n# environment variable" in user_file.read_text()


def test_init_project_writes_into_the_repository(workspace: Path, project_file: Path) -> None:
    code, out = run("init", "--project", "-C", str(workspace))
    assert (code, out) == (0, f"wrote {project_file}\n")
    assert load_config(workspace).project_file == project_file


def test_init_refuses_to_overwrite_without_force(workspace: Path, user_file: Path) -> None:
    user_file.write_text('model = "gpt-4o"\n')
    code, out = run("init")
    assert (code, out) == (2, f"lathe: {user_file} already exists; use --force to overwrite it\n")
    assert user_file.read_text() == 'model = "gpt-4o"\n'
    assert run("init", "--force")[0] == 0
    assert user_file.read_text().startswith("# lathe user configuration.")


def test_every_line_of_the_starter_file_can_be_uncommented(
    workspace: Path, user_file: Path
) -> None:
    assert run("init")[0] == 0
    lines = user_file.read_text().splitlines()
    uncommented = [
        line[2:] if line.startswith(("# [", "# ")) and _is_setting(line[2:]) else line
        for line in lines
    ]
    user_file.write_text("\n".join(uncommented))
    raw = tomllib.loads(user_file.read_text())
    assert raw["agent"]["verify"] == "pytest -q"
    config = load_config(workspace).config
    assert config.models["my-model"].provider == "my-server"
    assert config.agent.max_turns == Config().agent.max_turns


def _is_setting(text: str) -> bool:
    head = text.split(" = ", 1)[0]
    return text.startswith("[") or (" = " in text and head.replace("_", "").isalnum())


def _lathe(*args: str, cwd: Path) -> tuple[int, str]:
    """The real CLI, as a user types it (the environment is the test's clean one)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "lathe", *args],
        cwd=cwd, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    return done.returncode, done.stdout + done.stderr


def test_show_tells_which_approval_applies_to_which_face(workspace: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    code, out = _lathe("config", "show", cwd=workspace)
    assert code == 0, out
    line = next(line for line in out.splitlines() if line.startswith("permissions.approval"))
    text, origin = (part.strip() for part in line.split("  # "))
    assert text == 'permissions.approval = "ask"  (interactive; lathe run: "auto")'
    assert origin == "default (each face has its own)"

    code, out = _lathe("config", "show", "--json", cwd=workspace)
    assert code == 0, out
    assert SECRET[4:-4] not in out
    import json

    document = json.loads(out)
    assert document["api_keys"]["providers"]["openai"] == {
        "env": "OPENAI_API_KEY",
        "state": "sk-…6eHs",
    }
    shown = document["values"]["permissions.approval"]
    assert shown == {
        "value": "ask",
        "origin": "default",
        "faces": {
            "interactive": {"value": "ask", "origin": "default"},
            "run": {"value": "auto", "origin": "default for lathe run"},
        },
    }


def test_an_approval_a_layer_sets_applies_to_every_face(workspace: Path, monkeypatch) -> None:
    monkeypatch.setenv("LATHE_APPROVAL", "read-only")
    code, out = _lathe("config", "show", cwd=workspace)
    assert code == 0, out
    line = next(line for line in out.splitlines() if line.startswith("permissions.approval"))
    text, origin = (part.strip() for part in line.split("  # "))
    assert text == 'permissions.approval = "read-only"  (every face)'
    assert origin == "env LATHE_APPROVAL"

    code, out = _lathe("config", "show", "--json", "-c", "permissions.approval=full", cwd=workspace)
    import json

    faces = json.loads(out)["values"]["permissions.approval"]["faces"]
    assert faces == {
        "interactive": {"value": "full", "origin": "-c permissions.approval"},
        "run": {"value": "full", "origin": "-c permissions.approval"},
    }
