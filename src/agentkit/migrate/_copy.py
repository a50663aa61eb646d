"""``copy``: records of a foreign store into an agentkit store, checked, verified, idempotent.

Ids, text and metadata are kept exactly. A record whose id the scope already holds with
the same text and metadata is left alone, so a second run writes nothing. Vectors are
reused only when the source's embedder is the store's (recorded by the source or
declared by the caller) and the row has the store's width; everything else is embedded
with the store's own embedder, and the report says which happened and why.

The source is read on one thread of its own (readers are blocking library calls, and
some clients want one thread). Pages are checked and embedded one after another, and
gathered into large writes: a store write costs mostly its commit (the lexical index's
fsyncs), not its rows. One write is in flight while the next pages are read, checked
and embedded, since the durable write runs on the store's own thread and mostly waits
on the disk, which leaves the embedder the CPU. Each write is one transaction of
whole records, so a killed import leaves whole records only, and a re-run finds them
stored and writes the rest. A scope that is empty at the start needs no lookups of
what it holds.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from agentkit.kernel.ctx import Scope
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.kernel.validate import check_scope, lone_surrogate
from agentkit.migrate._source import PAGE, Record, Source, canonical_embedder, records_source
from agentkit.vector._embedder_id import same_vectors
from agentkit.vector.port import Chunk

_NOT_MAPPING = "metadata is not a mapping with string keys"
_NOT_JSON = "metadata is not JSON-serialisable"
_NUL = "NUL character in text or metadata"
_SURROGATE = "not valid Unicode (lone surrogate)"
_EXAMPLES = 5  # ids kept per skip reason, to show the user which ones
# Records per store write (one transaction): large enough that the per-write commit is
# spread thin, small enough that a write is seconds of work and memory stays modest.
WRITE_ROWS = 8_000
# Fewer records go as soon as no write is in flight: when reading and embedding are the
# slow part, the store would otherwise sit idle, and the write left after the last page
# (which nothing overlaps) would be large.
EAGER_ROWS = 2_000


@dataclass(slots=True)
class CopyReport:
    """What one copy did. ``new + updated`` records were written; ``unchanged`` ones were
    already there as they are; ``skipped`` counts per reason (``examples``: a few ids)."""

    kind: str
    location: str
    read: int = 0
    new: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)
    reused: int = 0
    embedded: int = 0
    vectors: str = ""
    embedder: str = ""
    verified: bool = False
    missing: list[str] = field(default_factory=list)
    missing_count: int = 0
    held: int | None = None
    seconds: float = 0.0

    @property
    def written(self) -> int:
        return self.new + self.updated

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())

    def lines(self) -> list[str]:
        """The human summary the CLI prints, one fact per line."""
        out = [
            f"read {self.read} record(s) from {self.kind} {self.location}",
            f"wrote {self.written} ({self.new} new, {self.updated} updated), "
            f"{self.unchanged} unchanged, {self.skipped_total} skipped",
        ]
        for reason, n in sorted(self.skipped.items()):
            shown = ", ".join(repr(i) for i in self.examples.get(reason, []))
            more = ", ..." if n > len(self.examples.get(reason, [])) else ""
            out.append(f"  skipped {n}: {reason}" + (f" ({shown}{more})" if shown else ""))
        out.append(
            f"vectors: {self.reused} reused, {self.embedded} embedded with {self.embedder!r}"
            f" - {self.vectors}"
        )
        expected = self.new + self.updated + self.unchanged
        if self.verified:
            held = "" if self.held is None else f"; the scope holds {self.held} record(s)"
            out.append(f"verified: the store holds all {expected} imported id(s){held}")
        else:
            ids = ", ".join(repr(i) for i in self.missing)
            out.append(
                f"VERIFICATION FAILED: {self.missing_count} of {expected} id(s) are not in "
                f"the store ({ids}{', ...' if self.missing_count > len(self.missing) else ''})"
            )
        out.append(f"{self.seconds:.1f}s")
        return out


@dataclass(frozen=True, slots=True)
class _Target:
    store: Any
    name: str
    dim: int
    embed: Callable[..., Any]
    take_vectors: Callable[..., Any] | None

    @classmethod
    def of(cls, store: Any) -> _Target:
        from agentkit.vector.sqlite import embedder_name

        embedder = getattr(store, "embedder", None)
        dim = getattr(embedder, "dim", None)
        if embedder is None or not isinstance(dim, int):
            raise InvalidArgument(
                f"the target store {store!r} has no embedder; open it with one to import"
            )
        for needed in ("upsert", "get"):
            if not callable(getattr(store, needed, None)):
                raise InvalidArgumentType(
                    f"the target store {type(store).__name__} has no {needed}(); "
                    "import needs upsert to write and get to check and verify"
                )
        take = getattr(store, "upsert_vectors", None)
        return cls(store, embedder_name(embedder), dim, embedder.embed,
                   take if callable(take) else None)


@dataclass(frozen=True, slots=True)
class _Plan:
    reuse: bool
    why: str


def _plan(source: Source, target: _Target, declared: str | None) -> _Plan:
    claimed, how = (declared, "declared") if declared is not None else (source.embedder, "recorded")
    if target.take_vectors is None:
        return _Plan(False, "the target store takes no precomputed vectors")
    if claimed is None:
        note = f" ({source.note})" if source.note else ""
        return _Plan(False, "the source does not record which model made its vectors"
                     f"{note}; pass source_embedder / --source-embedder to reuse them "
                     "if it was the store's")
    if not same_vectors(canonical_embedder(claimed), target.name):
        return _Plan(False, f"the source's vectors are from {claimed!r} ({how}), "
                     "not the store's embedder")
    return _Plan(True, f"the source's embedder {claimed!r} ({how}) is the store's")


@dataclass(slots=True)
class _Page:
    chunks: list[Chunk]
    reused: list[npt.NDArray[np.float32] | None]
    new: int = 0
    updated: int = 0


async def copy(
    source: Source | Iterable[Record],
    store: Any,
    *,
    scope: Scope,
    source_embedder: str | None = None,
    progress: Callable[[int], None] | None = None,
    page: int = PAGE,
) -> CopyReport:
    """Bring every record of ``source`` into ``store`` under ``scope``; return the report.

    ``source`` is a reader's Source (``read_folder``, ``from_langchain``,
    ``from_llamaindex``) or any iterable of Records. ``source_embedder`` declares the
    model that made the source's vectors (a store name, or ``hashing``); they are reused
    only when it is the store's. ``progress`` is called with each page's record count.
    The report's ``verified`` says whether the store holds every imported id afterwards.
    """
    check_scope(scope)
    if isinstance(page, bool) or not isinstance(page, int) or page < 1:
        raise InvalidArgument(f"page must be a positive int, got {page!r}")
    src = source if isinstance(source, Source) else records_source(source, page=page)
    target = _Target.of(store)
    if source_embedder is not None:
        canonical_embedder(source_embedder)  # refuse a malformed name before any work
    plan = _plan(src, target, source_embedder)
    report = CopyReport(src.kind, src.location, embedder=target.name, vectors=plan.why)
    started = time.monotonic()
    kept: list[str] = []
    seen: set[str] = set()
    # An empty scope holds nothing to compare with: every record is new, no lookups.
    counter = getattr(store, "count", None)
    empty = callable(counter) and int(await counter(scope=scope)) == 0
    reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentkit-import")
    loop = asyncio.get_running_loop()
    writes = _Writes(target, scope, report, progress)
    try:
        pages: Iterator[list[Record]] = await loop.run_in_executor(reader, iter, src.pages)
        while True:
            records = await loop.run_in_executor(reader, next, pages, None)
            if records is None:
                break
            report.read += len(records)
            ready = await _prepare(records, target, plan, scope, seen, report, empty=empty)
            kept.extend(c.id for c in ready.chunks)
            await writes.add(await _vectors(ready, target), len(records))
        await writes.finish()
    finally:
        await writes.stop()
        if src.close is not None:
            await loop.run_in_executor(reader, src.close)
        reader.shutdown(wait=False)
    await _verify(kept, target, scope, report)
    report.seconds = time.monotonic() - started
    return report


async def _prepare(
    records: list[Record],
    target: _Target,
    plan: _Plan,
    scope: Scope,
    seen: set[str],
    report: CopyReport,
    *,
    empty: bool,
) -> _Page:
    """Check the page, drop what is already stored as is, and find or make its vectors."""
    candidates: list[tuple[Chunk, Any]] = []
    for record in records:
        checked = _screen(record, seen, report)
        if checked is not None:
            candidates.append(checked)
    out = _Page([], [])
    if not candidates:
        return out
    held: dict[str, Chunk] = {} if empty else {
        c.id: c for c in await target.store.get([c.id for c, _ in candidates], scope=scope)
    }
    todo: list[tuple[Chunk, Any]] = []
    for chunk, vector in candidates:
        old = held.get(chunk.id)
        if old is None:
            out.new += 1
        elif old.text == chunk.text and _json_form(old.metadata) == _json_form(chunk.metadata):
            report.unchanged += 1
            continue
        else:
            out.updated += 1
        todo.append((chunk, vector))
    out.chunks = [c for c, _ in todo]
    out.reused = _usable([v for _, v in todo], target.dim) if plan.reuse else [None] * len(todo)
    return out


def _screen(record: Record, seen: set[str], report: CopyReport) -> tuple[Chunk, Any] | None:
    """The record as a Chunk plus its vector, or None (skipped, counted)."""
    rid = record.id
    if not isinstance(rid, str) or not rid:
        return _skip(report, "id is not a non-empty string", repr(rid))
    if rid in seen:
        return _skip(report, "duplicate id (the first copy was kept)", rid)
    seen.add(rid)
    text = record.text
    if text is None or (isinstance(text, str) and not text):
        return _skip(report, "empty text", rid)
    if not isinstance(text, str):
        return _skip(report, "text is not a string", rid)
    meta = record.metadata
    if meta is None:
        meta = {}
    elif type(meta) is not dict:
        if not isinstance(meta, Mapping):
            return _skip(report, _NOT_MAPPING, rid)
        meta = dict(meta)
    # Reasons in a fixed order (the metadata's shape, then NUL, then Unicode), so a
    # record with several problems is always counted under the same one.
    reason = None if _plain(meta) else _metadata_problem(meta)
    if reason == _NOT_MAPPING or reason == _NOT_JSON:
        return _skip(report, reason, rid)
    if reason == _NUL or "\x00" in text:
        return _skip(report, _NUL, rid)
    if reason == _SURROGATE or lone_surrogate(rid) is not None or lone_surrogate(text) is not None:
        return _skip(report, _SURROGATE, rid)
    return Chunk(rid, text, meta), record.vector


def _plain(meta: dict[Any, Any]) -> bool:
    """True when ``meta`` is flat str keys to plain JSON scalars, with no NUL and no lone
    surrogate: the usual metadata, accepted in one loop, with no JSON encode (the store
    encodes it once, when it writes). Anything else goes to ``_metadata_problem``."""
    for key, value in meta.items():
        if type(key) is not str or not _clean(key):
            return False
        kind = type(value)
        if kind is str:
            if not _clean(value):
                return False
        elif kind is float:
            if not math.isfinite(value):
                return False
        elif kind is not int and kind is not bool and value is not None:
            return False
    return True


def _clean(text: str) -> bool:
    return "\x00" not in text and (text.isascii() or lone_surrogate(text) is None)


def _metadata_problem(meta: dict[Any, Any]) -> str | None:
    """Why the store would refuse ``meta``, or None: decided here so one bad record is
    skipped rather than failing its whole write. The JSON form (ensure_ascii=False keeps
    every character) holds each key and value at any depth, so a NUL or lone surrogate
    anywhere in it is found at C speed, without a walk."""
    if any(not isinstance(k, str) for k in meta):
        return _NOT_MAPPING
    try:
        form = json.dumps(meta, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return _NOT_JSON
    if "\\u0000" in form:
        return _NUL
    if lone_surrogate(form) is not None:
        return _SURROGATE
    return None


def _skip(report: CopyReport, reason: str, rid: str) -> tuple[Chunk, Any] | None:
    """Count a skipped record under ``reason``; returns None, as ``_screen`` does then."""
    report.skipped[reason] = report.skipped.get(reason, 0) + 1
    examples = report.examples.setdefault(reason, [])
    if len(examples) < _EXAMPLES:
        examples.append(rid)
    return None


def _json_form(metadata: Mapping[str, Any]) -> str | None:
    try:
        return json.dumps(dict(metadata), allow_nan=False, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return None


def _usable(vectors: list[Any], dim: int) -> list[npt.NDArray[np.float32] | None]:
    """Each source row as float32 when it can stand in for the store's own (``dim`` wide,
    finite), else None. A page of same-width rows is checked as one matrix."""
    try:
        matrix = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError):  # ragged, or None among them
        return [_row(v, dim) for v in vectors]
    if matrix.shape != (len(vectors), dim):
        return [_row(v, dim) for v in vectors]
    finite: npt.NDArray[np.bool_] = np.asarray(np.isfinite(matrix).all(axis=1))
    return [matrix[i] if finite[i] else None for i in range(len(vectors))]


def _row(vector: Any, dim: int) -> npt.NDArray[np.float32] | None:
    if vector is None:
        return None
    try:
        row = np.asarray(vector, dtype=np.float32).reshape(-1)
    except (TypeError, ValueError):
        return None
    if row.shape != (dim,) or not np.isfinite(row).all():
        return None
    return row


@dataclass(slots=True)
class _Batch:
    """Records ready for one store write, and what the report learns once it lands."""

    chunks: list[Chunk] = field(default_factory=list)
    matrices: list[npt.NDArray[np.float32]] = field(default_factory=list)
    records: int = 0  # source records these pages held (for progress)
    new: int = 0
    updated: int = 0
    embedded: int = 0
    reused: int = 0


async def _vectors(ready: _Page, target: _Target) -> _Batch:
    """The page with a vector for every chunk: the source's where usable, else the
    store's embedder's (a store taking no vectors embeds them itself, in its write)."""
    chunks = ready.chunks
    out = _Batch(chunks=chunks, new=ready.new, updated=ready.updated)
    if not chunks:
        return out
    if target.take_vectors is None:
        out.embedded = len(chunks)
        return out
    missing = [i for i, row in enumerate(ready.reused) if row is None]
    matrix = np.empty((len(chunks), target.dim), dtype=np.float32)
    if missing:
        fresh = np.asarray(await target.embed([chunks[i].text for i in missing]),
                           dtype=np.float32)
        if fresh.shape != (len(missing), target.dim):
            raise InvalidArgument(
                f"the store's embedder returned shape {fresh.shape}, "
                f"expected {(len(missing), target.dim)}"
            )
        if len(missing) == len(chunks):  # nothing reused: the embedder's rows as they are
            matrix = fresh
        else:
            matrix[missing] = fresh
    if len(missing) < len(chunks):
        have = [i for i, row in enumerate(ready.reused) if row is not None]
        matrix[have] = np.stack([row for row in ready.reused if row is not None])
    out.matrices.append(matrix)
    out.embedded, out.reused = len(missing), len(chunks) - len(missing)
    return out


class _Writes:
    """Gathers pages into writes of about WRITE_ROWS records (from EAGER_ROWS when the
    store is idle), with one write in flight.

    The report counts a write's records only once it has landed, so a failed or
    cancelled import never reports what it did not write.
    """

    def __init__(self, target: _Target, scope: Scope, report: CopyReport,
                 progress: Callable[[int], None] | None) -> None:
        self._target, self._scope, self._report = target, scope, report
        self._progress = progress
        self._open = _Batch()
        self._flying: tuple[asyncio.Task[None], _Batch] | None = None

    async def add(self, page: _Batch, records: int) -> None:
        if not page.chunks:  # nothing to write: done as soon as it is read
            if self._progress is not None and records:
                self._progress(records)
            return
        batch = self._open
        batch.chunks.extend(page.chunks)
        batch.matrices.extend(page.matrices)
        batch.records += records
        batch.new += page.new
        batch.updated += page.updated
        batch.embedded += page.embedded
        batch.reused += page.reused
        gathered = len(batch.chunks)
        if gathered >= WRITE_ROWS or (gathered >= EAGER_ROWS and self._writer_idle()):
            await self._launch()

    def _writer_idle(self) -> bool:
        return self._flying is None or self._flying[0].done()

    async def finish(self) -> None:
        """Write what is gathered and wait for every write to land."""
        await self._launch()
        await self._land()

    async def stop(self) -> None:
        """On the way out (after finish, or an error, or cancellation): leave no write
        behind. One already committing is waited for (the store decides: see its
        write gate); one not yet committing is cancelled and rolls back."""
        if self._flying is None:
            return
        task, _ = self._flying
        self._flying = None
        task.cancel()
        await asyncio.wait([task])
        if not task.cancelled():
            task.exception()  # retrieved: the error that mattered is already raised

    async def _launch(self) -> None:
        await self._land()
        batch, self._open = self._open, _Batch()
        if not batch.chunks:
            self._count(batch)
            return
        self._flying = (asyncio.create_task(self._write(batch)), batch)

    async def _write(self, batch: _Batch) -> None:
        if self._target.take_vectors is None:
            await self._target.store.upsert(batch.chunks, scope=self._scope)
        else:
            matrix = batch.matrices[0] if len(batch.matrices) == 1 else np.concatenate(
                batch.matrices
            )
            await self._target.take_vectors(batch.chunks, matrix, scope=self._scope)

    async def _land(self) -> None:
        if self._flying is None:
            return
        task, batch = self._flying
        await asyncio.shield(task)  # a cancelled caller reaches stop(), which decides
        self._flying = None
        self._count(batch)

    def _count(self, batch: _Batch) -> None:
        report = self._report
        report.new += batch.new
        report.updated += batch.updated
        report.embedded += batch.embedded
        report.reused += batch.reused
        if self._progress is not None and batch.records:
            self._progress(batch.records)


async def _verify(kept: list[str], target: _Target, scope: Scope, report: CopyReport) -> None:
    """Read every imported id back: the import is verified only if the store has them all."""
    missing: list[str] = []
    count = 0
    held = getattr(target.store, "held_ids", None)
    for start in range(0, len(kept), PAGE):
        part = kept[start : start + PAGE]
        found = (
            set(await held(part, scope=scope)) if callable(held)
            else {c.id for c in await target.store.get(part, scope=scope)}
        )
        for cid in part:
            if cid not in found:
                count += 1
                if len(missing) < _EXAMPLES:
                    missing.append(cid)
    report.missing, report.missing_count = missing, count
    report.verified = count == 0
    counter = getattr(target.store, "count", None)
    if callable(counter):
        report.held = int(await counter(scope=scope))
    if report.reused and report.embedded:
        report.vectors += (f"; {report.embedded} record(s) had no usable vector "
                           f"(none, or not {target.dim} finite values)")
