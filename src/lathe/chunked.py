"""A sequence built of shared immutable chunks, and a per-chunk cache for whoever converts one.

Every request repeats the whole conversation, and each stage between the history and the
wire (pruning and shaping, masking secrets, the provider's wire form, JSON encoding)
would otherwise walk every message of it on every turn. A `Chunks` is a tuple of chunks
(tuples of items); the request after it reuses each chunk whose items did not change —
the very same tuple object. A stage that remembers its work per chunk (`ChunkCache`)
then pays, each turn, for the chunks that changed (the newest, and the few that pruning
rewrote) plus one lookup per chunk, however long the conversation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain
from typing import Generic, TypeVar, overload

T = TypeVar("T")
R = TypeVar("R")
J = TypeVar("J")


class Chunks(Sequence[T]):
    """An immutable sequence whose items are those of `chunks`, in order. Empty chunks are
    dropped. Equal to any `Chunks`, list or tuple holding equal items in the same order.
    Indexing an item walks the chunks; a slice is a plain list."""

    __slots__ = ("_length", "chunks")

    def __init__(self, chunks: Iterable[tuple[T, ...]] = ()) -> None:
        self.chunks: tuple[tuple[T, ...], ...] = tuple(chunk for chunk in chunks if chunk)
        self._length = sum(map(len, self.chunks))

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[T]:
        return chain.from_iterable(self.chunks)

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return list(self)[index]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("Chunks index out of range")
        for chunk in self.chunks:
            if index < len(chunk):
                return chunk[index]
            index -= len(chunk)
        raise AssertionError("unreachable: the length counts every chunk")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Chunks | list | tuple):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # equal to lists, which are unhashable

    def __repr__(self) -> str:
        return f"Chunks({list(self)!r})"


def chunks_of(items: Sequence[T]) -> tuple[tuple[T, ...], ...]:
    """The chunks of `items`: its own when it is a `Chunks`, else one chunk of everything."""
    if isinstance(items, Chunks):
        return items.chunks
    return (tuple(items),) if items else ()


class ChunkCache(Generic[T, R, J]):
    """`convert` applied to every item of a sequence, then `join` to each chunk's converted
    items, remembered per chunk.

    `map(items)` returns `join(tuple(convert(x) for x in chunk))` for each chunk of
    `items` (`chunks_of`), in order. A chunk the previous call saw is not converted again,
    and neither is an item of a chunk that this call's sequence no longer holds (the
    newest chunk grows by a few items a turn; pruning rewrites one item of an old chunk):
    a call costs what changed since the previous one, plus a lookup per chunk. Only the
    previous call's chunks are remembered, each kept alive with its entry so that its id
    is never another object's while the entry lives. `convert` and `join` must be pure.
    """

    def __init__(
        self,
        convert: Callable[[T], R],
        join: Callable[[tuple[R, ...]], J] = lambda converted: converted,  # type: ignore[assignment,return-value]
    ) -> None:
        self._convert = convert
        self._join = join
        self._known: dict[int, tuple[tuple[T, ...], tuple[R, ...], J]] = {}

    def clear(self) -> None:
        """Forget everything: what `convert` gives has changed."""
        self._known = {}

    def map(self, items: Sequence[T]) -> list[J]:
        chunks = chunks_of(items)
        known = self._known
        fresh = [chunk for chunk in chunks if id(chunk) not in known]
        # The items of the chunks this sequence dropped, converted: still alive (their
        # chunks are in `known`), so their ids are their own.
        replaced: dict[int, R] = {}
        if fresh:
            still = {id(chunk) for chunk in chunks}
            for key, (chunk, converted, _) in known.items():
                if key not in still:
                    replaced.update(zip(map(id, chunk), converted, strict=True))
        remembered: dict[int, tuple[tuple[T, ...], tuple[R, ...], J]] = {}
        joined: list[J] = []
        for chunk in chunks:
            entry = known.get(id(chunk)) or remembered.get(id(chunk))
            if entry is None:
                converted = tuple(
                    replaced[id(x)] if id(x) in replaced else self._convert(x) for x in chunk
                )
                entry = (chunk, converted, self._join(converted))
            remembered[id(chunk)] = entry
            joined.append(entry[2])
        self._known = remembered
        return joined
