"""A rule naming a tool and no path (`--deny read`, `--deny edit`) forbids every path,
wherever lathe reads the denied patterns. Before, those rules were dropped from them: a
bare `--deny read` sent every file's text in the prompt's workspace snapshot, and a bare
`--deny edit` left out the prompt's "no changes to" line while an edit's hint sent the
model to files it may not change ("did you mean that file?")."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_run_edges import lathe_run
from tests.fakes.openai_server import Call, Reply

MARKER = "SECRET_TOKEN_MARKER"
CALC = f"def add(a, b):\n    return a - b\n\n{MARKER} = 'abc'\n"


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "vendor").mkdir(parents=True)
    (ws / "calc.py").write_text(CALC)
    (ws / "vendor" / "calc_copy.py").write_text(CALC)
    (ws / "other.py").write_text("X = 1\n")
    return ws


def _system_prompt(server) -> str:
    return server.chat_bodies()[0]["messages"][0]["content"]


def _tool_results(server, request: int) -> list[str]:
    messages = server.chat_bodies()[request]["messages"]
    return [m["content"] for m in messages if m["role"] == "tool"]


def test_a_bare_read_deny_keeps_every_file_out_of_the_prompt(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(Reply(calls=[Call("read", {"path": "calc.py"})]), Reply("done"))

    result = lathe_run(
        fake_openai, ws, tmp_path, "--profile", "small", "--deny", "read", "Look at calc.py"
    )

    assert result.returncode == 0, result.stderr
    prompt = _system_prompt(fake_openai)
    assert MARKER not in prompt
    assert "here is every text file" not in prompt
    assert "- no reading of: every file" in prompt
    assert all(MARKER not in text for text in _tool_results(fake_openai, 1))


def test_a_bare_edit_deny_is_said_and_no_hint_names_a_file(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    wrong_file = {
        "path": "other.py",
        "old_string": "    return a - b",
        "new_string": "    return a + b",
    }
    fake_openai.enqueue(Reply(calls=[Call("edit", wrong_file)]), Reply("done"))

    result = lathe_run(
        fake_openai, ws, tmp_path, "--profile", "small", "--deny", "edit", "Fix add in calc.py"
    )

    assert result.returncode == 0, result.stderr
    prompt = _system_prompt(fake_openai)
    assert "- no changes to: every file" in prompt
    assert "----- calc.py (read-only: the user forbids changing it) -----" in prompt
    (refusal,) = _tool_results(fake_openai, 1)
    assert "did you mean" not in refusal
    assert "which you may not change" in refusal
    assert (ws / "other.py").read_text() == "X = 1\n"
