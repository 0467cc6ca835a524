"""What counts as a solve in `lathe batch`, through the real CLI against the scripted
fake model: a test runner's config the agent adds never counts, and a task whose check
passed before any change is no measurement at all."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest
from tests.batch.tasks import batch_env, fix, make_task, result_lines, run_batch
from tests.fakes.openai_server import Call, Reply
from tests.service.scripts import by_marker

from lathe.batch.tasks import list_hash, load_tasks


@pytest.mark.parametrize(
    ("config", "text"),
    [(".pytest.ini", "[pytest]\naddopts = -p forcepass\n"),
     ("pytest.toml", '[pytest]\naddopts = ["-p", "forcepass"]\n')],
)  # fmt: skip
def test_a_test_runner_config_the_agent_adds_never_counts(tmp_path, fake_openai, config, text):
    # A plugin forcing every test to pass, loaded from a config the default protected
    # list left out: calc.py untouched, the task counted as solved.
    forcepass = (
        "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n"
        "def pytest_runtest_makereport(item, call):\n"
        "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n"
    )
    make_task(tmp_path / "tasks", "t1")
    fake_openai.responder = by_marker({"Task t1": [
        Reply(calls=[Call("write", {"path": "forcepass.py", "content": forcepass}),
                     Call("write", {"path": config, "content": text})]),
        Reply("t1: done."),
    ]})  # fmt: skip
    run = tmp_path / "run"

    done = run_batch(tmp_path, tmp_path / "tasks", run, fake_openai)

    assert done.returncode == 0, done.stderr
    [line] = result_lines(run)
    assert config in (run / line["diff_path"]).read_text()  # the agent did add it
    assert line["status"] == "unsolved" and line["verify_exit"] == 1, line


def test_a_run_folder_made_with_the_earlier_protected_list_still_resumes(tmp_path, fake_openai):
    # The default list grew (.pytest.ini, pytest.toml...): the list's hash with it.
    earlier = ("tests/", "test_*.py", "*_test.py", "conftest.py", "/pytest.ini", "/tox.ini",
               "/setup.cfg", "/pyproject.toml")  # fmt: skip
    tasks = make_task(tmp_path / "one", "t1").parent
    fake_openai.responder = by_marker({"Task t1": fix("t1")})
    run = tmp_path / "run"
    assert run_batch(tmp_path, tasks, run, fake_openai).returncode == 0
    manifest = json.loads((run / "manifest.json").read_text())
    as_before = [dataclasses.replace(t, protected=earlier) for t in load_tasks(tasks)]
    manifest["tasks_hash"] = list_hash(as_before)
    (run / "manifest.json").write_text(json.dumps(manifest))
    requests = len(fake_openai.requests)

    again = run_batch(tmp_path, tasks, run, fake_openai)

    assert again.returncode == 0, again.stderr
    assert len(fake_openai.requests) == requests and len(result_lines(run)) == 1


def test_a_task_whose_check_passed_before_any_change_is_not_counted_as_solved(
    tmp_path, fake_openai
):
    # lathe said "the check passed before the run changed anything"; the batch counted
    # the task as solved with nothing to tell it apart.
    make_task(tmp_path / "tasks", "t1", code="def add(a, b):\n    return a + b\n")
    make_task(tmp_path / "tasks", "t2")
    fake_openai.responder = by_marker({"Task t1": [Reply("Nothing to change.")],
                                       "Task t2": fix("t2")})  # fmt: skip
    run = tmp_path / "run"

    done = run_batch(tmp_path, tmp_path / "tasks", run, fake_openai)

    assert done.returncode == 0, done.stderr
    lines = {line["id"]: line for line in result_lines(run)}
    assert lines["t1"]["status"] == "passed_before" and lines["t1"]["solved"] is False
    assert lines["t1"]["baseline_passed"] is True and lines["t1"]["verify_exit"] == 0
    assert lines["t2"]["status"] == "solved" and lines["t2"]["baseline_passed"] is False
    footer = done.stdout.strip().splitlines()[-1]
    assert footer.startswith("solved 1 of 1 · 1 passed its check before any change"), footer
    report = subprocess.run([sys.executable, "-m", "lathe", "batch", "report", str(run)],
                            env=batch_env(tmp_path), capture_output=True, text=True,
                            timeout=120)  # fmt: skip
    assert report.returncode == 0, report.stderr
    page = (run / "report.html").read_text()
    assert "<strong>1/1</strong> (100%)" in page
    assert "<th>Passed the check before any change (not counted)</th><td>1</td>" in page
