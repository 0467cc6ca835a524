"""Building a provider queues its warm-up on the background thread: the import of its
HTTP stack (and SDK), its client and the modules its first request would load, so that
work overlaps what a run waits on before its first model call instead of delaying it."""

from __future__ import annotations

import subprocess
import sys

_PROBE = """
import sys, time
from lathe import warmup
from lathe.llm.registry import Endpoint, make_provider
assert "{sdk}" not in sys.modules
make_provider(Endpoint(kind="{kind}", model_id="m", base_url="http://127.0.0.1:9",
                       api_key="k", api_key_env="K"))
time.sleep(0.5)
assert "{sdk}" not in sys.modules, "the warm-up ran before the face started it"
warmup.start()
deadline = time.monotonic() + 30
while any(m not in sys.modules for m in {modules}) and time.monotonic() < deadline:
    time.sleep(0.01)
print(" ".join(name for name in {modules} if name not in sys.modules) or "all loaded")
"""


def _probe(kind: str, sdk: str, modules: list[str]) -> str:
    code = _PROBE.format(kind=kind, sdk=sdk, modules=modules)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_openai_compatible_client_is_ready_before_the_first_request():
    modules = ["httpx2", "httpcore2", "anyio._backends._asyncio"]
    assert _probe("openai-compatible", "httpx2", modules) == "all loaded"


def test_the_anthropic_client_is_ready_before_the_first_request():
    modules = ["anthropic", "anthropic.resources.messages", "httpcore2"]
    assert _probe("anthropic", "anthropic", modules) == "all loaded"


def test_the_http_stack_loads_without_trio_which_lathes_asyncio_loop_never_uses():
    import importlib.util

    import pytest

    if importlib.util.find_spec("trio") is None:
        pytest.skip("trio is not installed here: nothing could load it")
    code = _PROBE.format(kind="openai-compatible", sdk="httpx2", modules=["httpcore2"])
    # httpcore2 enters sys.modules when its import begins: give the warm-up time to end.
    code += "\ntime.sleep(1)\nprint('trio loaded' if sys.modules.get('trio') else 'no trio')\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["all", "loaded", "no", "trio"]
