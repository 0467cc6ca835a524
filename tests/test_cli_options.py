"""Options placed before the subcommand mean what they mean after it, or are refused.

Reproduced on the landed CLI: `lathe --deny 'edit(test_*.py)' run ...` let the agent edit
the test file, `lathe --base-url URL -m M run ...` sent the request elsewhere, and
`lathe -c nonexistent_key=1 config show` exited 0.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from tests.fakes.openai_server import Call, Reply


def lathe(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update({"OPENAI_API_KEY": "sk-test-options", "LATHE_HOME": str(home)})
    return subprocess.run(
        [sys.executable, "-m", "lathe", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (ws / "test_calc.py").write_text(
        "from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    )
    return ws


def test_a_deny_rule_before_run_holds(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    original = (ws / "test_calc.py").read_text()
    fake_openai.enqueue(
        Reply(calls=[Call("edit", {"path": "test_calc.py", "old_string": "== 3",
                                   "new_string": "== -1"})]),
        Reply("Done."),
    )  # fmt: skip

    result = lathe(
        "--deny", "edit(test_*.py)", "--base-url", fake_openai.base_url, "-m", "fake-model",
        "run", "-C", str(ws), "make the test pass",
        cwd=tmp_path, home=tmp_path / "home",
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert (ws / "test_calc.py").read_text() == original
    bodies = fake_openai.chat_bodies()
    assert bodies and all(body["model"] == "fake-model" for body in bodies)
    results = [m for m in bodies[-1]["messages"] if m["role"] == "tool"]
    assert "edit(test_*.py)" in results[-1]["content"]


def test_deny_rules_before_and_after_run_add_up(tmp_path, fake_openai):
    ws = _workspace(tmp_path)
    fake_openai.enqueue(
        Reply(calls=[Call("read", {"path": "calc.py"}), Call("read", {"path": "test_calc.py"})]),
        Reply("Done."),
    )

    result = lathe(
        "--deny", "read(calc.py)", "run", "--deny", "read(test_calc.py)",
        "--base-url", fake_openai.base_url, "-m", "fake-model", "-C", str(ws), "look",
        cwd=tmp_path, home=tmp_path / "home",
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    results = [m for m in fake_openai.chat_bodies()[-1]["messages"] if m["role"] == "tool"]
    assert len(results) == 2
    assert "the rule read(calc.py)" in results[0]["content"]
    assert "the rule read(test_calc.py)" in results[1]["content"]


def test_an_unknown_override_before_config_show_is_an_error(tmp_path):
    result = lathe("-c", "nonexistent_key=1", "config", "show", cwd=tmp_path, home=tmp_path / "h")

    assert result.returncode == 2
    assert "nonexistent_key" in result.stderr


def test_the_workspace_before_a_subcommand_applies_to_it(tmp_path):
    ws = tmp_path / "project"
    (ws / ".lathe").mkdir(parents=True)
    (ws / ".lathe" / "config.toml").write_text("[agent]\nmax_turns = 7\n")

    result = lathe("-C", str(ws), "config", "show", cwd=tmp_path, home=tmp_path / "h")

    assert result.returncode == 0, result.stderr
    assert str(ws / ".lathe" / "config.toml") in result.stdout


def test_an_option_the_subcommand_does_not_take_is_refused_saying_where_it_goes(tmp_path):
    result = lathe("--deny", "read(.env)", "sessions", "list", cwd=tmp_path, home=tmp_path / "h")

    assert result.returncode == 2
    assert "--deny" in result.stderr
    assert "lathe run" in result.stderr


def test_the_same_option_given_twice_with_different_values_is_refused(tmp_path):
    result = lathe("-m", "a", "run", "-m", "b", "task", cwd=tmp_path, home=tmp_path / "h")

    assert result.returncode == 2
    assert "--model" in result.stderr
    assert "once" in result.stderr


def _leaf_commands(group: click.Group, ctx: click.Context):
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            yield from _leaf_commands(command, ctx)
        else:
            yield command


def test_every_command_honours_options_given_before_it():
    from lathe.ui.cli import cli
    from lathe.ui.options import LatheCommand

    ctx = click.Context(cli)
    leaves = list(_leaf_commands(cli, ctx))
    assert leaves
    for command in leaves:
        assert isinstance(command, LatheCommand), command.name


@pytest.mark.parametrize("flag", ["--continue"])
def test_a_flag_before_run_reaches_it(tmp_path, flag):
    ws = tmp_path / "empty"
    ws.mkdir()

    result = lathe(flag, "run", "-C", str(ws), cwd=tmp_path, home=tmp_path / "h")

    assert result.returncode == 2
    assert "no earlier session" in result.stderr


@pytest.mark.parametrize("where", ["project", "override"])
def test_an_ask_rule_from_the_config_holds_in_a_headless_run(tmp_path, fake_openai, where):
    # permissions.ask was shown by `config show` but never reached the gate.
    ws = _workspace(tmp_path)
    extra: tuple[str, ...] = ()
    if where == "project":
        (ws / ".lathe").mkdir()
        (ws / ".lathe" / "config.toml").write_text('[permissions]\nask = ["bash(touch:*)"]\n')
    else:
        extra = ("-c", 'permissions.ask=["bash(touch:*)"]')
    fake_openai.enqueue(Reply(calls=[Call("bash", {"command": "touch made"})]), Reply("Done."))

    result = lathe(
        "run", "-C", str(ws), "--approval", "full", "--base-url", fake_openai.base_url,
        "-m", "m", *extra, "make a file", cwd=tmp_path, home=tmp_path / "home",
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert not (ws / "made").exists()
    [refused] = [m for m in fake_openai.chat_bodies()[-1]["messages"] if m["role"] == "tool"]
    assert "bash(touch:*)" in refused["content"]


def test_a_folder_given_twice_differently_is_named_as_typed(tmp_path):
    # The refusal showed "PosixPath('A') and PosixPath('B')".
    (tmp_path / "A").mkdir()
    (tmp_path / "B").mkdir()
    result = lathe("-C", "A", "sessions", "list", "-C", "B", cwd=tmp_path, home=tmp_path / "h")
    assert result.returncode == 2
    assert result.stderr == (
        "lathe: -C/--cwd is given before and after `list` with different values ('A' and "
        "'B'); give it once\n"
    )


def test_an_argument_that_looks_like_an_option_is_told_to_go_after_dashes(tmp_path):
    # `lathe run --command review --staged` said only "no such option '--staged'": the
    # prompt command's argument needs `--` before it, which neither the help nor the
    # error said.
    ws = _workspace(tmp_path)
    (ws / ".lathe" / "commands").mkdir(parents=True)
    (ws / ".lathe" / "commands" / "review.md").write_text("Review $ARGUMENTS\n")

    result = lathe("run", "--command", "review", "--staged", cwd=ws, home=tmp_path / "home")

    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("lathe: no such option '--staged'"), line
    assert line.endswith("an argument that starts with '-' goes after `--`"), line


def test_a_subcommand_without_arguments_gets_no_dashes_advice(tmp_path):
    result = lathe("sessions", "list", "--bogus", cwd=tmp_path, home=tmp_path / "home")

    assert result.returncode == 2
    assert "--`" not in result.stderr, result.stderr
