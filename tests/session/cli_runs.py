"""Running the real CLI against the fake server, for the session tests that need it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.fakes.openai_server import FakeOpenAIServer

from lathe.session import SessionStore


def env(home: Path, server: FakeOpenAIServer | None = None) -> dict[str, str]:
    values = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    values.update(OPENAI_API_KEY="sk-test", LATHE_HOME=str(home), COLUMNS="200")
    if server is not None:
        values["LATHE_BASE_URL"] = server.base_url
    return values


def lathe(home: Path, workspace: Path, *args: str, server: FakeOpenAIServer | None = None):
    """`lathe ARGS` in `workspace` with `home` as its LATHE_HOME."""
    return subprocess.run(
        [sys.executable, "-m", "lathe", *args], cwd=workspace, env=env(home, server),
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def run(home: Path, workspace: Path, server: FakeOpenAIServer, *args: str):
    """`lathe run ARGS` in `workspace` against `server`."""
    return lathe(home, workspace, "run", "--model", "m", "-C", str(workspace), *args,
                 server=server)  # fmt: skip


def said(server: FakeOpenAIServer) -> str:
    """The messages of the last chat request `server` received, as one JSON string."""
    return json.dumps(server.chat_bodies()[-1]["messages"])


def one_line(result: subprocess.CompletedProcess) -> str:
    """The one `lathe: ` line `result` wrote on stderr (no traceback)."""
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("lathe: ")
    return lines[0]


def rewrite_version(path: Path, version: object) -> None:
    """Give the session file `path` another format version in its header."""
    header, *rest = path.read_text().splitlines(keepends=True)
    path.write_text(json.dumps({**json.loads(header), "version": version}) + "\n" + "".join(rest))


def only_session(store: SessionStore, workspace: Path) -> Path:
    [path] = store.project_dir(workspace).glob("*.jsonl")
    return path
