"""Wrappers are peeled in every spelling their own option parser accepts, so the command
they run meets the guard: with `--approval full` the guard's deny list is all that
stands, and `script -qc 'rm -rf ~' /dev/null` or `env -iS '...'` had walked past it.

The workspace is /home/dev/project inside the home /home/dev; nothing here runs a
command except the end-to-end test, whose home is a folder under tmp_path.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.e2e.test_calculator import lathe
from tests.fakes.openai_server import Call, Reply

from lathe.policy.command import analyze
from lathe.policy.gate import Mode, Policy
from lathe.policy.rules import RuleSet

WORKSPACE = Path("/home/dev/project")
HOME = Path("/home/dev")


def _analyze(command: str):
    return analyze(command, workspace=WORKSPACE, home=HOME, environ={})


# Each reached the inner command's deny only when spelt the one way the guard knew.
HIDDEN = [
    # GNU env takes a lone `-` for -i: it was judged as the command, and `rm` ran.
    "env - rm -rf ~",
    "env -i - X=1 rm -rf ~",
    # util-linux script reads options anywhere (getopt without "+"), clustered or not.
    "script -q /dev/null -c 'echo x >> ~/.bashrc'",
    "script /dev/null -qc 'rm -rf ~'",
    "script -qc 'rm -rf ~' /dev/null",
    "script -qefc 'rm -rf ~' /dev/null",
    "script -qc'rm -rf ~' /dev/null",
    "script --command='rm -rf ~' -q /dev/null",
    "script -q --comm 'rm -rf ~' /dev/null",
    "script -E never -qc 'rm -rf ~' /dev/null",
    "script -c ls -q -c 'rm -rf ~' /dev/null",
    # env -S: combined, attached, abbreviated; its words are read as env's own argv.
    "env -iS 'sh -c \"echo x >> ~/.bashrc\"'",
    "env -vS'rm -rf ~'",
    "env --split-string='rm -rf ~'",
    "env --split 'rm -rf ~'",
    "env -uX -S 'rm -rf ~'",
    "env -S 'rm -rf' ~",
    "env -S '-i rm -rf ~'",
    "env -S 'X=1 rm' -rf ~",
    "env FOO=$BAR rm -rf ~",  # an assignment, whatever $BAR holds
    # Short options clustered with one that takes a value, long ones abbreviated.
    "strace -fqo /dev/null rm -rf ~",
    "strace -fo/dev/null rm -rf ~",
    "strace --trace none rm -rf ~",
    "sudo -Eu root rm -rf ~",
    "timeout -sKILL 5 rm -rf ~",
    "timeout --sig KILL 5 rm -rf ~",
    "nsenter -m/proc/1/ns/mnt rm -rf ~",
    "taskset -ac 0 rm -rf ~",
    "flock -xw 5 /tmp/l rm -rf ~",
    "numactl --interleave all rm -rf ~",
    # Wrappers the guard did not know.
    "fakeroot sh -c 'rm -rf ~'",
    "fakeroot -i state -- rm -rf ~",
    "ltrace -f rm -rf ~",
    "ltrace -fo /dev/null rm -rf ~",
    "xvfb-run -a rm -rf ~",
    "xvfb-run -s '-screen 0 1024x768x24' rm -rf ~",
    "screen -dm sh -c 'rm -rf ~'",
    "screen -d -m rm -rf ~",
    "screen -dmS build rm -rf ~",
    "screen -S build -d -m rm -rf ~",
    "tmux new-session -d 'rm -rf ~'",
    "tmux new -d -s x rm -rf ~",
    "tmux neww 'echo x >> ~/.bashrc'",
    "tmux -L sock new -d -c ~ 'rm -rf *'",
    "tmux -c 'rm -rf ~'",
    "unbuffer rm -rf ~",
    "unbuffer -p rm -rf ~",
    "firejail --noprofile rm -rf ~",
    "firejail --quiet -- rm -rf ~",
    "catchsegv rm -rf ~",
    "valgrind -q --tool=none rm -rf ~",
    "nsenter -t 1 -m rm -rf ~",
    "unshare -U -- rm -rf ~",
    "unshare -w ~ rm -rf *",
    "faketime '2020-01-01' rm -rf ~",
    "faketime -m -f '+2y' rm -rf ~",
    "faketime -x rm -rf ~",  # faketime reads -x as the time, and runs rm
    "proxychains rm -rf ~",
    "proxychains4 -q -f /etc/p.conf rm -rf ~",
    "proxychains4 -qf rm -rf ~",  # only the letter after the dash counts: -qf is -q
    "torsocks rm -rf ~",
    "torsocks -i -u me rm -rf ~",
    "/usr/bin/time -f %e -- rm -rf ~",
    # su and runuser cluster -c with their other flags (util-linux getopt); sg runs the
    # word after its group with /bin/sh -c.
    "su -lc 'rm -rf ~'",
    "su -l root -c 'rm -rf ~'",
    "su - -c 'rm -rf ~'",
    "su -c'rm -rf ~'",
    "su --comm='rm -rf ~'",
    "su root --session-command 'rm -rf ~'",
    "runuser -l dev -c 'rm -rf ~'",
    "runuser -lc 'rm -rf ~' dev",
    "runuser -u dev -- rm -rf ~",
    "sg dev -c 'rm -rf ~'",
    "sg - dev 'rm -rf ~'",
    # The arguments after su's user go to that user's shell, -c and all.
    "su root -- -c 'rm -rf ~'",
    "su - root -c 'rm -rf ~'",
    "su -l root -- -lc 'rm -rf ~'",
    "runuser dev -- -c 'rm -rf ~'",
]


@pytest.mark.parametrize("command", HIDDEN)
def test_the_command_a_wrapper_runs_is_judged(command: str) -> None:
    analysis = _analyze(command)
    assert analysis.decision == "deny", analysis.findings


@pytest.mark.parametrize(
    "command",
    ["script /dev/null -qc 'rm -rf ~'", "env -iS 'sh -c \"echo x >> ~/.bashrc\"'",
     "strace -fqo /dev/null rm -rf ~", "screen -dm sh -c 'rm -rf ~'",
     "fakeroot sh -c 'rm -rf ~'", "xvfb-run -a rm -rf ~",
     # Its input unknown, it only asked; xargs runs it once with no input at all.
     "xargs rm -rf ~", "xargs -0 rm -rf /"],
)  # fmt: skip
def test_full_mode_refuses_them(command: str) -> None:
    policy = Policy(Mode.FULL, RuleSet.from_strings(), WORKSPACE, HOME, sandboxed=False)
    assert policy.decide("bash", {"command": command}).action == "deny"


@pytest.mark.parametrize(
    "command",
    [
        "script -q /dev/null -c 'pytest -q'",
        "script -qc 'make test' /dev/null",
        "env -iS 'PATH=/usr/bin make'",
        "strace -fqo /dev/null ls",
        "xvfb-run -a pytest",
        "screen -dmS build make",
        "screen -ls",
        "tmux new -d -s build 'make test'",
        "tmux ls",
        "tmux kill-session -t build",
        "fakeroot dpkg-deb --build pkg",
        "faketime '2020-01-01' date",
        "valgrind -q ls",
        "flock -n /tmp/l make",
        "proxychains4 -q ls",
        "torsocks ls",
        "unbuffer ls",
    ],
)
def test_everyday_forms_still_pass(command: str) -> None:
    analysis = _analyze(command)
    assert analysis.decision == "allow", analysis.findings


def test_rules_see_the_command_inside() -> None:
    listed = [(c.name, c.args) for c in _analyze("env -iS 'git push' origin").commands]
    assert ("git", ("push", "origin")) in listed
    listed = [(c.name, c.args) for c in _analyze("script -qc 'git push' /dev/null").commands]
    assert ("git", ("push",)) in listed
    listed = [(c.name, c.args) for c in _analyze("tmux new -d 'git push'").commands]
    assert ("git", ("push",)) in listed


@pytest.mark.parametrize(
    "command",
    [
        "ltrace -o ~/.bashrc ls",
        "xvfb-run -e ~/.bashrc ls",
        "time -o ~/.bashrc ls",
        "valgrind --log-file=/home/dev/.bashrc ls",
        "firejail --output=/home/dev/.bashrc ls",
        "script -t/home/dev/.bashrc -qc ls /dev/null",
        "screen -L -Logfile ~/.bashrc -dm ls",
    ],
)
def test_a_wrapper_writing_a_file_of_its_own_is_not_passed_as_its_command(command) -> None:
    # Peeled, `strace -o ~/.bashrc ls` met bash(ls:*) as `ls` and wrote outside; then it
    # only asked, which full mode turns into a yes. The file is judged as `> F` is.
    analysis = _analyze(command)
    assert analysis.decision == "deny", analysis.findings
    assert ".bashrc" in analysis.reasons[0] and "outside the workspace" in analysis.reasons[0]


@pytest.mark.parametrize(
    "command",
    ["strace -o /tmp/log rm -rf ~", "script -c 'rm -rf ~' /tmp/typescript",
     "ltrace --output=/tmp/log rm -rf ~"],
)  # fmt: skip
def test_the_command_of_a_wrapper_writing_a_file_is_judged_all_the_same(command) -> None:
    # Unpeeled they only asked, which `--approval full` turns into allow.
    assert _analyze(command).decision == "deny"


@pytest.mark.parametrize(
    "command",
    [
        "tmux send-keys -t x 'rm -rf ~' Enter",
        "tmux run-shell 'rm -rf ~'",
        "tmux new -d \\; send-keys 'rm -rf ~' Enter",
        "screen -S x -X stuff 'rm -rf ~'",
    ],
)
def test_a_session_given_commands_is_unresolved(command: str) -> None:
    analysis = _analyze(command)
    assert analysis.decision == "ask", analysis.findings


def test_full_mode_end_to_end_refuses_wrapped_destruction(tmp_path, fake_openai):
    # Safety: HOME is a folder under tmp_path and every command names it (no `env -i`
    # leaves `~` to fall back to the real home), so a failing guard destroys canaries.
    home = tmp_path / "user"
    canary = home / "canary"
    canary.mkdir(parents=True)
    (canary / "keep.txt").write_text("still here\n")
    (home / ".bashrc").write_text("# the user's shell setup\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    commands = [
        "script -q /dev/null -c 'echo owned >> ~/.bashrc'",
        "strace -fqo /dev/null rm -rf ~/canary",
        f"env -iS 'sh -c \"echo owned >> {home}/.bashrc\"'",
        "script -qc 'rm -rf ~/canary' /dev/null",
    ]
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": c}, id=f"call_{i}") for i, c in enumerate(commands)]),
        Reply("I could not do that."),
    )

    result = lathe(
        "run", "--model", "m", "--base-url", fake_openai.base_url, "-C", str(ws),
        "--approval", "full", "tidy up",
        cwd=tmp_path,
        env_extra={"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "lathe-home"),
                   "HOME": str(home)},
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert (canary / "keep.txt").read_text() == "still here\n"
    assert (home / ".bashrc").read_text() == "# the user's shell setup\n"
    bodies = fake_openai.chat_bodies()
    results = {
        m["tool_call_id"]: m["content"] for m in bodies[-1]["messages"] if m["role"] == "tool"
    }
    assert sorted(results) == [f"call_{i}" for i in range(len(commands))]
    for content in results.values():
        assert "Denied: bash was blocked: " in content, content


@pytest.mark.parametrize(
    "rule, command",
    [("bash(env:*)", "env -S ls"), ("bash(env:*)", "env -iS 'make test'"),
     ("bash(sg:*)", "sg dev ls"), ("bash(script:*)", "script -qc ls /dev/null"),
     ("bash(su:*)", "su -lc ls"), ("bash(flock:*)", "flock /tmp/l -c ls")],
)  # fmt: skip
def test_a_deny_rule_on_a_wrapper_holds_when_it_runs_a_command_string(rule, command):
    # Peeled to the string it runs, the wrapper itself met no rule: `env -S ls` ran
    # under --deny 'bash(env:*)'.
    rules = RuleSet.from_strings(deny=[rule])
    policy = Policy(Mode.FULL, rules, WORKSPACE, HOME, sandboxed=False)
    assert policy.decide("bash", {"command": command}).action == "deny"


def test_a_deny_rule_on_a_wrapper_holds_in_a_real_run(tmp_path, fake_openai):
    ws = tmp_path / "ws"
    ws.mkdir()
    fake_openai.enqueue(
        Reply(calls=[Call("bash", {"command": "env -S 'touch made'"}, id="call_0")]),
        Reply("I could not."),
    )
    result = lathe(
        "run", "--model", "m", "--base-url", fake_openai.base_url, "-C", str(ws),
        "--approval", "full", "--deny", "bash(env:*)", "make it",
        cwd=tmp_path,
        env_extra={"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "lathe-home")},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert not (ws / "made").exists()
    told = [m for m in fake_openai.chat_bodies()[-1]["messages"] if m["role"] == "tool"]
    assert "Denied" in told[0]["content"] and "env" in told[0]["content"], told
