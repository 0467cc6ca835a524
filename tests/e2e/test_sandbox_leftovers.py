"""What a sandboxed run leaves in the temporary folder once it ends: nothing. The stand-in
file bound over denied paths lived in a `lathe-mask-*` folder that every such run left
behind (160 of them here after a day of tests)."""

from __future__ import annotations

from tests.e2e.test_calculator import run_against, workspace
from tests.fakes.openai_server import Call, Reply
from tests.sandboxes import needs

from lathe.exec.bwrap import check_bubblewrap

pytestmark = needs(check_bubblewrap(), "bubblewrap")


def test_a_run_that_masks_a_denied_file_leaves_no_folder_in_tmp(tmp_path, fake_openai):
    ws = workspace(tmp_path)
    (ws / "secret.txt").write_text("hunter2\n")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    peek = "python3 -c \"print(open('sec' + 'ret.txt').read())\""
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": peek})]), Reply("done"))

    result = run_against(
        fake_openai, ws, tmp_path, "--deny", "read(secret.txt)", "--approval", "auto", "look",
        env_extra={"TMPDIR": str(scratch)},
    )  # fmt: skip

    assert result.returncode == 0, result.stderr[-2000:]
    output = next(m["content"] for m in fake_openai.chat_bodies()[-1]["messages"]
                  if m["role"] == "tool")  # fmt: skip
    assert "Permission denied" in output and "hunter2" not in output  # the mask was bound
    assert list(scratch.glob("lathe-mask-*")) == []


def test_a_filter_planted_in_a_submodules_config_never_runs_on_this_machine(tmp_path, fake_openai):
    # A sandboxed command pointed a submodule's `.git` file at a copy of its git dir with
    # a `filter.x.clean` program; lathe's next checkpoint staged the workspace, git asked
    # the submodule whether it was dirty, and ran the program outside the sandbox.
    import subprocess

    def git(where, *args):
        subprocess.run(["git", "-C", str(where), "-c", "user.name=t", "-c", "user.email=t@t",
                        "-c", "protocol.file.allow=always", *args],
                       check=True, capture_output=True)  # fmt: skip

    source, ws = tmp_path / "libsrc", tmp_path / "ws"
    source.mkdir()
    ws.mkdir()
    git(source, "init", "-q")
    (source / "l.py").write_text("x\n")
    git(source, "add", ".")
    git(source, "commit", "-qm", "l")
    git(ws, "init", "-q")
    (ws / "a.py").write_text("a\n")
    git(ws, "add", ".")
    git(ws, "commit", "-qm", "a")
    git(ws, "submodule", "add", "-q", str(source), "lib")
    git(ws, "commit", "-qm", "sub")
    ran = tmp_path / "ran-on-the-host"
    plant = (
        "mkdir .evil && cp -r .git/modules/lib/. .evil/ && sed -i '/worktree/d' .evil/config"
        f" && printf '[filter \"x\"]\\n\\tclean = \"touch {ran}; cat\"\\n' >> .evil/config"
        " && mv lib lib_old && mkdir lib && cp lib_old/l.py lib/"
        " && echo 'l.py filter=x' > lib/.gitattributes && echo 'gitdir: ../.evil' > lib/.git"
    )
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": plant})]),
        Reply(calls=[Call("bash", {"command": "true"})]),
        Reply("Done."),
    )
    done = run_against(fake_openai, ws, tmp_path, "--approval", "auto", "Tidy up")
    assert done.returncode == 0, done.stderr
    assert not ran.exists()


def test_a_link_to_a_folder_under_a_protected_folders_name_is_set_aside(tmp_path, fake_openai):
    # `ln -s v .vscode` planted tasks.json the editor runs on the host: folder patterns
    # (`.vscode/`) never matched a link to a folder.
    ws = workspace(tmp_path)
    plant = "mkdir v && echo '{\"tasks\": []}' > v/tasks.json && ln -s v .vscode"
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": plant})]), Reply("done"))
    result = run_against(fake_openai, ws, tmp_path, "--approval", "auto", "set up")
    assert result.returncode == 0, result.stderr[-2000:]
    assert not (ws / ".vscode").exists() and not (ws / ".vscode").is_symlink()


def test_credential_files_in_the_toolchain_folders_commands_see_are_masked(
    tmp_path, fake_openai
):
    # ~/.cargo is bound so cargo works; its credentials.toml (a crates.io token) was
    # readable too, as were git's and uv's stored credentials.
    home = tmp_path / "user-home"
    secrets = {
        ".cargo/credentials.toml": "token = \"CARGO-SECRET\"\n",
        ".config/git/credentials": "https://me:GIT-SECRET@example.invalid\n",
        ".local/share/uv/credentials/credentials.toml": "password = \"UV-SECRET\"\n",
    }
    for name, text in secrets.items():
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(text)
    (home / ".cargo" / "config.toml").write_text("[net]\noffline = true\n")
    ws = workspace(tmp_path)
    peek = "; ".join(f"cat ~/{name}" for name in secrets) + "; cat ~/.cargo/config.toml"
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": peek})]), Reply("done"))
    result = run_against(fake_openai, ws, tmp_path, "--approval", "auto", "look",
                         env_extra={"HOME": str(home)})  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    output = next(m["content"] for m in fake_openai.chat_bodies()[-1]["messages"]
                  if m["role"] == "tool")  # fmt: skip
    assert "offline = true" in output  # the toolchain's own files still show
    assert not any(word in output for word in ("CARGO-SECRET", "GIT-SECRET", "UV-SECRET"))
