"""Running `lathe` as a subprocess against the fake OpenAI server, with prices."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# A catalog entry made with -c overrides: $1 per million input tokens, $2 per million
# output tokens, served by the fake server under the wire id "fake-model".
PRICED_MODEL = (
    "--model",
    "fake",
    "-c",
    'models.fake.provider="openai"',
    "-c",
    'models.fake.id="fake-model"',
    "-c",
    "models.fake.input_price=1.0",
    "-c",
    "models.fake.output_price=2.0",
)


def lathe(
    *args: str, cwd: Path, env: dict[str, str], stdin: str | None = None
) -> subprocess.CompletedProcess:
    clean = {
        k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_", "OTEL_"))
    }
    clean.update(env)
    return subprocess.run(
        [sys.executable, "-m", "lathe", *args],
        cwd=cwd,
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
        input=stdin,
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("hello\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"
