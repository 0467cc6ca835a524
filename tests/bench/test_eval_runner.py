"""bench/eval.py against the fake server: it runs lathe per task and attempt, scores by the
task's own verify command (not lathe's claim) and passes extra lathe arguments through."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

from tests.e2e.test_calculator import PLAIN_PYTEST
from tests.fakes.openai_server import Call, Reply

EVAL_PATH = Path(__file__).resolve().parents[2] / "bench" / "eval.py"
VERIFY = "python -m pytest -q -p no:cacheprovider"


def load_eval():
    spec = importlib.util.spec_from_file_location("lathe_bench_eval", EVAL_PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while building
    spec.loader.exec_module(module)
    return module


def make_task_set(root: Path) -> Path:
    task = root / "tasks" / "sign_bug"
    repo = task / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["."]\n')
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "tests" / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    (task / "TASK.md").write_text("add() is wrong; make the tests pass.\n")
    (task / "task.json").write_text(json.dumps({"verify": VERIFY, "timeout": 60}))
    return task.parent


def test_repeats_score_by_verify_and_pass_lathe_args(tmp_path, fake_openai, monkeypatch, capsys):
    tasks = make_task_set(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-eval")
    monkeypatch.setenv("LATHE_HOME", str(tmp_path / "home"))
    # The task's tests need none of the pytest plugins installed here; not loading them
    # saves each check ~0.4 s of CPU (see PLAIN_PYTEST in tests/e2e/test_calculator.py).
    for name, value in PLAIN_PYTEST.items():
        monkeypatch.setenv(name, value)

    fake_openai.enqueue(
        # attempt 1 fixes the code
        Reply(
            calls=[Call("edit", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"})]
        ),
        Reply("Fixed add."),
        # attempt 2 tries to weaken the test, which --deny blocks, then claims success
        Reply(
            calls=[
                Call(
                    "edit",
                    {
                        "path": "tests/test_calc.py",
                        "old_string": "== 5",
                        "new_string": "== -1",
                    },
                )
            ]
        ),
        Reply("Done."),
    )
    out_json = tmp_path / "results.json"

    code = load_eval().main(
        [
            "--tasks",
            str(tasks),
            "--model",
            "fake-model",
            "--base-url",
            fake_openai.base_url,
            "--repeat",
            "2",
            "--no-verify-gate",
            "--lathe-arg=--deny",
            "--lathe-arg=edit(tests/**)",
            "--json-out",
            str(out_json),
        ]
    )

    assert code == 0
    results = json.loads(out_json.read_text())
    assert [(r["attempt"], r["solved"]) for r in results["results"]] == [(1, True), (2, False)]
    assert results["solved"] == 1 and results["total"] == 2
    second = results["results"][1]
    assert second["status"] == "unverified"  # lathe's own claim, recorded but not trusted
    assert second["verify_exit"] == 1
    denied = [
        m
        for m in fake_openai.chat_bodies()[-1]["messages"]
        if m["role"] == "tool" and "denied" in m["content"].lower()
    ]
    assert denied, "the --deny rule given through --lathe-arg did not reach lathe"
    table = capsys.readouterr().out
    assert "per task: sign_bug 1/2" in table
    assert "solved 1/2 runs (50%)" in table
