"""`lathe batch report RUN_DIR` through the real CLI, over run folders written the way
`lathe batch` writes them (`RunFolder.record` of `TaskResult`s), the page opened in a
real headless Chromium: one row a task, charts with bars, transcript links that resolve,
a run's strings shown literally, `--compare` marking what changed, and the one-line
errors of a folder with nothing to report."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from playwright.sync_api import Page, expect
from tests.browser import needs_chromium

from lathe.batch.results import RunFolder
from lathe.batch.task_run import TaskResult

INJECTED = '<script>document.title="pwned"</script><b id="injected">&amp; bold</b>'


def _result(task_id: str, status: str, **values) -> TaskResult:
    solved = status == "solved"
    defaults = {
        "lathe_status": {"solved": "verified", "unsolved": "gave_up"}.get(status),
        "turns": 3, "tokens": {"input": 1200, "output": 300}, "cost_usd": 0.0021,
        "wall_s": 12.5, "verify_exit": 0 if solved else 1, "verify_s": 0.4,
        "diff_stat": {"files": 1, "added": 1, "removed": 1}, "kind": "logic-bug",
        "started": "2025-01-02T10:00:00+00:00", "finished": "2025-01-02T10:00:13+00:00",
        "diff": "--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-a - b\n+a + b\n",
        "transcript": f"# {task_id}\n\nThe conversation.\n",
    }  # fmt: skip
    return TaskResult(id=task_id, solved=solved, status=status, **{**defaults, **values})


def _run(folder: Path, results: list[TaskResult], *, model: str = "m") -> Path:
    run = RunFolder(folder)
    run.create()
    run.write_manifest(
        {"lathe_version": "0.1.0", "model": model, "base_url": None, "tasks": "/tasks",
         "tasks_hash": "abc", "task_ids": [r.id for r in results], "executor": "local",
         "settings": {"max_turns": 8, "lathe_args": []}, "config": {}}
    )  # fmt: skip
    for result in results:
        run.record(result)
    return folder


@pytest.fixture
def run(tmp_path) -> Path:
    return _run(
        tmp_path / "run",
        [
            _result("t1", "solved", wall_s=4.0, tags=["easy"]),
            _result("t2", "solved", wall_s=30.0, kind="off-by-one", tokens={"input": 9000,
                                                                             "output": 800}),
            _result("t3", "unsolved", wall_s=61.0, reason="gave up: " + INJECTED,
                    false_verified=True, lathe_status="verified"),
            _result("t4", "error", lathe_status="provider_error", error_kind="provider",
                    reason="auth: bad key", tokens={"input": 0, "output": 0}, cost_usd=None,
                    verify_exit=None, diff="", transcript="",
                    diff_stat={"files": 0, "added": 0, "removed": 0}),
        ],
    )  # fmt: skip


def _report(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LATHE_")}
    env["LATHE_HOME"] = str(Path(args[0]).parent / "home")  # beside the run folder
    return subprocess.run(
        [sys.executable, "-m", "lathe", "batch", "report", *map(str, args)],
        env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _fact(page: Page, name: str):
    """The summary's row named `name`."""
    return (
        page.get_by_test_id("summary").locator("tr").filter(has=page.get_by_text(name, exact=True))
    )


@needs_chromium
def test_the_report_shows_every_task_and_the_charts(run, page: Page):
    done = _report(run)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(run / "report.html")

    page.goto((run / "report.html").as_uri())
    rows = page.get_by_test_id("task-row")
    expect(rows).to_have_count(4)
    assert [rows.nth(i).get_attribute("data-task-id") for i in range(4)] == ["t1", "t2", "t3",
                                                                              "t4"]  # fmt: skip
    expect(_fact(page, "Solved").locator("td")).to_have_text(["2/4 (50%)"])
    expect(_fact(page, "Errors (not the agent's)").locator("td")).to_have_text(["1 (1 provider)"])
    expect(_fact(page, "Claimed verified but failed the check").locator("td")).to_have_text(["1"])
    expect(_fact(page, "Tokens (in / out)").locator("td")).to_have_text(["12,800 (11,400 / 1,400)"])
    expect(_fact(page, "Model").locator("td")).to_have_text(["m"])

    rate = page.get_by_test_id("chart-solve-rate")
    expect(rate.locator("svg rect.bar")).to_have_count(2)  # logic-bug and off-by-one
    expect(rate).to_contain_text("1/3 (33%)")
    expect(rate).to_contain_text("1/1 (100%)")
    tags = page.get_by_test_id("chart-solve-rate-tags")
    expect(tags.locator("svg rect.bar")).to_have_count(2)  # easy, and (no tag)
    for chart in ("chart-time", "chart-tokens"):
        bars = page.get_by_test_id(chart).locator("svg rect.bar")
        expect(bars.first).to_be_visible()
        heights = [bars.nth(i).get_attribute("height") or "0" for i in range(bars.count())]
        assert all(float(h) > 0 for h in heights)

    solved = rows.filter(has_text="t1")
    expect(solved).to_contain_text("+1 −1 in 1 file")
    link = solved.locator("a[data-kind=transcript]")
    assert link.get_attribute("href") == "transcripts/t1.md"
    target = Path(unquote(urlparse(link.evaluate("a => a.href")).path))
    assert target.read_text() == "# t1\n\nThe conversation.\n"
    assert solved.locator("a[data-kind=diff]").get_attribute("href") == "diffs/t1.diff"

    errored = page.locator("[data-task-id=t4]")
    expect(errored).to_contain_text("provider error: auth: bad key")
    expect(errored.locator("a")).to_have_count(0)  # no diff, no transcript: no link

    refuted = page.locator("[data-task-id=t3]")
    expect(refuted).to_contain_text("claimed verified")
    expect(refuted.locator("td.reason")).to_contain_text("gave up: " + INJECTED)
    expect(page.locator("#injected")).to_have_count(0)
    assert page.title() != "pwned"


@needs_chromium
def test_compare_shows_both_runs_task_by_task(run, tmp_path, page: Page):
    before = _run(
        tmp_path / "before",
        [_result("t1", "unsolved"), _result("t2", "solved"), _result("t3", "solved"),
         _result("t4", "solved"), _result("t9", "solved")],
        model="older-model",
    )  # fmt: skip
    out = tmp_path / "elsewhere" / "both.html"
    out.parent.mkdir()
    done = _report(run, "--compare", before, "-o", out)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(out)

    page.goto(out.as_uri())
    table = page.get_by_test_id("compare-table")
    expect(table.get_by_test_id("compare-row")).to_have_count(5)  # t1-t4 and t9
    changes = {
        row.get_attribute("data-task-id"): row.get_attribute("data-change")
        for row in table.get_by_test_id("compare-row").all()
    }
    assert changes == {"t1": "newly-solved", "t2": "same", "t3": "newly-failed",
                       "t4": "changed", "t9": "only-compared"}  # fmt: skip
    expect(table.locator("[data-task-id=t1] td.change")).to_have_text("▲ newly solved")
    expect(table.locator("[data-task-id=t3] td.change")).to_have_text("▼ newly failed")
    # An error is not the agent's failure: a change, not "newly failed".
    expect(table.locator("[data-task-id=t4] td.change")).to_have_text("solved → error")
    expect(_fact(page, "Model").locator("td")).to_have_text(["m", "older-model"])
    expect(_fact(page, "Solved").locator("td")).to_have_text(["2/4 (50%)", "4/5 (80%)"])
    expect(page.get_by_test_id("chart-solve-rate").locator("svg rect.bar.s1")).not_to_have_count(0)

    # Links resolve from where the report was written, for both runs.
    for link in page.locator("a[data-kind=transcript]").all():
        assert Path(unquote(urlparse(link.evaluate("a => a.href")).path)).is_file()
    first = table.locator("[data-task-id=t1] a").first
    assert first.get_attribute("href") == "../run/transcripts/t1.md"


@needs_chromium
def test_a_run_without_a_manifest_says_so(run, page: Page):
    (run / "manifest.json").unlink()
    with (run / "results.jsonl").open("a") as results:
        results.write('{"id": "torn", "sta')  # a batch killed mid-line
    done = _report(run)
    assert done.returncode == 0, done.stderr

    page.goto((run / "report.html").as_uri())
    expect(page.get_by_test_id("no-manifest")).to_contain_text("no manifest.json")
    expect(page.get_by_test_id("task-row")).to_have_count(4)


def test_a_folder_without_results_is_a_one_line_error(tmp_path, run):
    empty = tmp_path / "empty"
    empty.mkdir()
    for args in ([empty], [run, "--compare", empty]):
        done = _report(*args)
        assert done.returncode == 2
        assert done.stderr == f"lathe: {empty} holds no results yet; run `lathe batch` first\n"
    assert not (empty / "report.html").exists()
    assert not (run / "report.html").exists()


@pytest.mark.parametrize("manifest", ["[1, 2]", '"text"', "{not json"])
def test_a_manifest_that_is_not_an_object_is_a_one_line_error(run, manifest):
    # JSON of another shape ended in a traceback.
    (run / "manifest.json").write_text(manifest)
    done = _report(run)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("lathe: ") and "manifest.json" in line, line


def test_the_page_is_self_contained_and_escaped(run):
    assert _report(run).returncode == 0
    page = (run / "report.html").read_text()
    assert "<script" not in page
    assert "http://" not in page and "https://" not in page
    assert INJECTED not in page
    assert "&lt;script&gt;" in page
