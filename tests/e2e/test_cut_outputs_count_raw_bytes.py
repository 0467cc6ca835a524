"""A cut command output, as the model gets it from `lathe run`: what the model is shown is
cleaned (escape codes dropped, control bytes one U+FFFD each run), the spill file keeps
the bytes as they came, and every number the model is given refers to those bytes.

Two ways it went wrong: the `tail -c +BYTE` of the paging notice was counted on the
cleaned head, so a colour-heavy output sent the model to byte 4,823 of the spill file
(item ~283) when the head it had seen ended at item ~602; and an output cut to fit grew
past the cap as its control bytes became U+FFFD, was cut a second time by the tool
output cap, and reached the model with two notices naming two spill files, the real
"omitted" marker swallowed."""

from __future__ import annotations

import re
from pathlib import Path

from tests.e2e.test_calculator import run_against, workspace
from tests.fakes.openai_server import Call, Reply

from lathe.exec.terminal import terminal_text

_MARKER = re.compile(r"\n\[\.\.\. [^\n]*bytes omitted[^\n]*\.\.\.\]\n")


def _only_output(server) -> str:
    (output,) = [m["content"] for m in server.chat_bodies()[-1]["messages"] if m["role"] == "tool"]
    return output


def _run(tmp_path, server, command: str) -> str:
    server.enqueue(Reply(calls=[Call("bash", {"command": command})]), Reply("done"))
    result = run_against(server, workspace(tmp_path), tmp_path, "--approval", "full", "go")
    assert result.returncode == 0, result.stderr[-2000:]
    return _only_output(server)


def test_the_byte_the_notice_names_is_where_the_shown_head_ends_in_the_spill_file(
    tmp_path, fake_openai
) -> None:
    colours = (
        "python3 -c \"import sys; sys.stdout.write(''.join("
        "f'\\x1b[31m{i:07d}\\x1b[0m,' for i in range(300000)))\""
    )

    output = _run(tmp_path, fake_openai, colours)

    paging = re.search(r"`tail -c \+(\d+) (\S+) \| head -c 20000`", output)
    assert paging, output[-1000:]
    start, spill = int(paging[1]), Path(paging[2])
    raw = spill.read_bytes()
    assert raw.startswith(b"\x1b[31m0000000\x1b[0m,")  # the spill keeps the codes
    head = output[: _MARKER.search(output).start()]
    assert "\x1b" not in head
    # The bytes before the one the notice names are exactly what the model was shown.
    assert terminal_text(raw[: start - 1].decode()) == head


def test_an_output_whose_control_bytes_grow_when_cleaned_is_cut_once(tmp_path, fake_openai) -> None:
    rows = 'for i in $(seq 1 2900); do printf "row$i\\x01\\x02\\n"; done; echo END'

    output = _run(tmp_path, fake_openai, rows)

    assert output.count("[output truncated") == 1, output[-1500:]
    assert len(_MARKER.findall(output)) == 1  # the executor's own marker, not a second cut
    assert len(output.encode()) <= 30_000
    assert output.startswith("row1\ufffd\nrow2\ufffd\n")
    assert "row2900\ufffd\nEND\n[output truncated" in output
    assert output.endswith("[exit code: 0]")
    paging = re.search(r'read\(path="([^"]+)", offset=(\d+)\)', output)
    assert paging, output[-1000:]
    spill, line = Path(paging[1]), int(paging[2])
    lines = spill.read_bytes().split(b"\n")
    head = output[: _MARKER.search(output).start()]
    assert head.endswith("\n") and head.count("\n") == line - 1
    assert terminal_text(b"\n".join(lines[: line - 1]).decode()) + "\n" == head


def test_a_cut_output_and_every_note_under_it_fit_once_with_a_long_workspace_path(
    tmp_path, fake_openai
) -> None:
    # The paging notice names the spill file twice; with the note on a background job
    # it passed the room kept for notes, and the whole result was cut a second time.
    deep = tmp_path / ("a-folder-name-long-enough-to-matter-" * 3) / "and-deeper-still"
    deep.mkdir(parents=True)
    ws = workspace(deep)
    command = "sleep 30 > /dev/null & python3 -c \"print('x' * 100000)\""
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": command})]), Reply("done"))

    result = run_against(fake_openai, ws, tmp_path, "--approval", "full", "go")

    assert result.returncode == 0, result.stderr[-2000:]
    output = _only_output(fake_openai)
    assert output.count("[output truncated") == 1, output[-1500:]
    assert "[lathe: the command exited but left 1 background process running" in output
    assert output.endswith("[exit code: 0]")
    assert len(output.encode()) <= 30_000
