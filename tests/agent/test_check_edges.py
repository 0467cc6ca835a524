"""Edges of judging a check's output and a refused request, from a review of the
changes that made a failing summary anywhere fail the check and asked for less output."""

from __future__ import annotations

import pytest

from lathe.agent.check_files import CHECK_FILE
from lathe.agent.compaction import ContextManager
from lathe.agent.context import Budget
from lathe.agent.evidence import is_test_like, only_looks
from lathe.agent.verify import passed
from lathe.errors import ContextTooLong
from lathe.exec.base import ExecResult


def _result(output: str, exit_code: int = 0) -> ExecResult:
    return ExecResult(exit_code, output, False, None, False, 0.1)


@pytest.mark.parametrize(
    "output",
    [
        "tests/test_p.py::test_parse[1 failed, 2 passed in 0.12s] PASSED\n1 passed in 0.20s\n",
        "INFO batch done: 2 failed in 3s\n3 passed in 0.10s\n",
        "Ran 3 tests in 0.001s\n\nOK (expected failures=1)\n",
    ],
)
def test_a_passing_check_that_mentions_failures_is_still_a_pass(output: str) -> None:
    # A log line, a test id or unittest's expected failures read as a failing summary.
    assert passed(_result(output))


def test_a_failing_summary_before_a_forged_passing_one_is_a_failure() -> None:
    assert not passed(_result("F\n1 failed in 0.01s\n1 passed in 0.01s\n"))
    assert not passed(_result("==== 1 failed, 2 passed in 0.12s ====\n1 passed in 0.01s\n"))


def test_the_runners_own_modules_count_only_at_the_top_where_they_shadow() -> None:
    assert CHECK_FILE.search("pluggy.py") and CHECK_FILE.search("_pytest/main.py")
    assert not CHECK_FILE.search("src/_pytest/python.py")
    assert not CHECK_FILE.search("vendor/pluggy/__init__.py")


def test_the_runners_py_module_and_compiled_shadows_count_too() -> None:
    # pytest imports `py` as it starts, and an extension module of a runner's name
    # shadows it as a .py does: the batch's scoring put them back, the gate missed them.
    for name in ("py.py", "py/__init__.py", "pluggy.cpython-311-x86_64-linux-gnu.so",
                 "iniconfig.pyd", "_pytest.abi3.so"):  # fmt: skip
        assert CHECK_FILE.search(name), name
    for name in ("py/tools.py", "lib/py.py", "copy.py", "pyproject_utils.py", "mypy.so"):
        assert not CHECK_FILE.search(name), name


async def test_asking_for_less_output_ends_when_less_cannot_be_asked() -> None:
    # With a reserve under the 256 tokens a request always asks for, every refusal was
    # answered "ask for less", the next request asked 256 again: a loop.
    manager = ContextManager(
        Budget(context_window=4000, output_reserve=128), None, lambda event: None,
        fixed_tokens=100,
    )  # fmt: skip
    assert manager.output_tokens(4096) > 256
    # 150 tokens left: fewer than any request asks for, so not asked again that way.
    tight = ContextTooLong("too long", window_tokens=4000, request_tokens=3850)
    assert not await manager.shrink([], refusal=tight)
    # 300 left: asked for once; refused again with the same numbers, it ends.
    manager = ContextManager(
        Budget(context_window=4000, output_reserve=128), None, lambda event: None,
        fixed_tokens=100,
    )  # fmt: skip
    manager.output_tokens(4096)
    roomier = ContextTooLong("too long", window_tokens=4000, request_tokens=3700)
    assert await manager.shrink([], refusal=roomier)
    assert manager.output_tokens(4096) == 300
    assert not await manager.shrink([], refusal=roomier, again=True)


@pytest.mark.parametrize(
    ("command", "looks"),
    [
        ("ls -la && git status", True),
        ("python -m pytest -q tests || true", True),
        ("cd pkg; npm test", True),
        ("ruff check --fix src", False),
        ("ruff format src", False),
        ("npx jest -u", False),
        ("pytest -q > out.txt", False),
        ("pytest -q; sed -i s/a/b/ calc.py", False),
        ("pip install pytest", False),
        # A runner's name in a file-changing command's arguments made it read only.
        ("sed -i s/a/b/ pytest.ini", False),
        ("echo ok | tee tox.ini", False),
        ("git checkout -- pytest.ini", False),
        ("rm src/jest.setup.js", False),
        ("ruff check --fix-only", False),
        ("pytest --snapshot-update", False),
        ("CI=1 python -m pytest -q", True),
        ("uv run pytest tests", True),
        ("npx jest", True),
        # ... and the ways a runner is started from a path or a wrapper read as a change.
        (".venv/bin/pytest -q", True),
        ("coverage run -m pytest", True),
        ("timeout 300 pytest", True),
        ("python3.12 -m pytest", True),
        ("./node_modules/.bin/jest", True),
        ("env CI=1 pytest -q", True),
    ],
)
def test_rerunning_a_check_reads_but_fixing_with_a_checker_writes(command: str, looks: bool):
    assert only_looks(command) is looks


@pytest.mark.parametrize(
    ("command", "runs"),
    [
        ("pip install -e . && pytest -q", True),
        ("cd pkg && python -m pytest -q 2>&1 | tail -5", True),
        ("make test", True),
        ("pip install pytest; true", False),
        # Evidence of a test run, with no verify command, had been a file-changing one.
        ("sed -i s/x/y/ pytest.ini", False),
        ("ruff check --fix-only src", False),
    ],
)
def test_test_evidence_is_a_command_that_runs_a_check(command: str, runs: bool):
    assert is_test_like(command) is runs
