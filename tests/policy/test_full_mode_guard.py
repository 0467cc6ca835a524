"""The guard in `--approval full` (issue 13, item 18): with no sandbox it is the only
defence, so every form an attack run used to destroy or overwrite files outside the
workspace, or to kill lathe, is refused; everyday commands still pass.

Like test_command_table, the workspace is /home/dev/project inside the home /home/dev.
Rows that need a script on disk use a workspace under tmp_path instead. No command here
is ever run: kill -1 and friends are judged by `analyze` and `Policy.decide` only.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lathe.policy.command import analyze
from lathe.policy.full_mode import FULL_MODE_GAPS
from lathe.policy.gate import Mode, Policy
from lathe.policy.rules import RuleSet

WORKSPACE = Path("/home/dev/project")
HOME = Path("/home/dev")

# The 22 forms the attack run got past the guard, then variants of each.
ATTACK = [
    "python3 -c \"import shutil; shutil.rmtree('/home/u/x')\"",
    "python3 -c \"import os; os.system('rm -rf ~')\"",
    "perl -e 'system(\"rm -rf ~\")'",
    "$(printf '\\x72\\x6d') -rf ~",
    "{rm,-rf,~}",
    "shopt -s expand_aliases; alias x='rm -rf ~'\nx",
    "echo 'rm -rf ~' > x.sh; bash x.sh",
    "echo 'rm -rf ~' > x.sh; source x.sh",
    "echo 'rm -rf ~' > x.sh; . ./x.sh",
    "echo 'rm -rf ~' > x.sh; chmod +x x.sh; ./x.sh",
    "cat > x.sh <<'EOF'\nrm -rf ~\nEOF\nbash x.sh",
    "mv ~ /tmp/x",
    "truncate -s0 ~/.bashrc",
    ": > ~/.bashrc",
    "shred ~/file",
    "ln -sf /dev/null ~/.bashrc",
    "tee ~/.bashrc",
    "cp /dev/null ~/.bashrc",
    "unlink ~/file",
    "find ~ | xargs rm",
    "git config core.hooksPath /tmp/h",
    "kill -9 -1",
]

VARIANTS = [
    # interpreters
    "python -c 'import os; os.remove(\"/etc/hosts\")'",
    "python3 -c 'from shutil import rmtree as r; r(\"/srv/data\")'",
    "python3 -c 'import pathlib; pathlib.Path.home().joinpath(\"x\").unlink()'",
    "python3 -c 'from pathlib import Path; Path(\"~/.ssh\").expanduser().rmdir()'",
    "python3 -c 'import os; os.removedirs(os.path.expanduser(\"~/a/b\"))'",
    'python3 -c \'import subprocess; subprocess.run(["rm", "-rf", "/home/dev"])\'',
    "python3 -c 'import subprocess as s; s.call(\"rm -rf ~\", shell=True)'",
    'python3 -c \'__import__("os").system("rm -rf /")\'',
    "python3 -c 'import os; os.kill(-1, 9)'",
    "python3 -c 'import os, signal; os.killpg(1, signal.SIGKILL)'",
    "python3 -c 'import os; os.kill(os.getppid(), 9)'",
    'python3 -c \'open("/home/dev/.bashrc", "w").write("")\'',
    "python3 -c 'p = \"/home/dev/notes\"; import shutil; shutil.rmtree(p)'",
    'python3 -c \'exec("import shutil; shutil.rmtree(\\"/opt/x\\")")\'',
    "python3 - <<'EOF'\nimport shutil\nshutil.rmtree('/home/dev/other')\nEOF",
    "perl -e 'unlink(\"/home/dev/.bashrc\")'",
    "perl -e '`rm -rf ~`'",
    "perl -pi -e 's/a/b/' ~/.bashrc",
    'node -e \'require("child_process").execSync("rm -rf ~")\'',
    'node -e \'require("fs").rmSync("/home/dev", {recursive: true})\'',
    "ruby -e 'system(\"rm -rf ~\")'",
    # names computed at run time
    "$(printf 'r%s' m) -rf ~/",
    "$(echo cm0= | base64 -d) -rf ~",
    "`printf '\\162\\155'` -rf /",
    "$RM -rf ~",
    "${X} --recursive --force /etc",
    "/usr/bin/r? -rf /",
    "{rm,-rf,/home/dev/other}",
    "ls; {rm,-rf,~}",
    # aliases
    "alias x='rm -rf'; x ~",
    "alias y='shred'\ny ~/.bashrc",
    # scripts written and run in the same command
    "printf 'rm -rf ~\\n' > x.sh && sh x.sh",
    "echo 'ls' > x.sh; echo 'rm -rf ~' >> x.sh; bash x.sh",
    "{ echo ls; echo 'rm -rf ~'; } > x.sh; bash x.sh",
    "cat <<'EOF' > x.sh\ntruncate -s0 ~/.profile\nEOF\n. x.sh",
    "echo 'rm -rf ~' | tee x.sh >/dev/null; bash x.sh",
    "echo 'rm -rf ~' > x.sh; cat x.sh | bash -s",
    "echo 'rm -rf ~' > x.sh; bash < x.sh",
    # writes and destruction outside the workspace
    "echo x >> ~/.bashrc",
    "echo x > ~/.config/autostart/x.desktop",
    "cat /dev/null > /etc/passwd",
    "echo x &> ../elsewhere/file",
    "truncate --size=0 /home/dev/.profile",
    "shred -u -n 3 /home/dev/.ssh/id_rsa",
    "rm ~/.bashrc",
    "rm -f ../other/file",
    "ln -s /tmp/evil ~/.local/bin/git",
    "ln -sf /dev/null -t ~/",
    "echo x | tee -a ~/.bashrc",
    "cp evil ~/.bashrc",
    "cp -t ~/.config/ evil",
    "install -m 755 evil ~/.local/bin/git",
    "rsync -a ./ ~/backup/",
    "mv ~/.ssh ./ssh",
    "mv build ../build-old",
    "sed -i 's/x/y/' ~/.bashrc",
    "dd if=/dev/zero of=/home/dev/.bashrc",
    "find ~ -print0 | xargs -0 rm -f",
    "ls ~ | xargs shred",
    "find ~/.ssh | xargs unlink",
    "find ~ -type f -exec truncate -s0 {} +",
    "cat <<'EOF' > ~/.bashrc\nalias ls='rm -rf ~'\nEOF",
    "ln -s ~ ./h; rm -rf h/",
    # (a name no one else uses: where /tmp/h is a folder, the link goes inside it)
    "ln -s ~ /tmp/lathe-guard-test-h && rm -rf /tmp/lathe-guard-test-h/",
    "ln -s ~/.bashrc rc; echo x >> rc",
    "rm -rf /tmp/*",
    "rm -rf /tmp",
    "cd /tmp/ws && rm -rf ..",
    # git config keys that make git run a program later
    "git config --global core.fsmonitor 'rm -rf ~'",
    "git config --system core.sshCommand x",
    "git config core.pager less",
    "git config --local core.editor vim",
    "git config alias.st '!rm -rf ~'",
    "git config --add filter.lfs.smudge x",
    "git config diff.pdf.textconv x",
    "git config --file .git/config credential.helper store",
    "git config set --global core.hooksPath /tmp/h",
    "git config --global include.path /tmp/x.cfg",
    "git -c core.pager='rm -rf ~' log",
    "git -c alias.x='!rm -rf ~' x",
    # signals that reach every process, or lathe itself
    "kill -KILL -1",
    "kill -- -1",
    "kill -s TERM -1",
    "kill -9 $PPID",
    "kill 1",
    "pkill -9 -u dev",
    "pkill .",
    "pkill -f python",
    "pkill lathe",
    "killall -u dev",
    "killall python3",
    "killall5 -9",
    "echo -1 | xargs kill -9",
    # A script given as the standard input's file name reads the here-string.
    "bash /dev/stdin <<< 'echo owned >> ~/.bashrc'",
    "sh /dev/fd/0 <<< 'rm -rf ~'",
    "source /dev/stdin <<< 'rm -rf ~'",
    "source /dev/stdin <<< 'cd ~'; rm -rf *",
    "python3 /dev/stdin <<< 'import shutil; shutil.rmtree(\"/etc\")'",
    "echo 'rm -rf ~' | bash /proc/self/fd/0",
    # A hard link to a file outside: later writes through it change that file.
    "ln ~/.bashrc notes.txt",
    "cp -al ~/.bashrc notes.txt",
    "link ~/.bashrc notes.txt",
    'python3 -c \'import os; os.link("/home/dev/.bashrc", "notes.txt")\'',
    # A non-interactive bash runs the file BASH_ENV names first.
    "echo 'rm -rf ~' > x.sh; BASH_ENV=x.sh bash -c true",
    "echo 'rm -rf ~' > x.sh; env BASH_ENV=x.sh bash -c true",
]


EVERYDAY = [
    "pytest -q",
    "python -m pytest -x tests/policy",
    "git status",
    "git diff --stat",
    "git commit -m 'fix: x'",
    "git log --oneline | head",
    "echo hi > out.txt",
    "echo hi >> out.txt",
    "cp a b",
    "cp -r src /tmp/copy",
    'python -c "print(1)"',
    "python -c \"import shutil; shutil.rmtree('build')\"",
    "python3 -c 'import os; os.remove(\"build/x.o\")'",
    'python3 -c \'import subprocess; subprocess.run(["git", "status"])\'',
    'python3 -c \'open("/tmp/lathe-out.txt", "w").write("x")\'',
    "python3 -c 'import os; os.kill(12345, 15)'",
    "perl -e 'print \"hi\\n\"'",
    "perl -pi -e 's/a/b/' src/x.txt",
    "node -e 'console.log(1)'",
    "rm -rf /tmp/lathe-x",
    "rm -rf /tmp/pytest-*",
    "rm -f /var/tmp/x.lock",
    "mv old new",
    "mv a.txt /tmp/",
    "find . -name '*.pyc' | xargs rm",
    "find . -name '*.o' -print0 | xargs -0 rm -f",
    "kill %1",
    "kill 12345",
    "kill -9 12345",
    "kill 0",
    "kill -0 -1",
    "kill -l",
    "pkill -f 'http.server 8000'",
    "git config user.name x",
    "git config --global user.email x@example.com",
    "git config --get core.pager",
    "git config --unset core.hooksPath",
    "git config -l",
    "git -c core.pager=cat log",
    "ln -s ../a b",
    "ln -sf target link",
    "ln -s ~ h; rm h",
    "cd /tmp && cp a.txt .",
    "echo 'print(1)' > x.py; python3 x.py",
    "echo 'ls' > run.sh; bash run.sh",
    "alias ll='ls -la'; ll",
    "echo x > /tmp/new-file",
    "tee out.log < in.txt",
    "truncate -s0 build.log",
    "shred secrets.tmp",
    "unlink old-link",
    "sed -i 's/a/b/' src/x.py",
    "rsync -a src/ /tmp/mirror/",
    "install -m 644 a build/a",
    "dd if=/dev/zero of=/tmp/disk.img bs=1M count=1",
    "printf 'rm\\n'",
    "echo x > /dev/null",
    "cat <<'EOF' > notes.md\nrm -rf ~ is a bad idea\nEOF",
]


# Only known at run time, and without the shape of a deletion: asked, never refused.
STILL_ASK = ["$(which python3) -c 'print(1)'", "$CMD foo", '"$EDITOR" notes.txt', "rm -rf $DIR"]


def _analyze(command: str, workspace: Path = WORKSPACE, home: Path = HOME):
    return analyze(command, workspace=workspace, home=home, environ={})


@pytest.mark.parametrize("command", ATTACK + VARIANTS)
def test_dangerous_forms_are_denied(command: str) -> None:
    analysis = _analyze(command)
    assert analysis.decision == "deny", analysis.findings


@pytest.mark.parametrize("command", EVERYDAY)
def test_everyday_commands_stay_allowed(command: str) -> None:
    analysis = _analyze(command)
    assert analysis.decision == "allow", analysis.findings


@pytest.mark.parametrize("command", STILL_ASK)
def test_run_time_names_without_a_destructive_shape_still_ask(command: str) -> None:
    analysis = _analyze(command)
    assert analysis.decision == "ask", analysis.findings


def test_nesting_deeper_than_the_guard_follows_is_refused() -> None:
    command = "rm -rf ~"
    for _ in range(9):  # one level past MAX_DEPTH
        escaped = "".join("\\" + c if c in '\\"$`' else c for c in command)
        command = f'bash -c "{escaped}"'
    analysis = _analyze(command)
    assert analysis.decision == "deny"
    assert analysis.reasons[0].startswith("commands nested more than 8 levels deep")


@pytest.mark.parametrize(
    "command",
    ["(" * 600 + "rm -rf ~" + ")" * 600,
     "python3 -c 'x" + ".a" * 3000 + "()'"],
    ids=["subshells", "python attributes"],
)  # fmt: skip
def test_input_too_deep_to_walk_is_refused_not_a_crash(command: str) -> None:
    analysis = _analyze(command)
    assert analysis.reasons == ("the command is nested too deeply for the guard to follow",)


def test_there_are_22_attack_forms() -> None:
    assert len(ATTACK) == 22


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        (
            "truncate -s0 ~/.bashrc",
            "truncate empties ~/.bashrc (/home/dev/.bashrc, outside the workspace)",
        ),
        (": > ~/.bashrc", "> overwrites ~/.bashrc (/home/dev/.bashrc, outside the workspace)"),
        (
            "python3 -c \"import shutil; shutil.rmtree('/home/u/x')\"",
            "shutil.rmtree (via python3 -c) on '/home/u/x' (/home/u/x, outside the workspace)",
        ),
        ("{rm,-rf,~}", "rm -rf on {rm,-rf,~} (the home directory /home/dev)"),
        ("$(printf '\\x72\\x6d') -rf ~", "rm -rf on ~ (the home directory /home/dev)"),
        (
            "echo 'rm -rf ~' > x.sh; bash x.sh",
            "rm -rf (via bash x.sh) on ~ (the home directory /home/dev)",
        ),
        ("kill -9 -1", "kill -1 signals every process you may signal, lathe included: kill -9 -1"),
    ],
)
def test_reasons_say_what_and_where_in_one_line(command: str, reason: str) -> None:
    assert _analyze(command).reasons == (reason,)


def test_git_config_reason_names_the_key_and_the_alternative() -> None:
    (reason,) = _analyze("git config core.hooksPath /tmp/h").reasons
    assert "core.hooksPath" in reason and "git -c" in reason


def test_a_computed_command_name_with_a_destructive_shape_is_explained() -> None:
    (reason,) = _analyze("$RM -rf ~").reasons
    assert reason.startswith("a command whose name is only known at run time")


# -- scripts on disk ---------------------------------------------------------------------


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "home" / "project"
    workspace.mkdir(parents=True)
    (workspace / "x.sh").write_text("#!/bin/sh\necho cleaning\nrm -rf ~\n")
    (workspace / "ok.sh").write_text("#!/bin/bash\necho hi\nrm -rf build\n")
    (workspace / "tool.py").write_text("#!/usr/bin/env python3\nimport shutil\n")
    return workspace


@pytest.mark.parametrize(
    "command",
    ["bash x.sh", "sh ./x.sh", "source x.sh", ". ./x.sh", "chmod +x x.sh; ./x.sh", "bash < x.sh"],
)
def test_a_script_on_disk_is_judged_by_its_content(ws: Path, command: str) -> None:
    analysis = _analyze(command, ws, ws.parent)
    assert analysis.decision == "deny", analysis.findings
    assert "x.sh" in analysis.reasons[0]


@pytest.mark.parametrize("command", ["bash ok.sh", "source ok.sh", "./ok.sh", "./tool.py"])
def test_a_harmless_script_on_disk_is_allowed(ws: Path, command: str) -> None:
    assert _analyze(command, ws, ws.parent).decision == "allow"


def test_a_script_on_disk_only_ever_adds_a_deny(ws: Path) -> None:
    (ws / "env.sh").write_text('export PATH="$X:$PATH"\n$CMD --flag\nsudo true\n')
    assert _analyze("source env.sh && pytest", ws, ws.parent).decision == "allow"


def test_a_big_script_is_not_read(ws: Path) -> None:
    (ws / "big.sh").write_text("rm -rf ~\n" + "#" * 70_000 + "\n")
    assert _analyze("bash big.sh", ws, ws.parent).decision == "allow"


def test_a_script_sourcing_itself_does_not_loop(ws: Path) -> None:
    (ws / "loop.sh").write_text("source loop.sh\necho hi\n")
    assert _analyze("source loop.sh", ws, ws.parent).decision == "allow"


def test_a_script_sourced_from_a_script_is_read_too(ws: Path) -> None:
    (ws / "outer.sh").write_text(". ./x.sh\n")
    assert _analyze("bash outer.sh", ws, ws.parent).decision == "deny"


# -- the mode and the gate ---------------------------------------------------------------


def _full(workspace: Path = WORKSPACE, home: Path = HOME) -> Policy:
    return Policy(Mode.FULL, RuleSet.from_strings(), workspace, home, sandboxed=False)


@pytest.mark.parametrize(
    "command",
    ["kill -9 -1", "kill -KILL -1", "kill -- -1", "pkill -9 -u dev", "killall -u dev",
     "python3 -c 'import os; os.kill(-1, 9)'", "kill -9 $PPID"],
)  # fmt: skip
def test_full_mode_refuses_signals_to_everything(command: str) -> None:
    decision = _full().decide("bash", {"command": command})
    assert decision.action == "deny", decision.reason


@pytest.mark.parametrize("command", ATTACK)
def test_full_mode_refuses_every_attack_form(command: str) -> None:
    assert _full().decide("bash", {"command": command}).action == "deny"


def test_temp_dirs_from_the_environment_count_as_temp() -> None:
    analysis = analyze(
        "rm -rf /scratch/me/run1", workspace=WORKSPACE, home=HOME, environ={"TMPDIR": "/scratch/me"}
    )
    assert analysis.decision == "allow"
    analysis = analyze(
        "rm -rf /home/dev/x", workspace=WORKSPACE, home=HOME, environ={"TMPDIR": "/home"}
    )
    assert analysis.decision == "deny"  # a TMPDIR holding the home directory is ignored


def test_a_symlink_in_the_workspace_does_not_carry_a_write_out(tmp_path: Path) -> None:
    home = tmp_path / "home"
    workspace = home / "project"
    workspace.mkdir(parents=True)
    (home / ".bashrc").write_text("")
    (workspace / "rc").symlink_to(home / ".bashrc")
    assert _analyze("echo x > rc", workspace, home).decision == "deny"
    assert _analyze("rm rc", workspace, home).decision == "allow"  # removes the link only


def test_full_mode_gaps_are_short_exact_phrases() -> None:
    assert isinstance(FULL_MODE_GAPS, tuple) and len(FULL_MODE_GAPS) >= 4
    for phrase in FULL_MODE_GAPS:
        assert isinstance(phrase, str) and phrase == phrase.strip()
        assert len(phrase) <= 90 and not phrase.endswith(".")


def test_lathe_makes_itself_non_dumpable_so_its_environment_is_not_readable():
    # Commands run unsandboxed as the same user read the key from /proc/$PPID/environ.
    import subprocess
    import sys

    probe = (
        "import ctypes; from lathe.ui.safety import hide_own_environment; "
        "libc = ctypes.CDLL(None); before = libc.prctl(3, 0, 0, 0, 0); "
        "hide_own_environment(); print(before, libc.prctl(3, 0, 0, 0, 0))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stdout.split() == ["1", "0"], done.stderr


@pytest.mark.parametrize(
    "command",
    ["CDPATH=~ cd victim && rm -rf *", "export CDPATH=~; cd victim; rm -rf *",
     "CDPATH=/nowhere:~ cd victim && rm -rf ./*"],
)  # fmt: skip
def test_cd_through_cdpath_is_followed_as_bash_follows_it(tmp_path: Path, command: str) -> None:
    # `cd victim` went to ~/victim by CDPATH while the guard saw ./victim, inside the
    # workspace, and let `rm -rf *` delete the user's folder.
    home, workspace = tmp_path / "home", tmp_path / "project"
    (home / "victim").mkdir(parents=True)
    workspace.mkdir()
    assert analyze(command, workspace=workspace, home=home).decision == "deny"
    (workspace / "victim").mkdir()  # bash takes a CDPATH folder first all the same
    assert analyze(command, workspace=workspace, home=home).decision == "deny"
    assert analyze("cd victim && rm -rf *", workspace=workspace, home=home).decision == "allow"
