"""What the sandbox view shows of git dirs a `.git` file names, of a home folder the
workspace holds and of lathe's own folders under denied ones; with the real sandboxes.

Reproduced on main before these fixes:
- a `.git` file saying `gitdir: /root` (shipped in a tarball, say) had /root bound
  read-only into every later command, ~/.ssh and lathe's data dir with it;
- with `-C ~`, a missing ~/.gitconfig or ~/.bash_profile could be created (only existing
  dot-entries were kept read-only), and all the others were read-only, the project's
  own `.venv`, `.pytest_cache` and `.github` too;
- lathe's data dir inside a read-denied folder failed every command (`bwrap: Can't
  mkdir ...: Read-only file system`);
- a missing file LATHE_CONFIG names inside the workspace could be created by a command.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from tests.exec.test_sandbox_keeps_lathes_own_out import (
    SANDBOXES,
    _git,
    _repository,
    _tool_outputs,
)
from tests.sandboxes import needs

from lathe.exec.bwrap import bwrap_argv, check_bubblewrap
from lathe.exec.view import sandbox_view

pytestmark = needs(check_bubblewrap(), "bubblewrap")


def _in_bwrap(ws: Path, command: str, **rules) -> subprocess.CompletedProcess:
    """`command` run in bubblewrap showing `sandbox_view(ws, ...)`."""
    argv = bwrap_argv("bwrap", sandbox_view(ws, ws, network=False, **rules))
    return subprocess.run(
        [*argv, "sh", "-c", command], capture_output=True, text=True, timeout=60, check=False
    )


def _outside_folder(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    (outside / ".ssh").mkdir(parents=True)
    (outside / ".ssh" / "id_rsa").write_text("PRIVATE-KEY-outside\n")
    return outside


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_dot_git_file_naming_a_folder_that_does_not_name_it_back_shows_nothing(
    tmp_path, fake_openai, sandbox
):
    outside = _outside_folder(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".git").write_text(f"gitdir: {outside}\n")  # as a tarball could ship it

    seen = _tool_outputs(
        fake_openai, tmp_path, ws, {},
        f"ls -A {outside}; cat {outside}/.ssh/id_rsa; echo end-$((1+1))", args=sandbox,
    )  # fmt: skip

    assert "end-2" in seen
    assert "PRIVATE-KEY-outside" not in seen and ".ssh" not in seen.splitlines(), seen


def test_a_forged_worktree_or_submodule_binds_nothing_outside(tmp_path, monkeypatch):
    outside = _outside_folder(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    ws = tmp_path / "ws"
    ws.mkdir()
    # A worktree's git dir inside the workspace, its common dir somewhere else.
    (ws / "fake").mkdir()
    (ws / "fake" / "gitdir").write_text(f"{ws}/.git\n")
    (ws / "fake" / "commondir").write_text(f"{outside}\n")
    (ws / ".git").write_text("gitdir: fake\n")
    forged_common = sandbox_view(ws, ws, network=False, home=home, read_only=())
    # A folder naming the workspace back, but one that holds the home folder, or lathe's.
    (tmp_path / "gitdir").write_text(f"{ws}/.git\n")
    (ws / ".git").write_text(f"gitdir: {tmp_path}\n")
    holds_home = sandbox_view(ws, ws, network=False, home=home)
    monkeypatch.setenv("LATHE_HOME", str(outside / "lathe"))
    (outside / "config").write_text(f"[core]\n\tworktree = {ws}\n")
    (ws / ".git").write_text(f"gitdir: {outside}\n")
    holds_lathes = sandbox_view(ws, ws, network=False, home=home)

    assert forged_common.read_only == ()
    assert holds_home.read_only == (ws / ".git",)
    assert holds_lathes.read_only == (ws / ".git",)
    assert "PRIVATE-KEY" not in _in_bwrap(ws, f"cat {outside}/.ssh/id_rsa", home=home).stdout


def test_a_real_worktree_and_submodule_are_still_bound(tmp_path):
    main = _repository(tmp_path / "main")
    _git("worktree", "add", "-q", str(tmp_path / "linked"), cwd=main)
    upstream = _repository(tmp_path / "upstream")
    _git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream), "sub",
         cwd=main)  # fmt: skip
    linked, sub = tmp_path / "linked", main / "sub"

    worktree = sandbox_view(linked, linked, network=False, home=tmp_path / "home")
    submodule = sandbox_view(sub, sub, network=False, home=tmp_path / "home")

    assert main / ".git" in worktree.read_only
    assert main / ".git" / "worktrees" / "linked" in worktree.read_only
    assert main / ".git" / "modules" / "sub" in submodule.read_only
    assert "first commit" in _in_bwrap(sub, "git log --oneline", home=tmp_path / "home").stdout


def _home_workspace(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    (home / ".local").mkdir()
    (home / ".bashrc").write_text("# mine\n")
    for folder in (".venv", ".pytest_cache", ".github", ".tox"):
        (home / folder).mkdir()
    return home


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_home_workspace_keeps_startup_files_from_being_made_and_its_project_folders_writable(
    tmp_path, fake_openai, sandbox
):
    home = _home_workspace(tmp_path)
    made = (".gitconfig", ".bash_profile", ".config/git/config", ".local/bin/git",
            ".config/autostart/x.desktop", ".ssh/authorized_keys")  # fmt: skip
    writes = " ".join(f"mkdir -p $(dirname {p}); echo evil > {p};" for p in made)

    seen = _tool_outputs(
        fake_openai, tmp_path, home, {"HOME": str(home), "LATHE_HOME": None},
        f"{writes} echo 'echo x' >> .bashrc; echo ok > .venv/v; echo ok > .pytest_cache/c; "
        "echo ok > .github/w; echo ok > .tox/t; echo ok > .env; echo done-$((1+1))",
        args=sandbox,
    )  # fmt: skip

    assert "done-2" in seen
    for path in made:
        assert not (home / path).exists(), path
    assert "moved it to" in seen  # and the output says where
    assert (home / ".bashrc").read_text() == "# mine\n"
    for path in (".venv/v", ".pytest_cache/c", ".github/w", ".tox/t", ".env"):
        assert (home / path).read_text() == "ok\n", path


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_home_workspace_keeps_a_startup_file_a_command_puts_back_by_moving_its_folder(
    tmp_path, fake_openai, sandbox
):
    home = _home_workspace(tmp_path)
    (home / ".config" / "git").mkdir()
    (home / ".config" / "git" / "config").write_text("[user]\n\tname = me\n")

    seen = _tool_outputs(
        fake_openai, tmp_path, home, {"HOME": str(home), "LATHE_HOME": None},
        "mv .config .config.old; mkdir -p .config/git; "
        "printf '[core]\\n\\tfsmonitor = evil\\n' > .config/git/config; echo done-$((1+1))",
        args=sandbox,
    )  # fmt: skip

    assert "done-2" in seen, seen
    kept = home / ".config" / "git" / "config"
    assert not kept.exists() or "fsmonitor" not in kept.read_text()


@pytest.mark.parametrize("sandbox", SANDBOXES)
@pytest.mark.parametrize("rule", ["read(data)", "read"])
def test_lathes_data_dir_inside_a_read_denied_folder_leaves_commands_running(
    tmp_path, fake_openai, sandbox, rule
):
    ws = tmp_path / "ws"
    (ws / "data").mkdir(parents=True)
    (ws / "data" / "x.txt").write_text("hi\n")

    seen = _tool_outputs(
        fake_openai, tmp_path, ws, {"LATHE_HOME": str(ws / "data" / "lathe")}, "echo ran-$((1+1))",
        args=(*sandbox, "--deny", rule),
    )  # fmt: skip

    assert "ran-2" in seen, seen


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_home_workspace_with_its_config_folder_denied_leaves_commands_running(
    tmp_path, fake_openai, sandbox
):
    home = _home_workspace(tmp_path)
    (home / ".config" / "lathe").mkdir()
    (home / ".config" / "gh").mkdir()

    seen = _tool_outputs(
        fake_openai, tmp_path, home, {"HOME": str(home), "LATHE_HOME": None}, "echo ran-$((1+1))",
        args=(*sandbox, "--deny", "read(.config)"),
    )  # fmt: skip

    assert "ran-2" in seen, seen


@pytest.mark.parametrize("where", ["conf/lathe.toml", "lathe.toml"])
def test_a_missing_config_file_lathe_config_names_in_the_workspace_cannot_be_made(
    tmp_path, monkeypatch, where
):
    ws = tmp_path / "ws"
    ws.mkdir()
    config = ws / where
    monkeypatch.setenv("LATHE_CONFIG", str(config))
    monkeypatch.setenv("LATHE_HOME", str(tmp_path / "lh"))

    done = _in_bwrap(
        ws,
        f"mkdir -p {config.parent}; printf '[hooks]\\n' > {config}; echo rc=$?",
        home=tmp_path / "home",
    )

    assert done.returncode == 0, done.stderr
    assert not config.exists() or config.read_text() == ""


def test_a_startup_file_the_user_saves_on_the_host_meanwhile_is_left_in_place(tmp_path):
    from lathe.exec.sandboxed import _placed

    home = _home_workspace(tmp_path)
    before = _placed(home / ".bashrc", home)
    (home / "new").write_text("# edited\n")
    (home / "new").replace(home / ".bashrc")  # an editor saving a new file in its place

    assert _placed(home / ".bashrc", home) == before
    assert _placed(home / ".zshrc", home) is None
