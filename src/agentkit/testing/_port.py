"""VectorPortTests: the VectorPort (and ForgettingPort) contract as tests to subclass."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from agentkit.kernel.ctx import Scope
from agentkit.kernel.errors import UnsupportedOperation
from agentkit.testing._cases import (
    ACME,
    ACME_SALES,
    BAD_QUERY_ARGUMENTS,
    GLOBEX,
    ODD_DELETED,
    ODD_REWRITTEN,
    ODD_SCOPES,
    UNSCOPED,
    WHERE_CASES,
    WHERE_QUERY,
    WHERE_RECORDS,
    WhereCase,
    assert_scores,
    enough,
    names,
    refused_operator,
)
from agentkit.vector.port import Chunk

Hits = list[tuple[float, Chunk]]


def _ids(hits: Hits) -> list[str]:
    return [chunk.id for _, chunk in hits]


def _crowd_text(query: str, tenant: int, i: int) -> str:
    # The query plus one word of its own: close to the query, yet no two vectors equal
    # (hundreds of identical vectors break an HNSW graph, which would test the store).
    return f"{query} entry{tenant}x{i}"


@pytest.mark.asyncio
class VectorPortTests:
    """The contract every VectorPort keeps, inherited by subclassing.

    Subclass it in a test module and provide one fixture, ``port``: a fresh, EMPTY
    port for each test (sync or async; clean up after the ``yield``). Every test then
    runs against it. Capabilities your store lacks are declared by overriding the
    properties below, and the tests that need them are skipped with the reason shown
    in pytest's summary (``-rs``) rather than silently passed.

    The port embeds, so rankings here rely only on what any embedder gives: a query
    equal to a record's text finds that record first. ``agentkit.vector.HashingEmbedder``
    is a good choice for a test port (no model, deterministic).

    Example:
        ```python
        import pytest
        from agentkit.testing import VectorPortTests
        from agentkit.vector import HashingEmbedder

        class TestMyStore(VectorPortTests):
            @pytest.fixture
            async def port(self):
                store = MyStore(embedder=HashingEmbedder(dim=64))  # your store, empty
                yield store
                await store.close()
        ```
    """

    @pytest.fixture
    def port(self) -> Any:
        """A fresh, empty port. Override this fixture in the subclass."""
        raise NotImplementedError(
            f"{type(self).__name__} must define a `port` fixture returning an empty VectorPort"
        )

    # --- capabilities: override to declare what the store cannot do ---

    @property
    def scoped(self) -> bool:
        """The store keeps tenants apart (``Scope`` buckets). ``False``: unscoped-only;
        the tenancy tests are skipped and scoped use must be refused before writing."""
        return True

    @property
    def deletes(self) -> bool:
        """The store can remove a record. ``False``: the delete tests are skipped, and a
        write that must replace a record may instead be refused, leaving the store as it
        was (never a second copy)."""
        return True

    @property
    def forgets(self) -> bool:
        """The port is a ``ForgettingPort`` (``delete_where``, ``delete_scope``, ``scan``).
        ``False``: those tests are skipped."""
        return True

    @property
    def operators(self) -> bool:
        """The store evaluates every operator of the ``where`` language. ``False``: it may
        refuse a filter it cannot express with ``UnsupportedOperation`` naming the
        operator (listed in one skip); it must never answer one wrongly."""
        return True

    @property
    def refuses_nul(self) -> bool:
        """The backend cannot hold NUL characters in text (PostgreSQL): a scope id holding
        one must be refused with a ValueError before anything is written, not mangled."""
        return False

    @property
    def recall(self) -> float:
        """The share of matching records a search is promised to return (1.0: exact).
        An approximate store states its recall; result sizes are then checked against it."""
        return 1.0

    # --- helpers ---

    @property
    def home(self) -> Scope:
        """The scope single-tenant tests write in: a tenant's, unless unscoped-only."""
        return ACME if self.scoped else UNSCOPED

    def _need_scopes(self) -> None:
        if not self.scoped:
            pytest.skip(f"{type(self).__name__}.scoped is False: the store is unscoped-only")

    def _need_deletes(self) -> None:
        if not self.deletes:
            pytest.skip(f"{type(self).__name__}.deletes is False: the store cannot delete")

    def _need_forgetting(self, port: Any) -> None:
        if not self.forgets:
            pytest.skip(
                f"{type(self).__name__}.forgets is False: no delete_where/delete_scope/scan"
            )
        missing = [m for m in ("delete_where", "delete_scope", "scan") if not hasattr(port, m)]
        assert not missing, (
            f"{type(port).__name__} has no {', '.join(missing)}; declare forgets = False"
        )

    def _refused(self, scope: Scope, chunk_id: str) -> bool:
        """An id the backend may refuse (``refuses_nul``) rather than store."""
        return self.refuses_nul and "\x00" in f"{scope.org_id}{scope.domain_id}{chunk_id}"

    async def _replacing(self, port: Any, action: Callable[[], Awaitable[Any]]) -> bool:
        """Run a write that replaces or removes a record; True when it ran.

        On a store that cannot delete, the port may refuse instead, with the store as
        it was; anything else (a silent second copy) fails the test that follows.
        """
        if self.deletes:
            await action()
            return True
        before = await self._everything(port, self.home)
        try:
            await action()
        except Exception:
            after = await self._everything(port, self.home)
            assert after == before, "a refused write changed the store"
            return False
        return True

    async def _everything(self, port: Any, scope: Scope, query: str = "record") -> Hits:
        """Every record of ``scope`` by search (k large), in a comparable order."""
        hits: Hits = await port.search(query, k=10_000, scope=scope)
        return sorted(hits, key=lambda hit: hit[1].id)

    async def _visible(self, port: Any, scope: Scope, query: str) -> set[str]:
        """Ids every index still shows: search, and word search on a LexicalPort."""
        found = set(_ids(await port.search(query, k=1000, scope=scope)))
        if callable(getattr(port, "lexical_search", None)):
            words = set(_ids(await port.lexical_search(query, k=1000, scope=scope)))
            assert words == found, f"word search shows {sorted(words)}, search {sorted(found)}"
        return found

    async def _texts(self, port: Any, scope: Scope, query: str) -> list[tuple[str, str]]:
        return sorted((c.id, c.text) for _, c in await port.search(query, k=1000, scope=scope))

    def _matched(self, found: set[str], expected: set[str], what: str) -> None:
        strays = found - expected
        assert not strays, f"{what}: returned {sorted(strays)}, which it must not"
        assert enough(len(found), len(expected), self.recall), (
            f"{what}: found {len(found)} of {len(expected)} ({sorted(expected - found)} "
            f"missing) at a stated recall of {self.recall}"
        )

    # --- the contract ---

    async def test_an_empty_port_finds_nothing(self, port: Any) -> None:
        """A fresh port is empty; an unknown id deletes nothing. (Fails: the fixture
        did not hand out a fresh store, or a previous test's cleanup did not run.)"""
        scopes = [self.home, *([UNSCOPED, GLOBEX] if self.scoped else [])]
        for scope in scopes:
            assert await port.search("anything at all", k=3, scope=scope) == []
            if self.deletes:
                assert await port.delete(["never-written"], scope=scope) in (0, None)
            if self.forgets:
                assert await port.scan(scope=scope) == []

    async def test_round_trip_keeps_id_text_and_metadata(self, port: Any) -> None:
        """What is upserted comes back as written: id, text, metadata and value types."""
        meta = {
            "source": "guide/refunds.md",
            "page": 3,
            "lang": "en",
            "draft": False,
            "weight": 0.5,
        }
        await port.upsert(
            [
                Chunk("refunds", "refunds take five business days", meta),
                Chunk("shipping", "shipping to norway takes two weeks", {"page": 1}),
                Chunk("password", "reset a password from the account page"),
            ],
            scope=self.home,
        )
        hits = await port.search("refunds take five business days", k=3, scope=self.home)
        assert sorted(_ids(hits)) == ["password", "refunds", "shipping"]
        top = hits[0][1]
        assert top.id == "refunds", f"the exact text ranked {_ids(hits)}"
        assert top.text == "refunds take five business days"
        assert dict(top.metadata) == meta
        assert type(top.metadata["page"]) is int and type(top.metadata["draft"]) is bool
        assert type(top.metadata["weight"]) is float
        by_id = {c.id: c for _, c in hits}
        assert dict(by_id["shipping"].metadata) == {"page": 1}
        assert dict(by_id["password"].metadata) == {}

    async def test_caller_mutation_never_reaches_the_store(self, port: Any) -> None:
        """The store keeps a copy of the metadata, not the caller's dict."""
        meta: dict[str, Any] = {"lang": "en"}
        await port.upsert([Chunk("1", "hello world", meta)], scope=self.home)
        meta["lang"] = "fr"
        [(_, got)] = await port.search("hello world", k=1, scope=self.home)
        assert dict(got.metadata) == {"lang": "en"}

    async def test_scores_are_floats_best_first(self, port: Any) -> None:
        """Scores are relevance (higher is better), plain finite floats, best first, and
        the record whose text is the query outscores the others."""
        texts = [
            "apples and pears grow on trees",
            "cars and trucks drive on roads",
            "pears are sweeter than apples",
            "the night bus leaves at midnight",
        ]
        await port.upsert([Chunk(f"r{i}", t) for i, t in enumerate(texts)], scope=self.home)
        hits = await port.search("pears are sweeter than apples", k=4, scope=self.home)
        assert_scores([s for s, _ in hits])
        assert _ids(hits)[0] == "r2"
        assert hits[0][0] > hits[1][0], "the exact match must score above the others"

    async def test_k_is_honoured(self, port: Any) -> None:
        """At most ``k`` results, exactly ``k`` when the bucket holds more; a ``k`` larger
        than the bucket returns everything."""
        await port.upsert(
            [Chunk(f"k{i}", f"walrus record number {i}") for i in range(6)], scope=self.home
        )
        for k in (1, 2, 5):
            hits = await port.search("walrus record", k=k, scope=self.home)
            assert len(hits) <= k, f"k={k} returned {len(hits)} results"
            assert enough(len(hits), k, self.recall), f"k={k} returned only {len(hits)}"
        everything = await port.search("walrus record", k=1000, scope=self.home)
        self._matched(set(_ids(everything)), {f"k{i}" for i in range(6)}, "k=1000")
        assert len(everything) == len(set(_ids(everything))), "one record came back twice"

    async def test_upsert_replaces_by_id(self, port: Any) -> None:
        """Upserting a known id replaces the record (text and metadata), never adds a copy;
        an id repeated within one batch keeps its last copy."""
        await port.upsert([Chunk("c1", "old text about apples", {"v": 1})], scope=self.home)
        await port.upsert(
            [Chunk("c2", "a first draft", {"v": 1}), Chunk("c2", "an unrelated record")],
            scope=self.home,
        )

        async def overwrite() -> None:
            await port.upsert([Chunk("c1", "new text about pears", {"v": 2})], scope=self.home)

        if not await self._replacing(port, overwrite):
            return
        for query in ("new text about pears", "old text about apples"):
            hits = await port.search(query, k=5, scope=self.home)
            got = [(c.id, c.text, dict(c.metadata)) for _, c in hits if c.id == "c1"]
            assert got == [("c1", "new text about pears", {"v": 2})], (
                f"searching {query!r} found {got}"
            )
        everything = await self._everything(port, self.home, "text record")
        assert [(c.id, c.text, dict(c.metadata)) for _, c in everything] == [
            ("c1", "new text about pears", {"v": 2}),
            ("c2", "an unrelated record", {}),
        ], "a repeated id in one batch: the last copy must win, alone"

    async def test_search_by_vector_ranks_as_search_does(self, port: Any) -> None:
        """``search_by_vector`` (optional; it needs ``port.embedder``) ranks a vector the
        way ``search`` ranks the same text, scaled or not, inside the scope only."""
        by_vector = getattr(port, "search_by_vector", None)
        embedder = getattr(port, "embedder", None)
        if by_vector is None or embedder is None:
            pytest.skip(f"{type(port).__name__} has no search_by_vector/embedder (optional)")
        texts = [
            "apples and pears grow on trees",
            "cars and trucks drive on roads",
            "pears are sweeter than apples",
        ]
        await port.upsert(
            [Chunk(f"v{i}", t, {"n": i}) for i, t in enumerate(texts)], scope=self.home
        )
        vector = (await embedder.embed(["sweet pears"]))[0]
        by_text = await port.search("sweet pears", k=3, scope=self.home)
        hits = await by_vector(vector * 5.0, k=3, scope=self.home)
        assert _ids(hits) == _ids(by_text)
        assert [s for s, _ in hits] == pytest.approx([s for s, _ in by_text], abs=1e-5)
        filtered = await by_vector(vector, k=3, scope=self.home, where={"n": 1})
        assert _ids(filtered) == ["v1"]
        if self.scoped:
            assert await by_vector(vector, k=3, scope=GLOBEX) == []

    async def test_where_selects_exactly_what_the_rule_says(self, port: Any) -> None:
        """Every case of ``agentkit.testing.WHERE_CASES``, checked by search (and by scan
        on a ForgettingPort), including a rare match that many others outrank. With
        ``operators = False`` a case may be refused naming its operator (one skip lists
        them); an answer, when given, must be exact."""
        await port.upsert(
            [Chunk(r.key, r.text, r.metadata) for r in WHERE_RECORDS], scope=self.home
        )
        refused: list[str] = []
        for case in WHERE_CASES:
            try:
                await self._check_where(port, case)
            except UnsupportedOperation as error:
                refused.append(refused_operator(error, case, allowed=not self.operators))
        if refused:
            pytest.skip(f"{type(self).__name__}.operators is False; refused: {'; '.join(refused)}")

    async def _check_where(self, port: Any, case: WhereCase) -> None:
        hits = await port.search(
            WHERE_QUERY, k=len(WHERE_RECORDS) + 5, scope=self.home, where=case.where
        )
        assert_scores([s for s, _ in hits])
        self._matched(set(_ids(hits)), set(case.expected), f"where {case.name} {case.where}")
        if len(case.expected) == 1:  # the rare record with k=1
            top = await port.search(WHERE_QUERY, k=1, scope=self.home, where=case.where)
            self._matched(set(_ids(top)), set(case.expected), f"k=1, {case.name}")
        if self.forgets and hasattr(port, "scan"):
            listed = await port.scan(scope=self.home, where=case.where)
            assert {c.id for c in listed} == set(case.expected), f"scan, {case.name}"

    async def test_bad_arguments_are_refused_by_name_before_anything_changes(
        self, port: Any
    ) -> None:
        """Bad ``k``/``query``/``where``/``scope``/``chunks``/``ids`` are refused naming the
        argument (a wrong type with TypeError, ``k`` of 0 or below with ValueError), and
        what was stored stays as it was."""
        await port.upsert([Chunk("kept", "a record that must survive")], scope=self.home)
        before = await self._everything(port, self.home)
        good: dict[str, Any] = {"query": "record", "k": 2, "scope": self.home}
        for bad in BAD_QUERY_ARGUMENTS:
            call = {**good, **bad.overrides}
            with pytest.raises(bad.error) as caught:
                await port.search(call.pop("query"), **call)
            assert names(caught.value, bad.names), f"{bad.label}: {caught.value}"
        with pytest.raises(TypeError) as caught:
            await port.search("record", k=2, scope=("acme", "support"))
        assert names(caught.value, "scope"), str(caught.value)
        bad_upserts: list[tuple[Any, Any, str]] = [
            ("not chunks", self.home, "chunks"),
            ([Chunk("new", "fresh row"), {"id": "2", "text": "a dict"}], self.home, "chunks"),
            ([Chunk("new", "fresh row")], None, "scope"),
            ([Chunk("new", "fresh row"), Chunk("bad", "lone \ud800 surrogate")], self.home, "bad"),
        ]
        for chunks, scope, named in bad_upserts:
            with pytest.raises((TypeError, ValueError)) as caught:
                await port.upsert(chunks, scope=scope)
            assert named in str(caught.value), f"upsert error does not name {named!r}: " + str(
                caught.value
            )
        if self.deletes:
            for ids in ("kept", [1]):
                with pytest.raises(TypeError) as caught:
                    await port.delete(ids, scope=self.home)
                assert "ids" in str(caught.value), str(caught.value)
        assert await self._everything(port, self.home) == before, "a refused call changed data"

    async def test_delete_counts_exactly_and_keeps_the_rest(self, port: Any) -> None:
        """``delete`` removes exactly the named ids (repeats and unknown ids count once
        and not at all), returns that count (or None if the port cannot tell), and an
        empty list deletes nothing. A deleted record is gone from every index."""
        self._need_deletes()
        await port.upsert(
            [Chunk(i, f"delete case record {i}") for i in ("a", "b", "c", "d")], scope=self.home
        )
        await self._visible(port, self.home, "delete case record")  # warm any cache first
        assert await port.delete([], scope=self.home) in (0, None)
        assert await port.delete(["a", "a", "never-written", "c"], scope=self.home) in (2, None)
        assert await port.delete(["a"], scope=self.home) in (0, None)
        left = await self._visible(port, self.home, "delete case record")
        assert left == {"b", "d"}, "a deleted record came back, or a kept one went"
        if self.scoped:
            await port.upsert([Chunk("b", "globex delete case record b")], scope=GLOBEX)
            assert await port.delete(["b"], scope=GLOBEX) in (1, None)
            assert await self._visible(port, self.home, "delete case record") == {"b", "d"}

    async def test_delete_where_counts_exactly_in_one_scope(self, port: Any) -> None:
        """``delete_where`` removes the scope's records the filter matches (search's rule:
        any-of lists, True is not 1, absence never matches), returns how many, refuses an
        empty filter, and leaves other scopes alone."""
        self._need_forgetting(port)
        self._need_deletes()
        corpus = [
            Chunk(f"c{i}", f"walrus note {i} about tusks", {"doc": f"d{i % 3}", "i": i})
            for i in range(9)
        ]
        corpus += [
            Chunk("flag", "walrus note flag about tusks", {"doc": True}),
            Chunk("one", "walrus note one about tusks", {"doc": 1}),
            Chunk("bare", "walrus note bare about tusks"),
        ]
        scopes = [self.home, *([GLOBEX, UNSCOPED] if self.scoped else [])]
        for scope in scopes:
            await port.upsert(corpus, scope=scope)
        await self._visible(port, self.home, "walrus tusks")  # warm any cache first
        assert await port.delete_where({"doc": ["d1", 1]}, scope=self.home) == 4
        assert await port.delete_where({"doc": "d1"}, scope=self.home) == 0
        assert await port.delete_where({"doc": ["d2", "d0"], "i": [5, 8]}, scope=self.home) == 2
        left = await self._visible(port, self.home, "walrus tusks")
        assert left == {"c0", "c2", "c3", "c6", "flag", "bare"}
        empty: tuple[dict[str, Any] | None, ...] = ({}, None)
        for where in empty:
            with pytest.raises((TypeError, ValueError)) as caught:
                await port.delete_where(where, scope=self.home)
            assert names(caught.value, "where") or "delete_scope" in str(caught.value)
        for other in scopes[1:]:
            kept = await self._visible(port, other, "walrus tusks")
            assert len(kept) == len(corpus), f"delete_where in {self.home} reached {other}"

    async def test_delete_scope_counts_exactly_and_only_that_scope(self, port: Any) -> None:
        """``delete_scope`` empties one bucket and returns how many records went."""
        self._need_forgetting(port)
        self._need_deletes()
        corpus = [Chunk(f"c{i}", f"walrus note {i} about tusks") for i in range(7)]
        scopes = [self.home, *([GLOBEX, ACME_SALES, UNSCOPED] if self.scoped else [])]
        for scope in scopes:
            await port.upsert(corpus, scope=scope)
        await self._visible(port, self.home, "walrus tusks")  # warm any cache first
        assert await port.delete_scope(scope=self.home) == 7
        assert await self._visible(port, self.home, "walrus tusks") == set()
        assert await port.scan(scope=self.home) == []
        assert await port.delete_scope(scope=self.home) == 0
        assert await port.delete_scope(scope=Scope("nobody", "here")) == 0
        for other in scopes[1:]:
            assert len(await self._visible(port, other, "walrus tusks")) == 7, other

    async def test_scan_pages_through_everything_once(self, port: Any) -> None:
        """``scan`` lists the scope's records in ascending id order (Python's str order,
        non-ASCII ids included), page by page after the previous page's last id: every
        record exactly once, nothing of another scope; bad paging arguments are refused."""
        self._need_forgetting(port)
        chunks = [Chunk(f"s{i:02d}", f"scan record {i}", {"n": i % 4}) for i in range(20)]
        chunks += [
            Chunk(cid, f"scan record {cid}", {"n": n})
            for n, cid in enumerate(["Z", "é1", "日本", "\U0001f40b"])
        ]
        chunks.sort(key=lambda c: c.id)
        await port.upsert(list(reversed(chunks)), scope=self.home)
        if self.scoped:
            await port.upsert([Chunk("s05", "globex's own record")], scope=GLOBEX)
        seen: list[Chunk] = []
        after: str | None = None
        for _ in range(10):
            page = await port.scan(scope=self.home, after=after, limit=5)
            assert len(page) <= 5
            if not page:
                break
            seen.extend(page)
            after = page[-1].id
        assert [c.id for c in seen] == [c.id for c in chunks], "pages skipped or repeated ids"
        assert [(c.text, dict(c.metadata)) for c in seen] == [
            (c.text, dict(c.metadata)) for c in chunks
        ]
        odd = [c.id for c in chunks if c.metadata["n"] in (1, 3)]
        assert [c.id for c in await port.scan(scope=self.home, where={"n": [1, 3]})] == odd
        paged = await port.scan(scope=self.home, where={"n": [1, 3]}, after=odd[1], limit=2)
        assert [c.id for c in paged] == odd[2:4]
        assert await port.scan(scope=self.home, after=chunks[-1].id) == []
        if self.scoped:
            assert [c.text for c in await port.scan(scope=GLOBEX)] == ["globex's own record"]
            assert await port.scan(scope=ACME_SALES) == []
        bad: list[tuple[dict[str, Any], str]] = [
            ({"limit": 0}, "limit"),
            ({"limit": True}, "limit"),
            ({"after": 5}, "after"),
        ]
        for kwargs, named in bad:
            with pytest.raises((TypeError, ValueError)) as caught:
                await port.scan(scope=self.home, **kwargs)
            assert names(caught.value, named), str(caught.value)

    async def test_two_scopes_with_one_id_never_touch(self, port: Any) -> None:
        """Each scope is its own bucket: the same id in two scopes is two records, and
        writes or deletes in one are invisible to the others (half a scope included)."""
        self._need_scopes()
        await port.upsert([Chunk("1", "acme refund rules")], scope=ACME)
        await port.upsert([Chunk("1", "globex refund rules")], scope=GLOBEX)
        assert await self._texts(port, ACME, "refund rules") == [("1", "acme refund rules")]
        assert await self._texts(port, GLOBEX, "refund rules") == [("1", "globex refund rules")]
        for scope in (ACME, GLOBEX):  # word search, where the port has one, agrees
            assert await self._visible(port, scope, "refund rules") == {"1"}
        for other in (UNSCOPED, Scope("acme"), Scope(None, "support"), ACME_SALES):
            assert await self._visible(port, other, "refund rules") == set(), other
        await port.upsert([Chunk("1", "acme refund rules, second edition")], scope=ACME)
        assert await self._texts(port, GLOBEX, "refund rules") == [("1", "globex refund rules")]
        if self.deletes:
            await port.delete(["1"], scope=ACME)
            assert await port.search("refund rules", k=5, scope=ACME) == []
            assert await self._texts(port, GLOBEX, "refund rules") == [("1", "globex refund rules")]

    async def test_unset_scope_ids_are_one_bucket(self, port: Any) -> None:
        """``Scope("", "")`` and ``Scope()`` are the same, unset, bucket."""
        await port.upsert([Chunk("u", "the shared bucket record")], scope=Scope("", ""))
        assert _ids(await port.search("shared bucket", k=3, scope=UNSCOPED)) == ["u"]

    async def test_odd_scope_ids_never_collide(self, port: Any) -> None:
        """Separators, NUL, quotes, ``%``/``_``/``*``, case and NFC/NFD spellings in scope
        or record ids never make two records meet, through writes and deletes."""
        self._need_scopes()
        texts: list[str | None] = [f"odd scope record number{n}" for n in range(len(ODD_SCOPES))]
        for n, (scope, chunk_id) in enumerate(ODD_SCOPES):
            if self._refused(scope, chunk_id):
                with pytest.raises(ValueError, match="NUL"):
                    await port.upsert([Chunk(chunk_id, texts[n] or "")], scope=scope)
                texts[n] = None
                continue
            await port.upsert([Chunk(chunk_id, texts[n] or "")], scope=scope)

        async def check_every_scope() -> None:
            for scope in dict.fromkeys(s for s, _ in ODD_SCOPES):
                if self._refused(scope, ""):
                    with pytest.raises(ValueError, match="NUL"):
                        await port.search("odd scope record", k=5, scope=scope)
                    continue
                want = sorted(
                    (chunk_id, text)
                    for (s, chunk_id), text in zip(ODD_SCOPES, texts, strict=True)
                    if s == scope and text is not None
                )
                got = await self._texts(port, scope, "odd scope record")
                assert got == want, f"scope {scope!r}"

        await check_every_scope()
        for n in ODD_REWRITTEN:
            scope, chunk_id = ODD_SCOPES[n]
            if texts[n] is None:
                continue  # refused above
            texts[n] = f"odd scope record rewritten{n}"
            await port.upsert([Chunk(chunk_id, texts[n] or "")], scope=scope)
        if self.deletes:
            for n in ODD_DELETED:
                scope, chunk_id = ODD_SCOPES[n]
                if texts[n] is None:
                    continue  # refused above
                texts[n] = None
                await port.delete([chunk_id], scope=scope)
        await check_every_scope()

    async def test_a_tenant_among_many_others_gets_its_k(self, port: Any) -> None:
        """Other tenants' records that outrank this tenant's never crowd them out."""
        self._need_scopes()
        query = "quarterly revenue report"
        for t in range(4):
            await port.upsert(
                [Chunk(f"r{i}", _crowd_text(query, t, i)) for i in range(50)],
                scope=Scope(f"other-{t}", "finance"),
            )
        mine = Scope("mine", "finance")
        await port.upsert(
            [
                Chunk("m1", "revenue notes for the first quarter", {"kind": "notes"}),
                Chunk("m2", "revenue figures, second quarter", {"kind": "figures"}),
                Chunk("m3", "quarterly revenue summary draft", {"kind": "notes"}),
            ],
            scope=mine,
        )
        hits = await port.search(query, k=3, scope=mine)
        assert_scores([s for s, _ in hits])
        self._matched(set(_ids(hits)), {"m1", "m2", "m3"}, "k=3 among 200 others")
        notes = await port.search(query, k=5, scope=mine, where={"kind": "notes"})
        self._matched(set(_ids(notes)), {"m1", "m3"}, "where among 200 others")

    async def test_unscoped_only_refuses_scoped_use_before_writing(self, port: Any) -> None:
        """A store that cannot keep tenants apart refuses a scoped write or search with an
        error, before anything is written, and keeps serving unscoped use."""
        if self.scoped:
            pytest.skip(f"{type(self).__name__}.scoped is True: scoped use is supported")
        await port.upsert([Chunk("shared", "shared onboarding notes")], scope=UNSCOPED)
        with pytest.raises(Exception) as caught:
            await port.upsert([Chunk("1", "acme onboarding notes")], scope=ACME)
        assert not isinstance(caught.value, AssertionError)
        with pytest.raises(Exception):  # noqa: B017
            await port.search("onboarding notes", k=3, scope=ACME)
        hits = await port.search("onboarding notes", k=3, scope=UNSCOPED)
        assert [(c.id, c.text) for _, c in hits] == [("shared", "shared onboarding notes")]

    async def test_concurrent_writers_lose_nothing(self, port: Any) -> None:
        """Upserts racing each other (one scope and several) all land."""
        scopes = [self.home, *([GLOBEX] if self.scoped else [])]

        async def writer(w: int, scope: Scope) -> None:
            for b in range(2):
                await port.upsert(
                    [Chunk(f"w{w}-{b}-{i}", f"concurrent record {w} {b} {i}") for i in range(3)],
                    scope=scope,
                )

        await asyncio.gather(*(writer(w, s) for w in range(4) for s in scopes))
        want = {f"w{w}-{b}-{i}" for w in range(4) for b in range(2) for i in range(3)}
        for scope in scopes:
            hits = await port.search("concurrent record", k=len(want) + 10, scope=scope)
            self._matched(set(_ids(hits)), want, f"after racing writers, {scope}")
            assert len(hits) == len(set(_ids(hits))), "a record came back twice"
