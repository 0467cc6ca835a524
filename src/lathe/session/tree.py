"""The entries of one session in file order, indexed by id: the one copy of them that
the loader builds line by line and a `Session` then appends to."""

from __future__ import annotations

from collections.abc import Iterable

from lathe.session.entries import Entry


class EntryTree:
    """`entries` in file order (every branch), `by_id` to find one, and `chain`: whether
    each entry's parent is the entry before it (the first has none), as in a session
    that never branched. Then the branch to the last entry is `entries` itself, taken
    without walking the parent links."""

    def __init__(self, entries: Iterable[Entry] = ()) -> None:
        self.entries: list[Entry] = []
        self.by_id: dict[str, Entry] = {}
        self.chain = True
        for entry in entries:
            self.add(entry)

    def extend_chain(self, entries: list[Entry]) -> bool:
        """Append `entries` in one go when they continue the chain: each the child of the
        entry before it (the first, of the last entry here), every id non-empty and new.
        False, with nothing appended, when they do not: the caller then adds them one by
        one. A session that never branched loads this way, a block of lines at a time."""
        if not entries:
            return True
        ids = [entry.id for entry in entries]
        parents = [entry.parent for entry in entries]
        if parents[0] != (self.entries[-1].id if self.entries else None) or parents[1:] != ids[:-1]:
            return False
        added = dict(zip(ids, entries, strict=True))
        if len(added) != len(ids) or "" in added or not self.by_id.keys().isdisjoint(added):
            return False
        self.entries.extend(entries)
        self.by_id.update(added)
        return True

    def add(self, entry: Entry) -> None:
        """Append `entry`, whose id the caller made sure is new."""
        if self.chain and entry.parent != (self.entries[-1].id if self.entries else None):
            self.chain = False
        self.entries.append(entry)
        self.by_id[entry.id] = entry

    def branch(self, leaf: str | None) -> list[Entry]:
        """The entries from the root to `leaf` (an id of this tree), in order."""
        if self.chain and self.entries and leaf == self.entries[-1].id:
            return list(self.entries)
        path: list[Entry] = []
        while leaf is not None:
            entry = self.by_id[leaf]
            path.append(entry)
            leaf = entry.parent
        path.reverse()
        return path
