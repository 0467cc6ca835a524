"""Shared fixtures. The repository root goes on sys.path so tests can import the fakes
as `tests.fakes...` whether or not `tests/` is a package."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from tests.fakes.openai_server import FakeOpenAIServer  # noqa: E402


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # once, in the controller, before workers start
        _compile_lathe_once()
        _rewrite_tests_once(config)
    config.addinivalue_line(
        "markers",
        "waits: spends its seconds waiting on a clock (a time budget, a heartbeat, a "
        "command's sleep) rather than computing",
    )


def _compile_lathe_once() -> None:
    """Write lathe's bytecode before the tests start hundreds of `python -m lathe`
    processes. Where PYTHONDONTWRITEBYTECODE is set (some CI images set it) nothing
    writes it, so each of those processes compiled every module it imports from source:
    0.1-0.2 s each, minutes over the suite. An installed lathe has its bytecode, so the
    tests run what users run; without the variable this finds nothing to do."""
    import compileall

    import lathe

    for folder in (Path(lathe.__file__).parent, Path(_ROOT) / "tests" / "fakes"):
        compileall.compile_dir(folder, quiet=2)  # a read-only tree: simply not cached


def _rewrite_tests_once(config: pytest.Config) -> None:
    """Write pytest's assertion-rewritten bytecode of the test modules before the workers
    start. Each worker imports every test module to collect it, and where
    PYTHONDONTWRITEBYTECODE is set pytest reads a rewritten module's cached bytecode but
    never writes it: each of the four workers rewrote all of them, about 2.5 CPU-s each
    here. This writes what pytest itself would have written, through its own functions,
    and does nothing if they move or assertions are not rewritten (`--assert=plain`)."""
    import fnmatch

    try:
        from _pytest.assertion.rewrite import (
            PYC_TAIL,
            _read_pyc,
            _rewrite_test,
            _write_pyc,
            assertstate_key,
            get_cache_dir,
        )
    except ImportError:
        return
    state = config.stash.get(assertstate_key, None)
    if state is None or state.mode != "rewrite":
        return
    patterns = ["conftest.py", *config.getini("python_files")]
    for source in sorted(Path(_ROOT, "tests").rglob("*.py")):
        if not any(fnmatch.fnmatch(source.name, pattern) for pattern in patterns):
            continue
        cache = get_cache_dir(source)
        pyc = cache / (source.name[:-3] + PYC_TAIL)
        if _read_pyc(source, pyc) is not None:
            continue
        try:
            source_stat, code = _rewrite_test(source, config)
        except SyntaxError:
            continue  # collecting it reports the error
        try:
            cache.mkdir(exist_ok=True)
        except OSError:
            return  # a read-only tree: each worker rewrites, as before
        _write_pyc(state, code, source_stat, pyc)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked `waits` go first. Under xdist they then wait on one worker while
    the others compute, instead of one of them ending the run alone on a clock."""
    items.sort(key=lambda item: item.get_closest_marker("waits") is None)


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    """A started fake OpenAI-compatible server; see tests/fakes/openai_server.py."""
    with FakeOpenAIServer() as server:
        yield server


from tests.fakes.anthropic_server import FakeAnthropicServer  # noqa: E402


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropicServer]:
    """A started fake Anthropic Messages API server; see tests/fakes/anthropic_server.py."""
    with FakeAnthropicServer() as server:
        yield server


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium (tests/browser.py), one per test module."""
    from playwright.sync_api import sync_playwright
    from tests.browser import CHROMIUM

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(browser):
    """A fresh browser context (its own sessionStorage); fails on an uncaught page error."""
    from playwright.sync_api import expect
    from tests.browser import TIMEOUT_MS

    context = browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    expect.set_options(timeout=TIMEOUT_MS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield page
    finally:
        context.close()
    assert not errors, f"the page threw: {errors}"
