"""Trusting a project file holds whatever a run overrides on its command line.

Reproduced on landed main: after `lathe trust`, a run that overrode one trusted setting
(`--approval auto`, LATHE_APPROVAL, OPENAI_BASE_URL or `-c`) stopped with "changed since
you trusted them", and no `lathe trust` could fix it: the fingerprint left out the
settings a flag overrode, so it depended on the command line. `--trust-project` with such
a flag recorded a fingerprint the next plain run refused.
"""

from __future__ import annotations

import json

import pytest
from tests.config.test_project_trust import _project, _run, lathe
from tests.fakes.openai_server import Reply

from lathe.config import load_config
from lathe.config.trust import project_settings

FILE = (
    '[permissions]\napproval = "full"\n'
    '[providers.openai]\nbase_url = "https://proxy.example/v1"\n'
    '[[hooks.post_tool]]\ncommand = "true"\n'
)


def _trust(ws, tmp_path) -> None:
    trusted = lathe("trust", "-C", str(ws), cwd=tmp_path, home=tmp_path / "home")
    assert trusted.returncode == 0, trusted.stderr


def test_a_trusted_file_runs_when_a_flag_overrides_one_of_its_settings(tmp_path, fake_openai):
    ws = _project(tmp_path, FILE)
    fake_openai.responder = lambda request: Reply("Hello.")
    _trust(ws, tmp_path)

    assert _run(fake_openai, ws, tmp_path).returncode == 0
    overridden = _run(fake_openai, ws, tmp_path, "--approval", "auto")
    assert overridden.returncode == 0, overridden.stderr
    by_c = _run(fake_openai, ws, tmp_path, "-c", "permissions.approval=ask")
    assert by_c.returncode == 0, by_c.stderr


def test_trust_given_with_an_override_holds_for_a_run_without_it(tmp_path, fake_openai):
    ws = _project(tmp_path, FILE)
    fake_openai.responder = lambda request: Reply("Hello.")

    given = _run(fake_openai, ws, tmp_path, "--approval", "auto", "--trust-project")
    assert given.returncode == 0, given.stderr

    plain = _run(fake_openai, ws, tmp_path)
    assert plain.returncode == 0, plain.stderr


@pytest.mark.parametrize(
    "environ",
    [
        {"LATHE_APPROVAL": "ask"},
        {"OPENAI_BASE_URL": "https://other.example/v1"},
    ],
)
def test_the_fingerprint_does_not_depend_on_the_environment(tmp_path, environ):
    ws = _project(tmp_path, FILE)

    plain = project_settings(load_config(ws, environ={}))
    overridden = project_settings(load_config(ws, environ=environ))

    assert plain is not None and overridden is not None
    assert overridden.fingerprint == plain.fingerprint
    assert overridden.keys == plain.keys


def test_the_fingerprint_does_not_depend_on_flags_or_c(tmp_path):
    ws = _project(tmp_path, FILE)

    plain = project_settings(load_config(ws, environ={}))
    flagged = project_settings(
        load_config(ws, environ={}, flags={"permissions.approval": "ask"},
                    overrides=["providers.openai.base_url=https://x.example/v1"])
    )  # fmt: skip

    assert plain is not None and flagged is not None
    assert flagged.fingerprint == plain.fingerprint


def test_a_file_whose_every_setting_needing_trust_is_overridden_needs_none(tmp_path):
    ws = _project(tmp_path, '[permissions]\napproval = "full"\n')

    assert project_settings(load_config(ws, environ={})) is not None
    overridden = load_config(ws, environ={}, flags={"permissions.approval": "ask"})
    assert project_settings(overridden) is None


def test_a_fingerprint_an_older_lathe_recorded_asks_to_trust_again(tmp_path, fake_openai):
    ws = _project(tmp_path, FILE)
    fake_openai.responder = lambda request: Reply("Hello.")
    home = tmp_path / "home"
    home.mkdir()
    file = str((ws / ".lathe" / "config.toml").resolve())
    (home / "trusted-projects.json").write_text(json.dumps({file: "0" * 64}))

    stale = _run(fake_openai, ws, tmp_path)
    assert stale.returncode == 2
    assert "changed since you trusted them" in stale.stderr
    assert "lathe trust" in stale.stderr

    _trust(ws, tmp_path)
    assert _run(fake_openai, ws, tmp_path).returncode == 0
