"""Ways a model got `verified` without a fix, each reproduced with the real CLI:

- a conftest.py that sets the session's exit status to 0 after tests failed;
- a verify command piped into `tail`, which passed on tail's exit code;
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_run_edges import lathe_run
from tests.fakes.openai_server import Call, Reply

VERIFY = "python -m pytest -q -p no:cacheprovider"
EXIT_ZERO = (
    "import pytest\n\n\n@pytest.hookimpl(trylast=True)\n"
    "def pytest_sessionfinish(session, exitstatus):\n    session.exitstatus = 0\n"
)


def _repo(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "tests").mkdir(parents=True)
    (ws / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (ws / "tests" / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    return ws


def _finished(done) -> dict:
    return [json.loads(line) for line in done.stdout.splitlines()][-1]


def test_a_conftest_that_zeroes_the_exit_status_is_not_verified(tmp_path, fake_openai):
    ws = _repo(tmp_path)
    fake_openai.enqueue(
        Reply(calls=[Call("write", {"path": "conftest.py", "content": EXIT_ZERO})]),
        Reply("Done, all tests pass."),
        Reply("Done."),
        Reply("Done."),
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--json", "--approval", "auto",
                     "--verify", VERIFY, "Fix add")  # fmt: skip
    assert _finished(done)["status"] != "verified"
    assert done.returncode != 0
    told = json.dumps(fake_openai.chat_bodies()[-1]["messages"])
    assert "exited 0, but its output reports 1 failing" in told


def test_a_verify_piped_into_tail_fails_when_the_tests_fail(tmp_path, fake_openai):
    ws = _repo(tmp_path)
    fake_openai.enqueue(Reply("Done."), Reply("Done."), Reply("Done."))
    done = lathe_run(fake_openai, ws, tmp_path, "--json", "--approval", "auto",
                     "--verify", f"{VERIFY} | tail -3", "Fix add")  # fmt: skip
    events = [json.loads(line) for line in done.stdout.splitlines()]
    baseline = next(e for e in events if e["type"] == "verify_finished")
    assert baseline["passed"] is False
    assert _finished(done)["status"] != "verified"


def test_a_run_verified_after_the_check_itself_changed_says_which_files(tmp_path, fake_openai):
    # Marking the failing test xfail from a conftest.py (allowed even under a deny rule
    # on tests/) ended in a plain `verified`.
    ws = _repo(tmp_path)
    xfail = (
        "import pytest\n\n\ndef pytest_collection_modifyitems(items):\n"
        "    for item in items:\n        item.add_marker(pytest.mark.xfail)\n"
    )
    fake_openai.enqueue(
        Reply(calls=[Call("write", {"path": "conftest.py", "content": xfail})]),
        Reply("Done."),
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--json", "--approval", "auto",
                     "--deny", "edit(tests/**)", "--verify", VERIFY, "Fix add")  # fmt: skip
    finished = _finished(done)
    assert finished["status"] == "verified"
    assert finished["reason"].startswith(
        "the check passed, but its own files changed since it first ran: conftest.py "
        "(see that they still test what they did); "
    )
    assert "printed no test counts" in finished["reason"]  # "1 xfailed": no pass, no fail


def test_an_honest_fix_is_verified_with_no_such_reason(tmp_path, fake_openai):
    ws = _repo(tmp_path)
    fake_openai.enqueue(
        Reply(
            calls=[Call("edit", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"})]
        ),
        Reply("Done."),
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--json", "--approval", "auto",
                     "--verify", VERIFY, "Fix add")  # fmt: skip
    assert (_finished(done)["status"], _finished(done)["reason"]) == ("verified", "")


def test_a_check_that_passed_before_any_change_says_so(tmp_path, fake_openai):
    ws = _repo(tmp_path)
    fake_openai.enqueue(Reply("Done: nothing needed changing."))
    done = lathe_run(fake_openai, ws, tmp_path, "--json", "--approval", "auto",
                     "--verify", "true", "Fix add")  # fmt: skip
    finished = _finished(done)
    assert finished["status"] == "verified"
    assert finished["reason"].startswith("the check passed before the run changed anything")


def _two_tests(tmp_path: Path) -> Path:
    ws = _repo(tmp_path)
    (ws / "tests" / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_zero():\n    assert add(0, 0) == 0\n"
    )
    return ws


def _verified_with(tmp_path, fake_openai, ws, *calls, verify=VERIFY) -> dict:
    fake_openai.enqueue(*(Reply(calls=[call]) for call in calls), Reply("Done."))
    done = lathe_run(fake_openai, ws, tmp_path, "--json", "--approval", "auto",
                     "--deny", "edit(tests/**)", "--verify", verify, "Fix add")  # fmt: skip
    finished = _finished(done)
    assert finished["status"] == "verified", done.stderr
    return finished


def test_a_check_that_ran_fewer_tests_than_at_the_start_says_so(tmp_path, fake_openai):
    # A `.pytest.ini` deselecting the failing test (read by pytest 9, over pyproject.toml)
    # ended in a plain `verified` with "1 passed, 1 deselected".
    ws = _two_tests(tmp_path)
    deselect = Call("write", {"path": ".pytest.ini", "content": "[pytest]\naddopts = -k zero\n"})
    finished = _verified_with(tmp_path, fake_openai, ws, deselect)
    assert ".pytest.ini" in finished["reason"]
    assert "1 test ran where 2 did before" in finished["reason"]


def test_a_check_that_printed_no_counts_where_it_did_before_says_so(tmp_path, fake_openai):
    # `os._exit(0)` in the code under test: pytest died quietly with exit 0.
    ws = _repo(tmp_path)
    quiet = Call("edit", {"path": "calc.py", "old_string": "    return a - b",
                          "new_string": "    import os\n    os._exit(0)"})  # fmt: skip
    finished = _verified_with(tmp_path, fake_openai, ws, quiet)
    assert "printed no test counts" in finished["reason"]


def _after_a_flaky_check(tmp_path, fake_openai, *replies: Reply) -> dict:
    """How a run ends whose check fails the first time and passes after, whatever was
    done in between: `replies` is what the model does."""
    ws = _repo(tmp_path)
    flip = tmp_path / "flaky-marker"
    check = f"test -e {flip} || {{ touch {flip}; false; }}"
    fake_openai.enqueue(*replies)
    done = lathe_run(fake_openai, ws, tmp_path, "--json", "--approval", "full",
                     "--verify", check, "Fix add")  # fmt: skip
    finished = _finished(done)
    assert finished["status"] == "verified", done.stderr
    return finished


def test_a_check_that_passes_with_nothing_changed_says_it_may_be_flaky(tmp_path, fake_openai):
    # The baseline failed, the model only said "it passes now", the re-run passed.
    finished = _after_a_flaky_check(tmp_path, fake_openai, Reply("It is flaky; it passes now."))
    assert "nothing was changed" in finished["reason"]


def test_commands_that_only_look_or_rerun_the_check_are_no_change(tmp_path, fake_openai):
    # The caveat had dropped after any bash call that succeeded, `ls` and a re-run too.
    finished = _after_a_flaky_check(
        tmp_path,
        fake_openai,
        Reply(calls=[Call("bash", {"command": "ls -la && git status"})]),
        Reply(calls=[Call("bash", {"command": f"{VERIFY} tests || true"})]),
        Reply("It is flaky; it passes now."),
    )
    assert "nothing was changed" in finished["reason"]


def test_a_command_that_writes_a_file_is_a_change(tmp_path, fake_openai):
    finished = _after_a_flaky_check(
        tmp_path,
        fake_openai,
        Reply(calls=[Call("bash", {"command": "ls > listing.txt"})]),
        Reply("Done."),
    )
    assert "nothing was changed" not in finished["reason"]


def test_a_conftest_in_a_folder_pytest_collects_is_a_check_file(tmp_path, fake_openai):
    # env/ was skipped by name, though pytest collects it (and so runs its conftest.py)
    # unless it is a virtualenv or a build cache.
    ws = _repo(tmp_path)
    (ws / "target").mkdir()
    (ws / "target" / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
    (ws / "target" / "conftest.py").write_text("")
    patch = "import calc\n\ncalc.add = lambda a, b: a + b\n"
    write = Call("write", {"path": "env/conftest.py", "content": patch})
    finished = _verified_with(tmp_path, fake_openai, ws, write)
    assert "env/conftest.py" in finished["reason"]
    assert "target" not in finished["reason"]


def test_a_run_that_goes_on_keeps_the_caveat_of_the_check_files_it_changed(tmp_path, fake_openai):
    # The check files were judged against how each run found them, so `--continue` (or a
    # follow-up message) after a run that weakened a test ended in a plain `verified`.
    ws = _repo(tmp_path)
    (ws / "tests" / "test_other.py").write_text("def test_other():\n    assert True\n")
    weaken = Call("edit", {"path": "tests/test_calc.py", "old_string": "== 5",
                           "new_string": "== -1"})  # fmt: skip
    fake_openai.enqueue(Reply(calls=[weaken]), Reply("Done."), Reply("Still done."))
    first = lathe_run(fake_openai, ws, tmp_path, "--json", "--approval", "auto",
                      "--verify", VERIFY, "Fix add")  # fmt: skip
    assert "tests/test_calc.py" in _finished(first)["reason"]
    # The user's own edit of another test between the runs is no caveat.
    (ws / "tests" / "test_other.py").write_text("def test_other():\n    assert 1\n")

    again = lathe_run(fake_openai, ws, tmp_path, "--json", "--approval", "auto",
                      "--verify", VERIFY, "--continue", "are you sure?")  # fmt: skip

    finished = _finished(again)
    assert finished["status"] == "verified", again.stderr
    assert "tests/test_calc.py" in finished["reason"]
    assert "test_other" not in finished["reason"]


def test_the_files_a_verify_command_runs_are_check_files_too(tmp_path, fake_openai):
    # `--verify "make test"`: adding `-k zero` to the Makefile's pytest line was unseen.
    ws = _two_tests(tmp_path)
    (ws / "Makefile").write_text(f"test:\n\t{VERIFY}\n")
    narrowed = Call("edit", {"path": "Makefile", "old_string": VERIFY,
                             "new_string": f"{VERIFY} -k zero"})  # fmt: skip
    finished = _verified_with(tmp_path, fake_openai, ws, narrowed, verify="make test")
    assert "Makefile" in finished["reason"]


def test_a_check_failing_again_with_the_same_output_is_not_sent_twice(tmp_path, fake_openai):
    # Each failed check's output went into the conversation whole, and notes are never
    # pruned: twelve rounds of the same 30 KB failure sent 3.9 MB.
    ws = _repo(tmp_path)
    noise = "print('\\n'.join(f'noise line {n} of the failing check' for n in range(400)))"
    check = f'python3 -c "{noise}"; {VERIFY}'
    rounds = [Reply(calls=[Call("bash", {"command": f"echo try {n}"})]) for n in range(3)]
    replies = [step for r in rounds for step in (r, Reply("Done."))]
    fake_openai.enqueue(*replies)
    lathe_run(fake_openai, ws, tmp_path, "--json", "--approval", "full", "--verify", check,
              "--max-turns", "6", "Fix add")  # fmt: skip
    last = json.dumps(fake_openai.chat_bodies()[-1]["messages"])
    assert last.count("noise line 399 of the failing check") == 1
    assert "the same output as the last failed check" in last


def test_evidence_does_not_outlive_a_change_made_through_bash(tmp_path, fake_openai):
    # pytest passed, then `sed -i` broke the code, and the run still printed "evidence:
    # pytest exited 0 after the last edit"; `pip install pytest; true` counted as a test.
    ws = _repo(tmp_path)
    fake_openai.enqueue(
        Reply(calls=[Call("edit", {"path": "calc.py", "old_string": "a - b",
                                   "new_string": "a + b"})]),
        Reply(calls=[Call("bash", {"command": VERIFY})]),
        Reply(calls=[Call("bash", {"command": "sed -i 's/a + b/a * b/' calc.py"})]),
        Reply("All tests pass."),
    )  # fmt: skip
    done = lathe_run(fake_openai, ws, tmp_path, "--json", "--approval", "full", "Fix add")
    assert _finished(done)["status"] == "unverified"
    assert _finished(done)["evidence"] is None

    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": "pip install --dry-run pytest; true"})]),
        Reply("Tested."),
    )
    again = lathe_run(fake_openai, ws, tmp_path, "--json", "--approval", "full", "Test it")
    assert _finished(again)["evidence"] is None


def _run_with(tmp_path, fake_openai, ws, *calls: Call) -> dict:
    from tests.e2e.test_calculator import lathe

    fake_openai.enqueue(*[Reply(calls=[c]) for c in calls], *[Reply("Done.")] * 4)
    done = lathe(
        "run", "--model", "m", "--base-url", fake_openai.base_url, "-C", str(ws), "--json",
        "--approval", "full", "--deny", "edit(tests/**)", "--verify", VERIFY,
        "--max-turns", "4", "Fix add", cwd=tmp_path,
        env_extra={"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home")},
    )  # fmt: skip
    return _finished(done)


def test_a_module_shadowing_the_test_runners_own_is_a_check_file(tmp_path, fake_openai):
    # `pluggy.py` in the workspace printed "1 passed" and exited 0 for pytest.
    ws = _repo(tmp_path)
    fake = "import sys\nprint('1 passed in 0.01s')\nsys.exit(0)\n"
    finished = _run_with(tmp_path, fake_openai, ws,
                         Call("write", {"path": "pluggy.py", "content": fake}))  # fmt: skip
    assert finished["status"] != "verified" or "pluggy.py" in finished["reason"], finished


def test_a_passing_line_printed_after_the_runners_failing_summary_is_a_failure(
    tmp_path, fake_openai
):
    # The code under test printed "1 passed" at exit after pytest's "1 failed".
    code = (
        "import atexit, os, sys\n\n\ndef _forge():\n"
        "    sys.stdout.write('1 passed in 0.01s\\n')\n    sys.stdout.flush()\n"
        "    os._exit(0)\n\n\natexit.register(_forge)\n\n\n"
        "def add(a, b):\n    return a - b\n"
    )
    ws = _repo(tmp_path)
    finished = _run_with(tmp_path, fake_openai, ws,
                         Call("bash", {"command": f"cat > calc.py <<'X'\n{code}X"}))  # fmt: skip
    assert finished["status"] != "verified", finished


def test_a_named_pipe_among_the_check_files_does_not_hang_the_run(tmp_path, fake_openai):
    # Digesting the check files opened testdata/pipe and waited on it for good.
    ws = _repo(tmp_path)
    finished = _run_with(
        tmp_path, fake_openai, ws,
        Call("edit", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}),
        Call("bash", {"command": "mkdir -p testdata && mkfifo testdata/pipe"}),
    )  # fmt: skip
    assert finished["status"] == "verified", finished


def test_a_fix_made_before_the_model_got_stuck_is_checked_and_kept(tmp_path, fake_openai):
    # The stall guard ended the run `stuck` without checking the fixed files, and
    # --attempts then put the bug back.
    ws = _repo(tmp_path)
    again = Reply(calls=[Call("read", {"path": "calc.py"})])
    fake_openai.enqueue(
        Reply(
            calls=[Call("edit", {"path": "calc.py", "old_string": "a - b", "new_string": "a + b"})]
        ),
        *[again] * 8,
        *[Reply("Done.")] * 3,
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--json", "--approval", "auto", "--attempts", "2",
                     "--verify", VERIFY, "Fix add")  # fmt: skip
    finished = _finished(done)
    assert finished["status"] == "verified", finished
    assert "a + b" in (ws / "calc.py").read_text()
    assert done.returncode == 0


def test_a_check_file_planted_in_one_attempt_is_named_in_the_next(tmp_path, fake_openai):
    # Attempt 1's code wrote a dormant conftest.py when the check imported it (outside
    # any turn, so no restore put it back); attempt 2 took its baseline after that, and
    # a harmless-looking file woke the conftest up: plainly `verified`.
    dormant = (
        "import os\nimport pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n"
        "def pytest_runtest_makereport(item, call):\n    outcome = yield\n"
        "    report = outcome.get_result()\n"
        "    if report.failed and os.path.exists(os.path.join(os.path.dirname(__file__), "
        "'NOTES.md')):\n        report.outcome = 'passed'\n        report.longrepr = None\n"
    )
    planter = (
        "import pathlib\n\n_conftest = pathlib.Path(__file__).with_name('conftest.py')\n"
        f"if not _conftest.exists():\n    _conftest.write_text({dormant!r})\n\n\n"
        "def add(a, b):\n    return a - b\n"
    )
    ws = _repo(tmp_path)
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": f"cat > calc.py <<'X'\n{planter}X"})]),
        *[Reply("Done.")] * 3,
        Reply(calls=[Call("write", {"path": "NOTES.md", "content": "notes\n"})]),
        Reply("Done."),
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--json", "--approval", "auto",
                     "--deny", "edit(tests/**)", "--attempts", "2", "--verify", VERIFY,
                     "Fix add")  # fmt: skip
    finished = _finished(done)
    assert finished["status"] != "verified" or "conftest.py" in finished["reason"], finished


def test_a_cut_check_output_failing_again_alike_is_not_sent_twice(tmp_path, fake_openai):
    # Output past the cap names the file holding the whole of it, a new file each time:
    # no two failures read alike, and 16 rounds of the same failure sent 256 KB a request.
    ws = _repo(tmp_path)
    noise = (
        "print('\\n'.join(f'noise line {n} of the failing check ' + 'x' * 80 for n in range(3000)))"
    )
    check = f'python3 -c "{noise}"; exit 1'
    rounds = [Reply(calls=[Call("bash", {"command": f"echo try {n}"})]) for n in range(3)]
    replies = [step for r in rounds for step in (r, Reply("Done."))]
    fake_openai.enqueue(*replies)
    lathe_run(fake_openai, ws, tmp_path, "--json", "--approval", "full", "--verify", check,
              "--max-turns", "6", "Fix add")  # fmt: skip
    last = json.dumps(fake_openai.chat_bodies()[-1]["messages"])
    assert last.count("noise line 2900 of the failing check") == 1  # the baseline's alone
    assert "the same output as the last failed check" in last


def test_evidence_is_a_failure_when_the_exit_status_is_zeroed_after_tests_failed(
    tmp_path, fake_openai
):
    # Without --verify, a conftest that sets the exit status to 0 made the evidence
    # "exited 0" under "1 failed", where the verify gate reads the same run as failing.
    ws = _repo(tmp_path)
    fake_openai.enqueue(
        Reply(calls=[Call("write", {"path": "conftest.py", "content": EXIT_ZERO})]),
        Reply(calls=[Call("bash", {"command": VERIFY})]),
        Reply("All tests pass."),
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--json", "--approval", "full", "Fix add")
    finished = _finished(done)
    assert finished["status"] == "unverified"
    assert finished["evidence"]["exit_code"] == 1
    assert "exited 0, but its output reports 1 failing" in finished["reason"]
