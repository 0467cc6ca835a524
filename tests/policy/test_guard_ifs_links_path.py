"""Three ways a command ran past the guard by being read under the wrong name.

- IFS: words were always split on whitespace, so after `IFS=,` the guard read
  `c="rm,-rf,/x"; $c` as one harmless word while bash ran `rm -rf /x`;
- links: `ln -s /bin/rm del` then `./del -rf /x` was judged as a program called `del`;
- PATH: `PATH=./bin:$PATH ls` ran the workspace's `bin/ls` script unread.

Every dangerous command targets a victim folder under tmp_path.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.e2e.test_calculator import run_against
from tests.fakes.openai_server import Call, Reply

from lathe.policy.gate import Mode, Policy
from lathe.policy.rules import RuleSet

RM = shutil.which("rm") or "/bin/rm"
GIT = shutil.which("git") or "/usr/bin/git"
BASH = shutil.which("bash") or "/bin/bash"


def _places(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The workspace (with src/), the home folder and a victim folder in it, outside the
    workspace (the temp folders are not: they may be cleaned)."""
    ws, home = tmp_path / "ws", tmp_path / "user"
    victim = home / "victim"
    for folder in (ws / "src", home, victim):
        folder.mkdir(parents=True)
    (victim / "keep.txt").write_text("still here\n")
    return ws, home, victim


def _decide(ws: Path, home: Path, command: str, mode: str = "auto", deny=()) -> str:
    rules = RuleSet.from_strings(deny=list(deny))
    policy = Policy(Mode(mode), rules, ws, home, sandboxed=mode != "full")
    return policy.decide("bash", {"command": command}).action


# -- IFS ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        'IFS=,; c="rm,-rf,{v}"; $c',
        'export IFS=,; c="rm,-rf,{v}"; $c',
        'declare IFS=,; c="rm,-rf,{v}"; $c',
        'IFS=x; c="rmx-rfx{v}"; $c',
        'f() {{ local IFS=,; c="rm,-rf,{v}"; $c; }}; f',
        "IFS=,; $(echo rm,-rf,{v})",
        'IFS=", "; c="rm, -rf ,{v}"; $c',
        'IFS=,; c="rm,-rf,{v}"; eval $c',
        "c=\"rm,-rf,{v}\"; IFS=, eval '$c'",
        'printf -v IFS ,; c="rm,-rf,{v}"; $c',
        'read IFS <<< ,; c="rm,-rf,{v}"; $c',
        'IFS=,; f() {{ local IFS; c="rm -rf {v}"; $c; }}; f',
        'f() {{ local IFS=,; }}; f; c="rm -rf {v}"; $c',
        'IFS=,; unset IFS; c="rm -rf {v}"; $c',
        "IFS=,; bash -c 'c=\"rm -rf {v}\"; $c'",
        "IFS=,; echo 'c=\"rm -rf {v}\"; $c' | bash",
    ],
)
def test_words_split_on_a_changed_ifs_meet_the_deny_list(tmp_path, command):
    ws, home, victim = _places(tmp_path)
    assert _decide(ws, home, command.format(v=victim), "full") == "deny"


@pytest.mark.parametrize(
    "command",
    [
        'IFS=,; c="rm,-rf,src"; $c',
        'export IFS=,; c="rm,-rf,src"; $c',
        'declare IFS=,; c="rm,-rf,src"; $c',
        'read IFS <<< ,; c="rm,-rf,src"; $c',
        'read -r IFS < sep; c="rm,-rf,src"; $c',
        'printf -v IFS ,; c="rm,-rf,src"; $c',
        'printf -v IFS "$S"; c="rm,-rf,src"; $c',
        'f() { local IFS=,; c="rm,-rf,src"; $c; }; f',
        "IFS=x; c=rmx-rfxsrc; $c",
        "IFS=,; $(echo rm,-rf,src)",
        'IFS[0]=,; c="rm,-rf,src"; $c',
        'IFS+=,; c="rm,-rf,src"; $c',
        '((IFS=44)); c="rm4-rf4src"; $c',
        ': $((IFS=44)); c="rm4-rf4src"; $c',
        'IFS=; : ${IFS:=,}; c="rm,-rf,src"; $c',
        'declare -n r=IFS; r=,; c="rm,-rf,src"; $c',
        'declare "IFS=,"; c="rm,-rf,src"; $c',
        'mapfile -t IFS <<< ,; c="rm,-rf,src"; $c',
        'getopts , IFS; c="rm,-rf,src"; $c',
        'let IFS=44; c="rm4-rf4src"; $c',
        'unset "$V"; c="rm -rf src"; $c',
        'c="rm,-rf,src"; f() { $c; }; IFS=, f',
        'IFS=,; f() { declare IFS=" "; }; f; c="rm,-rf,src"; $c',
        'for IFS in ,; do c="rm,-rf,src"; $c; done',
        'IFS=,; if false; then unset IFS; fi; c="rm,-rf,src"; $c',
        'true || IFS=,; c="rm -rf src"; $c',
        'IFS=,; unset -f IFS; c="rm,-rf,src"; $c',
        'printf "$O" IFS ,; c="rm,-rf,src"; $c',
    ],
)
def test_an_ifs_changed_any_way_leaves_no_rule_behind(tmp_path, command):
    ws, home, _ = _places(tmp_path)
    assert _decide(ws, home, command, deny=["bash(rm:*)"]) != "allow"


@pytest.mark.parametrize(
    "command",
    [
        'while IFS=, read -r a b; do echo "$a"; done < data.csv',
        "IFS=, read -r a b <<< 'x,y'; echo $a $b",
        'IFS=:; for p in $PATH; do ls "$p"; done',
        'OLD="$IFS"; IFS=,; echo "$*"; IFS="$OLD"; ls',
        'f() { local IFS=,; echo "$*"; }; f a b',
    ],
)
def test_ordinary_uses_of_ifs_still_run(tmp_path, command):
    ws, home, _ = _places(tmp_path)
    assert _decide(ws, home, command, deny=["bash(rm:*)"]) == "allow"


def test_a_comma_ifs_splits_a_deletion_that_then_deletes_nothing_it_may_not(tmp_path):
    ws, home, _ = _places(tmp_path)
    assert _decide(ws, home, 'IFS=,; c="rm,-rf,src"; $c', "full") == "allow"


# -- links to programs -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("link", "to", "command"),
    [
        ("del", RM, "./del -rf {v}"),
        ("bin/del", RM, "bin/del -rf {v}"),
        ("bin/del", RM, "cd bin && ./del -rf {v}"),
        ("sh2", BASH, "./sh2 -c 'rm -rf {v}'"),
    ],
)
def test_a_link_to_a_program_is_judged_as_that_program(tmp_path, link, to, command):
    ws, home, victim = _places(tmp_path)
    (ws / link).parent.mkdir(parents=True, exist_ok=True)
    (ws / link).symlink_to(to)
    assert _decide(ws, home, command.format(v=victim), "full") == "deny"


def test_a_deny_rule_holds_for_a_link_to_its_program(tmp_path):
    ws, home, _ = _places(tmp_path)
    (ws / "g").symlink_to(GIT)
    assert _decide(ws, home, "./g push", deny=["bash(git push:*)"]) == "deny"
    assert _decide(ws, home, "./g status", deny=["bash(git push:*)"]) == "allow"
    assert _decide(ws, home, "./g status", deny=["bash(./g status:*)"]) == "deny"


@pytest.mark.parametrize(
    "command",
    [
        f"ln -s {RM} d; ./d -rf {{v}}",
        f"ln -s {RM} bin/d && bin/d -rf {{v}}",
        f"ln -sf {RM} d; ln -s d d2; ./d2 -rf {{v}}",
        f"ln {RM} d; ./d -rf {{v}}",
    ],
)
def test_a_link_made_earlier_in_the_line_is_judged_as_its_target(tmp_path, command):
    ws, home, victim = _places(tmp_path)
    (ws / "bin").mkdir()
    assert _decide(ws, home, command.format(v=victim), "full") == "deny"


def test_a_link_to_a_target_only_known_at_run_time_asks(tmp_path):
    ws, home, _ = _places(tmp_path)
    assert _decide(ws, home, 'ln -s "$P" d; ./d -rf src', "auto") == "ask"
    assert _decide(ws, home, 'ln -s "$P" d; ./d -rf src', "full", ["bash(rm:*)"]) == "deny"
    assert _decide(ws, home, "ln -s a b; ln -s b a; ./a", "auto") == "allow"


# -- PATH --------------------------------------------------------------------------------

SCRIPT = "#!/bin/sh\nrm -rf src\n"


def _bin(ws: Path, *names: str) -> None:
    (ws / "bin").mkdir(exist_ok=True)
    for name in names:
        (ws / "bin" / name).write_text(SCRIPT)
        (ws / "bin" / name).chmod(0o755)


@pytest.mark.parametrize(
    "command",
    [
        "PATH=./bin:$PATH ls",
        "PATH=bin:$PATH ls",
        "export PATH=$PWD/bin:$PATH; git2",
        'PATH="$PWD/bin:$PATH"; git2',
        "env PATH=bin:/usr/bin git2",
        "env -i PATH=./bin git2",
        "hash -p ./bin/git2 foo; foo",
        "PATH=./bin:$PATH; f() { ls; }; f",
        "PATH=./bin:$PATH bash -c ls",
        "PATH=./bin:$PATH sudo ls",
        "PATH=:$PATH; cd bin && git2",
        "PATH=bin:$PATH command ls",
        "PATH=./bin:$PATH bash -c 'echo hi'",
        "printf 'rm -rf src' > bin/x; chmod +x bin/x; PATH=bin:$PATH x",
        "PATH=./bin:$PATH; false && PATH=/usr/bin; git2",
        "for d in a b; do PATH=./bin:$PATH; done; git2",
        "hash -p bin/git2 foo; foo",
    ],
)
def test_a_program_found_through_a_changed_path_is_read(tmp_path, command):
    ws, home, _ = _places(tmp_path)
    _bin(ws, "ls", "git2", "bash", "sudo")
    assert _decide(ws, home, command, deny=["bash(rm:*)"]) == "deny"


@pytest.mark.parametrize(
    ("command", "plain"),
    [
        ("PATH=./bin:$PATH ./x.sh", "./x.sh"),
        ("export PATH=./bin:$PATH; bash x.sh", "bash x.sh"),
        ("PATH=bin:$PATH source x.sh", "source x.sh"),
    ],
)
def test_a_script_started_with_a_changed_path_finds_its_programs_there(tmp_path, command, plain):
    ws, home, _ = _places(tmp_path)
    _bin(ws, "ls")
    (ws / "x.sh").write_text("#!/bin/sh\nls -l\n")
    (ws / "x.sh").chmod(0o755)
    assert _decide(ws, home, command, deny=["bash(rm:*)"]) == "deny"
    assert _decide(ws, home, plain, deny=["bash(rm:*)"]) == "allow"


@pytest.mark.parametrize(
    "command",
    [
        "PATH=$(cat p):$PATH ls",
        'PATH="$X/bin:$PATH"; ls',
        'hash -p "$X" foo; foo',
        "declare -n r=PATH; r=./bin; git2",
    ],
)
def test_a_path_only_known_at_run_time_asks(tmp_path, command):
    ws, home, _ = _places(tmp_path)
    assert _decide(ws, home, command) == "ask"


@pytest.mark.parametrize(
    "command",
    [
        "PATH=./bin:$PATH python3 -V",
        "export PATH=/opt/tools/bin:$PATH; ls",
        "PATH=$PATH:./bin ls",
        "export PATH=$HOME/.local/bin:$PATH && ls",
        "PATH=./bin:$PATH missing-tool",
        "if [ -d .venv ]; then export PATH=.venv/bin:$PATH; fi; ls",
        "cd src && export PATH=$HOME/.local/bin:$PATH && ls; ls",
        "sleep 1 & wait $!; ls",
        'printf "$FMT" a; ls',
    ],
)
def test_a_changed_path_without_a_script_in_it_still_runs(tmp_path, command):
    ws, home, _ = _places(tmp_path)
    _bin(ws, "ls")
    assert _decide(ws, home, command, deny=["bash(rm:*)"]) == "allow"


def test_a_virtualenv_activated_before_a_command_still_runs(tmp_path):
    ws, home, _ = _places(tmp_path)
    (ws / ".venv" / "bin").mkdir(parents=True)
    (ws / ".venv" / "bin" / "activate").write_text(
        'case "$(uname)" in\n  CYGWIN*) VIRTUAL_ENV=$(cygpath x) ;;\n'
        f"  *) VIRTUAL_ENV={ws}/.venv ;;\nesac\n"
        '_OLD_VIRTUAL_PATH="$PATH"\nPATH="$VIRTUAL_ENV/bin:$PATH"\nexport PATH\n'
    )
    (ws / ".venv" / "bin" / "pytest").write_text("#!/usr/bin/env python3\nprint(1)\n")
    assert _decide(ws, home, "source .venv/bin/activate && pytest -q") == "allow"


# -- the real CLI ------------------------------------------------------------------------


def _run(fake_openai, tmp_path: Path, ws: Path, commands: list[str], *args: str):
    """`lathe run` with the model running `commands`, one call each, HOME the fake one."""
    fake_openai.enqueue(
        *(Reply(calls=[Call("bash", {"command": c})]) for c in commands), Reply("done")
    )
    home = {"HOME": str(tmp_path / "user"), "XDG_CONFIG_HOME": str(tmp_path / "user" / ".config")}
    return run_against(fake_openai, ws, tmp_path, *args, "do it", env_extra=home)


def test_cli_full_mode_refuses_a_deletion_split_by_ifs(tmp_path, fake_openai):
    ws, _, victim = _places(tmp_path)
    result = _run(
        fake_openai, tmp_path, ws, [f'IFS=,; c="rm,-rf,{victim}"; $c'], "--approval", "full"
    )
    assert result.returncode == 0, result.stderr
    assert (victim / "keep.txt").exists()


def test_cli_full_mode_refuses_a_deletion_through_a_link_to_rm(tmp_path, fake_openai):
    ws, _, victim = _places(tmp_path)
    commands = [f"ln -s {RM} del", f"./del -rf {victim}"]
    result = _run(fake_openai, tmp_path, ws, commands, "--approval", "full")
    assert result.returncode == 0, result.stderr
    assert (ws / "del").is_symlink()
    assert (victim / "keep.txt").exists()


def test_cli_a_deny_rule_holds_for_a_script_found_through_path(tmp_path, fake_openai):
    ws, _, _ = _places(tmp_path)
    (ws / "src" / "app.py").write_text("x = 1\n")
    commands = [
        "mkdir -p bin && printf '#!/bin/sh\\nrm -rf src\\n' > bin/ls && chmod +x bin/ls",
        "PATH=./bin:$PATH ls",
    ]
    result = _run(fake_openai, tmp_path, ws, commands, "--approval", "full", "--deny", "bash(rm:*)")
    assert result.returncode == 0, result.stderr
    assert (ws / "bin" / "ls").exists()
    assert (ws / "src" / "app.py").exists()
