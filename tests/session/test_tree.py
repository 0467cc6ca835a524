from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lathe.session.entries import LabelEntry
from lathe.session.tree import EntryTree


def _walked(tree: EntryTree, leaf: str | None) -> list[str]:
    path = []
    while leaf is not None:
        path.append(leaf)
        leaf = tree.by_id[leaf].parent
    return path[::-1]


@given(st.lists(st.one_of(st.none(), st.integers(0, 30)), max_size=30))
def test_a_branch_is_the_path_of_parent_links_whether_or_not_the_tree_is_a_chain(
    parents: list[int | None],
) -> None:
    """Each entry's parent is the entry before it (None drawn), or the root or any
    earlier entry (a number drawn), so the tree may stay one chain or branch anywhere."""
    tree = EntryTree()
    for n, choice in enumerate(parents):
        ids = [entry.id for entry in tree.entries]
        if choice is None:
            parent = ids[-1] if ids else None
        else:
            parent = ids[choice % (n + 1) - 1] if choice % (n + 1) else None
        tree.add(LabelEntry(id=f"e{n}", parent=parent, text=str(n)))
        assert [entry.id for entry in tree.branch(f"e{n}")] == _walked(tree, f"e{n}")
    for entry in tree.entries:
        assert [e.id for e in tree.branch(entry.id)] == _walked(tree, entry.id)
    assert tree.branch(None) == []
