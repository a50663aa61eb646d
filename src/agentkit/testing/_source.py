"""MemorySourceTests: the MemorySource contract as tests to subclass."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Mapping
from typing import Any

import pytest

from agentkit.kernel.ctx import Ctx, Scope
from agentkit.kernel.errors import UnsupportedOperation
from agentkit.state.memory._item import MemoryItem
from agentkit.testing._cases import (
    ACME,
    ACME_SALES,
    BAD_QUERY_ARGUMENTS,
    GLOBEX,
    WHERE_CASES,
    WHERE_QUERY,
    WHERE_RECORDS,
    names,
    refused_operator,
)

# Records the writable-source tests store: every one matches RECORD_QUERY, word for word,
# so a lexical source finds them as surely as a vector one.
RECORD_QUERY = "kit walrus record"
_RECORDS = {
    "alpha": "kit walrus record alpha: tusks grow all their life",
    "bravo": "kit walrus record bravo: a herd hauls out on the ice",
    "charlie": "kit walrus record charlie: whiskers find clams in the mud",
    "delta": "kit walrus record delta: calves stay two years with the mother",
    "echo": "kit walrus record echo: the skin turns pink in the sun",
}


@pytest.mark.asyncio
class MemorySourceTests:
    """The contract every MemorySource keeps, inherited by subclassing.

    Subclass it and provide one fixture, ``source``: a fresh MemorySource for each test
    (sync or async). A writable source starts EMPTY; a read-only one (``read_only``)
    starts holding records that ``query_example`` finds, at least two of them. Override
    the properties below to declare what the source cannot do: the tests that need it
    are skipped with the reason shown in pytest's summary (``-rs``).

    How the kit writes a record and recognises it again is two small hooks, ``item``
    and ``key_of``; the defaults use ``MemoryItem.id`` (stamped with the source's own
    name, as a recalled item would be). A source keyed otherwise (a file path, say)
    overrides both.

    Example:
        ```python
        import pytest
        from agentkit.testing import MemorySourceTests

        class TestWikiMemory(MemorySourceTests):
            @pytest.fixture
            def source(self):
                return WikiMemory(base_url=test_wiki_url)  # your source, empty
        ```
    """

    @pytest.fixture
    def source(self) -> Any:
        """A fresh source. Override this fixture in the subclass."""
        raise NotImplementedError(
            f"{type(self).__name__} must define a `source` fixture returning a MemorySource"
        )

    # --- capabilities: override to declare what the source cannot do ---

    @property
    def read_only(self) -> bool:
        """The source stores nothing written (``accepts_writes`` must then be False).
        The fixture hands out a source already holding what ``query_example`` finds."""
        return False

    @property
    def scoped(self) -> bool:
        """The source keeps tenants apart by ``ctx.scope``. ``False``: unscoped-only (wrap
        it in ScopedMemory, or build one per tenant); the tenancy tests are skipped."""
        return True

    @property
    def filters_metadata(self) -> bool:
        """``where`` follows agentkit's metadata rule and written metadata round-trips.
        ``False`` (a source with its own ``where`` keys): those checks are skipped."""
        return True

    @property
    def operators(self) -> bool:
        """``where`` operators (``$gt``, ``$or``, ...) are evaluated. ``False``: the source
        may refuse a filter it cannot express with ``UnsupportedOperation`` naming the
        operator (listed in one skip); it must never answer one wrongly."""
        return True

    @property
    def query_example(self) -> str:
        """A query the read-only fixture's source answers with at least two items."""
        return RECORD_QUERY

    # --- hooks: how the kit writes a record and finds it again ---

    def item(self, source: Any, key: str, content: str, metadata: Mapping[str, Any]) -> MemoryItem:
        """The MemoryItem that writes the record ``key``."""
        return MemoryItem(content, source.name, None, dict(metadata), id=key)

    def key_of(self, item: MemoryItem) -> str | None:
        """The record key a returned item carries (the inverse of ``item``)."""
        return item.id

    def source_name(self, source: Any) -> str:
        """The ``source`` every returned item must be stamped with."""
        return str(source.name)

    # --- helpers ---

    def _ctx(self, scope: Scope = ACME) -> Ctx:
        return Ctx(scope)

    def _need_writes(self) -> None:
        if self.read_only:
            pytest.skip(f"{type(self).__name__}.read_only is True: the source stores nothing")

    def _need_scopes(self) -> None:
        if not self.scoped:
            pytest.skip(f"{type(self).__name__}.scoped is False: the source is unscoped-only")

    async def _seed(self, source: Any, keys: list[str] | None = None, scope: Scope = ACME) -> str:
        """Write the kit's records (writable) and return the query that finds them."""
        if self.read_only:
            return self.query_example
        chosen = keys if keys is not None else list(_RECORDS)
        await source.write(
            [self.item(source, key, _RECORDS[key], {"kit": key}) for key in chosen],
            ctx=self._ctx(scope),
        )
        return RECORD_QUERY

    async def _keys(self, source: Any, query: str, scope: Scope = ACME, k: int = 50) -> list[Any]:
        return [self.key_of(i) for i in await source.query(query, k=k, ctx=self._ctx(scope))]

    # --- the contract ---

    async def test_items_have_the_memory_item_shape(self, source: Any) -> None:
        """A query answers a list of MemoryItem stamped with the source's name, with a
        str content, a finite float or None score, a mapping metadata, a str or None id."""
        query = await self._seed(source)
        items = await source.query(query, k=10, ctx=self._ctx())
        assert isinstance(items, list), f"query answered a {type(items).__name__}, not a list"
        assert len(items) >= 2, f"{query!r} found {len(items)} items; the kit needs two"
        for item in items:
            assert isinstance(item, MemoryItem), f"{item!r} is not a MemoryItem"
            assert item.source == self.source_name(source), (
                f"item stamped {item.source!r}, the source is named {self.source_name(source)!r}"
            )
            assert isinstance(item.content, str)
            assert item.score is None or type(item.score) is float
            assert isinstance(item.metadata, Mapping)
            assert item.id is None or isinstance(item.id, str)

    async def test_k_is_honoured(self, source: Any) -> None:
        """Never more than ``k`` items, exactly ``k`` when more match."""
        query = await self._seed(source)
        for k in (1, 2):
            items = await source.query(query, k=k, ctx=self._ctx())
            assert len(items) == k, f"k={k} answered {len(items)} items"
        if not self.read_only:
            everything = await self._keys(source, query, k=100)
            assert sorted(map(str, everything)) == sorted(_RECORDS), "k=100 lost records"

    async def test_bad_arguments_are_refused_by_name(self, source: Any) -> None:
        """Bad ``k``, ``query``, ``where`` or ``ctx`` are refused naming the argument: a
        wrong type with TypeError, ``k`` of 0 or below with ValueError (the table is
        ``BAD_QUERY_ARGUMENTS``); a bad write batch stores nothing."""
        query = await self._seed(source, ["alpha"])
        good: dict[str, Any] = {"query": query, "k": 2, "ctx": self._ctx()}
        for bad in BAD_QUERY_ARGUMENTS:
            call = {**good, **bad.overrides}
            with pytest.raises(bad.error) as caught:
                await source.query(call.pop("query"), **call)
            assert names(caught.value, bad.names), f"{bad.label}: {caught.value}"
        before = await self._keys(source, query)
        if self.read_only:
            return
        fresh = self.item(source, "bravo", _RECORDS["bravo"], {})
        for items, named in (([fresh, "not an item"], "items"), ("text", "items")):
            with pytest.raises((TypeError, ValueError)) as caught:
                await source.write(items, ctx=self._ctx())
            assert names(caught.value, named), str(caught.value)
        assert await self._keys(source, query) == before, "a refused batch stored something"

    async def test_ctx_is_required(self, source: Any) -> None:
        """No ``ctx`` (or not a Ctx) is refused naming ``ctx``, for a query and a write,
        and the refused write stores nothing."""
        query = await self._seed(source, ["alpha"])
        for ctx in (None, ACME):
            with pytest.raises(TypeError) as caught:
                await source.query(query, k=2, ctx=ctx)
            assert names(caught.value, "ctx"), str(caught.value)
        with pytest.raises(TypeError):
            await source.query(query, k=2)
        if self.read_only:
            return
        before = await self._keys(source, query)
        with pytest.raises(TypeError) as caught:
            await source.write([self.item(source, "bravo", _RECORDS["bravo"], {})], ctx=None)
        assert names(caught.value, "ctx"), str(caught.value)
        assert await self._keys(source, query) == before

    async def test_where_selects_exactly_what_the_rule_says(self, source: Any) -> None:
        """Every case of ``agentkit.testing.WHERE_CASES`` on the items' metadata. With
        ``operators = False`` a case may be refused naming its operator (one skip lists
        them); an answer, when given, must be exact."""
        self._need_writes()
        if not self.filters_metadata:
            pytest.skip(f"{type(self).__name__}.filters_metadata is False: own where keys")
        await source.write(
            [self.item(source, r.key, r.text, r.metadata) for r in WHERE_RECORDS],
            ctx=self._ctx(),
        )
        refused: list[str] = []
        for case in WHERE_CASES:
            try:
                items = await source.query(
                    WHERE_QUERY, k=len(WHERE_RECORDS) + 5, ctx=self._ctx(), where=dict(case.where)
                )
            except UnsupportedOperation as error:
                refused.append(refused_operator(error, case, allowed=not self.operators))
                continue
            got = {self.key_of(i) for i in items}
            assert got == set(case.expected), (
                f"where {case.name} {case.where}: {sorted(map(str, got))}"
            )
        if refused:
            pytest.skip(f"{type(self).__name__}.operators is False; refused: {'; '.join(refused)}")

    async def test_write_read_round_trip(self, source: Any) -> None:
        """What is written comes back (key, content and, with ``filters_metadata``,
        metadata), and a recalled item written back updates its record in place."""
        self._need_writes()
        meta = {"lang": "en", "page": 3, "draft": False, "weight": 0.5}
        await source.write(
            [
                self.item(source, "alpha", _RECORDS["alpha"], meta),
                self.item(source, "bravo", _RECORDS["bravo"], {}),
            ],
            ctx=self._ctx(),
        )
        items = await source.query(RECORD_QUERY, k=10, ctx=self._ctx())
        by_key = {self.key_of(i): i for i in items}
        assert set(by_key) == {"alpha", "bravo"}, f"wrote alpha and bravo, read {set(by_key)}"
        alpha = by_key["alpha"]
        assert alpha.content == _RECORDS["alpha"]
        if self.filters_metadata:
            assert {k: alpha.metadata.get(k) for k in meta} == meta
            assert type(alpha.metadata["page"]) is int and type(alpha.metadata["draft"]) is bool
        revised = "kit walrus record alpha, revised: tusks are teeth"
        await source.write([dataclasses.replace(alpha, content=revised)], ctx=self._ctx())
        again = await source.query(RECORD_QUERY, k=10, ctx=self._ctx())
        contents = [i.content for i in again if self.key_of(i) == "alpha"]
        assert contents == [revised], f"the write-back left {contents}"

    async def test_accepts_writes_is_honest(self, source: Any) -> None:
        """``accepts_writes`` (read as ``getattr(source, "accepts_writes", True)``) says
        whether a write is kept: a source that claims it keeps what it is given, and one
        that stores nothing says False."""
        claims = getattr(source, "accepts_writes", True)
        probe = self.item(source, "foxtrot", "kit walrus record foxtrot: a probe", {})
        if not self.read_only:
            assert claims is True, "accepts_writes is False on a writable source (read_only?)"
            await source.write([probe], ctx=self._ctx())
            assert "foxtrot" in await self._keys(source, RECORD_QUERY), (
                "accepts_writes is True, yet the written record is not found"
            )
            return
        assert claims is False, "a read-only source must say accepts_writes = False"
        before = await self._keys(source, self.query_example)
        with contextlib.suppress(Exception):  # refusing is as honest as dropping
            await source.write([probe], ctx=self._ctx())
        assert await self._keys(source, self.query_example) == before
        assert "foxtrot" not in await self._keys(source, "foxtrot probe")

    async def test_a_scope_is_never_crossed(self, source: Any) -> None:
        """One tenant's records never reach another's query, the same key in two scopes
        is two records, and another domain of the same organisation is another tenant."""
        self._need_scopes()
        self._need_writes()
        await self._seed(source, ["alpha", "bravo"], ACME)
        await source.write(
            [self.item(source, "alpha", "kit walrus record alpha, globex edition", {})],
            ctx=self._ctx(GLOBEX),
        )
        acme = await source.query(RECORD_QUERY, k=10, ctx=self._ctx(ACME))
        assert sorted(str(self.key_of(i)) for i in acme) == ["alpha", "bravo"]
        assert "globex" not in " ".join(i.content for i in acme)
        globex = await source.query(RECORD_QUERY, k=10, ctx=self._ctx(GLOBEX))
        assert [(self.key_of(i), i.content) for i in globex] == [
            ("alpha", "kit walrus record alpha, globex edition")
        ]
        assert await source.query(RECORD_QUERY, k=10, ctx=self._ctx(ACME_SALES)) == []

    async def test_cancellation_leaves_no_task_behind(self, source: Any) -> None:
        """A query cancelled mid-flight leaves no task running, and the source answers
        the next query as before (no lock or slot left held)."""
        query = await self._seed(source)
        expected = await self._keys(source, query, k=3)
        for ticks in (0, 1, 3):
            before = asyncio.all_tasks()
            task = asyncio.create_task(source.query(query, k=3, ctx=self._ctx()))
            for _ in range(ticks):
                await asyncio.sleep(0)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            for _ in range(5):  # let anything a cancelled call scheduled run out
                await asyncio.sleep(0)
            stray = [t for t in asyncio.all_tasks() - before if not t.done()]
            assert not stray, f"cancelling a query left {len(stray)} task(s) running: {stray}"
        assert await asyncio.wait_for(self._keys(source, query, k=3), timeout=10) == expected
