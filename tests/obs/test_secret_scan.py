"""The API key in use never reaches a file lathe writes, its output, or the model."""

from __future__ import annotations

import contextlib
import json
import uuid
import zlib
from pathlib import Path

from tests.fakes.openai_server import Call, Reply
from tests.obs.conftest import lathe

from lathe.config.secrets import mask_secret


def _files_holding(secret: bytes, *roots: Path) -> list[Path]:
    found = []
    for root in roots:
        for path in root.rglob("*"):
            if not path.is_file() or path.is_symlink():
                continue
            data = path.read_bytes()
            with contextlib.suppress(zlib.error):  # git objects (checkpoints): look inside
                data += zlib.decompress(data)
            if secret in data:
                found.append(path)
    return found


def test_the_key_is_masked_everywhere_lathe_writes(tmp_path, workspace, home, fake_openai):
    key = f"sk-scan-{uuid.uuid4().hex}"
    env = {"OPENAI_API_KEY": key, "LATHE_HOME": str(home)}
    # The key reaches tool output only through a file of the user's (commands never
    # inherit it); the file is git-ignored so no checkpoint stores it.
    (workspace / ".gitignore").write_text("leaked.txt\n")
    (workspace / "leaked.txt").write_text(f"token: {key}\n")
    # The file 2,000 times over, from one cat (2,000 of them cost ~3 s of CPU).
    long_listing = "cat $(yes leaked.txt | head -n 2000)"
    fake_openai.enqueue(
        Reply(
            "Let me look at the environment.",
            calls=[
                Call("bash", {"command": "echo key=$OPENAI_API_KEY; cat leaked.txt"}),
                Call("bash", {"command": "env"}),
                Call("bash", {"command": long_listing}),  # spilled to a file in the workspace
            ],
        ),
        Reply("Done looking."),
    )
    first = lathe(
        "run",
        "--model",
        "fake-model",
        "--base-url",
        fake_openai.base_url,
        "-C",
        str(workspace),
        "--verify",
        "env",
        "inspect the environment",
        cwd=workspace,
        env=env,
    )
    assert first.returncode == 0, first.stderr

    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": "env"})]), Reply("Again."))
    second = lathe(
        "run",
        "--json",
        "--continue",
        "--model",
        "fake-model",
        "--base-url",
        fake_openai.base_url,
        "-C",
        str(workspace),
        "once more",
        cwd=workspace,
        env=env,
    )
    assert second.returncode == 0, second.stderr

    # What the model saw: the tool outputs carry the masked form, never the key.
    bodies = fake_openai.chat_bodies()
    sent = json.dumps(bodies)
    assert key not in sent
    tool_results = [m["content"] for m in bodies[2]["messages"] if m["role"] == "tool"]
    assert tool_results[0].startswith(f"key=\ntoken: {mask_secret(key)}")
    assert "OPENAI_API_KEY" not in tool_results[1]  # commands never see the key
    assert "output truncated" in tool_results[2]  # the long one was spilled

    # Every byte lathe wrote or printed.
    leaks = _files_holding(key.encode(), home, workspace)
    assert leaks == [workspace / "leaked.txt"]
    for output in (first.stdout, first.stderr, second.stdout, second.stderr):
        assert key not in output
    assert list((workspace / ".lathe" / "tmp").iterdir())  # the spill file exists, scrubbed
