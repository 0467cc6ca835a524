"""`lathe run` told by the server to come back later than it waits: it gives up at once
and says when to try again, with the date when that is more than a day away (a
Retry-After in 2099 had been said as "try again after 07:28:00")."""

from __future__ import annotations

import re

import pytest
from tests.e2e.test_calculator import lathe
from tests.e2e.test_unresponsive_servers import retry_lines
from tests.fakes.openai_server import rate_limited


@pytest.mark.parametrize(
    ("retry_after", "when"),
    [
        ("Wed, 21 Oct 2099 07:28:00 GMT", r"2099-10-21 07:28:00"),
        ("3600", r"\d\d:\d\d:\d\d"),  # within the day: the time alone
    ],
)
def test_a_wait_too_long_to_make_says_when_to_try_again(tmp_path, fake_openai, retry_after, when):
    fake_openai.enqueue(rate_limited(retry_after=retry_after))

    result = lathe(
        "run", "--model", "m", "--base-url", fake_openai.base_url, "-C", str(tmp_path), "say hi",
        cwd=tmp_path,
        env_extra={"OPENAI_API_KEY": "sk-test", "LATHE_HOME": str(tmp_path / "home"), "TZ": "UTC"},
    )  # fmt: skip

    assert result.returncode == 3, result.stderr
    assert not retry_lines(result.stderr)
    last = result.stderr.strip().splitlines()[-1]
    assert re.search(rf"try again after {when}\)$", last), last
