"""Chunks read as the flat sequence they hold, and a ChunkCache gives what converting every
item afresh gives, however the chunks are reused, rebuilt or replaced between calls."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lathe.chunked import ChunkCache, Chunks, chunks_of


@given(st.lists(st.lists(st.integers(), max_size=4), max_size=6), st.integers(-30, 30))
def test_chunks_read_as_the_flat_list(parts, index):
    flat = [x for part in parts for x in part]
    chunks = Chunks(tuple(part) for part in parts)

    assert len(chunks) == len(flat) and list(chunks) == flat
    assert chunks == flat and chunks == tuple(flat) and chunks == Chunks([tuple(flat)])
    assert chunks[1:] == flat[1:] and chunks[:-2] == flat[:-2]
    assert all(chunk for chunk in chunks.chunks)  # empty chunks are dropped
    if -len(flat) <= index < len(flat):
        assert chunks[index] == flat[index]
    else:
        with pytest.raises(IndexError):
            chunks[index]


def test_a_plain_sequence_is_one_chunk():
    assert chunks_of([1, 2]) == ((1, 2),)
    assert chunks_of([]) == ()
    chunks = Chunks([(1,), (2, 3)])
    assert chunks_of(chunks) is chunks.chunks


class _Item:
    """An item with an identity of its own (small ints are shared)."""

    def __init__(self, value: int) -> None:
        self.value = value


# One step between two calls: grow the last chunk, start a chunk, rewrite one item of
# some chunk, or replace everything.
_steps = st.one_of(
    st.tuples(st.just("grow"), st.integers(1, 3)),
    st.tuples(st.just("start"), st.integers(1, 3)),
    st.tuples(st.just("rewrite"), st.integers(0, 50), st.integers(0, 50)),
    st.tuples(st.just("replace"), st.integers(1, 6)),
)


def _apply(chunks: list[tuple[_Item, ...]], step: tuple, fresh) -> list[tuple[_Item, ...]]:
    chunks = list(chunks)
    match step:
        case ("grow", n) if chunks:
            chunks[-1] = (*chunks[-1], *(fresh() for _ in range(n)))
        case ("grow", n) | ("start", n):
            chunks.append(tuple(fresh() for _ in range(n)))
        case ("rewrite", at, position) if chunks:
            chunk = list(chunks[at % len(chunks)])
            chunk[position % len(chunk)] = fresh()
            chunks[at % len(chunks)] = tuple(chunk)
        case ("replace", n):
            chunks = [tuple(fresh() for _ in range(n))]
    return chunks


@settings(max_examples=300, deadline=None)
@given(st.lists(_steps, min_size=1, max_size=30))
def test_a_chunk_cache_gives_what_converting_afresh_gives(steps):
    counter = iter(range(10**9))
    converted: list[_Item] = []

    def convert(item: _Item) -> int:
        converted.append(item)
        return item.value * 2

    cache = ChunkCache(convert, sum)
    chunks: list[tuple[_Item, ...]] = []
    seen: set[int] = set()
    for step in steps:
        chunks = _apply(chunks, step, lambda: _Item(next(counter)))
        converted.clear()
        result = cache.map(Chunks(chunks))

        assert result == [sum(item.value * 2 for item in chunk) for chunk in chunks]
        # Only items the previous call did not hold are converted.
        assert all(id(item) not in seen for item in converted)
        seen = {id(item) for chunk in chunks for item in chunk}


def test_a_cleared_cache_converts_again():
    calls = []
    cache = ChunkCache(lambda x: calls.append(x) or x)
    items = Chunks([(1, 2)])
    cache.map(items)
    cache.map(items)
    cache.clear()
    assert cache.map(items) == [(1, 2)]
    assert calls == [1, 2, 1, 2]
