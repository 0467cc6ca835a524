"""The second guard hunt: ways to set IFS the walker misread. `printf -v IFS -- @` (the
`--` was taken as the format), `declare -u IFS=x` (the case attribute ignored), `shopt -s
lastpipe; echo @ | read IFS` (the pipeline's end runs in this shell), `exec {IFS}>f`
(bash sets IFS to the descriptor's number) and `set -o posix; IFS=@ export x=1` (a
special builtin's prefix assignments persist) each split `c=rm@-rf@~; $c` unseen.

Every dangerous command targets a victim folder in a fake home under tmp_path; the
`ids` keep the parameters out of tmp_path's name, which the separators must not meet.
"""

from __future__ import annotations

import pytest
from tests.policy.test_guard_ifs_links_path import _decide, _places

# -- IFS set in ways the walker now reads exactly ----------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "printf -v IFS -- @; c=rm@-rf@{v}; $c",
        "printf -vIFS -- @; c=rm@-rf@{v}; $c",
        "declare -u IFS=q; c=rmQ-rfQ{v}; $c",
        "declare -l IFS=Q; c=rmq-rfq{v}; $c",
        "typeset -u IFS=q; c=rmQ-rfQ{v}; $c",
        "declare -u IFS; IFS=q; c=rmQ-rfQ{v}; $c",
        "shopt -s lastpipe; echo @ | read IFS; c=rm@-rf@{v}; $c",
        "shopt -s lastpipe; printf @ | read -r IFS; c=rm@-rf@{v}; $c",
        "set -o posix; IFS=@ export x=1; c=rm@-rf@{v}; $c",
        "set -eo posix; IFS=@ :; c=rm@-rf@{v}; $c",
        "shopt -so posix; IFS=@ :; c=rm@-rf@{v}; $c",
        "POSIXLY_CORRECT=1; IFS=@ :; c=rm@-rf@{v}; $c",
        "export POSIXLY_CORRECT=; IFS=@ :; c=rm@-rf@{v}; $c",
        "POSIXLY_CORRECT=1 IFS=@ :; c=rm@-rf@{v}; $c",
        "sh -c 'IFS=@ :; c=rm@-rf@{v}; $c'",
    ],
    ids=lambda _: "case",
)
def test_an_ifs_the_walker_can_compute_still_meets_the_deny_list(tmp_path, command):
    ws, home, victim = _places(tmp_path)
    assert _decide(ws, home, command.format(v=victim), "full") == "deny"


# -- IFS set in ways only run time knows -------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        'printf -v IFS -- "$S"; c=rm@-rf@src; $c',
        "exec {IFS}>/dev/null; c=rm1-rf1src; $c",
        "exec {IFS}<sep; c=rm1-rf1src; $c",
        ": {IFS}>/dev/null; c=rm1-rf1src; $c",
        "{ :; } {IFS}>/dev/null; c=rm1-rf1src; $c",
        'declare -u "$N"; IFS=q; c=rmQ-rfQsrc; $c',
        'declare "$F" IFS=q; c=rmQ-rfQsrc; $c',
        "declare IFS=q -u; c=rmq-rfqsrc; $c",
        'f() { declare -u IFS; }; f; IFS=q; c="rmq-rfqsrc"; $c',
        "declare -i IFS=3-2; c=rm1-rf1src; $c",
        "declare -c IFS=q; c=rmQ-rfQsrc; $c",
        'export -z IFS=q; c="rm -rf src"; $c',
        'readonly -u IFS=q; c="rm -rf src"; $c',
        'local IFS=q; c="rm -rf src"; $c',
        "declare -n r=IFS; declare -u r; IFS=q; c=rmQ-rfQsrc; $c",
        "if [ -f x ]; then declare -u IFS; fi; IFS=q; c=rmQ-rfQsrc; $c",
        'shopt -s "$O"; echo @ | read IFS; c=rm@-rf@src; $c',
        "if [ -f x ]; then shopt -s lastpipe; fi; echo @ | read IFS; c=rm@-rf@src; $c",
        "shopt -s lastpipe; echo @ | cat | read IFS; c=rm@-rf@src; $c",
        "bash -O lastpipe -c 'echo @ | read IFS; c=rm@-rf@src; $c'",
        "BASHOPTS=lastpipe bash -c 'echo @ | read IFS; c=rm@-rf@src; $c'",
        "if [ -f x ]; then set -o posix; fi; IFS=@ :; c=rm@-rf@src; $c",
        'set -o "$O"; IFS=@ :; c=rm@-rf@src; $c',
        'read "$N" <<< 1; IFS=@ :; c=rm@-rf@src; $c',
        "POSIXLY_CORRECT=1 :; IFS=@ :; c=rm@-rf@src; $c",
        "bash --posix -c 'IFS=@ :; c=rm@-rf@src; $c'",
        "bash -o posix -c 'IFS=@ :; c=rm@-rf@src; $c'",
        "SHELLOPTS=posix bash -c 'IFS=@ :; c=rm@-rf@src; $c'",
        "shopt -s localvar_inherit; IFS=@; f() { local IFS; c=rm@-rf@src; $c; }; f",
    ],
    ids=lambda _: "case",
)
def test_an_ifs_only_run_time_knows_leaves_no_rule_behind(tmp_path, command):
    ws, home, _ = _places(tmp_path)
    assert _decide(ws, home, command, deny=["bash(rm:*)"]) != "allow"


@pytest.mark.parametrize(
    "command",
    [
        "printf -v IFS -- @; c=git@push@origin; $c",
        "exec {IFS}>/dev/null; c=git1push1origin; $c",
        "declare -u IFS=q; c=gitQpushQorigin; $c",
        "shopt -s lastpipe; echo @ | read IFS; c=git@push@origin; $c",
        "set -o posix; IFS=@ export x=1; c=git@push@origin; $c",
    ],
    ids=lambda _: "case",
)
def test_a_deny_rule_holds_for_words_split_on_such_an_ifs(tmp_path, command):
    ws, home, _ = _places(tmp_path)
    assert _decide(ws, home, command, deny=["bash(git push:*)"]) != "allow"


@pytest.mark.parametrize(
    "command",
    [
        "printf -v X -- '%s' a; echo $X",
        "declare -u NAME=x; echo $NAME",
        "echo a | read v; ls $HOME",
        "shopt -s lastpipe; echo a | read v; echo $v",
        "ls | while IFS= read -r f; do echo $f; done",
        "set -o pipefail; IFS=, read -r a b <<< 'x,y'; echo $a",
        "IFS=, read -r a b <<< 'x,y'; echo $a $b",
        "exec 3>/dev/null; echo hi >&3; ls $HOME",
        "exec {fd}>out.log; ls $HOME",
        "set -o posix; echo $HOME",
        "x=1 :; ls $HOME",
    ],
    ids=lambda _: "case",
)
def test_ordinary_commands_near_those_still_run(tmp_path, command):
    ws, home, _ = _places(tmp_path)
    assert _decide(ws, home, command, deny=["bash(rm:*)"]) == "allow"
