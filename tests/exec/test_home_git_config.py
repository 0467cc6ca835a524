"""What the sandbox shows of git's own files in the home folder (`lathe.exec.view`).

Reproduced on landed main: `~/.gitconfig` and `~/.config/git` were mounted whole, so a
token in an `insteadOf` URL, an `http.extraheader` or a credential helper's script was
printed by `cat ~/.gitconfig`, while ~/.ssh stayed hidden.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from lathe.exec.view import sandbox_view

WITH_CREDENTIALS = """\
[user]
\tname = Ada Lovelace
\temail = ada@example.com
\tsigningKey = ~/.ssh/id_ed25519.pub
[core]
\teditor = "vim -c \\"set tw=72\\""
\tpager
[alias]
\tlg = log --oneline --graph
[url "ssh://git@github.com/"]
\tinsteadOf = https://github.com/
[url "https://oauth2:glpat-AbCdEf123456xyz@gitlab.example.com/"]
\tinsteadOf = https://gitlab.example.com/
[url "https://ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6@github.example/"]
\tinsteadOf = https://github.example/
[http "https://github.com/"]
\textraheader = AUTHORIZATION: basic eDphYmNkZWYxMjM0NTY3ODkw
\tsslVerify = true
[credential]
\thelper = "!f() { echo password=hunter2hunter2; }; f"
[credential "https://gitlab.example.com"]
\tusername = ada
[sendemail]
\tsmtpServer = smtp.example.com
\tsmtpPass = mail-pw-1
[github]
\ttoken = 0123456789abcdef0123456789abcdef
[include]
\tpath = ~/.gitconfig-local
"""
CREDENTIALS = ("glpat-", "ghp_", "eDphYmNk", "hunter2", "mail-pw-1", "0123456789abcdef")


def _settings(path: Path) -> list[str]:
    listed = subprocess.run(
        ["git", "config", "--file", str(path), "--no-includes", "--list"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return listed.stdout.splitlines()


def _view(tmp_path: Path, home: Path):
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return sandbox_view(ws, ws, network=False, home=home)


def test_a_git_config_holding_credentials_is_shown_as_a_copy_without_them(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(WITH_CREDENTIALS)

    view = _view(tmp_path, home)

    assert home / ".gitconfig" not in view.tools
    [(shown_at, copy)] = view.copies
    assert shown_at == home / ".gitconfig"
    assert not any(secret in copy.read_text() for secret in CREDENTIALS)
    assert _settings(copy) == [
        "user.name=Ada Lovelace",
        "user.email=ada@example.com",
        "user.signingkey=~/.ssh/id_ed25519.pub",
        'core.editor=vim -c "set tw=72"',
        "core.pager",
        "alias.lg=log --oneline --graph",
        "url.ssh://git@github.com/.insteadof=https://github.com/",
        "http.https://github.com/.sslverify=true",
        "credential.https://gitlab.example.com.username=ada",  # a name, no secret
        "sendemail.smtpserver=smtp.example.com",
        "include.path=~/.gitconfig-local",
    ]
    assert (home / ".gitconfig").read_text() == WITH_CREDENTIALS  # the user's, untouched


def test_a_git_config_without_credentials_is_shown_as_it_is(tmp_path):
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".gitconfig").write_text("[user]\n\tname = Ada\n[url \"git@github.com:\"]\n"
                                     "\tinsteadOf = https://github.com/\n")  # fmt: skip
    (home / ".config" / "git" / "config").write_text("[core]\n\tautocrlf = input\n")

    view = _view(tmp_path, home)

    assert home / ".gitconfig" in view.tools
    assert home / ".config" / "git" / "config" in view.tools
    assert view.copies == ()


def test_of_gits_config_folder_only_its_config_ignore_and_attributes_are_shown(tmp_path):
    home = tmp_path / "home"
    folder = home / ".config" / "git"
    folder.mkdir(parents=True)
    (folder / "config").write_text('[url "https://u:pw-1234567@git.example/"]\n\tinsteadOf = x\n')
    (folder / "ignore").write_text("*.swp\n")
    (folder / "attributes").write_text("*.png binary\n")
    (folder / "credentials").write_text("https://u:pw@git.example\n")
    (folder / "work.inc").write_text("[gitlab]\n\ttoken = glpat-AbCdEf123456xyz\n")

    view = _view(tmp_path, home)

    assert folder not in view.tools
    assert {folder / "ignore", folder / "attributes"} <= set(view.tools)
    assert not {folder / "credentials", folder / "work.inc", folder / "config"} & set(view.tools)
    [(shown_at, copy)] = view.copies
    assert shown_at == folder / "config" and "pw-1234567" not in copy.read_text()


@pytest.mark.parametrize("text", ["[user\n\tname = broken", '[user]\n\tname = "unterminated\n'])
def test_a_git_config_git_cannot_read_is_not_shown(tmp_path, text):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(text)

    view = _view(tmp_path, home)

    assert home / ".gitconfig" not in view.tools and view.copies == ()


def test_the_copy_follows_an_edit_of_the_config(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    config = home / ".gitconfig"
    config.write_text("[user]\n\tname = Ada\n[github]\n\ttoken = ghp_A1b2C3d4E5f6G7h8I9j0K1l2\n")
    [(_, first)] = _view(tmp_path, home).copies

    config.write_text("[user]\n\tname = Grace\n[github]\n\ttoken = ghp_A1b2C3d4E5f6G7h8I9j0K1l2\n")
    [(_, second)] = _view(tmp_path, home).copies

    assert _settings(second) == ["user.name=Grace"]
    assert _settings(first) == ["user.name=Ada"]  # a command still running keeps its own


@pytest.mark.parametrize(
    "helper",
    ["store", "cache --timeout=3600", "osxkeychain", "manager", "manager-core", "libsecret",
     "/usr/local/bin/git-credential-manager", '"!gh auth git-credential"', ""],
)  # fmt: skip
def test_a_credential_helper_naming_a_program_is_no_credential(tmp_path, helper):
    # Reproduced: any credential.* entry made a copy, which the engines did not mount, so
    # git in the sandbox lost user.name and `git commit` failed "Author identity unknown".
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        f"[user]\n\tname = Ada\n\temail = ada@example.com\n[credential]\n\thelper = {helper}\n"
        '[credential "https://github.com"]\n\tusername = ada\n\tuseHttpPath = true\n'
        '\thelper = "!/usr/bin/gh auth git-credential"\n'
    )

    view = _view(tmp_path, home)

    assert home / ".gitconfig" in view.tools and view.copies == ()


@pytest.mark.parametrize(
    "helper",
    ['"!f() { echo password=hunter2hunter2; }; f"',
     "\"!f() { echo username=ada; echo 'password=S3cr3t-pw'; }; f\"",
     "\"!echo password=${PW:-hunter2hunter2}\"",
     "store --file=/x https://ada:S3cr3tPassw0rd@git.example"],
)  # fmt: skip
def test_a_credential_helper_holding_a_secret_is_left_out_of_the_copy(tmp_path, helper):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(f"[user]\n\tname = Ada\n[credential]\n\thelper = {helper}\n")

    [(_, copy)] = _view(tmp_path, home).copies

    assert _settings(copy) == ["user.name=Ada"]
