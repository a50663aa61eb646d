"""Per-scope tantivy indexes beside a SQLite store, kept true to its rows.

Why per scope: BM25 weighs a word by how many documents hold it. One index per
(org, domain) means those counts come from the tenant's own documents only, so no
tenant's writes move another's scores or ranking.

Why it can be trusted: the SQLite file is the source of truth, and these are derived
indexes in the sense of ``_derived`` (which owns their stamps, locks, change log and
rebuilds). Each scope's index is stamped with the store, the scope, the scope
generation it reflects, and the analyzer version that cut its terms (an index from
other rules counts as missing). A read compares that with the generation in its own
snapshot:

- equal or newer: the index serves (hits are re-read from the snapshot by rowid and
  scope, so a row deleted or moved meanwhile is skipped, never shown);
- older: the index catches up by the change (the rows the log says changed since its
  stamp are re-indexed, nothing else), or, when the log no longer reaches back that far,
  the scope is rebuilt from the snapshot's rows;
- missing, or another store's: the scope is rebuilt from the snapshot's rows.
  That covers a crash between the SQLite commit and the index commit (``kill -9``
  mid-ingest), a write by another program, and a file replaced under the same name.

A write holds the scope's file lock from inside its SQLite write transaction until its
index commit and sidecar are down, so another process's read that sees the new rows
waits for their index rather than rebuilding it; the lock is also what allows only one
tantivy IndexWriter per directory at a time, across threads and processes. The lock is
never held between writes. A store opened read-only never writes here: when the disk
index is behind it builds the scope in memory instead.
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import tantivy

from agentkit.vector._derived import (
    DerivedRoot,
    Progress,
    ScopeStates,
    changed_rowids,
    rows_of,
    scope_dir_name,
    scope_rows,
)
from agentkit.vector._lexical_text import ANALYZER, ANALYZER_VERSION, analyzer

__all__ = ["LexicalIndexes", "Staged", "scope_dir_name"]

# The writer's indexing budget: a batch that outgrows it is flushed as several segments,
# and every query pays per segment (each term looked up in each). 32 MB holds a batch of
# a few thousand abstracts in one segment; the memory is taken only as a batch fills it.
_HEAP = 32_000_000


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_integer_field("rowid", indexed=True, fast=True)
    builder.add_text_field("text", tokenizer_name=ANALYZER, index_option="freq")
    return builder.build()


_SCHEMA = _schema()


class _Scope:
    """One scope's index in this process, and the generation its searcher reflects."""

    __slots__ = ("gen", "in_memory", "index", "lock", "searcher")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.index: tantivy.Index | None = None
        self.searcher: tantivy.Searcher | None = None
        self.gen = -1
        self.in_memory = False  # ``index`` is this process's own (a read-only store's)


class LexicalIndexes:
    """The per-scope indexes of one store; ``root`` is the directory beside its file.

    ``store_id`` is the store's identity from its meta table; None (an old file opened
    read-only) keeps every index in memory. ``writable=False`` never touches disk.
    ``progress`` hears how a rebuild is going (default: large ones are logged).
    """

    def __init__(
        self,
        root: Path,
        store_id: str | None,
        *,
        writable: bool,
        progress: Progress | None = None,
    ) -> None:
        self.root = root
        self.store_id = store_id
        self._files = DerivedRoot(
            root, store_id, writable=writable,
            # Stamps from before the analyzer was recorded were all cut by version 1.
            format={"analyzer": ANALYZER_VERSION}, legacy={"analyzer": 1},
        )
        self.writable = self._files.writable
        self.progress = progress
        self._scopes = ScopeStates(_Scope)

    def folded(self, bucket: tuple[str, str]) -> int | None:
        """The generation the scope's index on disk reflects (None: none to trust); the
        change log is kept back to the oldest of these over every index kind."""
        return self._files.stamp(bucket)

    # -- reads ---------------------------------------------------------------------

    def search(
        self,
        conn: sqlite3.Connection,
        bucket: tuple[str, str],
        gen: int | None,
        terms: Sequence[str],
        limit: int,
        offset: int = 0,
        *,
        only: Sequence[int] | None = None,
    ) -> list[tuple[float, int]]:
        """(score, rowid) best first for any of ``terms``, at ``gen`` or newer.

        ``conn`` is the caller's read transaction; if the index is behind it, the scope
        is caught up (or rebuilt) from that snapshot first. ``only``: the few rowids the
        ranking is restricted to (a ``where`` evaluated by the caller), applied inside
        the index's query at no cost to the scores.
        """
        searcher = self._searcher(conn, bucket, gen)
        clauses = [
            (tantivy.Occur.Should, tantivy.Query.term_query(_SCHEMA, "text", term))
            for term in terms
        ]
        if not clauses:
            return []
        # tantivy sizes its heap by limit: never ask for more than the index holds.
        size = searcher.num_docs
        if offset >= size:
            return []
        query = tantivy.Query.boolean_query(clauses)
        if only is not None:
            query = _restricted(query, only)
        hits = searcher.search(query, min(limit, size), count=False, offset=offset).hits
        if not hits:
            return []
        rowids = searcher.fast_field_values("rowid", [addr for _, addr in hits])
        return [
            (float(score), int(rowid))
            for (score, _), rowid in zip(hits, rowids, strict=True)
            if rowid is not None
        ]

    def _searcher(
        self, conn: sqlite3.Connection, bucket: tuple[str, str], gen: int | None
    ) -> tantivy.Searcher:
        scope = self._scope(bucket)
        with scope.lock:
            if gen is not None and scope.searcher is not None and scope.gen >= gen:
                return scope.searcher
            if gen is not None and self._reload(bucket, scope, gen):
                assert scope.searcher is not None
                return scope.searcher
            if not self.writable:
                # This process's own index: caught up by the change when it has one.
                if not (
                    scope.in_memory and scope.index is not None and gen is not None
                    and scope.gen >= 0 and _advance(scope.index, conn, bucket, scope.gen)
                ):
                    scope.index = _memory_index()
                    scope.in_memory = True
                    _fill(scope.index, conn, bucket, self.progress)
                scope.index.reload()
                scope.searcher = scope.index.searcher()
                scope.gen = -1 if gen is None else gen
                return scope.searcher
        assert gen is not None  # a writable store's files always count generations
        # The file lock first, then the scope's (the order writers take them in).
        with self._files.file_lock(bucket), scope.lock:
            # A writer that committed rows our snapshot sees held this lock until its
            # index was down: look again before catching up or rebuilding.
            if not self._reload(bucket, scope, gen):
                self._catch_up_to(conn, bucket, scope, gen)
            assert scope.searcher is not None
            return scope.searcher

    def _reload(self, bucket: tuple[str, str], scope: _Scope, gen: int) -> bool:
        """Serve from disk if the sidecar says the index holds ``gen`` or newer."""
        on_disk = self._files.stamp(bucket)
        if on_disk is None or on_disk < gen:
            return False
        try:
            if scope.index is None or not self.writable or scope.in_memory:
                scope.index = _disk_index(self._files.dir(bucket), create=False)
                scope.in_memory = False
            scope.index.reload()
            scope.searcher = scope.index.searcher()
        except (OSError, ValueError):
            return False
        scope.gen = on_disk
        return True

    def _catch_up_to(
        self, conn: sqlite3.Connection, bucket: tuple[str, str], scope: _Scope, gen: int
    ) -> None:
        """Bring the disk index to ``gen`` (``conn``'s snapshot): by the change when its
        stamp is older and the log reaches back to it, else by a rebuild. Hold the
        scope's file lock and its lock."""
        on_disk = self._files.stamp(bucket)
        if on_disk is not None and on_disk < gen:
            try:
                index = scope.index
                if index is None or scope.in_memory:
                    index = _disk_index(self._files.dir(bucket), create=False)
                self._files.write_stamp(bucket, None)  # claim nothing while it changes
                if _advance(index, conn, bucket, on_disk):
                    self._files.write_stamp(bucket, gen)
                    index.reload()
                    scope.index, scope.in_memory = index, False
                    scope.searcher = index.searcher()
                    scope.gen = gen
                    return
            except (OSError, ValueError):
                pass  # an unreadable index: rebuilt below
        self._rebuild(conn, bucket, scope, gen)

    def _rebuild(
        self, conn: sqlite3.Connection, bucket: tuple[str, str], scope: _Scope, gen: int
    ) -> None:
        path = self._files.dir(bucket)
        try:
            index = scope.index
            if index is None or scope.in_memory:
                index = _disk_index(path, create=True)
            self._files.write_stamp(bucket, None)  # claim nothing while the rows change
            _fill(index, conn, bucket, self.progress)
        except (OSError, ValueError):
            # An unreadable directory (a crash mid-create, a foreign file): start over.
            shutil.rmtree(path, ignore_errors=True)
            index = _disk_index(path, create=True)
            _fill(index, conn, bucket, self.progress)
        self._files.write_stamp(bucket, gen)
        index.reload()
        scope.index, scope.in_memory = index, False
        scope.searcher = index.searcher()
        scope.gen = gen

    def rebuild(self, conn: sqlite3.Connection, bucket: tuple[str, str], gen: int) -> None:
        """Rebuild the scope's index from ``conn``'s snapshot (at ``gen``), on request."""
        scope = self._scope(bucket)
        with self._files.file_lock(bucket), scope.lock:
            self._rebuild(conn, bucket, scope, gen)

    # -- writes --------------------------------------------------------------------

    @contextlib.contextmanager
    def writing(self, bucket: tuple[str, str]) -> Iterator[None]:
        """Hold the scope's lock for one write: enter it inside the SQLite transaction."""
        if not self.writable:
            yield
            return
        with self._files.file_lock(bucket):
            yield

    def apply(
        self,
        bucket: tuple[str, str],
        before: int,
        after: int,
        added: Sequence[tuple[int, str]],
        removed: Sequence[int] | None,
        conn: sqlite3.Connection,
    ) -> None:
        """Bring the scope's index from ``before`` to ``after`` after our SQLite commit.

        Call inside ``writing(bucket)``, with the writing connection (out of its
        transaction). ``removed`` are rowids whose documents go: rows deleted, and rows
        rewritten in place (``added`` brings those back); ``None`` means the whole scope
        went. A new row needs no delete: at ``before`` the index held no such rowid.
        An index not exactly at ``before`` (never built, or it missed a change) is
        caught up by the change, or rebuilt from the rows, now, so readers anywhere,
        read-only ones included, find it current. A failure here loses nothing: the
        sidecar no longer vouches for the index, so the next read rebuilds.
        """
        if not self.writable or before == after:
            return
        self.finish(self.stage(bucket, before, added, removed), bucket, before, after, conn)

    def stage(
        self,
        bucket: tuple[str, str],
        before: int,
        added: Sequence[tuple[int, str]],
        removed: Sequence[int] | None,
        *,
        empty: bool = False,
    ) -> Staged | None:
        """``apply``'s first half, which may run before the SQLite commit: the changes
        go to a tantivy writer, uncommitted, and tantivy indexes them on its own thread
        (outside the GIL) while the caller writes its rows. Then ``finish`` after the
        commit, or ``abort`` if the transaction rolls back. Call inside
        ``writing(bucket)``. ``empty``: the scope held no rows at ``before`` (read in
        the caller's transaction), so an index not at ``before`` (a new scope's, never
        built) is simply emptied and given the changes, with no read-back of rows.
        None when the index is not exactly at ``before`` otherwise (or taking the
        changes failed): ``finish`` then catches it up from the log or the rows.
        """
        if not self.writable:
            return None
        scope = self._scope(bucket)
        changes = contextlib.ExitStack()
        try:
            current = self._files.stamp(bucket) == before
            if not current and not empty:
                return None
            # The scope's lock only guards its fields: searches of this scope go on
            # from the current searcher while the changes are taken and the rows
            # written (one writer at a time is the file lock's job).
            with scope.lock:
                if scope.index is None or scope.in_memory:
                    scope.index = _disk_index(self._files.dir(bucket), create=not current)
                    scope.in_memory = False
                index = scope.index
            writer = changes.enter_context(_committed(index))
            if not current:
                self._files.write_stamp(bucket, None)  # claim nothing while it changes
                writer.delete_all_documents()
            if removed is None:
                writer.delete_all_documents()
            elif removed:
                # One call for the lot: each call into tantivy gives up the GIL, and
                # retaking it waits for any thread running Python meanwhile.
                writer.delete_documents_by_query(
                    tantivy.Query.term_set_query(_SCHEMA, "rowid", list(removed))
                )
            for rowid, text in added:
                writer.add_document(_document(rowid, text))
        except BaseException as exc:
            changes.__exit__(type(exc), exc, exc.__traceback__)  # rolls back
            if not isinstance(exc, Exception):
                raise
            return None  # the rows are not committed yet: finish rebuilds from them
        return Staged(scope, index, changes)

    def finish(
        self,
        staged: Staged | None,
        bucket: tuple[str, str],
        before: int,
        after: int,
        conn: sqlite3.Connection,
    ) -> None:
        """``apply``'s second half, after the SQLite commit (see ``apply``)."""
        if not self.writable:
            return
        if before == after:  # nothing was written after all
            self.abort(staged)
            return
        try:
            if staged is None:
                self._catch_up(conn, bucket)
                return
            staged.changes.close()  # commits
            self._files.write_stamp(bucket, after)
            scope, index = staged.scope, staged.index
            with scope.lock:
                index.reload()
                scope.index = index
                scope.searcher = index.searcher()
                scope.gen = after
        except Exception:
            # The rows are committed; the index is only behind. Say so on disk, so
            # the next read (here or anywhere) rebuilds the scope from the rows.
            with contextlib.suppress(OSError):
                self._files.write_stamp(bucket, None)

    @staticmethod
    def abort(staged: Staged | None) -> None:
        """Drop staged changes (their transaction rolled back); the index is untouched:
        tantivy shows nothing a writer did not commit, so a failing rollback changes
        nothing either, and the error that mattered is the caller's."""
        if staged is not None:
            with contextlib.suppress(Exception):
                staged.changes.__exit__(_RolledBack, _RolledBack(), None)

    def _catch_up(self, conn: sqlite3.Connection, bucket: tuple[str, str]) -> None:
        scope = self._scope(bucket)
        conn.execute("BEGIN")
        try:
            row = conn.execute(
                "SELECT gen FROM generations WHERE org = ? AND domain = ?", bucket
            ).fetchone()
            with scope.lock:
                self._catch_up_to(conn, bucket, scope, 0 if row is None else int(row[0]))
        finally:
            conn.execute("ROLLBACK")

    # -- files ---------------------------------------------------------------------

    def _scope(self, bucket: tuple[str, str]) -> _Scope:
        return self._scopes.get(bucket)


class _RolledBack(Exception):
    """Why staged index changes are rolled back: their SQLite transaction was."""


class Staged:
    """Index changes handed to tantivy (its writer on ``index``) but not committed."""

    __slots__ = ("changes", "index", "scope")

    def __init__(self, scope: _Scope, index: tantivy.Index, changes: contextlib.ExitStack) -> None:
        self.scope = scope
        self.index = index
        self.changes = changes


def _restricted(query: tantivy.Query, only: Sequence[int]) -> tantivy.Query:
    """``query`` kept to rowids ``only``, scored 0 so BM25 is unchanged. One term query
    per rowid: for a few rowids several times faster than tantivy's term-set query."""
    admitted = tantivy.Query.boolean_query(
        [(tantivy.Occur.Should, tantivy.Query.term_query(_SCHEMA, "rowid", r)) for r in only]
    )
    return tantivy.Query.boolean_query(
        [(tantivy.Occur.Must, query),
         (tantivy.Occur.Must, tantivy.Query.const_score_query(admitted, 0.0))]
    )


def _document(rowid: int, text: str) -> tantivy.Document:
    doc = tantivy.Document()
    doc.add_integer("rowid", rowid)
    doc.add_text("text", text)
    return doc


def _memory_index() -> tantivy.Index:
    index = tantivy.Index(_SCHEMA)
    index.register_tokenizer(ANALYZER, analyzer())
    return index


def _disk_index(path: Path, *, create: bool) -> tantivy.Index:
    if not create and not tantivy.Index.exists(str(path)):
        raise OSError(f"no lexical index at {str(path)!r}")
    path.mkdir(parents=True, exist_ok=True)
    index = tantivy.Index(_SCHEMA, path=str(path), reuse=True)
    index.register_tokenizer(ANALYZER, analyzer())
    return index


def _fill(
    index: tantivy.Index,
    conn: sqlite3.Connection,
    bucket: tuple[str, str],
    progress: Progress | None,
) -> None:
    """Replace everything in ``index`` with the scope's rows in ``conn``'s snapshot."""
    with _committed(index) as writer:
        writer.delete_all_documents()
        for batch in scope_rows(conn, bucket, "text", kind="lexical", progress=progress):
            for rowid, text in batch:
                writer.add_document(_document(int(rowid), text))


def _advance(
    index: tantivy.Index, conn: sqlite3.Connection, bucket: tuple[str, str], since: int
) -> bool:
    """Bring ``index`` (at generation ``since``) to ``conn``'s snapshot by the change:
    every row the log says changed since is dropped, and those that are the scope's
    rows now are indexed again. False (``index`` untouched) when the log does not
    reach back to ``since``."""
    touched = changed_rowids(conn, bucket, since)
    if touched is None:
        return False
    if not touched:
        return True
    with _committed(index) as writer:
        writer.delete_documents_by_query(tantivy.Query.term_set_query(_SCHEMA, "rowid", touched))
        for rowid, text in rows_of(conn, bucket, touched, "text"):
            writer.add_document(_document(int(rowid), text))
    return True


@contextlib.contextmanager
def _committed(index: tantivy.Index) -> Iterator[tantivy.IndexWriter]:
    """One writer whose changes all land at the end, or none do; its merges are done
    before it is let go, so the next writer never meets this one's lock."""
    writer = index.writer(_HEAP, 1)
    try:
        yield writer
        writer.commit()
    except BaseException:
        writer.rollback()
        raise
    finally:
        writer.wait_merging_threads()
