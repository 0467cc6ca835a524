"""What counts as a solve in `lathe batch`, through the real CLI against the scripted
fake model: a test runner's config the agent adds never counts."""

from __future__ import annotations

import dataclasses
import json

import pytest
from tests.batch.tasks import fix, make_task, result_lines, run_batch
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
