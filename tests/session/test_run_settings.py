"""What a run records of its start in the session (`record_run_start`): its model and
settings, once while they stay the same, never a credential its base_url holds; and a
model change without them keeps the bytes it always had."""

from __future__ import annotations

from pathlib import Path

import pytest

from lathe.session import ModelChangeEntry
from lathe.session.entries import ENTRY_ADAPTER, RunSettings, last_model_change
from lathe.ui.recorder import record_run_start
from lathe.ui.setup import RunOptions, prepare


@pytest.fixture
def setup_for(monkeypatch, tmp_path: Path, workspace: Path):
    for name in ("LATHE_BASE_URL", "OPENAI_BASE_URL", "LATHE_API_KEY", "LATHE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LATHE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return lambda **options: prepare(RunOptions(workspace=workspace, **options))


def _recorded(store, workspace, *setups) -> list[ModelChangeEntry]:
    """The model changes a session gets from runs started with each of `setups`."""
    with store.create(workspace, "gpt-4o") as session:
        for setup in setups:
            record_run_start(session, setup)
    reloaded = store.open(session.id, readonly=True)
    assert last_model_change(reloaded.branch()) == reloaded.entries[-1]
    return [e for e in reloaded.entries if isinstance(e, ModelChangeEntry)]


def test_a_run_records_its_endpoint_approval_and_check_once(store, workspace, setup_for):
    strict = setup_for(model="gpt-4o", base_url="http://127.0.0.1:9/v1", approval="read-only",
                       verify="pytest -q", max_turns=4)  # fmt: skip
    looser = setup_for(model="gpt-4o", base_url="http://127.0.0.1:9/v1")
    first, then = _recorded(store, workspace, strict, strict, looser)  # the same: said once

    assert (first.provider, first.model) == ("openai", "gpt-4o")
    assert first.settings == RunSettings(base_url="http://127.0.0.1:9/v1", approval="read-only",
                                         verify="pytest -q", max_turns=4)  # fmt: skip
    assert then.settings is not None and then.settings.approval == "auto"


def test_a_base_url_holding_credentials_is_recorded_masked(store, workspace, setup_for):
    password = "correct-horse-battery-staple-0123456789"
    setup = setup_for(model="gpt-4o", base_url=f"http://bob:{password}@127.0.0.1:9/v1")
    [entry] = _recorded(store, workspace, setup)

    assert entry.settings is not None and entry.settings.base_url_masked
    assert password not in ENTRY_ADAPTER.dump_json(entry).decode()
    assert entry.settings.base_url is not None and "127.0.0.1:9" in entry.settings.base_url


def test_the_models_own_endpoint_is_recorded_as_no_base_url(store, workspace, setup_for):
    [entry] = _recorded(store, workspace, setup_for(model="gpt-4o"))

    assert entry.settings is not None
    assert (entry.settings.base_url, entry.settings.approval) == (None, "auto")


def test_a_model_change_without_settings_keeps_its_bytes():
    plain = ModelChangeEntry(id="f6", provider="openai", model="gpt")

    assert b'"settings"' not in ENTRY_ADAPTER.dump_json(plain)
    assert ENTRY_ADAPTER.validate_json(ENTRY_ADAPTER.dump_json(plain)) == plain


def test_the_transcript_names_a_model_change_not_a_run_start_on_the_same_model(
    store, workspace, setup_for
):
    # Every `lathe run` began its transcript with "[model → openai/gpt-4o]", the model
    # the header names, since a run records its settings there.
    from lathe.session.transcript import render_markdown, render_text

    with store.create(workspace, "gpt-4o") as session:
        record_run_start(session, setup_for(model="gpt-4o", approval="read-only"))
        record_run_start(session, setup_for(model="gpt-4o"))  # other settings, same model
        record_run_start(session, setup_for(model="gpt-4o-mini"))
    reloaded = store.open(session.id, readonly=True)

    for text in (render_text(reloaded), render_markdown(reloaded)):
        assert "gpt-4o]" not in text, text
        assert text.count("[model → openai/gpt-4o-mini]") == 1, text
