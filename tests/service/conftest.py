from __future__ import annotations

import pytest
from tests.service.server import ServeProcess


@pytest.fixture
def served(tmp_path):
    """A running `lathe serve` with its own data dir; stopped after the test."""
    server = ServeProcess(tmp_path / "home").start()
    yield server
    server.stop()
