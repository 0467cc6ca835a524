"""The browser the page tests drive: Debian's chromium through playwright (which cannot
fetch its own here). Its fixtures, `browser` and `page`, live in tests/conftest.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.sandboxes import REQUIRED

CHROMIUM = Path("/usr/bin/chromium")
TIMEOUT_MS = 30_000

# CI installs Chromium and sets LATHE_REQUIRE_SANDBOXES=1: there a missing browser fails.
needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists() and not REQUIRED, reason=f"no Chromium at {CHROMIUM}"
)
