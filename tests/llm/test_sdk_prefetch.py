"""Building a provider starts importing its SDK in the background, so the import
overlaps the work a run does before its first model call instead of delaying it."""

from __future__ import annotations

import subprocess
import sys

_PROBE = """
import sys, time
from lathe.llm.registry import Endpoint, make_provider
assert "{sdk}" not in sys.modules
make_provider(Endpoint(kind="{kind}", model_id="m", base_url="http://127.0.0.1:9",
                       api_key="k", api_key_env="K"))
deadline = time.monotonic() + 30
while not hasattr(sys.modules.get("{sdk}"), "{attribute}") and time.monotonic() < deadline:
    time.sleep(0.01)
print("imported" if hasattr(sys.modules.get("{sdk}"), "{attribute}") else "not imported")
"""


def _probe(kind: str, sdk: str, attribute: str) -> str:
    code = _PROBE.format(kind=kind, sdk=sdk, attribute=attribute)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_openai_sdk_is_imported_before_the_first_request():
    assert _probe("openai-compatible", "openai", "AsyncOpenAI") == "imported"


def test_the_anthropic_sdk_is_imported_before_the_first_request():
    assert _probe("anthropic", "anthropic", "AsyncAnthropic") == "imported"
