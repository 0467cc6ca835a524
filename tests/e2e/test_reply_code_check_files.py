"""Code a reply shows is never applied to the check's own files: those the verify command
names (`python check.py`) and the runner's (`make test`: the Makefile). Before, only
tests and the runner configurations by name were left out: lathe weakened check.py from
a reply and reported the run verified, and rewrote the Makefile's test target to
`python -m pytest -q || true`."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_run_edges import lathe_run
from tests.fakes.openai_server import Reply

CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
CHECK = "from calc import add, mul\n\nassert mul(2, 3) == 6\nassert add(2, 3) == 5\nprint('ok')\n"
MAKEFILE = (
    ".PHONY: test lint\n\nlint:\n\truff check .\n\n"
    "test:\n\tpython -c 'import calc; assert calc.add(2, 3) == 5'\n"
)
TASK = "Fix the failing check"


def _workspace(tmp_path: Path, files: dict[str, str]) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    for name, text in {"calc.py": CALC, **files}.items():
        (ws / name).write_text(text)
    return ws


def _run(server, ws: Path, tmp_path: Path, verify: str, reply: str):
    server.enqueue(Reply(reply), *[Reply("Done.") for _ in range(3)])
    return lathe_run(
        server, ws, tmp_path, "--profile", "small", "--verify", verify, "--max-turns", "3", TASK
    )


def test_code_in_a_reply_never_changes_the_script_the_check_runs(tmp_path, fake_openai):
    ws = _workspace(tmp_path, {"check.py": CHECK})
    weakened = "Fix:\n```python\nassert mul(2, 3) == 6\nassert add(2, 3) == -1\nprint('ok')\n```"

    result = _run(fake_openai, ws, tmp_path, "python check.py", weakened)

    assert (ws / "check.py").read_text() == CHECK
    assert "the code in the reply" not in result.stderr
    assert "status: verified" not in result.stderr
    assert result.returncode != 0


def test_code_in_a_reply_never_changes_the_makefile_make_test_reads(tmp_path, fake_openai):
    ws = _workspace(tmp_path, {"Makefile": MAKEFILE})
    weakened = (
        "The test target should not fail the build:\n```make\nlint:\n\truff check .\n\n"
        "test:\n\tpython -c 'import calc; assert calc.add(2, 3) == 5' || true\n```"
    )

    result = _run(fake_openai, ws, tmp_path, "make test", weakened)

    assert (ws / "Makefile").read_text() == MAKEFILE
    assert "the code in the reply" not in result.stderr
    assert result.returncode != 0
