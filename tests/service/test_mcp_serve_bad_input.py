"""`lathe mcp serve` given input it cannot use: a workspace that is no path, a task of
spaces only. Each is an error result of one line saying what is wrong, and nothing
runs."""

from __future__ import annotations

from tests.service.test_mcp_arguments import _calls, _said


def test_a_workspace_that_is_no_path_is_a_one_line_error_without_a_traceback(tmp_path):
    # "Error executing tool list_sessions", no reason, and a traceback on stderr.
    nul, nobody = _calls(
        tmp_path,
        [
            ("list_sessions", {"workspace": "/tmp/a\x00b"}),
            ("list_sessions", {"workspace": "~no-such-user-here/ws"}),
        ],
    )

    for listed, workspace, why in (
        (nul, "'/tmp/a\\x00b'", "null byte"),
        (nobody, "'~no-such-user-here/ws'", "home directory"),
    ):
        said = _said(listed)
        assert len(said.splitlines()) == 1, said
        assert said.startswith(f"Error executing tool list_sessions: workspace {workspace} "), said
        assert why in said and "absolute path" in said, said
    assert "Traceback" not in (tmp_path / "stderr.log").read_text()


def test_a_task_of_spaces_only_is_refused_before_any_model_turn(tmp_path, fake_openai):
    # `lathe run "   "` refuses it; run_task ran a model turn on it.
    ws = tmp_path / "ws"
    ws.mkdir()
    task = {"workspace": str(ws), "model": "m", "base_url": fake_openai.base_url}

    [blank] = _calls(tmp_path, [("run_task", task | {"task": "  \n "})])

    said = _said(blank)
    assert said == "run_task: `task` needs a word, not only spaces ('  \\n ')", said
    assert len(said.splitlines()) == 1, said
    assert fake_openai.chat_bodies() == []
    assert not list((tmp_path / "home").rglob("*.jsonl"))
