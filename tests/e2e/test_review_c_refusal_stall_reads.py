"""A read through bash between refusals is no progress, through `lathe run`.

A refused edit of a test file, then `sed -n 1,Np app.py` (a read, with other lines
each time), over and over, ran to the turn limit: every bash command that was not in
the looks-only table counted as a change. Progress is now a call that may have changed
files by the rule the verify gate uses (`check_files.changed_by`): `sed -n` names none.
"""

from __future__ import annotations

from tests.e2e.test_refusal_stall_progress import _run


def test_reading_with_sed_between_refusals_is_not_progress(tmp_path, fake_openai):
    end, ws = _run(fake_openai, tmp_path, "sed -n '1,{n}p' app.py")

    assert end["type"] == "run_finished"
    assert end["status"] == "stuck", end
    assert "refused" in end["reason"], end
    assert (ws / "app.py").read_text() == "value = 1\n"


def test_sed_that_edits_in_place_between_refusals_is_progress(tmp_path, fake_openai):
    end, ws = _run(fake_openai, tmp_path, "sed -i 's/^value = .*/value = {n}/' app.py")

    assert end["type"] == "run_finished"
    assert end["status"] == "unverified", end
    assert (ws / "app.py").read_text() == "value = 7\n"
