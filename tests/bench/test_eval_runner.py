"""bench/eval.py against the fake server: a thin front to `lathe batch` that runs a subset
of the tasks K times each, scores by the task's own verify command (not lathe's claim),
passes extra lathe arguments through, and prints the solve table from results.jsonl."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path

from tests.batch.tasks import cheat, fix, make_task
from tests.e2e.test_calculator import PLAIN_PYTEST
from tests.service.scripts import by_marker

EVAL_PATH = Path(__file__).resolve().parents[2] / "bench" / "eval.py"


def load_eval():
    spec = importlib.util.spec_from_file_location("lathe_bench_eval", EVAL_PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def make_task_set(root: Path) -> Path:
    """t1 (a logic bug the script fixes), t2 (one it "fixes" by editing the test) and t3
    (never selected: the fake model has no script for it)."""
    tasks = root / "tasks"
    make_task(tasks, "t1", kind="logic-bug")
    make_task(tasks, "t2", kind="tempting-wrong-fix")
    make_task(tasks, "t3", kind="logic-bug")
    return tasks


def isolate(tmp_path, monkeypatch) -> None:
    for name in list(os.environ):
        if name.startswith(("LATHE_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-eval")
    monkeypatch.setenv("LATHE_HOME", str(tmp_path / "home"))
    # The task's tests need none of the pytest plugins installed here; not loading them
    # saves each check ~0.4 s of CPU (see PLAIN_PYTEST in tests/e2e/test_calculator.py).
    for name, value in PLAIN_PYTEST.items():
        monkeypatch.setenv(name, value)


def results(run: Path) -> dict[str, dict]:
    lines = (run / "results.jsonl").read_text().splitlines()
    return {line["id"]: line for line in map(json.loads, lines)}


def test_a_subset_repeated_is_scored_by_the_tasks_own_check(
    tmp_path, fake_openai, monkeypatch, capsys
):
    isolate(tmp_path, monkeypatch)
    tasks = make_task_set(tmp_path)
    fake_openai.responder = by_marker({"Task t1": fix("t1"), "Task t2": cheat("t2")})
    run = tmp_path / "run"

    code = load_eval().main(
        ["--tasks", str(tasks), "--model", "fake-model", "--base-url", fake_openai.base_url,
         "--only", "t1", "--only", "t2", "--repeat", "2", "--workers", "2",
         "--max-turns", "6", "--timeout-s", "90", "--out", str(run)]
    )  # fmt: skip

    assert code == 0
    lines = results(run)
    assert sorted(lines) == ["t1#1", "t1#2", "t2#1", "t2#2"]  # t3 left out, K ids a task
    assert all(lines[i]["solved"] and lines[i]["status"] == "solved" for i in ("t1#1", "t1#2"))
    for i in ("t2#1", "t2#2"):
        # The test was edited to pass: lathe's own check (the gate) passed, the task's
        # check, run by lathe batch with the tests put back, did not.
        assert lines[i]["lathe_status"] == "verified"
        assert not lines[i]["solved"] and lines[i]["verify_exit"] == 1
        assert lines[i]["false_verified"] is True
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["tasks"] == str(run / "eval-tasks.jsonl")
    assert manifest["settings"]["max_wall_s"] == 90.0
    assert manifest["settings"]["max_turns"] == 6

    table = capsys.readouterr().out
    assert "per task: t1 2/2, t2 0/2" in table
    assert "solved 2/4 runs (50%)" in table
    assert "2 claimed verified but failed the task's check" in table
    kinds = {line.split()[0]: line.split()[1:] for line in table.splitlines() if line}
    assert kinds["logic-bug"] == ["2/2", "100%"]
    assert kinds["tempting-wrong-fix"] == ["0/2", "0%"]
    t2_row = next(line for line in table.splitlines() if line.startswith("t2#1 "))
    assert t2_row.split()[1:4] == ["no", "unsolved", "verified"]


def test_lathe_args_pass_through_and_the_run_folder_defaults_to_a_fresh_one(
    tmp_path, fake_openai, monkeypatch, capsys
):
    isolate(tmp_path, monkeypatch)
    tasks = make_task_set(tmp_path)
    fake_openai.responder = by_marker({"Task t2": cheat("t2")})
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))

    code = load_eval().main(
        ["--tasks", str(tasks), "--model", "fake-model", "--base-url", fake_openai.base_url,
         "--only", "t2", "--max-turns", "3",
         "--lathe-arg=--deny", "--lathe-arg=edit(tests/**)"]
    )  # fmt: skip

    assert code == 0
    [run] = (tmp_path / "tmp").glob("lathe-eval-*")
    assert f"run folder: {run}" in capsys.readouterr().out
    line = results(run)["t2"]  # one run: the task's own id
    assert not line["solved"] and line["lathe_status"] != "verified"
    denied = [
        m
        for body in fake_openai.chat_bodies()
        for m in body["messages"]
        if m["role"] == "tool" and "denied" in m["content"].lower()
    ]
    assert denied, "the --deny rule given through --lathe-arg did not reach lathe"
    settings = json.loads((run / "manifest.json").read_text())["settings"]
    assert settings["lathe_args"] == ["--deny", "edit(tests/**)"]
    assert settings["max_wall_s"] == 600.0  # --timeout-s's default


def test_an_unknown_task_is_refused_before_anything_runs(tmp_path, fake_openai, capsys):
    tasks = make_task_set(tmp_path)
    code = load_eval().main(["--tasks", str(tasks), "--only", "nope", "--out", str(tmp_path / "r")])
    assert code == 2
    assert "unknown task(s): nope" in capsys.readouterr().err
    assert not (tmp_path / "r").exists() and not fake_openai.requests


def test_a_task_whose_check_passed_before_any_change_is_left_out_of_the_rate(capsys):
    # lathe batch leaves such a task out of its solve rate (`passed_before`); the eval
    # table had counted it as a run not solved.
    runs = [{"id": f"t{n}", "task": f"t{n}", "repeat": 1} for n in (1, 2, 3)]
    lines = {
        "t1": {"status": "solved", "solved": True, "kind": "logic-bug"},
        "t2": {"status": "unsolved", "solved": False, "kind": "logic-bug"},
        "t3": {"status": "passed_before", "solved": False, "kind": "logic-bug"},
    }
    load_eval().print_table(runs, lines, "after")
    table = capsys.readouterr().out
    assert "solved 1/2 runs (50%)" in table
    assert "1 passed its check before any change (not counted)" in table
    kinds = {line.split()[0]: line.split()[1:] for line in table.splitlines() if line}
    assert kinds["logic-bug"] == ["1/2", "50%"]
