"""Which of an MCP server's values are secrets when a credential sits inside one — a
connection string's password in `env` or `args` — and which variables commands lose
for it (`servers.entry_secrets`, `servers.secret_variables`)."""

from __future__ import annotations

from lathe.config.schema import McpServerConfig
from lathe.mcptools.servers import ServerEntry, entry_secrets, secret_variables

ENVIRON = {
    "PGUSER": "appuser",
    "PGPW": "Vq3pZ8rLw2",
    "PGPW2": "Kx7mN4sTb9",
    "HOME": "/home/ada",
    "NODE_ENV": "development",
}


def _entry(**settings) -> ServerEntry:
    config = McpServerConfig.model_validate({"command": "srv", **settings})
    return ServerEntry("srv", config, "user file", from_project=False)


def test_the_variable_filling_a_urls_password_is_a_secret_not_the_one_filling_its_user():
    entry = _entry(
        env={"CONN": "postgresql://${PGUSER}:${PGPW}@db/x", "NODE_ENV": "${NODE_ENV}"},
        args=["--db", "postgresql://app:${PGPW2}@db/y", "${HOME}/data"],
    )
    assert secret_variables(entry, ENVIRON) == {"PGPW": "Vq3pZ8rLw2", "PGPW2": "Kx7mN4sTb9"}


def test_a_default_fills_no_credential_and_an_unset_variable_none():
    entry = _entry(env={"CONN": "postgresql://app:${UNSET:-Dflt9pass}@db/x"})
    assert secret_variables(entry, ENVIRON) == {}


def test_a_value_holding_a_password_is_masked_whole_and_the_password_alone():
    entry = _entry(
        env={"CONN": "postgresql://app:${PGPW}@db/x", "LIT": "postgresql://u:pw@h/db"},
        args=["--db=postgresql://app:${PGPW2}@db/y", "${HOME}/data", "--mode", "fast"],
    )
    assert entry_secrets(entry, ENVIRON) == sorted(
        [
            "Vq3pZ8rLw2",
            "postgresql://app:Vq3pZ8rLw2@db/x",
            "Kx7mN4sTb9",
            "--db=postgresql://app:Kx7mN4sTb9@db/y",
            "postgresql://u:pw@h/db",  # a short password goes with its string
        ]
    )


def test_values_without_a_credential_are_settings():
    entry = _entry(
        env={"NODE_ENV": "${NODE_ENV}", "SITE": "https://docs.example.com/v2"},
        args=["${HOME}/data", "postgresql://app@db/x"],
    )
    assert entry_secrets(entry, ENVIRON) == []
    assert secret_variables(entry, ENVIRON) == {}
