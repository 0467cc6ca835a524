"""The verify command's own script is a check file however the command reaches it: a
model that emptied `ci/check.sh` got a plain `verified` when the check was `cd ci && sh
check.sh` or `sh -c 'sh ci/check.sh'`, where `sh ci/check.sh` said the script changed."""

from __future__ import annotations

import pytest
from tests.e2e.test_fake_fixes import _finished, _repo
from tests.e2e.test_run_edges import lathe_run
from tests.fakes.openai_server import Call, Reply

CHECK = "import sys; sys.path.insert(0, '..'); import calc; assert calc.add(2, 3) == 5"


@pytest.mark.parametrize(
    "verify",
    [
        "sh ci/check.sh",
        "cd ci && sh check.sh",
        "sh -c 'sh ci/check.sh'",
        "bash -c 'cd ci; sh check.sh'",
    ],
)
def test_the_checks_own_script_is_watched_however_the_command_reaches_it(
    tmp_path, fake_openai, verify
):
    # `cd ci && sh check.sh` and `sh -c 'sh ci/check.sh'` ended in a plain `verified`
    # after the model emptied the script.
    ws = _repo(tmp_path)
    (ws / "ci").mkdir()
    (ws / "ci" / "check.sh").write_text(f'cd "$(dirname "$0")"\npython3 -c "{CHECK}"\n')
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": "echo exit 0 > ci/check.sh"})]), Reply("Done.")
    )
    done = lathe_run(fake_openai, ws, tmp_path, "--json", "--approval", "full",
                     "--verify", verify, "Fix add")  # fmt: skip
    finished = _finished(done)
    assert finished["status"] == "verified", done.stderr
    assert "its own files changed since it first ran: ci/check.sh" in finished["reason"]
