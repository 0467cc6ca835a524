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
from itertools import chain, compress
from operator import is_not
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
        self.chunks: tuple[tuple[T, ...], ...] = tuple(filter(None, chunks))
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
    a call costs what changed since the previous one, plus comparing each chunk with the
    one at its place in the previous call. Only the previous call's chunks are
    remembered. `convert` and `join` must be pure.
    """

    def __init__(
        self,
        convert: Callable[[T], R],
        join: Callable[[tuple[R, ...]], J] = lambda converted: converted,  # type: ignore[assignment,return-value]
    ) -> None:
        self._convert = convert
        self._join = join
        self.clear()

    def clear(self) -> None:
        """Forget everything: what `convert` gives has changed."""
        # The previous call's chunks (alive here, so their ids are their own), their
        # converted items and results, position by position.
        self._chunks: tuple[tuple[T, ...], ...] = ()
        self._converted: list[tuple[R, ...]] = []
        self._joined: list[J] = []

    def map(self, items: Sequence[T]) -> list[J]:
        chunks = chunks_of(items)
        old, size = self._chunks, len(chunks)
        # Compared position by position in C: a turn's Python work is the changed chunks.
        changed = [
            *compress(range(size), map(is_not, chunks, old)),
            *range(min(len(old), size), size),
        ]
        gone = [*compress(range(len(old)), map(is_not, old, chunks)), *range(size, len(old))]
        moved = {id(old[index]): index for index in gone}
        replaced: dict[int, R] = {}  # the items of the chunks no longer where they were
        for index in gone:
            replaced.update(zip(map(id, old[index]), self._converted[index], strict=True))
        converted, joined = self._converted[:size], self._joined[:size]
        converted += [()] * (size - len(converted))
        joined += [None] * (size - len(joined))  # type: ignore[list-item]
        for index in changed:
            chunk = chunks[index]
            if id(chunk) in moved:
                was = moved[id(chunk)]
                converted[index], joined[index] = self._converted[was], self._joined[was]
                continue
            converted[index] = tuple(
                replaced[id(x)] if id(x) in replaced else self._convert(x) for x in chunk
            )
            joined[index] = self._join(converted[index])
        self._chunks, self._converted, self._joined = chunks, converted, joined
        return list(joined)
