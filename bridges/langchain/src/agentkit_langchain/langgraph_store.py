"""AgentkitStore: an agentkit store as a LangGraph ``BaseStore``.

LangGraph agents keep long-term memory in ``runtime.store``; this puts that memory in
an agentkit store (in-memory, SQLite or Postgres), inside one tenant's bucket, so the
same records serve agentkit's own memory stack and a query with words ranks by
meaning and by words at once.

Each item is one chunk in the scope's bucket. Its id is the JSON of
``[namespace, key]`` (injective whatever the key holds); its text is what the index
fields pick out of the value (the dense and the lexical half read the same text); its
metadata carries the namespace segments (one key per depth, so a prefix is plain
equality on whole segments), the key, the value as JSON, the timestamps, the expiry
and whether the item is indexed. An ``index=False`` item has empty text and its hits
are dropped from both halves before ranks are counted; it still lists and filters.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import math
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Self

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    validate_op_namespace,
)
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from agentkit.interop import run_sync
from agentkit.kernel.ctx import Ctx, Scope
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.kernel.validate import check_scope
from agentkit.state.memory import HYBRID_DEPTH, HYBRID_RRF_CONSTANT, HybridMemory
from agentkit.vector import Chunk, Embedder, HashingEmbedder, InMemoryVectorStore
from agentkit_langchain._ttl_sweeper import TaskSweeper, ThreadSweeper
from agentkit_langchain.agentkit_vectorstore import LangChainEmbedder

__all__ = ["AgentkitStore"]

_MARK = "lg_item"
_NS = "lg_ns"
_DEPTH = "lg_depth"
_KEY = "lg_key"
_VALUE = "lg_value"
_CREATED = "lg_created"
_UPDATED = "lg_updated"
_EXPIRES = "lg_expires"
_TTL = "lg_ttl"
_INDEXED = "lg_indexed"
# Each top-level scalar of the value is also kept as ``lg_f:<key>``, and ``lg_fields``
# marks the records written so, so a LangGraph filter can run inside the store's search
# (records from before have no mark and are judged on their value alone).
_FIELDS = "lg_fields"
_FIELD = "lg_f:"
_EXACT_INT = 2**53  # LangGraph compares numbers as floats: larger ints are not pushed
_PAGE = 1000
_RANGE_OPS = frozenset({"$gt", "$gte", "$lt", "$lte"})
# LangGraph's stores sweep every 5 minutes unless told otherwise.
_SWEEP_MINUTES = 5.0


def _clock() -> float:
    """Now, in Unix seconds; one name so a test can move time for the TTL rules."""
    return time.time()


def _seg(i: int) -> str:
    return f"lg_ns_{i}"


def _chunk_id(namespace: tuple[str, ...], key: str) -> str:
    return json.dumps([list(namespace), key], ensure_ascii=False, separators=(",", ":"))


def _prefix_where(prefix: Sequence[str], *, indexed: bool | None = None) -> dict[str, Any]:
    where: dict[str, Any] = {_MARK: True}
    for i, label in enumerate(prefix):
        where[_seg(i)] = label
    if indexed is not None:
        where[_INDEXED] = indexed
    return where


def _utc(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=UTC)


def _live(meta: Mapping[str, Any], now: float) -> bool:
    expires = meta.get(_EXPIRES)
    return expires is None or float(expires) > now


class AgentkitStore(BaseStore):
    """A LangGraph ``BaseStore`` over an agentkit store, bound to one tenant.

    ``store`` is an ``InMemoryVectorStore``, ``SQLiteVectorStore`` or
    ``PostgresVectorStore`` (None: a fresh in-memory one). ``scope`` is the tenant
    every call reads and writes (default the unscoped bucket); ``bind(scope)`` gives
    the same store for another tenant. ``ttl`` is LangGraph's ``TTLConfig``
    (``default_ttl`` minutes for puts that name none, ``refresh_on_read``,
    ``sweep_interval_minutes``): expired items are never returned, and
    ``sweep_ttl``/``asweep_ttl`` or a sweeper (``start_ttl_sweeper`` on a thread,
    ``astart_ttl_sweeper`` as a task) delete them, from this instance's scope only.
    ``index`` is LangGraph's ``IndexConfig``:
    ``fields`` choose the indexed text (default the whole value); ``embed`` only when
    this class builds the store (``store=None`` or ``from_conn_string``), because a
    ready store already embeds with its own model and two models in one bucket would
    ruin ranking.

    Sync methods run the async ones once on agentkit's one shared loop
    (``agentkit.interop.run_sync``), so they work from threads and beside a running
    loop. A Postgres store belongs to one event loop: use it from sync code or from
    async code, not both (the same goes for the thread and the task sweeper). Leaving
    ``with``/``async with`` (on the instance or ``from_conn_string``) stops a sweeper.

    Args:
        store: The agentkit store to keep items in; ``None`` builds an in-memory one.
        scope: The tenant every call serves; ``None`` is the unscoped bucket.
        index: LangGraph's ``IndexConfig`` (``fields``, ``dims``, ``embed``).

    Raises:
        InvalidArgument: ``index["embed"]`` given with a ready store, or ``index["dims"]``
            unlike the store's width.
        InvalidArgumentType: A ``store`` lacking the methods of an agentkit store.
    """

    supports_ttl: bool = True

    def __init__(
        self,
        store: Any = None,
        *,
        scope: Scope | None = None,
        index: IndexConfig | Mapping[str, Any] | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        config = _check_index(index)
        if store is None:
            store = InMemoryVectorStore(_embedder(config))
        elif config.get("embed") is not None:
            raise InvalidArgument(
                "index['embed'] cannot be applied to a ready store: it embeds with its own "
                "embedder; build the store with LangChainEmbedder(...) or let AgentkitStore "
                "build it (store=None or AgentkitStore.from_conn_string)"
            )
        for method in ("upsert", "search", "get", "delete", "scan"):
            if not callable(getattr(store, method, None)):
                raise InvalidArgumentType(
                    f"store must be an agentkit store with {method}(), got {type(store).__name__}"
                )
        dims = config.get("dims")
        dim = getattr(store, "dim", None)
        if dims is not None and isinstance(dim, int) and dims != dim:
            raise InvalidArgument(f"index['dims'] is {dims} but the store's embedder has {dim}")
        self.store = store
        self.index_config = config
        self.ttl_config = _check_ttl_config(ttl)
        self._fields: list[str] = list(config.get("fields") or ["$"])
        self._scope = check_scope(Scope() if scope is None else scope)
        # agentkit's one hybrid search where the store has a word index.
        self._hybrid = (
            HybridMemory(store) if callable(getattr(store, "lexical_search", None)) else None
        )
        self._thread_sweeper: ThreadSweeper | None = None
        self._task_sweeper: TaskSweeper | None = None

    def __repr__(self) -> str:
        return f"AgentkitStore({self.store!r}, scope={self._scope!r})"

    @property
    def scope(self) -> Scope:
        """The tenant every call of this instance reads and writes."""
        return self._scope

    def bind(self, scope: Scope) -> AgentkitStore:
        """The same storage seen by another tenant (nothing is copied)."""
        other = AgentkitStore(
            self.store, scope=scope, index=_without_embed(self.index_config), ttl=self.ttl_config
        )
        other._fields = list(self._fields)
        return other

    @classmethod
    @contextmanager
    def from_conn_string(
        cls,
        path_or_url: str,
        *,
        scope: Scope | None = None,
        index: IndexConfig | Mapping[str, Any] | None = None,
        ttl: TTLConfig | None = None,
    ) -> Iterator[AgentkitStore]:
        """Open a store by path or URL, closed on exit (as LangGraph's stores open).

        ``postgresql://``/``postgres://`` opens Postgres, ``":memory:"`` an in-process
        store, anything else a SQLite file. ``index['embed']`` embeds, else agentkit's
        offline HashingEmbedder.
        """
        store = _open_store(path_or_url, _check_index(index))
        try:
            with cls(store, scope=scope, index=_without_embed(_check_index(index)), ttl=ttl) as s:
                yield s
        finally:
            run_sync(store.close)

    @classmethod
    @asynccontextmanager
    async def afrom_conn_string(
        cls,
        path_or_url: str,
        *,
        scope: Scope | None = None,
        index: IndexConfig | Mapping[str, Any] | None = None,
        ttl: TTLConfig | None = None,
    ) -> AsyncIterator[AgentkitStore]:
        """``from_conn_string`` for async code: the store is closed on this loop."""
        store = _open_store(path_or_url, _check_index(index))
        try:
            async with cls(
                store, scope=scope, index=_without_embed(_check_index(index)), ttl=ttl
            ) as s:
                yield s
        finally:
            await store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop the sweeper thread (the agentkit store is the caller's to close)."""
        self.stop_ttl_sweeper()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop both sweepers, the thread without blocking this loop."""
        await self.astop_ttl_sweeper()
        if self._thread_sweeper is not None:
            await asyncio.to_thread(self.stop_ttl_sweeper)

    # -- TTL sweeping --------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Delete this scope's expired items now; returns how many went."""
        return run_sync(self.asweep_ttl)

    async def asweep_ttl(self) -> int:
        """Delete this scope's expired items now; returns how many went.

        Only this instance's scope is read and deleted from, and only items (never the
        bucket's other records). The expired items are found by a scan, then deleted
        with ``delete_where`` on the exact expiry values seen, which the store judges
        inside its deleting transaction: an item put or refreshed since the scan has a
        later expiry (in the future), so it is not among them and survives.
        """
        now = _clock()
        total = 0
        after: str | None = None
        while True:
            page = await self.store.scan(
                scope=self._scope, where={_MARK: True}, after=after, limit=_PAGE
            )
            expired = sorted(
                {float(c.metadata[_EXPIRES]) for c in page if not _live(c.metadata, now)}
            )
            if expired:
                where = {_MARK: True, _EXPIRES: expired}
                total += int(await self.store.delete_where(where, scope=self._scope))
            if len(page) < _PAGE:
                return total
            after = page[-1].id

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Sweep every ``sweep_interval_minutes`` on a daemon thread, as LangGraph's
        sync stores do; the future resolves when it stops (cancel it to stop it).

        The interval defaults to ``ttl['sweep_interval_minutes']``, else 5 minutes. Unlike
        LangGraph's stores this also runs without a ``TTLConfig``: a put may name its own
        ``ttl`` anyway. Calling it while the thread runs returns the running one's future.
        """
        running = self._thread_sweeper
        if running is not None and running.running and not running.future.done():
            return running.future
        self._thread_sweeper = ThreadSweeper(self.sweep_ttl, self._interval(sweep_interval_minutes))
        return self._thread_sweeper.future

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread, waiting up to ``timeout`` seconds (None: until it
        ends); False if it still runs (a sweep outlasting the wait), True otherwise."""
        sweeper = self._thread_sweeper
        if sweeper is None:
            return True
        stopped = sweeper.stop(timeout)
        if stopped:
            self._thread_sweeper = None
        return stopped

    async def astart_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> asyncio.Task[None]:
        """Sweep every ``sweep_interval_minutes`` in a task of the running loop, as
        LangGraph's async stores do; the task may be awaited or cancelled.

        Defaults as ``start_ttl_sweeper``; a running task is returned as it is.
        """
        running = self._task_sweeper
        if running is not None and running.running:
            return running.task
        self._task_sweeper = TaskSweeper(self.asweep_ttl, self._interval(sweep_interval_minutes))
        return self._task_sweeper.task

    async def astop_ttl_sweeper(self, timeout: float | None = None) -> bool:  # noqa: ASYNC109
        """Stop the sweeper task; a sweep still running after ``timeout`` seconds is
        cancelled, so no task is left behind (awaited on the loop that started it)."""
        sweeper, self._task_sweeper = self._task_sweeper, None
        return True if sweeper is None else await sweeper.stop(timeout)

    def _interval(self, minutes: object) -> float:
        """The wait between sweeps, in seconds."""
        if minutes is None:
            minutes = (self.ttl_config or {}).get("sweep_interval_minutes") or _SWEEP_MINUTES
        return _check_minutes("sweep_interval_minutes", minutes) * 60.0

    # -- BaseStore ---------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        batch = list(ops)
        return run_sync(lambda: self.abatch(batch))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Reads first (they see the store as it was), then the batch's writes.

        That is the order LangGraph's own stores apply a mixed batch in; within the
        writes the last op on one (namespace, key) wins.
        """
        batch = list(ops)
        for op in batch:
            _check_op(op)
        now = _clock()
        results: list[Result] = [None] * len(batch)
        reads = [(i, op) for i, op in enumerate(batch) if not isinstance(op, PutOp)]
        answers = await asyncio.gather(*(self._read(op, now) for _, op in reads))
        for (i, _), answer in zip(reads, answers, strict=True):
            results[i] = answer
        puts = {(op.namespace, op.key): op for op in batch if isinstance(op, PutOp)}
        if puts:
            await self._write(list(puts.values()), _clock())
        return results

    # -- reads -------------------------------------------------------------------------

    async def _read(self, op: Op, now: float) -> Result:
        if isinstance(op, GetOp):
            return await self._get(op, now)
        if isinstance(op, SearchOp):
            return await self._search(op, now)
        assert isinstance(op, ListNamespacesOp)
        return await self._list_namespaces(op, now)

    async def _get(self, op: GetOp, now: float) -> Item | None:
        found = await self.store.get([_chunk_id(op.namespace, op.key)], scope=self._scope)
        if not found or not found[0].metadata.get(_MARK) or not _live(found[0].metadata, now):
            return None
        chunk = found[0]
        if op.refresh_ttl:
            await self._refresh([chunk], now)
        return _item(chunk)

    async def _scan(self, where: dict[str, Any], now: float) -> list[Chunk]:
        """Every live chunk matching ``where``, by id.

        Expired records are skipped, not deleted: a delete by id here could remove a
        value another caller put under that key since the page was read.
        """
        out: list[Chunk] = []
        after: str | None = None
        while True:
            page = await self.store.scan(scope=self._scope, where=where, after=after, limit=_PAGE)
            out.extend(chunk for chunk in page if _live(chunk.metadata, now))
            if len(page) < _PAGE:
                break
            after = page[-1].id
        return out

    async def _search(self, op: SearchOp, now: float) -> list[SearchItem]:
        limit, offset = _check_page(op.limit, op.offset)
        flt = _check_filter(op.filter)
        prefix = tuple(op.namespace_prefix)
        pushed = _pushed(flt)

        def keep(chunk: Chunk) -> bool:
            return _live(chunk.metadata, now) and _matches_value(chunk, flt)

        if op.query:
            found = await self._ranked(op.query, prefix, keep, offset + limit, pushed)
            window = found[offset : offset + limit]
            if len(found) < offset + limit:
                # Ranked items first, then the unindexed ones (no score), in key order:
                # LangGraph's stores fill a short ranked page the same way.
                rest = await self._scan({**_prefix_where(prefix, indexed=False), **pushed}, now)
                rest = sorted((c for c in rest if keep(c)), key=_order)
                skip = max(0, offset - len(found))
                window += [(None, c) for c in rest[skip : skip + limit - len(window)]]
        else:
            chunks = sorted(
                (c for c in await self._scan({**_prefix_where(prefix), **pushed}, now) if keep(c)),
                key=_order,
            )
            window = [(None, c) for c in chunks[offset : offset + limit]]
        if op.refresh_ttl:
            await self._refresh([c for _, c in window], now)
        return [_search_item(c, score) for score, c in window]

    async def _ranked(
        self,
        query: str,
        prefix: tuple[str, ...],
        visible: Callable[[Chunk], bool],
        n: int,
        pushed: dict[str, Any] | None = None,
    ) -> list[tuple[float | None, Chunk]]:
        """The first ``n`` of ONE ranking of every indexed item under ``prefix``.

        Without a lexical index the ranking is by cosine and the score is the cosine,
        as LangGraph's stores report it. With one, the head is agentkit's hybrid search
        (``HybridMemory``, as the CLI runs it): its first ``HYBRID_DEPTH`` items, each
        item once by its (namespace, key) whatever its text, asked for at that fixed
        size so the head never depends on the page asked for. Every other indexed item
        follows in dense order, scored as RRF scores a lone dense rank past the head
        (never above a head score). So ``offset``/``limit`` slice the same list
        whatever they are.
        """
        # Only the segments go to the store (one pass there); the rest is checked on
        # the hits, which is cheaper than a longer ``where`` over every row.
        where = {**{_seg(i): label for i, label in enumerate(prefix)}, **(pushed or {})} or None
        ctx = Ctx(scope=self._scope)
        if n == 0:
            return []

        def rankable(chunk: Chunk) -> bool:
            meta = chunk.metadata
            return meta.get(_MARK) is True and meta.get(_INDEXED) is True and visible(chunk)

        if self._hybrid is None:
            hits = await self._dense(query, n, rankable, ctx, where)
            return [(_finite(score), chunk) for score, chunk in hits]
        found = await self._hybrid.search(
            query, k=HYBRID_DEPTH, ctx=ctx, where=where, keep=rankable
        )
        out: list[tuple[float | None, Chunk]] = [
            (_finite(item.score), chunk)
            for item, chunk in zip(found.items, found.chunks, strict=True)
        ]
        if len(out) >= n or len(out) < HYBRID_DEPTH:
            # A short head already holds every rankable item: the dense half reads them all.
            return out[:n]
        head = {c.id for _, c in out}
        floor = min((s for s, _ in out if s is not None), default=math.inf)
        for rank, (_, chunk) in enumerate(
            await self._dense(query, n + len(head), rankable, ctx, where), start=1
        ):
            if chunk.id in head:
                continue
            # Past the head a dense rank is the only one counted; ties at the head's
            # edge must not lift a tail item above the head.
            floor = min(floor, 1.0 / (HYBRID_RRF_CONSTANT + rank))
            out.append((floor, chunk))
            if len(out) >= n:
                break
        return out

    async def _dense(
        self,
        query: str,
        n: int,
        keep: Callable[[Chunk], bool],
        ctx: Ctx,
        where: dict[str, Any] | None,
    ) -> list[tuple[float, Chunk]]:
        """The first ``n`` visible items by cosine (fewer only when there are no more).

        Read deeper while ``keep`` drops hits and the store has more. Items tied with
        the store's last hit may be cut differently at another depth, so a read that
        did not reach the end leaves them out until a deeper read settles them; ties
        are listed in id order, so a page's order never depends on the read's depth.
        """
        depth = n
        while True:
            hits = await self.store.search(query, k=depth, scope=ctx.scope, where=where)
            kept = [(s, c) for s, c in hits if keep(c)]
            exhausted = len(hits) < depth
            if not exhausted and hits:
                edge = hits[-1][0]
                kept = [(s, c) for s, c in kept if s != edge]
            if exhausted or len(kept) >= n:
                kept.sort(key=lambda hit: (-hit[0], hit[1].id))
                return kept[:n]
            depth *= 4

    async def _list_namespaces(self, op: ListNamespacesOp, now: float) -> list[tuple[str, ...]]:
        limit, offset = _check_page(op.limit, op.offset)
        if op.max_depth is not None and (
            isinstance(op.max_depth, bool) or not isinstance(op.max_depth, int) or op.max_depth < 1
        ):
            raise InvalidArgument(f"max_depth must be a positive int, got {op.max_depth!r}")
        conditions = tuple(op.match_conditions or ())
        # A literal prefix (no '*') narrows the scan itself.
        literal: list[str] = []
        for cond in conditions:
            if cond.match_type == "prefix":
                for label in cond.path:
                    if label == "*":
                        break
                    literal.append(label)
                break
        seen: set[tuple[str, ...]] = set()
        for chunk in await self._scan(_prefix_where(literal), now):
            ns = tuple(chunk.metadata[_NS])
            if all(_ns_matches(c, ns) for c in conditions):
                seen.add(ns if op.max_depth is None else ns[: op.max_depth])
        return sorted(seen)[offset : offset + limit]

    async def _refresh(self, chunks: Sequence[Chunk], now: float) -> None:
        """Push each TTL'd item's expiry to ``now + ttl`` (a read counts as use).

        The records are read again and only those still as this read saw them are
        renewed, so a refresh does not write back a value older than a put that landed
        meanwhile (the stores have no compare-and-set: a put in the instant between
        this re-read and the renewal can still be overwritten).
        """
        seen = {c.id: c.metadata.get(_UPDATED) for c in chunks if c.metadata.get(_TTL) is not None}
        if not seen:
            return
        renewed = []
        for chunk in await self.store.get(list(seen), scope=self._scope):
            ttl = chunk.metadata.get(_TTL)
            if ttl is None or chunk.metadata.get(_UPDATED) != seen.get(chunk.id):
                continue
            if not _live(chunk.metadata, now):
                continue
            meta = dict(chunk.metadata)
            meta[_EXPIRES] = now + float(ttl) * 60.0
            renewed.append(Chunk(chunk.id, chunk.text, meta))
        if renewed:
            await self.store.upsert(renewed, scope=self._scope)

    # -- writes ------------------------------------------------------------------------

    async def _write(self, ops: list[PutOp], now: float) -> None:
        deletes = [_chunk_id(op.namespace, op.key) for op in ops if op.value is None]
        puts = [op for op in ops if op.value is not None]
        if puts:
            ids = [_chunk_id(op.namespace, op.key) for op in puts]
            before = {
                c.id: c.metadata
                for c in await self.store.get(ids, scope=self._scope)
                if c.metadata.get(_MARK) and _live(c.metadata, now)
            }
            chunks = [
                self._chunk(op, cid, before.get(cid), now)
                for op, cid in zip(puts, ids, strict=True)
            ]
            await self.store.upsert(chunks, scope=self._scope)
        if deletes:
            await self.store.delete(deletes, scope=self._scope)

    def _chunk(self, op: PutOp, cid: str, before: Mapping[str, Any] | None, now: float) -> Chunk:
        value = op.value
        if not isinstance(value, dict):
            raise InvalidArgumentType(
                f"PutOp.value must be a dict or None, got {type(value).__name__}"
            )
        try:
            encoded = json.dumps(value, ensure_ascii=False, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InvalidArgument(
                f"the value under {op.namespace!r}/{op.key!r} is not JSON: {exc}"
            ) from exc
        text = self._text(value, op.index)
        meta: dict[str, Any] = {
            _MARK: True,
            _NS: list(op.namespace),
            _DEPTH: len(op.namespace),
            _KEY: op.key,
            _VALUE: encoded,
            _CREATED: float(before[_CREATED]) if before is not None else now,
            _UPDATED: now,
            _INDEXED: bool(text),
        }
        for i, label in enumerate(op.namespace):
            meta[_seg(i)] = label
        fields = {f"{_FIELD}{k}": v for k, v in value.items() if _scalar(v)}
        if not any(_big(v) or "\x00" in str(v) or "\x00" in k for k, v in fields.items()):
            meta.update(fields)  # else unmarked: such a record is judged on its value
            meta[_FIELDS] = True
        if op.ttl is not None:
            ttl = _check_minutes("ttl", op.ttl)
            meta[_TTL] = ttl
            meta[_EXPIRES] = now + ttl * 60.0
        return Chunk(cid, text, meta)

    def _text(self, value: dict[str, Any], index: Any) -> str:
        if index is False:
            return ""
        if index is None or index is True:
            fields = self._fields
        elif isinstance(index, (list, tuple)) and all(isinstance(f, str) for f in index):
            fields = list(index)
        else:
            raise InvalidArgumentType(
                f"index must be False, None or a list of field paths, got {index!r}"
            )
        texts: list[str] = []
        for path in fields:
            texts.extend(get_text_at_path(value, path if path == "$" else tokenize_path(path)))
        return "\n".join(t for t in texts if t)


def _finite(score: float | None) -> float:
    value = 0.0 if score is None else float(score)
    return value if math.isfinite(value) else 0.0


def _order(chunk: Chunk) -> tuple[tuple[str, ...], str]:
    return (tuple(chunk.metadata[_NS]), str(chunk.metadata[_KEY]))


def _item(chunk: Chunk) -> Item:
    meta = chunk.metadata
    return Item(
        value=json.loads(meta[_VALUE]),
        key=meta[_KEY],
        namespace=tuple(meta[_NS]),
        created_at=_utc(float(meta[_CREATED])),
        updated_at=_utc(float(meta[_UPDATED])),
    )


def _search_item(chunk: Chunk, score: float | None) -> SearchItem:
    meta = chunk.metadata
    return SearchItem(
        namespace=tuple(meta[_NS]),
        key=meta[_KEY],
        value=json.loads(meta[_VALUE]),
        created_at=_utc(float(meta[_CREATED])),
        updated_at=_utc(float(meta[_UPDATED])),
        score=score,
    )


# -- filters ---------------------------------------------------------------------------


def _check_filter(flt: object) -> dict[str, Any] | None:
    if flt is None:
        return None
    if not isinstance(flt, Mapping):
        raise InvalidArgumentType(f"filter must be a dict, got {type(flt).__name__}")
    for key in flt:
        if not isinstance(key, str):
            raise InvalidArgumentType(f"filter keys must be str, got {type(key).__name__}")
    _check_operators(flt)
    return dict(flt) or None


def _check_operators(flt: Mapping[str, Any]) -> None:
    for wanted in flt.values():
        if isinstance(wanted, Mapping):
            ops = [k for k in wanted if isinstance(k, str) and k.startswith("$")]
            unknown = [k for k in ops if k not in _RANGE_OPS | {"$eq", "$ne"}]
            if unknown:
                raise InvalidArgument(
                    f"unknown filter operator {unknown[0]!r}; use $eq $ne $gt $gte $lt $lte"
                )
            if not ops:
                _check_operators(wanted)


def _scalar(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, (str, int, bool))


def _big(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) > _EXACT_INT


def _pushed(flt: dict[str, Any] | None) -> dict[str, Any]:
    """The part of a LangGraph filter agentkit's where states as LangGraph means it, on
    the ``lg_f:`` fields, for the store to apply inside its search; {} when none is.

    Scalars and ``$eq``/``$ne``/``$gt``/``$gte``/``$lt``/``$lte`` on scalars go (a bool
    is not a number in either; ``$ne`` there also passes a value without the key, which
    LangGraph does not, so it only widens). Nested dicts, lists and orderings on a bool
    or null stay with the check on the value. Records without the fields mark pass the
    pushed filter and are judged on their value, so it never drops a match.
    """
    if not flt:
        return {}
    parts: list[dict[str, Any]] = []
    for key, wanted in flt.items():
        field = f"{_FIELD}{key}"
        if isinstance(wanted, Mapping):
            ops = dict(wanted)
            if not ops or not all(op in _RANGE_OPS | {"$eq", "$ne"} for op in ops):
                continue
            if any(not _scalar(arg) or _big(arg) for arg in ops.values()) or any(
                arg is None or isinstance(arg, bool)
                for op, arg in ops.items() if op in _RANGE_OPS
            ):
                continue
            parts.append({field: ops})
        elif _scalar(wanted) and not _big(wanted):
            parts.append({field: wanted})
    if not parts:
        return {}
    return {"$or": [{_FIELDS: {"$exists": False}}, {"$and": parts}]}


def _matches_value(chunk: Chunk, flt: dict[str, Any] | None) -> bool:
    if not flt:
        return True
    value = json.loads(chunk.metadata[_VALUE])
    return all(key in value and _compare(value[key], wanted) for key, wanted in flt.items())


def _compare(have: Any, wanted: Any) -> bool:
    """LangGraph's filter rule: operators, nested dicts by key, anything else equality.

    A list is one value (exact, ordered equality), never any-of; bools are not numbers.
    """
    if isinstance(wanted, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in wanted):
            return all(_operator(have, op, arg) for op, arg in wanted.items())
        if not isinstance(have, Mapping):
            return False
        return all(k in have and _compare(have[k], v) for k, v in wanted.items())
    return _same(have, wanted)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    try:
        return bool(a == b)
    except Exception:
        return False


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _operator(have: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return _same(have, arg)
    if op == "$ne":
        return not _same(have, arg)
    if _number(have) and _number(arg):
        a, b = float(have), float(arg)
    elif isinstance(have, str) and isinstance(arg, str):
        a, b = have, arg  # type: ignore[assignment]
    else:
        return False  # no order between these: the item does not match
    if op == "$gt":
        return a > b
    if op == "$gte":
        return a >= b
    if op == "$lt":
        return a < b
    return a <= b


def _ns_matches(condition: MatchCondition, ns: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(ns) < len(path):
        return False
    pairs = (
        zip(ns, path, strict=False)
        if condition.match_type == "prefix"
        else zip(reversed(ns), reversed(path), strict=False)
    )
    return all(p == "*" or label == p for label, p in pairs)


# -- checks ----------------------------------------------------------------------------


def _check_op(op: object) -> None:
    if not isinstance(op, (GetOp, PutOp, SearchOp, ListNamespacesOp)):
        raise InvalidArgumentType(f"unknown store operation {type(op).__name__}")
    validate_op_namespace(op)
    if isinstance(op, (GetOp, PutOp)):
        if not isinstance(op.key, str):
            raise InvalidArgumentType(f"key must be a str, got {type(op.key).__name__}")
        if isinstance(op, PutOp) and not op.namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
    if isinstance(op, ListNamespacesOp):
        for cond in op.match_conditions or ():
            if cond.match_type not in ("prefix", "suffix"):
                raise InvalidArgument(
                    f"match_type must be 'prefix' or 'suffix', got {cond.match_type!r}"
                )


def _check_page(limit: object, offset: object) -> tuple[int, int]:
    for name, value in (("limit", limit), ("offset", offset)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidArgument(f"{name} must be an int >= 0, got {value!r}")
    assert isinstance(limit, int) and isinstance(offset, int)
    return limit, offset


def _check_index(index: object) -> dict[str, Any]:
    if index is None:
        return {}
    if not isinstance(index, Mapping):
        raise InvalidArgumentType(
            f"index must be a LangGraph IndexConfig dict, got {type(index).__name__}"
        )
    config = dict(index)
    dims = config.get("dims")
    if dims is not None and (isinstance(dims, bool) or not isinstance(dims, int) or dims < 1):
        raise InvalidArgument(f"index['dims'] must be a positive int, got {dims!r}")
    fields = config.get("fields")
    if fields is not None and (
        isinstance(fields, str) or not all(isinstance(f, str) and f for f in fields)
    ):
        raise InvalidArgumentType(f"index['fields'] must be a list of field paths, got {fields!r}")
    return config


def _check_ttl_config(ttl: object) -> TTLConfig | None:
    """LangGraph's ``TTLConfig``: ``default_ttl`` (minutes) and ``refresh_on_read``."""
    if ttl is None:
        return None
    if not isinstance(ttl, Mapping):
        raise InvalidArgumentType(
            f"ttl must be a LangGraph TTLConfig dict, got {type(ttl).__name__}"
        )
    unknown = set(ttl) - {"default_ttl", "refresh_on_read", "sweep_interval_minutes"}
    if unknown:
        raise InvalidArgument(f"unknown ttl setting(s) {sorted(unknown)}")
    for name in ("default_ttl", "sweep_interval_minutes"):
        if ttl.get(name) is not None:
            _check_minutes(f"ttl[{name!r}]", ttl[name])
    refresh = ttl.get("refresh_on_read", True)
    if not isinstance(refresh, bool):
        raise InvalidArgumentType(f"ttl['refresh_on_read'] must be a bool, got {refresh!r}")
    return TTLConfig(**ttl)  # type: ignore[typeddict-item]


def _check_minutes(name: str, value: object) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise InvalidArgument(f"{name} must be a positive number of minutes, got {value!r}")
    return float(value)


def _without_embed(config: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if k != "embed"}


def _embedder(config: Mapping[str, Any]) -> Embedder:
    embed = config.get("embed")
    if embed is None:
        return HashingEmbedder()
    return LangChainEmbedder(ensure_embeddings(embed), dim=config.get("dims"))


def _open_store(path_or_url: str, config: Mapping[str, Any]) -> Any:
    if not isinstance(path_or_url, str) or not path_or_url:
        raise InvalidArgumentType("path_or_url must be a non-empty str")
    embedder = _embedder(config)
    if path_or_url.startswith(("postgresql://", "postgres://")):
        from agentkit.vector.postgres import PostgresVectorStore

        return PostgresVectorStore(path_or_url, embedder=embedder)
    if path_or_url == ":memory:":
        return InMemoryVectorStore(embedder)
    from agentkit.vector.sqlite import SQLiteVectorStore

    return SQLiteVectorStore(path_or_url, embedder=embedder)
