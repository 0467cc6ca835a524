"""`lathe batch` through the real CLI against the scripted fake model: a cost nobody
knows is shown as unknown, never $0, and a task list value lathe would misuse (an empty
id, a timeout that is not a number) is one line naming where it is."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from tests.batch.tasks import VERIFY, fix, make_task
from tests.service.scripts import by_marker

from lathe.ui.batch_progress import PlainProgress


def _batch(tmp_path: Path, tasks: Path, fake) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env |= {"LATHE_HOME": str(tmp_path / "home"), "OPENAI_API_KEY": "sk-test"}
    argv = [sys.executable, "-m", "lathe", "batch", str(tasks), "--out", str(tmp_path / "run"),
            "--model", "m", "--base-url", fake.base_url, "--max-turns", "8"]  # fmt: skip
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)  # fmt: skip


def test_the_progress_line_of_an_unpriced_model_says_the_cost_is_unknown(tmp_path, fake_openai):
    # "1/1 done · ... · $0.0000 · ETA 0s" while the table said "-" and the report "—".
    make_task(tmp_path / "tasks", "t1")
    fake_openai.responder = by_marker({"Task t1": fix("t1")})

    done = _batch(tmp_path, tmp_path / "tasks", fake_openai)

    assert done.returncode == 0, done.stderr
    [last] = [line for line in done.stderr.splitlines() if line.startswith("batch: 1/1 done")]
    assert "cost unknown" in last and "$" not in last, last


def _progress_line(*costs: float | None, spent: dict[str, int] | None = None) -> str:
    out = io.StringIO()
    progress = PlainProgress(out)
    progress.planned(SimpleNamespace(tasks=costs, done={}, retried=[], skipped=[], to_run=costs))
    tokens = {"input": 10, "output": 1} if spent is None else spent
    for number, cost in enumerate(costs):
        line = {"id": f"t{number}", "status": "solved", "cost_usd": cost, "tokens": tokens}
        progress.finished(line)
    progress.close()
    return out.getvalue().splitlines()[-1]


def test_the_progress_line_counts_known_costs_and_says_when_some_are_unknown() -> None:
    assert "· $0.3000 ·" in _progress_line(0.1, 0.2)
    assert "· $0.1000 + unknown ·" in _progress_line(0.1, None)
    assert "· cost unknown ·" in _progress_line(None, None)
    # A task that failed before any model call spent nothing: its cost is known.
    assert "· $0.0000 ·" in _progress_line(None, spent={})


def _jsonl(tmp_path: Path, repo: Path, **fields) -> Path:
    record = {"id": "t", "repo": str(repo), "task": "x", "verify": "true", **fields}
    path = tmp_path / "list.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return path


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        # It ran and wrote transcripts/.md: a hidden file, and a blank row.
        ({"id": ""}, "`id` is empty"),
        ({"id": "  "}, "`id` is empty"),
        # true was taken as 1 s (a bool is an int to Python), "30" as 30 s.
        ({"timeout": True}, "`timeout` is not a number"),
        ({"timeout": "30"}, "`timeout` is not a number"),
    ],
)
def test_a_jsonl_task_with_an_empty_id_or_a_timeout_not_a_number_is_refused(
    tmp_path, fake_openai, fields, words
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    listed = _jsonl(tmp_path, repo, **fields)

    done = _batch(tmp_path, listed, fake_openai)

    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("lathe: ") and words in line and f"{listed}:1" in line, line
    assert fake_openai.chat_bodies() == []


@pytest.mark.parametrize(("name", "timeout"), [("t1", True), ("t1", "30"), (" ", 60)])
def test_a_task_folder_with_a_blank_name_or_a_timeout_not_a_number_is_refused(
    tmp_path, fake_openai, name, timeout
) -> None:
    folder = make_task(tmp_path / "tasks", name)
    folder.chmod(0o755)
    (folder / "task.json").write_text(json.dumps({"verify": VERIFY, "timeout": timeout}))

    done = _batch(tmp_path, tmp_path / "tasks", fake_openai)

    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("lathe: ") and str(folder) in line, line
    assert fake_openai.chat_bodies() == []


def test_the_reports_cost_says_when_some_tasks_cost_is_unknown(tmp_path) -> None:
    # It summed the known costs alone: "$0.0300", with a task of unknown cost left out.
    from lathe.batch.report import _Run, _summary

    tokens = {"input": 100, "output": 10}
    lines = [
        {"id": "a", "status": "solved", "solved": True, "cost_usd": 0.03, "tokens": tokens},
        {"id": "b", "status": "unsolved", "cost_usd": None, "tokens": tokens},
        {"id": "c", "status": "error", "cost_usd": None, "tokens": {}},  # spent nothing
    ]
    page = _summary([_Run(tmp_path, None, lines)])
    assert "$0.0300 + unknown" in page
    assert "$0.0300 + unknown" not in _summary([_Run(tmp_path, None, [lines[0], lines[2]])])


def test_the_manifests_config_masks_a_key_inside_a_hook_command(tmp_path, monkeypatch):
    # shown_values masked a value that is a key whole; a key inside a hook's command
    # reached the batch manifest as it was (config show masked it on its own).
    from lathe.batch.results import masked_config

    key = "sk-abcdef0123456789abcdef"
    user = tmp_path / "user.toml"
    user.write_text(
        f"[hooks]\nstop = [{{command = \"curl -H 'Authorization: Bearer {key}' https://x\"}}]\n"
    )
    monkeypatch.setenv("LATHE_CONFIG", str(user))
    (tmp_path / "ws" / ".git").mkdir(parents=True)

    shown = json.dumps(masked_config(tmp_path / "ws"))

    assert key not in shown and "curl -H" in shown, shown
