"""The code a failing check runs through (agent/failure_code.py), cut from the output of
real pytest and Python runs on small workspaces."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from lathe.agent.failure_code import code_at_failure

TESTS = ("tests/**", "test_*.py")


def workspace(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def pytest_output(ws: Path) -> str:
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTEST_ADDOPTS": ""}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=ws, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 1, run.stdout
    return run.stdout


PRICES = """import json


def parse(text):
    data = json.loads(text)
    return total(data)


def total(data):
    return sum(item["price"] for item in data)


def unused():
    return 0
"""


def test_the_functions_a_traceback_passes_through_in_order_and_no_test(tmp_path):
    ws = workspace(tmp_path, {
        "shop/__init__.py": "",
        "shop/prices.py": PRICES,
        "tests/test_prices.py": "from shop.prices import parse\n\n\n"
        "def test_parse():\n    assert parse('[{\"cost\": 1}]') == 1\n\n\n"
        "def test_bad_json():\n    assert parse('[') == 0\n",
    })  # fmt: skip

    code = code_at_failure(pytest_output(ws), ws, not_shown=TESTS, max_bytes=2000)

    assert code == (
        "shop/prices.py, lines 4-6:\n"
        "     4\tdef parse(text):\n"
        "     5\t    data = json.loads(text)\n"
        "     6\t    return total(data)\n\n"
        "shop/prices.py, lines 9-10:\n"
        "     9\tdef total(data):\n"
        '    10\t    return sum(item["price"] for item in data)'
    )  # json's own frames are outside the workspace; the test may not be shown


def test_a_failure_inside_a_test_shows_the_definitions_that_test_uses(tmp_path):
    ws = workspace(tmp_path, {
        "calc.py": "def mean(xs):\n    return sum(xs) / (len(xs) + 1)\n\n\n"
        "def spread(xs):\n    return max(xs) - min(xs)\n",
        "tests/test_calc.py": "from calc import mean, spread\n\n\n"
        "def test_mean():\n    assert mean([2, 4]) == 3\n\n\n"
        "def test_spread():\n    assert spread([1, 4]) == 3\n",
    })  # fmt: skip

    code = code_at_failure(pytest_output(ws), ws, not_shown=TESTS, max_bytes=2000)

    assert code == (
        "calc.py, lines 1-2:\n     1\tdef mean(xs):\n     2\t    return sum(xs) / (len(xs) + 1)"
    )  # spread passes: its definition is not shown


def test_a_name_the_test_imports_under_another_name_is_found_by_its_own(tmp_path):
    ws = workspace(tmp_path, {
        "calc.py": "def mean(xs):\n    return sum(xs) / (len(xs) + 1)\n",
        "tests/test_calc.py": "from calc import mean as average\n\n\n"
        "def test_mean():\n    assert average([2, 4]) == 3\n",
    })  # fmt: skip

    code = code_at_failure(pytest_output(ws), ws, not_shown=TESTS, max_bytes=2000)

    assert code.startswith("calc.py, lines 1-2:\n     1\tdef mean(xs):")


def test_files_the_model_may_not_change_are_never_shown(tmp_path):
    ws = workspace(tmp_path, {
        "app.py": "from vendor.lib import check\n\n\ndef run(x):\n    return check(x)\n",
        "vendor/__init__.py": "",
        "vendor/lib.py": "def check(x):\n    raise ValueError(x)\n",
        "tests/test_app.py": "from app import run\n\n\ndef test_run():\n    assert run(1) == 1\n",
    })  # fmt: skip

    code = code_at_failure(
        pytest_output(ws), ws, not_shown=(*TESTS, "vendor/**"), max_bytes=2000
    )

    assert code.startswith("app.py, lines 4-5:\n     4\tdef run(x):")
    assert "vendor" not in code and "raise ValueError" not in code


def test_a_long_function_is_cut_around_the_line_named_and_all_keeps_to_the_bytes(tmp_path):
    body = "".join(f"    step_{n} = {n}\n" for n in range(60))
    ws = workspace(tmp_path, {
        "work.py": f"def work():\n{body}    raise RuntimeError('at the end')\n\n\n"
        "def helper():\n    return work()\n",
        "tests/test_work.py": "from work import helper\n\n\ndef test_helper():\n    helper()\n",
    })  # fmt: skip
    output = pytest_output(ws)

    code = code_at_failure(output, ws, not_shown=TESTS, max_bytes=2000)
    blocks = code.split("\n\n")
    assert blocks[0] == "work.py, lines 65-66:\n    65\tdef helper():\n    66\t    return work()"
    assert blocks[1].startswith("work.py, lines 33-62:\n    33\t    step_31 = 31")
    assert blocks[1].endswith("    62\t    raise RuntimeError('at the end')")

    small = code_at_failure(output, ws, not_shown=TESTS, max_bytes=400)
    assert len(small.encode()) <= 400
    assert small.startswith("work.py, lines 65-66:")
    assert "raise RuntimeError" in small  # the long one: the lines above the one named
    assert "step_40" not in small


def test_a_plain_python_traceback_names_its_places_too(tmp_path):
    ws = workspace(tmp_path, {
        "main.py": "import tool\n\n\ndef go():\n    tool.fail()\n\n\ngo()\n",
        "tool.py": "def fail():\n    return 1 / 0\n",
    })  # fmt: skip
    run = subprocess.run([sys.executable, "main.py"], cwd=ws, capture_output=True, text=True)
    assert 'File "' in run.stderr

    code = code_at_failure(run.stderr, ws, not_shown=TESTS, max_bytes=2000)

    assert code.split("\n\n") == [
        "main.py, lines 3-8:\n     3\t\n     4\tdef go():\n     5\t    tool.fail()\n     6\t\n"
        "     7\t\n     8\tgo()",  # its call of go() holds go's lines: shown once
        "tool.py, lines 1-2:\n     1\tdef fail():\n     2\t    return 1 / 0",
    ]
