"""Well-known secret variables with the real CLI: reproduced on landed main, `SSHPASS`
(what `sshpass -e` reads), `LDAP_BIND_PW` and `SMTP_PW` reached every command, since no
name rule knew a bare `SSHPASS` nor a `_PW` ending."""

from __future__ import annotations

from tests.e2e.test_home_secrets_in_the_sandbox import _home, _run
from tests.sandboxes import needs

from lathe.exec.bwrap import check_bubblewrap

pytestmark = needs(check_bubblewrap(), "bubblewrap")


def test_a_well_known_secret_variable_never_reaches_a_command(tmp_path, fake_openai):
    secrets = {"SSHPASS": "Sup3r-ssh-pass", "LDAP_BIND_PW": "ldap-pw-98765", "SMTP_PW": "smtp1"}

    seen = _run(
        fake_openai, tmp_path, _home(tmp_path), {**secrets, "SSH_ASKPASS": "/bin/ask"}, "env"
    )

    for name, value in secrets.items():
        assert f"{name}=" not in seen and value not in seen, name
    assert "SSH_ASKPASS=/bin/ask" in seen
    assert f"PWD={tmp_path / 'ws'}" in seen
