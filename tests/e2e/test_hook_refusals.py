"""`lathe run` with a pre_tool hook that refuses calls: the user is told why, in the
progress line of each, and warned once of a hook that runs out of time."""

from __future__ import annotations

from tests.e2e.test_hook_rewrites import pre_tool_hook, progress_lines, run_with_hooks
from tests.fakes.openai_server import Call, Reply

# Refuses a path under gen/ (or secret/) with a reason, lets anything else through.
REFUSE_UNDER = (
    """python3 -c 'import json,sys; a=json.load(sys.stdin)["arguments"]; """
    """p=str(a.get("path") or ""); bad=p.startswith("{top}/"); """
    """bad and print("nothing under {top}/, it is generated", file=sys.stderr); """
    """sys.exit(2 if bad else 0)'"""
)


def test_a_hook_that_times_out_is_warned_of_once_and_named_by_each_refusal(
    tmp_path, fake_openai
) -> None:
    # Every call went `edit y.py !! blocked`, and only the model heard why.
    edit = Call("edit", {"path": "y.py", "old_string": "a", "new_string": "b"})
    fake_openai.enqueue(*[Reply(calls=[edit]) for _ in range(3)], Reply("ok"))

    _, result = run_with_hooks(
        tmp_path, fake_openai, pre_tool_hook("sleep 30", ["edit"], timeout_s=0.3)
    )

    warnings = [line for line in result.stderr.splitlines() if line.startswith("lathe: warning")]
    warned = [line for line in warnings if "`sleep 30`" in line]
    assert len(warned) == 1 and "0.3 s" in warned[0], result.stderr
    lines = progress_lines(result.stderr, "edit")
    assert len(lines) == 3, result.stderr
    assert all(
        line.endswith("!! blocked by hook: the hook `sleep 30` timed out after 0.3s")
        for line in lines
    ), lines


def test_a_refusal_by_exit_2_names_its_reason_in_the_progress_line(tmp_path, fake_openai) -> None:
    edit = Call("edit", {"path": "gen/x.py", "old_string": "a", "new_string": "b"})
    fake_openai.enqueue(Reply(calls=[edit]), Reply("ok"))

    _, result = run_with_hooks(
        tmp_path, fake_openai, pre_tool_hook(REFUSE_UNDER.format(top="gen"), ["edit"])
    )

    [line] = progress_lines(result.stderr, "edit")
    assert line.endswith("!! blocked by hook: nothing under gen/, it is generated"), line
