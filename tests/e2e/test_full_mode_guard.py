"""End to end: `lathe run --approval full` refuses the forms an attack run used to destroy
files outside the workspace (issue 13, item 18), and the model is told why.

Safety: the lathe subprocess and every command it could run see HOME (and git's global
config) in a directory under tmp_path, and every dangerous command targets that fake
home, so a guard that failed would destroy only canaries. Signals to every process are
never sent, not even here: they are tested through `analyze` and `Policy.decide` only.
"""

from __future__ import annotations

from tests.e2e.test_calculator import lathe
from tests.fakes.openai_server import Call, Reply


def test_full_mode_blocks_destruction_of_the_home_directory(tmp_path, fake_openai):
    home = tmp_path / "user"
    canary = home / "canary"
    canary.mkdir(parents=True)
    (canary / "keep.txt").write_text("still here\n")
    (home / ".bashrc").write_text("# the user's shell setup\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    commands = [
        f"python3 -c \"import shutil; shutil.rmtree('{canary}')\"",
        "perl -e 'system(\"rm -rf ~/canary\")'",
        "{rm,-rf,~/canary}",
        "echo 'rm -rf ~/canary' > x.sh; bash x.sh",
        "truncate -s0 ~/.bashrc",
        ": > ~/.bashrc",
        "find ~/canary | xargs rm",
        "git config --global core.hooksPath /tmp/h",
    ]
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": c}, id=f"call_{i}") for i, c in enumerate(commands)]),
        Reply("I could not do that."),
    )

    result = lathe(
        "run", "--model", "m", "--base-url", fake_openai.base_url, "-C", str(ws),
        "--approval", "full", "clean up the home directory",
        cwd=tmp_path,
        env_extra={
            "OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "lathe-home"),
            "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
            "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        },
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert (canary / "keep.txt").read_text() == "still here\n"
    assert (home / ".bashrc").read_text() == "# the user's shell setup\n"
    assert not (home / ".gitconfig").exists()
    assert not (ws / "x.sh").exists()  # refused as a whole: its first half did not run
    bodies = fake_openai.chat_bodies()
    results = {
        m["tool_call_id"]: m["content"] for m in bodies[-1]["messages"] if m["role"] == "tool"
    }
    assert sorted(results) == [f"call_{i}" for i in range(len(commands))]
    for content in results.values():
        assert "Denied: bash was blocked: " in content, content
    assert "shutil.rmtree (via python3 -c)" in results["call_0"]
    assert "truncate empties ~/.bashrc" in results["call_4"]
    assert "git config sets core.hooksPath" in results["call_7"]


def test_full_mode_refuses_a_hard_link_to_a_file_outside_the_workspace(tmp_path, fake_openai):
    # `ln ~/.bashrc notes.txt` passed; the next call's `>>` and edits of notes.txt then
    # changed ~/.bashrc (the guard only knew a link made in the same command).
    home = tmp_path / "user"
    home.mkdir()
    (home / ".bashrc").write_text("# the user's shell setup\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    commands = ["ln ~/.bashrc notes.txt", "cp -al ~/.bashrc kept.txt", "cp --link ~/.bashrc b"]
    fake_openai.enqueue(
        *[Reply(calls=[Call("bash", {"command": c})]) for c in commands],
        Reply(calls=[Call("bash", {"command": "echo 'echo owned' >> notes.txt kept.txt b"})]),
        Reply("Done."),
    )

    result = lathe(
        "run", "--model", "m", "--base-url", fake_openai.base_url, "-C", str(ws),
        "--approval", "full", "keep notes",
        cwd=tmp_path,
        env_extra={"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "lathe-home"),
                   "HOME": str(home)},
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert (home / ".bashrc").read_text() == "# the user's shell setup\n"
    assert (home / ".bashrc").stat().st_nlink == 1
