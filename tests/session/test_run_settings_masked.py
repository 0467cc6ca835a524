"""Run settings through the run's redactor (`entries.run_settings`'s `mask`): a URL the
redactor changed is marked as not the one used, as one holding credentials is."""

from __future__ import annotations

from lathe.obs import Redactor
from lathe.session.entries import RunSettings, run_settings

PASSWORD = "hunter2-horse-battery"


def test_a_url_the_redactor_masked_is_marked_masked():
    mask = Redactor.for_run([], {"MY_DB_PASSWORD": PASSWORD}).mask

    recorded = run_settings(f"http://127.0.0.1:9/v1?db={PASSWORD}", "auto",
                            f"check --password {PASSWORD}", 3, mask)  # fmt: skip

    assert recorded == RunSettings(base_url="http://127.0.0.1:9/v1?db=…", base_url_masked=True,
                                   approval="auto", verify="check --password …",
                                   max_turns=3)  # fmt: skip


def test_settings_holding_no_secret_are_recorded_as_given():
    mask = Redactor.for_run([], {"MY_DB_PASSWORD": PASSWORD}).mask

    recorded = run_settings("http://127.0.0.1:9/v1", "read-only", "pytest -q", None, mask)

    assert recorded == RunSettings(base_url="http://127.0.0.1:9/v1", approval="read-only",
                                   verify="pytest -q")  # fmt: skip
