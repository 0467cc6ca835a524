"""The second guard hunt: a link or copy of a program found under another name. `cp -s
/bin/rm d; ./d`, and a link made earlier in the line then found through PATH (`ln -s
/bin/rm d && PATH=.:$PATH d`), were judged as a program called `d`.

Every dangerous command targets a victim folder in a fake home under tmp_path.
"""

from __future__ import annotations

import shutil

import pytest
from tests.policy.test_guard_ifs_links_path import _decide, _places

RM = shutil.which("rm") or "/bin/rm"
GIT = shutil.which("git") or "/usr/bin/git"


@pytest.mark.parametrize(
    "command",
    [
        f"cp -s {RM} d; ./d -rf {{v}}",
        f"cp --symbolic-link {RM} d; ./d -rf {{v}}",
        f"cp -rs {RM} d; ./d -rf {{v}}",
        f"cp {RM} d; ./d -rf {{v}}",
        f"cp {RM} d && mv d e && ./e -rf {{v}}",
        f"install {RM} d; ./d -rf {{v}}",
        f"ln -s {RM} d && PATH=.:$PATH d -rf {{v}}",
        f"cp -s {RM} d && PATH=.:$PATH d -rf {{v}}",
        f"mkdir -p b2; ln -s {RM} b2/x; PATH=b2:$PATH x -rf {{v}}",
        f"ln -s {RM} d; export PATH=$PWD:$PATH; d -rf {{v}}",
    ],
    ids=lambda _: "case",
)
def test_a_link_or_copy_made_in_the_line_is_judged_as_its_program(tmp_path, command):
    ws, home, victim = _places(tmp_path)
    assert _decide(ws, home, command.format(v=victim), "full") == "deny"


@pytest.mark.parametrize(
    "command",
    [
        f"cp -s {GIT} g; ./g push",
        f"cp {GIT} g; ./g push",
        f"ln -s {GIT} g && PATH=.:$PATH g push",
        f"cp -s {GIT} g && PATH=.:$PATH g push",
        f"mkdir -p b2; ln -s {GIT} b2/x; PATH=b2:$PATH x push",
        f"mkdir -p b2; cp -s {GIT} b2/x; PATH=b2:$PATH x push",
    ],
    ids=lambda _: "case",
)
def test_a_deny_rule_holds_for_a_link_or_copy_of_its_program(tmp_path, command):
    ws, home, _ = _places(tmp_path)
    assert _decide(ws, home, command, deny=["bash(git push:*)"]) == "deny"


@pytest.mark.parametrize(
    "command",
    [
        'ln -s "$P" d && PATH=.:$PATH d -rf src',
        'cp -s "$P" d; ./d -rf src',
        'cp "$P" d; ./d -rf src',
        'cp "$P" d && PATH=.:$PATH d -rf src',
        'cp "$P" bin/; ./bin/tool -rf src',
        'cp /bin/ls "$D"; ./d -rf src',
        'cp -t "$D" /bin/ls; ./d -rf src',
    ],
    ids=lambda _: "case",
)
def test_a_link_or_copy_of_a_program_only_run_time_knows_asks(tmp_path, command):
    ws, home, _ = _places(tmp_path)
    assert _decide(ws, home, command) == "ask"


@pytest.mark.parametrize(
    "command",
    [
        "cp src/a.txt b.txt; ls",
        "cp -r src out && ls out",
        f"cp {GIT} g; ./g status",
        "mv a b; ./b",
        "ln -s src s && PATH=.:$PATH ls",
        'cp "$SRC" build/; ./run.sh',
        'mv "$A" b; ./run.sh',
    ],
    ids=lambda _: "case",
)
def test_ordinary_copies_still_run(tmp_path, command):
    ws, home, _ = _places(tmp_path)
    assert _decide(ws, home, command, deny=["bash(git push:*)"]) == "allow"


@pytest.mark.parametrize("make", ["ln -s", "cp -s", "cp --symbolic-link"])
def test_writing_through_a_link_the_line_made_to_outside_is_refused(tmp_path, make):
    # `ln -s ~/.bashrc x; echo evil > x` was refused, the same through `cp -s` ran.
    ws, home, _ = _places(tmp_path)
    (home / ".bashrc").write_text("# mine\n")
    assert _decide(ws, home, f"{make} {home}/.bashrc x; echo evil > x", "full") == "deny"
