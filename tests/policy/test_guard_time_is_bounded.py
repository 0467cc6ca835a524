"""The guard's time stays small however the command line is shaped.

Each call of a function walked its body again, and each loop walked its body up to four
times from wherever the last pass left the shell: a few lines (a chain of functions each
calling the next twice, loops nested around a `cd`) took seconds, then minutes, before a
command ran. A walk past a budget of nodes is refused as too complex to judge; a call of
a function from a place it was already walked from is not walked again.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from lathe.policy.command import analyze

WORKSPACE = Path("/home/dev/project")
HOME = Path("/home/dev")
BOUND = 2.0  # seconds, generous (2 cores, tests in parallel); these took up to minutes


def _chain(levels: int, calls: int = 2, last: str = "echo hi") -> str:
    defined = [f"f{i}(){{ {' '.join(f'f{i + 1};' for _ in range(calls))} }}" for i in range(levels)]
    return "; ".join([*defined, f"f{levels}(){{ {last}; }}", "f0"])


def _loops(levels: int, body: str = "cd d") -> str:
    return "while x; do " * levels + body + "; done" * levels


def _timed(command: str):
    start = time.perf_counter()
    analysis = analyze(command, workspace=WORKSPACE, home=HOME, environ={})
    return analysis, time.perf_counter() - start


@pytest.mark.parametrize(
    "command",
    [
        _chain(16),  # 11 s
        _chain(12),
        _chain(7, calls=10),
        _loops(5),  # 2.5 s
        _loops(6),  # a path too long, then a crash
        _loops(8),
        _loops(4, "cd d; f(){ cd e; }; f"),
    ],
)
def test_small_inputs_are_judged_fast(command: str) -> None:
    analysis, took = _timed(command)
    assert took < BOUND, f"{took:.2f}s"
    assert analysis.decision in ("allow", "ask", "deny")


def test_a_deep_chain_of_calls_is_refused_not_walked() -> None:
    # Ten calls a level, seven levels: ten million walks of the last body. Each call
    # counts toward the depth the guard follows.
    analysis, took = _timed(_chain(7, calls=10, last="rm -rf ~/x$RANDOM"))
    assert took < BOUND, f"{took:.2f}s"
    assert analysis.decision == "deny"
    assert any("levels deep" in r or "too complex to judge" in r for r in analysis.reasons)


def test_calls_that_change_the_state_each_time_hit_the_budget() -> None:
    # Each call moves the shell, so no call repeats an earlier one's state.
    defined = [f"f{i}(){{ f{i + 1}; cd a{i}; f{i + 1}; cd b{i}; f{i + 1}; }}" for i in range(6)]
    command = "; ".join([*defined, "f6(){ echo hi; }", "f0"])
    analysis, took = _timed(command)
    assert took < BOUND, f"{took:.2f}s"
    assert analysis.decision == "deny"


def test_too_many_nodes_is_refused_with_advice() -> None:
    command = "; ".join(
        f"if [ -f f{i} ]; then for j in a b; do echo $j; done; fi" for i in range(20000)
    )
    analysis, _ = _timed(command)
    assert analysis.decision == "deny"
    assert any("too complex to judge" in r and "split it" in r for r in analysis.reasons)


def test_a_function_called_again_from_the_same_place_is_judged_the_same() -> None:
    # The cache must not hide what a later call does after the state changed.
    analysis, _ = _timed("f(){ rm -rf *; }; f; cd ~; f")
    assert analysis.decision == "deny"
    assert any("home directory" in r for r in analysis.reasons)
    analysis, _ = _timed("f(){ rm -rf $D; }; f; D=~; f")
    assert analysis.decision == "deny"
    analysis, _ = _timed("f(){ bash x.sh; }; f; echo 'rm -rf ~' > x.sh; f")
    assert analysis.decision == "deny"
    analysis, _ = _timed("f(){ cd ~; }; g(){ f; }; g; g; rm -rf *")
    assert analysis.decision == "deny"


def test_everyday_functions_and_loops_still_pass() -> None:
    for command in [
        "f(){ echo $1; }; f a; f b; f c",
        "for i in 1 2 3; do for j in a b; do echo $i$j; done; done",
        'while read -r line; do echo "$line"; done < list.txt',
        "build(){ cd src && make; }; build; build",
    ]:
        analysis, took = _timed(command)
        assert analysis.decision == "allow", (command, analysis.reasons)
        assert took < BOUND


def test_a_long_script_on_disk_is_read_as_far_as_the_budget(tmp_path: Path) -> None:
    # A script on disk may only add a deny: past its own budget it is read no further
    # (as past its size limit), and an ordinary long script still runs.
    (tmp_path / "long.sh").write_text(_loops(7) + "\n" + "echo hi\n" * 2000)
    start = time.perf_counter()
    analysis = analyze("bash long.sh && ls", workspace=tmp_path, home=HOME, environ={})
    assert time.perf_counter() - start < 2 * BOUND
    assert analysis.decision == "allow", analysis.reasons
    (tmp_path / "bad.sh").write_text("rm -rf ~\n" + _loops(7))
    analysis = analyze("bash bad.sh", workspace=tmp_path, home=HOME, environ={})
    assert analysis.decision == "deny", analysis.reasons
