"""What commands in the default sandbox see of the user's secrets, with the real CLI, the
scripted fake model and a fake home folder.

Reproduced on landed main: a Bitwarden or 1Password CLI session, a .NET connection
string with its password, an `AUTHORIZATION` header, `PGPASS`, a Stripe secret key, a
service account's JSON and a JDBC URL with `password=` in its query reached every
command (`env` printed them to the model), since only the name, or a URL's
`user:password@`, was looked at; and `~/.gitconfig` was mounted whole, so
`cat ~/.gitconfig` showed the token of an `insteadOf` URL and an `extraheader`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.fakes.openai_server import Call, Reply
from tests.sandboxes import needs

from lathe.exec.bwrap import check_bubblewrap
from lathe.exec.gvisor import check_gvisor

pytestmark = needs(check_bubblewrap(), "bubblewrap")

GITLAB_TOKEN = "glpat-AbCdEf123456xyz"
HEADER_CREDENTIALS = "eDphYmNkZWYxMjM0NTY3ODkw"
CONFIG_WITH_CREDENTIALS = f"""\
[user]
\tname = Ada Lovelace
\temail = ada@example.com
[alias]
\tst = status --short
[url "https://oauth2:{GITLAB_TOKEN}@gitlab.example.com/"]
\tinsteadOf = https://gitlab.example.com/
[http "https://github.com/"]
\textraheader = AUTHORIZATION: basic {HEADER_CREDENTIALS}
[credential]
\thelper = "!f() {{ echo password=hunter2hunter2; }}; f"
"""


def _home(tmp_path: Path, gitconfig: str | None = None) -> Path:
    home = tmp_path / "fakehome"
    (home / ".ssh").mkdir(parents=True)
    if gitconfig is not None:
        (home / ".gitconfig").write_text(gitconfig)
    return home


def _run(
    fake_openai,
    tmp_path: Path,
    home: Path,
    env: dict[str, str],
    *commands: str,
    sandbox: tuple[str, ...] = (),
    workspace: Path | None = None,
) -> str:
    """The tool results the model received for `commands`, run in the default sandbox
    (or the one `sandbox`, extra arguments of `lathe run`, chooses), in `workspace`
    (a fresh folder unless given)."""
    ws = workspace or tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    fake_openai.enqueue(
        *(Reply(calls=[Call("bash", {"command": c})]) for c in commands), Reply("Looked.")
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    clean.update(env, HOME=str(home), OPENAI_API_KEY="sk-test", LATHE_HOME=str(tmp_path / "lh"))
    done = subprocess.run(
        [sys.executable, "-m", "lathe", "run", "--model", "m", "--base-url",
         fake_openai.base_url, "-C", str(ws), *sandbox, "look around"],
        cwd=tmp_path, env=clean, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    messages = fake_openai.chat_bodies()[-1]["messages"]
    return "\n".join(m["content"] for m in messages if m["role"] == "tool")


SECRETS = {
    "BW_SESSION": "Yp3Qx9mZr2Lk8vT0aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567==",
    "OP_SESSION_my": "Aq1Bw2Ce3Dr4Ft5Gy6Hu7Ji8Ko9Lp0",
    "ConnectionStrings__Default": "Server=db;User Id=app;Password=Sup3rS3cret!;",
    "AUTHORIZATION": "Bearer Zk8Xq2Lm9Np4Rt7Vw1",
    "PGPASS": "pgPw-7731-xyz",
    "STRIPE_SK": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "GOOGLE_CREDS": '{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----'
    '\\nMIIEvQ9k\\n-----END PRIVATE KEY-----\\n"}',
    "JDBC_URL": "jdbc:postgresql://db:5432/app?user=app&password=JdbcPw0rd42",
    "DOTNET_DB": "Data Source=db;Initial Catalog=app;User ID=sa;Pwd=Mssql-Pw-99;",
}
# What tools need and what says nothing secret, though some name a session or a password.
ORDINARY = {
    "LANG": "C.UTF-8",
    "XDG_SESSION_TYPE": "wayland",
    "XDG_SESSION_ID": "3",
    "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus",
    "DESKTOP_SESSION": "ubuntu",
    "SESSION_MANAGER": "local/box:@/tmp/.ICE-unix/1977,unix/box:/tmp/.ICE-unix/1977",
    "TERM_SESSION_ID": "w0t0p0:5A1F0C2E-8D1B-4C3A-9E7F-0123456789AB",
    "PGPASSFILE": "/etc/app/pgpass",
    "GIT_ASKPASS": "/usr/lib/git-core/git-gui--askpass",
    "DATABASE_HOST_URL": "postgres://db:5432/app",
    "APP_DB": "Server=db;Database=app;Trusted_Connection=True;",
}


def test_session_tokens_and_connection_strings_never_reach_commands(tmp_path, fake_openai):
    seen = _run(fake_openai, tmp_path, _home(tmp_path), {**SECRETS, **ORDINARY}, "env")

    for name in SECRETS:
        assert f"{name}=" not in seen, name
    for secret in ("Sup3rS3cret", "Zk8Xq2Lm9Np4Rt7Vw1", "JdbcPw0rd42", "Mssql-Pw-99", "MIIEvQ9k"):
        assert secret not in seen
    for name, value in ORDINARY.items():
        assert f"{name}={value}" in seen, name
    assert f"HOME={tmp_path / 'fakehome'}" in seen


def test_a_git_config_is_shown_without_its_credentials(tmp_path, fake_openai):
    home = _home(tmp_path, CONFIG_WITH_CREDENTIALS)
    xdg = home / ".config" / "git"
    xdg.mkdir(parents=True)
    (xdg / "config").write_text(f'[url "https://x:{GITLAB_TOKEN}2@gitlab.example.com/"]\n'
                                "\tinsteadOf = https://gl/\n")  # fmt: skip
    (xdg / "work.inc").write_text(f"[gitlab]\n\ttoken = {GITLAB_TOKEN}3\n")
    (xdg / "ignore").write_text("*.swp\n")

    seen = _run(
        fake_openai, tmp_path, home, {},
        "cat ~/.gitconfig ~/.config/git/config ~/.config/git/work.inc; "
        "git config --global --list; git config --list --show-origin",
        "cat ~/.config/git/ignore",
    )  # fmt: skip

    assert GITLAB_TOKEN not in seen
    assert HEADER_CREDENTIALS not in seen
    assert "hunter2" not in seen
    assert "*.swp" in seen  # git's ignore file beside its config is still there


def test_git_in_the_sandbox_knows_the_users_name_and_email(tmp_path, fake_openai):
    home = _home(tmp_path, "[user]\n\tname = Ada Lovelace\n\temail = ada@example.com\n")

    seen = _run(fake_openai, tmp_path, home, {}, "git config user.name; git config user.email")

    assert "Ada Lovelace" in seen and "ada@example.com" in seen


@pytest.mark.parametrize(
    "sandbox",
    [
        pytest.param((), id="bwrap"),
        pytest.param(("--sandbox", "gvisor"), id="gvisor", marks=needs(check_gvisor(), "gVisor")),
    ],
)
def test_git_knows_the_users_name_from_a_config_with_credentials(tmp_path, fake_openai, sandbox):
    # The copy without the credentials is mounted where the config was: before the
    # engines mounted it, such a config was not shown at all and git commit failed.
    home = _home(tmp_path, CONFIG_WITH_CREDENTIALS)

    seen = _run(
        fake_openai,
        tmp_path,
        home,
        {},
        "cat ~/.gitconfig; git config user.email; git config alias.st",
        sandbox=sandbox,
    )

    assert GITLAB_TOKEN not in seen
    assert "ada@example.com" in seen and "status --short" in seen, json.dumps(seen)


@pytest.mark.parametrize(
    "sandbox",
    [
        pytest.param((), id="bwrap"),
        pytest.param(("--sandbox", "gvisor"), id="gvisor", marks=needs(check_gvisor(), "gVisor")),
    ],
)
def test_a_workspace_holding_the_git_config_still_shows_the_copy(tmp_path, fake_openai, sandbox):
    # Started in ~ (or a folder above it): the copy was mounted before the workspace,
    # whose bind brought the real config back, token and all, and writable.
    home = _home(tmp_path, CONFIG_WITH_CREDENTIALS)

    seen = _run(
        fake_openai, tmp_path, home, {},
        "cat ~/.gitconfig; git config user.email; echo changed >> ~/.gitconfig",
        sandbox=sandbox, workspace=home,
    )  # fmt: skip

    assert GITLAB_TOKEN not in seen and HEADER_CREDENTIALS not in seen, seen
    assert "ada@example.com" in seen
    assert (home / ".gitconfig").read_text() == CONFIG_WITH_CREDENTIALS
