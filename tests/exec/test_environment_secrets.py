"""Which variables commands start without (`lathe.exec.env`), judged by name and by
value, and which they keep though the name mentions a session or a password.

Reproduced on landed main: `BW_SESSION`, `OP_SESSION_<account>`, a connection string
with `Password=`, `AUTHORIZATION`, `PGPASS`, `STRIPE_SK`, `GOOGLE_CREDS` and a JDBC URL
with `password=` in its query all reached commands.
"""

from __future__ import annotations

import pytest

from lathe.exec.env import command_environment, holds_secret, secret_values

HIDDEN = {
    "BW_SESSION": "Yp3Qx9mZr2Lk8vT0aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567==",
    "OP_SESSION_my": "Aq1Bw2Ce3Dr4Ft5Gy6Hu7Ji8Ko9Lp0",
    "OP_SESSION": "Aq1Bw2Ce3Dr4Ft5Gy6Hu7Ji8Ko9Lp0",
    "SESSION_TOKEN": "c2Vzc2lvbi10b2tlbi0xMjM0",
    "FLASK_SESSION_SECRET": "flask-1234",
    "DB_PASSWD": "pw-1",
    "DB_PASS": "pw-2",
    "MYSQL_PWD": "pw-3",
    "REDIS_PASSWORD": "pw-4",
    "AUTHORIZATION": "Bearer Zk8Xq2Lm9Np4Rt7Vw1",
    "HTTP_AUTHORIZATION": "Basic YWxhZGRpbjpvcGVuc2VzYW1l",
    "PGPASS": "pgPw-7731-xyz",
    "SMTP_PASS": "mail-pw-1",
    "SSHPASS": "Sup3r-ssh-pass",
    "LDAP_BIND_PW": "ldap-pw-98765",
    "SMTP_PW": "smtppw12345",
    "STRIPE_SK": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "GOOGLE_CREDS": '{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY..."}',
    "AWS_CREDS_JSON": '{"id": 1}',
    # Named like anything, holding a secret all the same.
    "ConnectionStrings__Default": "Server=db;User Id=app;Password=Sup3rS3cret!;",
    "DOTNET_DB": "Data Source=db;User ID=sa;Pwd=Mssql-Pw-99;",
    "JDBC_URL": "jdbc:postgresql://db:5432/app?user=app&password=JdbcPw0rd42",
    "JDBC_MYSQL": "jdbc:mysql://app:Mysql-Pw-1@db:3306/app",
    "PG_CONNINFO": "host=db port=5432 user=app password=LibpqPw-1",
    "STORAGE": "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=bXlrZXkxMjM0NTY3OA==;",
    "BLOB_URL": "https://a.blob.core.windows.net/c?sv=2022-11-02&sr=c&sig=c2lnbmF0dXJlMTIz",
    "SIGNING": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA\n",
    "GH_HELPER": "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "PUSH_REMOTE": "https://x-access-token@github.com/o/r",
}
KEPT = {
    "PATH": "/usr/bin:/bin", "HOME": "/home/ada", "LANG": "C.UTF-8", "TERM": "xterm-256color",
    "PWD": "/w", "OLDPWD": "/", "PWDEBUG": "1", "PW_TEST_REPORTER": "list",
    "XDG_SESSION_TYPE": "wayland", "XDG_SESSION_ID": "3", "XDG_SESSION_CLASS": "user",
    "XDG_SESSION_DESKTOP": "gnome", "DESKTOP_SESSION": "ubuntu", "GDMSESSION": "ubuntu",
    "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus",
    "SESSION_MANAGER": "local/box:@/tmp/.ICE-unix/1977,unix/box:/tmp/.ICE-unix/1977",
    "TERM_SESSION_ID": "w0t0p0:5A1F0C2E-8D1B-4C3A-9E7F-0123456789AB",
    "KONSOLE_DBUS_SESSION": "/Sessions/1", "XAUTHORITY": "/run/user/1000/xauth",
    "PGPASSFILE": "/etc/app/pgpass", "GIT_ASKPASS": "/usr/lib/git-core/git-gui--askpass",
    "SSH_ASKPASS": "/usr/bin/ksshaskpass", "PASSENGER_APP_ENV": "test",
    "NO_PROXY_BYPASS": "localhost", "SSH_AUTH_SOCK": "/tmp/ssh-x/agent.1",
    "DATABASE_HOST_URL": "postgres://db:5432/app", "GIT_REMOTE": "ssh://git@github.com/o/r",
    "APP_DB": "Server=db;Database=app;Trusted_Connection=True;",
    "HTTP_PROXY": "http://proxy:3128", "PIP_INDEX_URL": "https://pypi.org/simple",
    "LS_COLORS": "rs=0:di=01;34:ln=01;36",
    "CI_COMMIT_SHA": "4f2c1d0e9b8a7c6d5e4f3a2b1c0d9e8f7a6b5c4d",
    # A password or a session only as a piece of a word, or a session that is no token.
    "COMPASS_URL": "https://compass.example", "ENCOMPASS_HOME": "/opt/encompass",
    "PASS_THROUGH": "1", "NO_PASS": "1", "SURPASS_LIMIT": "10", "BYPASS_CACHE": "1",
    "TMUX_SESSION": "main", "PIPENV_SESSION": "abc", "SCREEN_SESSION": "dev",
    "TMUX": "/tmp/tmux-1000/default,1234,0", "TMUX_PANE": "%3",
}  # fmt: skip


@pytest.mark.parametrize("name", HIDDEN)
def test_a_variable_holding_a_secret_is_hidden(name):
    assert holds_secret(name, HIDDEN[name])
    assert command_environment({name: HIDDEN[name]}) == {}


def test_ordinary_variables_are_kept_though_named_like_a_session_or_a_password():
    assert command_environment({**KEPT, **HIDDEN}) == KEPT


def test_a_passthrough_still_lets_one_through():
    kept = command_environment(HIDDEN, passthrough=["BW_SESSION", "ConnectionStrings__*"])

    assert sorted(kept) == ["BW_SESSION", "ConnectionStrings__Default"]


def test_the_secret_part_of_a_value_that_cannot_be_masked_whole_is_masked():
    # A connection string holds spaces, so it could not be masked wherever it appears;
    # its password can, should a file in the workspace hold the same one.
    masked = secret_values(
        {
            "ConnectionStrings__Default": "Server=db;User Id=app;Password=Sup3rS3cret!;",
            "AUTHORIZATION": "Bearer Zk8Xq2Lm9Np4Rt7Vw1",
            "BW_SESSION": "Yp3Qx9mZr2Lk8vT0aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567==",
            "APP_DB": "Server=db; Database=app; Password=short;",  # too short
        }
    )

    assert masked == [
        "Sup3rS3cret!",
        "Zk8Xq2Lm9Np4Rt7Vw1",
        "Yp3Qx9mZr2Lk8vT0aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567==",
    ]
