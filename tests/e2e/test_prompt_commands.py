"""Prompt commands headless: `lathe run --command NAME ARGS...` sends the command file's
text, `$ARGUMENTS` replaced, as the task the model receives; an unknown name is one line
listing the commands there are."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_skills import lathe_run
from tests.fakes.openai_server import Reply


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / ".lathe" / "commands").mkdir(parents=True)
    return ws


def _first_user_message(server) -> str:
    return next(m["content"] for m in server.chat_bodies()[0]["messages"] if m["role"] == "user")


def test_the_command_file_with_its_arguments_is_the_task(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    (ws / ".lathe" / "commands" / "fix-issue.md").write_text(
        "---\ndescription: Fix a numbered issue\n---\n"
        "Fix issue $ARGUMENTS.\nThen say which files changed for $ARGUMENTS.\n"
    )
    fake_openai.enqueue(Reply("Done."))

    result = lathe_run(fake_openai, ws, tmp_path, "--command", "fix-issue", "42", "quickly")

    assert result.returncode == 0, result.stderr
    assert _first_user_message(fake_openai) == (
        "Fix issue 42 quickly.\nThen say which files changed for 42 quickly."
    )


def test_a_user_command_without_the_placeholder_gets_the_arguments_after_it(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    user_commands = tmp_path / "user" / "commands"
    user_commands.mkdir(parents=True)
    (user_commands / "review.md").write_text("Review the last commit.\n")
    fake_openai.enqueue(Reply("Done."), Reply("Done."))

    plain = lathe_run(fake_openai, ws, tmp_path, "--command", "review")
    more = lathe_run(fake_openai, ws, tmp_path, "--command", "review", "focus on tests")

    assert plain.returncode == 0 and more.returncode == 0, plain.stderr + more.stderr
    users = [
        next(m["content"] for m in body["messages"] if m["role"] == "user")
        for body in fake_openai.chat_bodies()
    ]
    assert users == ["Review the last commit.", "Review the last commit.\n\nfocus on tests"]


def test_an_unknown_command_is_one_line_listing_those_there_are(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    (ws / ".lathe" / "commands" / "deploy.md").write_text("Deploy.\n")
    (ws / ".lathe" / "commands" / "bench.md").write_text("Run the benchmarks.\n")

    result = lathe_run(fake_openai, ws, tmp_path, "--command", "nope", "x")

    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("lathe: no prompt command 'nope'; the commands are: bench, ")
    assert "deploy" in result.stderr
    assert fake_openai.chat_bodies() == []


def test_a_command_in_a_workspace_without_any(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()

    result = lathe_run(fake_openai, ws, tmp_path, "--command", "nope")

    assert result.returncode == 2
    assert result.stderr == (
        "lathe: no prompt command 'nope': there are none; write one as "
        ".lathe/commands/nope.md in the workspace\n"
    )


def test_several_task_words_without_a_command_are_refused(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()

    result = lathe_run(fake_openai, ws, tmp_path, "fix", "it")

    assert result.returncode == 2
    assert result.stderr == (
        'lathe: run takes one TASK, got 2 words; quote the task: lathe run "fix it"\n'
    )


def test_a_command_leading_out_of_the_workspace_or_to_a_secret_is_never_sent(tmp_path, fake_openai):
    # A repository's `.lathe/commands/review.md` linked to ~/.aws/credentials: `lathe
    # run --command review` sent the credentials to the model as the task.
    ws = _workspace(tmp_path)
    outside = tmp_path / "aws-credentials"
    outside.write_text("aws_secret_access_key = SECRET-OUTSIDE\n")
    (ws / ".env").write_text("API_KEY=SECRET-ENV\n")
    (ws / ".lathe" / "commands" / "review.md").symlink_to(outside)
    (ws / ".lathe" / "commands" / "lint.md").symlink_to("../../.env")
    fake_openai.enqueue(Reply("Done."), Reply("Done."))

    for name, why in (("review", "outside the workspace"), ("lint", "not sent to the model")):
        done = lathe_run(fake_openai, ws, tmp_path, "--command", name)
        assert done.returncode == 2
        assert done.stderr.startswith("lathe: prompt command ") and why in done.stderr
    assert fake_openai.chat_bodies() == []


def test_front_matter_after_a_bom_or_with_a_list_at_the_margin_is_read(tmp_path, fake_openai):
    # A BOM sent the front matter as part of the task; `allowed-tools:` with `- Read`
    # items at the left margin (valid YAML) was refused, and a ` # comment` was kept.
    ws = _workspace(tmp_path)
    (ws / ".lathe" / "commands" / "bom.md").write_bytes(
        "\ufeff---\ndescription: d  # a comment\nallowed-tools:\n- Read\n- Bash\n---\n"
        "BOM body\n".encode()
    )
    fake_openai.enqueue(Reply("Done."))

    done = lathe_run(fake_openai, ws, tmp_path, "--command", "bom")

    assert done.returncode == 0, done.stderr
    assert _first_user_message(fake_openai) == "BOM body"


def test_an_empty_command_file_is_named_in_its_error(tmp_path, fake_openai):
    # "give the task as an argument: lathe run ..." named no file and no command.
    ws = _workspace(tmp_path)
    empty = ws / ".lathe" / "commands" / "empty.md"
    empty.write_text("---\ndescription: nothing yet\n---\n\n")

    result = lathe_run(fake_openai, ws, tmp_path, "--command", "empty")

    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr
    said = result.stderr
    assert said.startswith("lathe: the prompt command 'empty' sends nothing"), said
    assert str(empty) in result.stderr
    assert fake_openai.chat_bodies() == []


def test_a_command_file_whose_name_is_no_command_name_says_so(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    (ws / ".lathe" / "commands" / "my cmd.md").write_text("Deploy.\n")

    result = lathe_run(fake_openai, ws, tmp_path, "--command", "my cmd")

    assert result.returncode == 2
    assert "my cmd.md skipped" in result.stderr and "rename" in result.stderr, result.stderr
