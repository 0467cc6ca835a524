"""lathe's spill folder (`.lathe/tmp`, with a `.gitignore` of `*`) is made when output
is first spilled, not when a run starts: a text-only reply in a plain folder left
`.lathe/tmp/.gitignore` behind, and `lathe run -C /` made `/.lathe/tmp`. Reproduced with
the real CLI; the sandbox still keeps `.lathe` from commands, and lathe's own spill
folder made during a command is not taken for the command's."""

from __future__ import annotations

import re
from pathlib import Path

from tests.e2e.test_run_edges import _workspace, lathe_run
from tests.fakes.openai_server import Call, Reply
from tests.sandboxes import needs

from lathe.exec.bwrap import check_bubblewrap

FLOOD = Call("bash", {"command": "seq 1 200000"})


def _last_tool_output(server) -> str:
    return [m for m in server.chat_bodies()[-1]["messages"] if m["role"] == "tool"][-1]["content"]


def _spill_named(output: str) -> Path:
    return Path(re.search(r"the full output is in (\S+)\.", output)[1])


def test_a_text_only_reply_leaves_no_lathe_folder(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Reply("Nothing to do."))

    result = lathe_run(fake_openai, ws, tmp_path, "say hi")

    assert result.returncode == 0, result.stderr
    assert not (ws / ".lathe").exists()


def test_the_first_spill_makes_the_folder_with_its_gitignore(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Reply(calls=[FLOOD]), Reply("Counted."))

    result = lathe_run(fake_openai, ws, tmp_path, "--approval", "full", "count")

    assert result.returncode == 0, result.stderr[-2000:]
    spill = _spill_named(_last_tool_output(fake_openai))
    assert spill.parent == (ws / ".lathe" / "tmp").resolve()
    assert spill.read_text().endswith("200000\n")
    assert (ws / ".lathe" / "tmp" / ".gitignore").read_text() == "*\n"


@needs(check_bubblewrap(), "bubblewrap")
def test_a_spill_during_a_sandboxed_command_stays_where_its_result_says(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Reply(calls=[FLOOD]), Reply("Counted."))

    result = lathe_run(fake_openai, ws, tmp_path, "--allow", "bash(seq:*)", "count")

    assert result.returncode == 0, result.stderr[-2000:]
    output = _last_tool_output(fake_openai)
    assert "moved it to" not in output and "could not move" not in output, output[-800:]
    spill = _spill_named(output)
    assert spill.parent == (ws / ".lathe" / "tmp").resolve()
    assert spill.read_text().endswith("200000\n")
    assert (ws / ".lathe" / "tmp" / ".gitignore").read_text() == "*\n"


@needs(check_bubblewrap(), "bubblewrap")
def test_a_sandboxed_command_still_cannot_make_lathes_folder(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    make = "mkdir -p .lathe/commands && echo run-me > .lathe/commands/x.md"
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": make})]), Reply("Done."))

    result = lathe_run(fake_openai, ws, tmp_path, "--allow", "bash", "make it")

    assert result.returncode == 0, result.stderr[-2000:]
    assert not (ws / ".lathe" / "commands").exists()
