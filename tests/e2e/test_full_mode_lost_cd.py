"""End to end: with `--approval full`, a `cd` the guard used to lose track of (inside an
`if`, a function, `cd -`) no longer lets `rm -rf *` or `git clean -fdx` run in the home
folder: `if [ -d ~/Documents ]; then cd ~; fi; rm -rf * .ssh` emptied a (fake) home.

Safety: the lathe subprocess and every command it runs see HOME in a folder under
tmp_path, and every command aims at that fake home, so a guard that failed would
destroy only canaries.
"""

from __future__ import annotations

import os
import subprocess

from tests.e2e.test_calculator import lathe
from tests.fakes.openai_server import Call, Reply


def test_full_mode_judges_every_folder_a_cd_may_have_left_the_shell_in(tmp_path, fake_openai):
    home = tmp_path / "user"
    (home / "Documents").mkdir(parents=True)
    (home / "Documents" / "thesis.txt").write_text("years of work\n")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("a key\n")
    env = {"HOME": str(home), "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
           "GIT_CONFIG_NOSYSTEM": "1"}  # fmt: skip
    subprocess.run(["git", "init", "-q", str(home)], env={**os.environ, **env}, check=True)
    ws = tmp_path / "ws"
    ws.mkdir()
    commands = [
        "if [ -d ~/Documents ]; then cd ~; fi; rm -rf * .ssh",
        "cd ~; cd /tmp; cd -; rm -rf *",
        "f() { cd ~; }; f; rm -rf *",
        "cd ~ && git clean -fdx",
        "GIT_WORK_TREE=~ git clean -fdx",
    ]
    fake_openai.enqueue(
        *[Reply(calls=[Call("bash", {"command": c}, id=f"call_{i}")]) for i, c in
          enumerate(commands)],
        Reply("I could not do that."),
    )  # fmt: skip

    result = lathe(
        "run", "--model", "m", "--base-url", fake_openai.base_url, "-C", str(ws),
        "--approval", "full", "clean up",
        cwd=tmp_path,
        env_extra={"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "lathe-home"),
                   "XDG_CONFIG_HOME": str(home / ".config"), **env},
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert (home / "Documents" / "thesis.txt").read_text() == "years of work\n"
    assert (home / ".ssh" / "id_ed25519").read_text() == "a key\n"
    results = {
        m["tool_call_id"]: m["content"]
        for m in fake_openai.chat_bodies()[-1]["messages"]
        if m["role"] == "tool"
    }
    assert sorted(results) == [f"call_{i}" for i in range(len(commands))]
    for content in results.values():
        assert "Denied: bash was blocked: " in content, content
    assert f"the home directory {home}" in results["call_0"]
    assert f"git clean changes files in the home directory {home}" in results["call_3"]
