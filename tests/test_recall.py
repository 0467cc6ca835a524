"""recall's scoring: BM25 over words, rarer shared words first, no shared word no match."""

from __future__ import annotations

from datetime import UTC, datetime

from lathe.recall import Passage, search, words


def _passage(sid: str, text: str, kind: str = "answer") -> Passage:
    return Passage(sid, datetime(2026, 11, 30, tzinfo=UTC), kind, text)


def test_the_passage_sharing_the_rarer_words_ranks_first():
    passages = [
        _passage("a", "ran the tests, all green"),
        _passage("b", "the flaky import in loader.py came from a stale cache"),
        _passage("c", "ran the tests again after the import change"),
        _passage("d", "nothing in common here"),
    ]

    found = search(passages, "how did we fix the flaky import?")

    assert [m.passage.session_id for m in found] == ["b", "c"]
    assert found[0].score > found[1].score > 0


def test_a_query_of_only_common_words_matches_nothing():
    assert words("how did we do it?") == []
    assert search([_passage("a", "what is it")], "the of and") == []
