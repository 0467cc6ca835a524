"""A check that failed at the start and passes with nothing changed may be flaky, and a
verified run says so; a change the run made and took back before the check passed is no
change (the caveat had dropped after any call that may change files, even one undone
later)."""

from __future__ import annotations

import pytest
from tests.e2e.test_fake_fixes import _after_a_flaky_check
from tests.fakes.openai_server import Call, Reply

BREAK = Call("bash", {"command": "sed -i 's/a - b/a * b/' calc.py"})
FIX = Call("bash", {"command": "sed -i 's/a - b/a + b/' calc.py"})


@pytest.mark.parametrize(
    "there_and_back",
    [
        [BREAK, Call("bash", {"command": "sed -i 's/a \\* b/a - b/' calc.py"})],
        [
            Call("edit", {"path": "calc.py", "old_string": "a - b", "new_string": "a * b"}),
            Call("edit", {"path": "calc.py", "old_string": "a * b", "new_string": "a - b"}),
        ],
        [
            Call("bash", {"command": "cp calc.py calc.bak && echo '# x' >> calc.py"}),
            Call("bash", {"command": "mv calc.bak calc.py"}),
        ],
    ],
)
def test_a_change_taken_back_before_the_check_passed_keeps_the_flaky_caveat(
    tmp_path, fake_openai, there_and_back
):
    # The caveat dropped after any call that may change files, even one undone later.
    replies = [Reply(calls=[call]) for call in there_and_back]
    finished = _after_a_flaky_check(tmp_path, fake_openai, *replies, Reply("Done."))
    assert "nothing was changed" in finished["reason"]


@pytest.mark.parametrize(
    "change",
    [
        FIX,
        # A program lathe cannot see into may have changed anything.
        Call("bash", {"command": "python3 -c \"open('calc.py', 'a').write('')\""}),
    ],
)
def test_a_change_that_stays_or_cannot_be_seen_drops_the_flaky_caveat(
    tmp_path, fake_openai, change
):
    finished = _after_a_flaky_check(tmp_path, fake_openai, Reply(calls=[change]), Reply("Done."))
    assert "nothing was changed" not in finished["reason"]
