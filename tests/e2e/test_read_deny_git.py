"""A read rule against git's object stores, with the real CLI in the bubblewrap sandbox:
only the workspace's own repository was checked and hidden, so a repository nested in
it — a vendored clone, a submodule — printed the denied file through `git show`."""

from __future__ import annotations

import json
import subprocess

from tests.e2e.test_run_edges import lathe_run
from tests.fakes.openai_server import Call, Reply
from tests.sandboxes import needs

from lathe.exec.bwrap import check_bubblewrap

pytestmark = needs(check_bubblewrap(), "bubblewrap")

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "protocol.file.allow=always"]


def _committed(repo, files: dict[str, str]) -> None:
    repo.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (repo / name).write_text(text)
    subprocess.run([*GIT, "-C", str(repo), "init", "-q"], check=True)
    subprocess.run([*GIT, "-C", str(repo), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(repo), "commit", "-qm", "init"], check=True)


def _sent_after_commands(fake_openai, ws, tmp_path, *commands: str) -> str:
    calls = [Reply(calls=[Call("bash", {"command": command})]) for command in commands]
    fake_openai.enqueue(*calls, Reply("Looked."))
    done = lathe_run(fake_openai, ws, tmp_path, "--deny", "read(.env)", "look")
    assert done.returncode == 0, done.stderr
    return json.dumps(fake_openai.chat_bodies())


def test_a_nested_repository_does_not_print_a_denied_file_it_committed(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    _committed(ws, {"a.py": "x = 1\n"})
    _committed(ws / "lib", {".env": "API_TOKEN=nested-secret\n", "m.py": "y = 1\n"})
    (ws / "lib" / ".env").write_text("API_TOKEN=\n")  # emptied since, still committed

    sent = _sent_after_commands(
        fake_openai, ws, tmp_path, "cd lib && git show HEAD:.env", "git -C lib log -p | cat"
    )

    assert "nested-secret" not in sent


def test_a_submodule_does_not_print_a_denied_file_it_committed(tmp_path, fake_openai):
    source = tmp_path / "lib-source"
    _committed(source, {".env": "API_TOKEN=submodule-secret\n", "m.py": "y = 1\n"})
    ws = tmp_path / "ws"
    _committed(ws, {"a.py": "x = 1\n"})
    subprocess.run([*GIT, "-C", str(ws), "submodule", "add", "-q", str(source), "lib"], check=True)
    subprocess.run([*GIT, "-C", str(ws), "commit", "-qm", "lib"], check=True)
    (ws / "lib" / ".env").unlink()

    sent = _sent_after_commands(
        fake_openai, ws, tmp_path, "cd lib && git show HEAD:.env",
        "git --git-dir=.git/modules/lib show HEAD:.env",
    )  # fmt: skip

    assert "submodule-secret" not in sent
