"""A project file that raises what each request sends, or what a run may spend, needs
trust as `memory.memory_max_bytes` does: an untrusted `.lathe/config.toml` raising
`memory.instructions_max_bytes` to 100 MB and `skills.prompt_share` to 0.5 sent a
570 KB system prompt with every request, asking no one."""

from __future__ import annotations

import pytest
from tests.config.test_project_trust import _project, _run

from lathe.config import load_config
from lathe.config.trust import project_settings


@pytest.mark.parametrize(
    "setting",
    [
        "[memory]\ninstructions_max_bytes = 100000000\n",
        "[skills]\nprompt_share = 0.5\n",
        "[mcp]\nschema_share = 1.0\n",
        "[tools]\noutput_max_bytes = 10000000\n",
        '[models.m]\nprovider = "openai"\ncontext_window = 10000000\n',
        '[models.m]\nprovider = "openai"\ninput_price = 0.0\n',
    ],
)
def test_a_project_file_lifting_a_size_or_cost_budget_needs_trust(tmp_path, setting):
    ws = _project(tmp_path, setting)

    settings = project_settings(load_config(ws))

    assert settings is not None, setting
    section, key = setting.split("]\n")[0].strip("["), setting.split("]\n")[1].split(" =")[0]
    assert any(k.startswith(section) and k.endswith(key) for k in settings.keys), settings


def test_an_untrusted_prompt_budget_stops_the_run_before_any_request(tmp_path, fake_openai):
    ws = _project(tmp_path, "[memory]\ninstructions_max_bytes = 100000000\n"
                            "[skills]\nprompt_share = 0.5\n")  # fmt: skip
    (ws / "AGENTS.md").write_text("x" * 600_000)

    result = _run(fake_openai, ws, tmp_path)

    assert result.returncode == 2, result.stderr
    assert "memory.instructions_max_bytes" in result.stderr
    assert "skills.prompt_share" in result.stderr and "--trust-project" in result.stderr
    assert fake_openai.chat_bodies() == []


@pytest.mark.parametrize(
    "setting", ["[agent]\nmax_cost_usd = 2.0\n", "[agent]\nmax_tokens = 500000\n",
                "[agent]\nmax_turns = 40\n"],
)  # fmt: skip
def test_a_project_files_own_budget_needs_no_trust(tmp_path, setting):
    # A team caps its runs in the repository; CI must not need --trust-project for that.
    assert project_settings(load_config(_project(tmp_path, setting))) is None
