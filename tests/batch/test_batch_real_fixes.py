"""A correct fix counts, wherever it is: the batch puts back the task's protected files
and what shadows the test runner, never a file only because lathe's own gate counts it
among the check's (`agent.check_files`). A fix to `mylib/testing.py`, to a root
`pyproject.toml` or `package.json` a task does not protect, or to the `calc.py` that
`python calc.py` runs had been undone, and each scored unsolved ("lathe said verified;
the check disagrees"). Through the real CLI against the scripted fake model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.batch.tasks import VERIFY, batch_env, result_lines, run_batch
from tests.fakes.openai_server import Call, Reply
from tests.service.scripts import by_marker

TESTS = f"{VERIFY} tests"


def _task(root: Path, name: str, files: dict[str, str], verify: str, **spec) -> None:
    folder = root / name
    for relative, text in files.items():
        (folder / "repo" / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / "repo" / relative).write_text(text)
    (folder / "TASK.md").write_text(f"Task {name}: make the failing check pass.\n")
    (folder / "task.json").write_text(json.dumps({"verify": verify, "timeout": 60, **spec}))


def _fixes(path: str, old: str, new: str, name: str) -> list:
    edit = Call("edit", {"path": path, "old_string": old, "new_string": new})
    return [Reply(calls=[Call("read", {"path": path})]), Reply(calls=[edit]),
            Reply(f"{name}: fixed.")]  # fmt: skip


def test_a_fix_in_a_file_the_gate_counts_as_the_checks_is_scored(tmp_path, fake_openai):
    tasks = tmp_path / "tasks"
    _task(tasks, "testing", {
        "mylib/__init__.py": "",
        "mylib/testing.py": "def approx(a, b):\n    return a == b\n",
        "tests/test_it.py": "from mylib.testing import approx\n\n\ndef test_a():\n"
                            "    assert approx(1.0, 1.0 + 1e-12)\n",
    }, TESTS)  # fmt: skip
    _task(tasks, "pyproject", {
        "pyproject.toml": '[project]\nname = "p"\nversion = "1.0"\n',
        "tests/test_v.py": "import tomllib\n\n\ndef test_v():\n    with open('pyproject.toml', "
                           "'rb') as f:\n        assert tomllib.load(f)['project']['version'] "
                           "== '1.1'\n",
    }, TESTS, protected=["tests/"])  # fmt: skip
    _task(tasks, "package", {
        "package.json": '{"name": "x", "main": "lib.js"}\n',
        "tests/test_pkg.py": "import json\n\n\ndef test_main():\n    with open('package.json') "
                             "as f:\n        assert json.load(f)['main'] == 'index.js'\n",
    }, TESTS, protected=["tests/"])  # fmt: skip
    _task(tasks, "named", {
        "calc.py": "def add(a, b):\n    return a - b\n\n\nif __name__ == '__main__':\n"
                   "    assert add(2, 3) == 5\n",
    }, "python calc.py")  # fmt: skip
    fake_openai.responder = by_marker({
        "Task testing": _fixes("mylib/testing.py", "return a == b",
                               "return abs(a - b) < 1e-9", "testing"),
        "Task pyproject": _fixes("pyproject.toml", 'version = "1.0"', 'version = "1.1"',
                                 "pyproject"),
        "Task package": _fixes("package.json", '"lib.js"', '"index.js"', "package"),
        "Task named": _fixes("calc.py", "a - b", "a + b", "named"),
    })  # fmt: skip
    run = tmp_path / "run"

    done = run_batch(tmp_path, tasks, run, fake_openai)

    assert done.returncode == 0, done.stderr
    lines = {line["id"]: line for line in result_lines(run)}
    for name, line in lines.items():
        assert line["lathe_status"] == "verified", line
        assert line["status"] == "solved" and line["verify_exit"] == 0, (name, line)
        assert line["false_verified"] is False, line
    # `python calc.py` names calc.py: the check's script or the code under test, which
    # no name tells apart. It is not put back; the result says the agent changed it.
    assert lines["named"]["check_changed"] == ["calc.py"]
    assert all(lines[name]["check_changed"] == [] for name in ("testing", "pyproject"))
    report = subprocess.run([sys.executable, "-m", "lathe", "batch", "report", str(run)],
                            env=batch_env(tmp_path), capture_output=True, text=True,
                            timeout=120)  # fmt: skip
    assert report.returncode == 0, report.stderr
    page = (run / "report.html").read_text()
    assert "<th>Changed a file the check command names</th><td>1</td>" in page
    assert 'data-testid="check-changed"' in page and "calc.py" in page
