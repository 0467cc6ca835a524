"""A check that raises instead of giving a result (`CheckDeclined`: the person asked
declined it, or nobody answered in time in the service) still gets its
`verify_finished`: only a cancellation had, and the events showed a check that never
ended."""

from __future__ import annotations

import pytest

from lathe.agent.finish import RunState
from lathe.agent.verify import VerifyGate, VerifySettings
from lathe.events import VerifyFinished, VerifyStarted
from lathe.exec.base import ExecResult
from lathe.ui.safety import CheckDeclined
from lathe.words import load_words


@pytest.mark.parametrize("error", [CheckDeclined("it was declined"), OSError("no shell")])
async def test_a_check_that_raises_still_finishes(error):
    events = []

    async def run_check(command: str) -> ExecResult:
        raise error

    gate = VerifyGate(VerifySettings(command="pytest", run_first=True), run_check, load_words())

    with pytest.raises(type(error)):
        await gate.begin(RunState(emit=events.append))

    assert [type(event) for event in events] == [VerifyStarted, VerifyFinished]
    assert events[-1].exit_code is None and events[-1].passed is False
