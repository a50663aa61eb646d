"""Finding the copies of one fact in a pooled answer, and stamping their survivor.

Kept apart from CompositeMemory because it is the composite's hot path: every query
passes every pooled item through here, so the code favours a few flat passes over
clarity-first helpers, and says why where it does.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from itertools import count
from typing import Literal

from agentkit.state.memory._frozen import FrozenDict
from agentkit.state.memory._item import MemoryItem, _evolve
from agentkit.state.memory._rerank import SourceRanks
from agentkit.state.memory._stamps import Provenance

DedupeMode = Literal["id", "content"]
"""How two pooled items are judged the same fact.

``"id"``: a shared non-None ``id`` OR identical content (a union, so a backend that
starts reporting ids keeps matching backends that have none). ``"content"``: identical
content only, for stores whose ids share no keyspace. ``None`` (the parameter's third
value) keeps every copy.
"""

_HEAD = 64  # characters of a passage hashed to find candidate copies


Groups = dict[int, list[MemoryItem]]
"""``{root index: [every copy, in pool order]}``, for groups of two or more."""


def group_copies(
    pool: list[MemoryItem], mode: DedupeMode | None
) -> tuple[list[int], Groups, list[int]] | None:
    """Union-find over the pool: (root per index, groups, non-root indices in order).

    None when nothing collides, the common case, which costs two dict builds.
    Sameness is transitive (A~B by content and B~C by id make one group) and applies
    within a source as well as across. Content is compared exactly, never by digest.
    A group's root is its earliest member.
    """
    n = len(pool)
    if mode is None or n < 2:
        return None
    backwards = range(n - 1, -1, -1)
    # Passages are keyed by their first characters: distinct passages nearly always
    # differ early, and hashing a short head instead of a whole fresh passage is most
    # of what this function would otherwise cost. A shared head is only a candidate;
    # the whole texts are compared below. Built back to front, so each key keeps the
    # index of its FIRST occurrence.
    heads = [item.content[:_HEAD] for item in pool]
    first_by_head = dict(zip(reversed(heads), backwards, strict=True))
    ids: list[str | None] = []
    by_id: dict[str | None, int] = {}
    id_collision = False
    if mode == "id":
        ids = [item.id for item in pool]
        by_id = dict(zip(reversed(ids), backwards, strict=True))
        n_none = ids.count(None)
        id_collision = len(by_id) - (1 if n_none else 0) < n - n_none
    if len(first_by_head) == n and not id_collision:
        return None

    # parent[i] <= i always: every link points to an earlier index. ``moved`` lists,
    # in index order, every i whose parent is not itself.
    parent = [first_by_head[h] for h in heads]
    moved = [i for i, up in zip(count(), parent) if up != i]
    clashes = {heads[i] for i in moved if pool[parent[i]].content != pool[i].content}
    if clashes:
        # Texts that share a head but differ later: settle those by the whole text.
        first_by_content: dict[str, int] = {}
        for i, head in enumerate(heads):
            if head in clashes:
                parent[i] = first_by_content.setdefault(pool[i].content, i)
        moved = [i for i, up in zip(count(), parent) if up != i]
    if id_collision:
        joined = False
        linked = [
            i for i, ident in zip(count(), ids) if ident is not None and by_id[ident] != i
        ]
        for i in linked:
            a = by_id[ids[i]]
            if parent[a] == parent[i]:
                continue  # already one group, usually through identical text
            while parent[a] != a:
                a = parent[a]
            b = i
            while parent[b] != b:
                b = parent[b]
            if a != b:
                if a > b:
                    a, b = b, a
                parent[b] = a
                moved.append(b)
                joined = True
        if joined:
            moved.sort()
        # Parents come first, so resolving in index order leaves every entry a root.
        for i in moved:
            parent[i] = parent[parent[i]]

    groups: Groups = {}
    for i in moved:
        root = parent[i]
        members = groups.get(root)
        if members is None:
            groups[root] = [pool[root], pool[i]]
        else:
            members.append(pool[i])
    return parent, groups, moved


def merge(
    pool: list[MemoryItem], mode: DedupeMode | None
) -> tuple[list[MemoryItem], list[int] | None, dict[int, MemoryItem]]:
    """Collapse copies; returns (merged, root per pool index, stamped survivors).

    Every survivor is stamped, for a reranker that may read the stamps. Items that
    never collided are the pool's own objects; a survivor sits where its group's
    earliest member was.
    """
    found = group_copies(pool, mode)
    if found is None:
        return pool, None, {}
    roots, groups, moved = found
    survivors = {root: _stamp(copies) for root, copies in groups.items()}
    return _place(pool, survivors, moved), roots, survivors


def merge_unstamped(
    pool: list[MemoryItem], mode: DedupeMode | None
) -> tuple[list[MemoryItem], dict[int, list[MemoryItem]]]:
    """Collapse copies, each group's best copy standing in for its survivor.

    For a reranker that reads only ``score`` and position: the stand-in has the
    survivor's score and place, so the order is the same, and only the groups that
    make the cut need stamping (:func:`stamp_survivors`), usually a few of many.
    Returns (merged, ``{id(stand-in): copies}``).
    """
    found = group_copies(pool, mode)
    if found is None:
        return pool, {}
    _roots, groups, moved = found
    standins: dict[int, MemoryItem] = {}
    pending: dict[int, list[MemoryItem]] = {}
    for root, copies in groups.items():
        best = standins[root] = _best(copies)
        pending[id(best)] = copies
    return _place(pool, standins, moved), pending


def stamp_survivors(
    ranked: list[MemoryItem], pending: dict[int, list[MemoryItem]]
) -> list[MemoryItem]:
    """Swap each stand-in in ``ranked`` for its stamped survivor."""
    if not pending:
        return ranked
    get = pending.get
    return [item if (copies := get(id(item))) is None else _stamp(copies) for item in ranked]


def _place(
    pool: list[MemoryItem], survivors: dict[int, MemoryItem], moved: list[int]
) -> list[MemoryItem]:
    slots: list[MemoryItem | None] = list(pool)
    for root, survivor in survivors.items():
        slots[root] = survivor
    for i in moved:
        slots[i] = None
    return [item for item in slots if item is not None]


def _best(copies: list[MemoryItem]) -> MemoryItem:
    """The best-scored copy: None scores lowest, ties to the earliest."""
    best = copies[0]
    best_score = best.score
    for copy in copies:
        score = copy.score
        if score is not None and (best_score is None or score > best_score):
            best, best_score = copy, score
    return best


def _stamp(copies: list[MemoryItem]) -> MemoryItem:
    """The best copy, annotated with ``dedupe_sources`` and ``dedupe_count``.

    Both are computed from the copies this merge saw. A copy that is itself the
    survivor of a merge in this query (a nested composite) brings that merge's
    copies along, so nested composites count every original copy once; stamps that
    came back from a store or were written by hand are ignored (see ``_stamps``).
    """
    best = _best(copies)
    text = best.content
    names: list[str] = []  # groups are small: a list beats a dict here
    total = 0
    rows: set[tuple[str, str]] = set()
    for copy in copies:
        meta = copy.metadata
        stamped = meta.get("dedupe_sources") if meta else None
        # Only a copy holding the survivor's very text is a row of this fact: a
        # shared id alone (dedupe="id") may be two backends' unrelated keys.
        same = copy.content == text
        if type(stamped) is Provenance:
            for name in stamped:
                if name not in names:
                    names.append(name)
            total += stamped.copies
            if same:
                rows |= stamped.rows
        else:
            total += 1
        name = copy.source
        if name not in names:
            names.append(name)
        if same and copy.id is not None:
            rows.add((name, copy.id))
    sources = Provenance(names, total, frozenset(rows))
    meta = best.metadata
    if meta:
        metadata = FrozenDict(meta, dedupe_sources=sources, dedupe_count=total)
    else:
        metadata = FrozenDict(dedupe_sources=sources, dedupe_count=total)
    return _evolve(best, best.score, metadata)


def rank_thunk(
    batches: list[list[MemoryItem]],
    pool: list[MemoryItem],
    roots: list[int] | None,
    survivors: dict[int, MemoryItem],
) -> Callable[[], SourceRanks]:
    """Per-source ranks of every merged item, built only if a reranker asks."""

    @cache
    def build() -> SourceRanks:
        table: dict[int, dict[str, int]] = {}
        position = 0
        for batch in batches:
            for rank, item in enumerate(batch, 1):
                if roots is None:
                    target = item
                else:
                    root = roots[position]
                    target = survivors.get(root, pool[root])
                position += 1
                key = id(target)
                ranks = table.get(key)
                if ranks is None:
                    ranks = table[key] = {}
                meta = item.metadata
                stamped = meta.get("dedupe_sources") if meta else None
                if type(stamped) is Provenance:  # a nested merge's survivor
                    for src in stamped:
                        if rank < ranks.get(src, rank + 1):
                            ranks[src] = rank
                src = item.source
                if rank < ranks.get(src, rank + 1):
                    ranks[src] = rank
        return table

    return build
