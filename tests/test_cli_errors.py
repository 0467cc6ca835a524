"""Every error a user can cause is one line on stderr that starts with `lathe: `.

Reproduced on main with the real CLI: click's own errors printed a usage line, a "Try
..." line and `Error: ...`; `lathe undo` and `lathe local` said `error: ...`; and `-C` to
a missing directory listed nothing (`sessions list`, `stats`), exited 2 with click's
three lines (`undo`, `config show`, `trust`), or ran every check anyway (`doctor`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from tests.fakes.user_config import user_config_file


def lathe(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LATHE_", "OPENAI_"))}
    env.update({"LATHE_HOME": str(home), "LATHE_CONFIG": user_config_file(home / "none.toml")})
    return subprocess.run(
        [sys.executable, "-m", "lathe", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _one_lathe_line(result: subprocess.CompletedProcess) -> str:
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("lathe: "), result.stderr
    assert "Error" not in lines[0] and "Usage:" not in lines[0]
    return lines[0]


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (("run", "--frob", "task"), 2, "no such option '--frob' (see `lathe run --help`)"),
        (("run", "--verfy", "x"), 2, "did you mean one of: '--deny', '--verify'?"),
        (("nosuch",), 2, "no such command 'nosuch' (see `lathe --help`)"),
        (("sessions", "show"), 2, "missing argument 'ID' (see `lathe sessions show --help`)"),
        (("--approval", "bogus", "run", "x"), 2, "'bogus' is not one of"),
        (("checkpoints", "restore", "abc"), 2, "'abc' is not a checkpoint number"),
        (("stats", "--since", "forever"), 2, "--since 'forever': give a number and a unit"),
        (("sessions", "show", "fff"), 2, "no session id starts with 'fff'"),
        (("undo",), 2, "no checkpoints for"),
        (("config", "show", "-c", "nonexistent=1"), 2, "unknown key 'nonexistent'"),
        (("local", "start"), 2, "is not installed"),
        (("--deny", "read(.env)", "sessions", "list"), 2, "--deny does not apply"),
        # It named only `lathe run`, though doctor, stats, undo and more take -C.
        (("-C", ".", "plugins"), 2, "take it: `lathe agents list`, `lathe checkpoints list`"),
        (("-m", "a", "run", "-m", "b", "task"), 2, "give it once"),
        (("run", "--resume", "", "task"), 2, "'--resume': give a session id"),
        (("run", "--resume", "abc", "--continue", "x"), 2, "not both"),
        # These two ended in a traceback (OverflowError) instead.
        (("serve", "--port", "99999"), 2, "99999 is not in the range 0<=x<=65535"),
        (("local", "start", "--port", "-1"), 2, "-1 is not in the range 0<=x<=65535"),
    ],
)
def test_a_bad_invocation_is_one_line_starting_with_lathe(tmp_path, args, code, words):
    result = lathe(*args, cwd=tmp_path, home=tmp_path / "home")

    assert result.returncode == code, result.stderr
    assert words in _one_lathe_line(result)
    assert result.stdout == ""


def _commands_taking_cwd(group: click.Group, ctx: click.Context, path: tuple[str, ...] = ()):
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        if isinstance(command, click.Group):
            yield from _commands_taking_cwd(command, ctx, (*path, name))
        elif any("-C" in getattr(param, "opts", ()) for param in command.params):
            arguments = [p for p in command.params if isinstance(p, click.Argument) and p.required]
            yield (*path, name, *("1" for _ in arguments))


def _every_command_taking_cwd() -> list[tuple[str, ...]]:
    from lathe.ui.cli import cli

    return [(), *_commands_taking_cwd(cli, click.Context(cli))]


def test_the_walk_finds_the_commands_that_take_cwd():
    found = {" ".join(invocation) for invocation in _every_command_taking_cwd()}
    assert {"", "run", "sessions list", "stats", "undo", "checkpoints restore 1"} <= found
    assert {"config show", "doctor", "trust"} <= found


@pytest.mark.parametrize("invocation", _every_command_taking_cwd(), ids=" ".join)
def test_cwd_to_a_missing_directory_is_one_clear_error(tmp_path, invocation):
    missing = tmp_path / "nope"
    if invocation and invocation[0] == "run":
        invocation = (*invocation, "task")

    after = lathe(*invocation, "-C", str(missing), cwd=tmp_path, home=tmp_path / "home")
    before = lathe("-C", str(missing), *invocation, cwd=tmp_path, home=tmp_path / "home")

    for result in (after, before):
        assert result.returncode == 2, result.stderr
        assert _one_lathe_line(result) == f"lathe: -C {missing}: no such directory"
        assert result.stdout == ""


def test_cwd_to_a_file_says_it_is_not_a_directory(tmp_path):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("hi\n")

    result = lathe("sessions", "list", "-C", str(a_file), cwd=tmp_path, home=tmp_path / "home")

    assert result.returncode == 2
    assert _one_lathe_line(result) == f"lathe: -C {a_file}: not a directory"


@pytest.mark.parametrize("invocation", _every_command_taking_cwd(), ids=" ".join)
def test_an_empty_cwd_is_an_error_not_the_current_directory(tmp_path, invocation):
    # `-C "$REPO"` with REPO unset must not let lathe loose on whatever folder CI is in.
    if invocation and invocation[0] == "run":
        invocation = (*invocation, "task")
    result = lathe(*invocation, "-C", "", cwd=tmp_path, home=tmp_path / "home")
    assert result.returncode == 2, result.stderr
    assert _one_lathe_line(result).startswith("lathe: -C: empty path")
    assert not (tmp_path / ".lathe").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--model", ""), "lathe: --model: empty model name"),
        (("--model", "  "), "lathe: --model: empty model name"),
        (("--model", "m", "--base-url", ""), "lathe: --base-url: empty URL"),
        (("--model", "m", "--base-url", "localhost:11434/v1"),
         "lathe: --base-url localhost:11434/v1: expected an http:// or https:// URL"),
        (("--model", "m", "--base-url", "ftp://x/v1"),
         "lathe: --base-url ftp://x/v1: expected an http:// or https:// URL"),
    ],
)  # fmt: skip
def test_an_empty_model_or_a_url_that_is_none_is_refused_at_once(tmp_path, args, message):
    result = lathe("run", *args, "task", cwd=tmp_path, home=tmp_path / "home")
    assert result.returncode == 2, result.stderr
    assert _one_lathe_line(result).startswith(message)


def test_an_age_past_any_session_means_everything(tmp_path):
    # `--since 9999999d` overflowed the date arithmetic with a traceback.
    for age in ("9999999d", "99999999999d"):
        result = lathe("stats", "--since", age, cwd=tmp_path, home=tmp_path / "home")
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr


@pytest.mark.parametrize("rule", ["read([z-a])", "edit(src/[9-0]*)", "edit(\\)"])
def test_a_rule_whose_path_pattern_cannot_be_read_is_one_line(tmp_path, rule):
    # It failed with a re.error traceback the first time a path was matched against it.
    done = lathe(
        "run", "--deny", rule, "--base-url", "http://127.0.0.1:9/v1", "-m", "m", "do it",
        cwd=tmp_path, home=tmp_path / "home",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert _one_lathe_line(done).startswith(f"lathe: cannot read the permission rule {rule!r}")


def test_a_sandbox_asked_for_with_full_approval_is_one_line_not_ignored(tmp_path):
    # `--sandbox gvisor --approval full` ran every command with no sandbox, unsaid.
    done = lathe(
        "run", "--sandbox", "gvisor", "--approval", "full", "--base-url",
        "http://127.0.0.1:9/v1", "-m", "m", "do it", cwd=tmp_path, home=tmp_path / "home",
    )  # fmt: skip
    assert done.returncode == 2
    line = _one_lathe_line(done)
    assert "--sandbox gvisor has no effect with --approval full" in line


@pytest.mark.parametrize(
    "args", [("trust",), ("memory", "show"), ("memory", "clear", "--yes"), ("config", "show")]
)
def test_a_config_error_is_exit_2_in_every_command(tmp_path, args):
    # trust and memory exited 1 with the same message that run and config show exit 2 on.
    (tmp_path / ".lathe").mkdir()
    (tmp_path / ".lathe" / "config.toml").write_text('[agent]\nmax_turns = "abc"\n')
    done = lathe(*args, cwd=tmp_path, home=tmp_path / "home")
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "max_turns" in _one_lathe_line(done)
