"""A project file that raises what each request sends, or what a run may spend, needs
trust as `memory.memory_max_bytes` does: an untrusted `.lathe/config.toml` raising
`memory.instructions_max_bytes` to 100 MB and `skills.prompt_share` to 0.5 sent a
570 KB system prompt with every request, asking no one. Lowering those, or a model entry
that only names a provider, an id or a profile, needs none: asking for it pushed CI to
`--trust-project`, which trusts the file's hooks too."""

from __future__ import annotations

import pytest
from tests.config.test_project_trust import _project, _run
from tests.fakes.openai_server import Reply

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
        '[models.m]\nprovider = "openai"\nmax_output_tokens = 1000000\n',
        '[models.m]\nprovider = "openai"\noutput_price = 0.0\n',
        '[models.m]\nprovider = "openai"\ncached_input_price = 0.0\n',
        '[models.m]\nprovider = "openai"\ncache_write_price = 0.0\n',
        "[memory]\ninstructions_max_bytes = 32769\n",  # one byte past the default
    ],
)
def test_a_project_file_lifting_a_size_or_cost_budget_needs_trust(tmp_path, setting):
    ws = _project(tmp_path, setting)

    settings = project_settings(load_config(ws))

    assert settings is not None, setting
    section, key = setting.split("]\n")[0].strip("["), setting.splitlines()[-1].split(" =")[0]
    assert settings.keys == [f"{section}.{key}"], settings


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


@pytest.mark.parametrize(
    "setting",
    [
        '[models.small]\nprovider = "openai"\nid = "gpt-4o-mini"\n',
        '[models.small]\nprovider = "openai"\nprofile = "small"\n',
        "[memory]\ninstructions_max_bytes = 1000\n",
        "[memory]\ninstructions_max_bytes = 32768\n",  # the default itself
        "[skills]\nprompt_share = 0.0\n",
        "[mcp]\nschema_share = 0.05\n",
        "[tools]\noutput_max_bytes = 10000\n",
    ],
)
def test_a_project_file_lowering_a_size_or_naming_a_model_needs_no_trust(tmp_path, setting):
    assert project_settings(load_config(_project(tmp_path, setting))) is None


def test_a_model_entry_and_lowered_sizes_run_without_trust(tmp_path, fake_openai):
    ws = _project(tmp_path, '[models.m]\nprovider = "openai"\nid = "gpt-4o-mini"\n'
                            "[memory]\ninstructions_max_bytes = 1000\n"
                            "[tools]\noutput_max_bytes = 10000\n")  # fmt: skip
    fake_openai.responder = lambda request: Reply("Hello.")

    result = _run(fake_openai, ws, tmp_path)

    assert result.returncode == 0, result.stderr
    assert [body["model"] for body in fake_openai.chat_bodies()] == ["gpt-4o-mini"]
