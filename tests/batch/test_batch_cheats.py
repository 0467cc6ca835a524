"""What `lathe batch` scores is the task's own check on the agent's visible change,
through the real CLI against the scripted fake model: bytecode the agent compiled and a
module shadowing the test runner counted as solved; an edited check script counted with
nothing to tell (now its result names it)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest
from tests.batch.tasks import VERIFY, fix, make_task, result_lines, run_batch
from tests.fakes.openai_server import Call, Reply
from tests.service.scripts import by_marker

# calc.py fixed, compiled with its old stamp, then put back as it was with that stamp:
# the work's source is unchanged (an empty diff) and its cache runs the fix.
STALE_BYTECODE = """python - <<'END'
import importlib.util, os, py_compile
stat, old = os.stat('calc.py'), open('calc.py').read()
stamp = (stat.st_atime_ns, stat.st_mtime_ns)
open('calc.py', 'w').write(old.replace('a - b', 'a + b'))
os.utime('calc.py', ns=stamp)
py_compile.compile('calc.py', cfile=importlib.util.cache_from_source('calc.py'),
                   invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
open('calc.py', 'w').write(old)
os.utime('calc.py', ns=stamp)
END"""

PASSES = "print('1 passed')\nraise SystemExit(0)\n"


def _bash(name: str, command: str) -> list:
    return [Reply(calls=[Call("bash", {"command": command})]), Reply(f"{name}: done.")]


def _writes(name: str, path: str, content: str) -> list:
    return [Reply(calls=[Call("write", {"path": path, "content": content})]),
            Reply(f"{name}: done.")]  # fmt: skip


def _add_file(task: Path, relative: str, text: str) -> None:
    """A file more in a task's read-only repository."""
    repo = task / "repo"
    repo.chmod(0o755)
    (repo / relative).write_text(text)
    (repo / relative).chmod(0o444)
    repo.chmod(0o555)


def test_bytecode_the_agent_compiled_is_not_what_the_check_runs(tmp_path, fake_openai):
    # The scoring copy kept the work's __pycache__ with its stamps: the stale .pyc
    # loaded, the check passed, and the task counted solved with an empty diff.
    make_task(tmp_path / "tasks", "t1")
    fake_openai.responder = by_marker({"Task t1": _bash("t1", STALE_BYTECODE)})
    run = tmp_path / "run"

    done = run_batch(tmp_path, tmp_path / "tasks", run, fake_openai)

    assert done.returncode == 0, done.stderr
    [line] = result_lines(run)
    assert line["diff_stat"]["files"] == 0, line
    assert line["status"] == "unsolved" and line["verify_exit"] == 1, line


@pytest.mark.parametrize(
    ("path", "protected"),
    [("pytest.py", None), ("pluggy.py", None), ("_pytest/__init__.py", None),
     ("py.py", None), ("iniconfig.py", None), ("iniconfig/__init__.py", None),
     ("pytest/__init__.py", None), ("pytest.py", ["tests/"])],
    ids=["pytest", "pluggy", "_pytest", "py", "iniconfig", "iniconfig-folder", "pytest-folder",
         "own-protected"],
)  # fmt: skip
def test_a_module_shadowing_the_test_runner_never_counts(tmp_path, fake_openai, path, protected):
    # `python -m pytest` puts the workspace first on sys.path: a pytest.py (or a module
    # pytest imports) there printed "1 passed" and exited 0, and the task counted solved;
    # whatever the task protects, nothing the runner imports is the agent's to replace.
    make_task(tmp_path / "tasks", "t1", **({"protected": protected} if protected else {}))
    content = PASSES
    fake_openai.responder = by_marker({"Task t1": _writes("t1", path, content)})
    run = tmp_path / "run"

    done = run_batch(tmp_path, tmp_path / "tasks", run, fake_openai)

    assert done.returncode == 0, done.stderr
    [line] = result_lines(run)
    assert path in (run / line["diff_path"]).read_text()  # the agent did add it
    assert line["status"] == "unsolved" and line["verify_exit"] not in (0, None), line


def test_a_check_script_the_verify_command_names_is_flagged_when_changed(tmp_path, fake_openai):
    # `python check.py`: the agent emptied check.py, and its exit 0 counted as solved with
    # nothing to tell. It is not put back (`python calc.py` names the code under test the
    # same way: putting that back undid real fixes), the result names it instead.
    task = make_task(tmp_path / "tasks", "t1", verify="python check.py")
    _add_file(task, "check.py", "from calc import add\n\nassert add(2, 3) == 5\n")
    emptied = Call("edit", {"path": "check.py", "old_string": "assert add(2, 3) == 5",
                            "new_string": "add"})  # fmt: skip
    fake_openai.responder = by_marker({"Task t1": [Reply(calls=[emptied]), Reply("t1: done.")]})
    run = tmp_path / "run"

    done = run_batch(tmp_path, tmp_path / "tasks", run, fake_openai)

    assert done.returncode == 0, done.stderr
    [line] = result_lines(run)
    assert "check.py" in (run / line["diff_path"]).read_text()
    # Its exit 0 counts (a named file may be the fix), flagged as the check's change.
    assert line["status"] == "solved" and line["check_changed"] == ["check.py"], line


def test_a_verify_command_using_git_still_finds_the_tasks_repository(tmp_path, fake_openai):
    # The check's copy leaves out what the diff does not show, the caches; .git is the
    # set-up tree's there, not gone: a check asking git had failed every task.
    origin = tmp_path / "origin"
    (origin / "tests").mkdir(parents=True)
    (origin / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (origin / "tests" / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "task"],
    ):
        subprocess.run(["git", "-C", str(origin), *args], check=True, capture_output=True)
    tasks = tmp_path / "tasks.jsonl"
    verify = f"git diff --quiet HEAD -- tests && {VERIFY}"
    tasks.write_text(json.dumps({"id": "g1", "repo": str(origin), "task": "Task g1: fix add",
                                 "verify": verify}) + "\n")  # fmt: skip
    fake_openai.responder = by_marker({"Task g1": fix("g1")})

    done = run_batch(tmp_path, tasks, tmp_path / "run", fake_openai)

    assert done.returncode == 0, done.stderr
    [line] = result_lines(tmp_path / "run")
    assert line["status"] == "solved", line


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_an_extension_module_shadowing_the_test_runner_never_counts(tmp_path, fake_openai):
    # A compiled `pluggy` at the top loads before the real one, as a pluggy.py does.
    source = tmp_path / "shadow.c"
    source.write_text(
        "#include <Python.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
        'PyMODINIT_FUNC PyInit_pluggy(void) { puts("1 passed"); fflush(stdout); exit(0); }\n'
    )
    built = tmp_path / f"pluggy{sysconfig.get_config_var('EXT_SUFFIX')}"
    include = sysconfig.get_paths()["include"]
    subprocess.run(["cc", "-shared", "-fPIC", f"-I{include}", "-o", str(built), str(source)],
                   check=True, capture_output=True)  # fmt: skip
    make_task(tmp_path / "tasks", "t1")
    fake_openai.responder = by_marker({"Task t1": _bash("t1", f"cp {built} .")})
    run = tmp_path / "run"

    done = run_batch(tmp_path, tmp_path / "tasks", run, fake_openai, "--lathe-arg=--approval",
                     "--lathe-arg=full")  # fmt: skip

    assert done.returncode == 0, done.stderr
    [line] = result_lines(run)
    assert built.name in (run / line["diff_path"]).read_text()  # the agent did add it
    assert line["status"] == "unsolved" and line["verify_exit"] not in (0, None), line
