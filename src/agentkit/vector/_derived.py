"""Indexes derived from a SQLite store's rows: how they are stamped, caught up and rebuilt.

The rows in the file are the truth; every index beside it (lexical, dense) is a view of
one scope's rows that says which generation of them it reflects. This module is the one
place that knows how:

- **Where and whose.** Each kind of index has a directory beside the store file
  (``<file>.lexical/``, ...), one sub-directory per scope named by a hash of the scope
  (any scope id is a safe file name), plus a lock file per scope.
- **Stamped.** A sidecar in the scope's directory names the store (its random
  ``store_id``), the scope, the generation reflected and the index's format (e.g. the
  analyzer version). A sidecar that disagrees on any of these is no index at all: one
  built for another file that once had this name, another scope, another format.
  Sidecars are replaced by atomic rename; one removed says "vouch for nothing" while
  an index is being changed in place.
- **Locked.** One ``flock`` per scope and kind orders writers across threads and
  processes; readers that find the index behind take it before catching it up, so
  two never do the same work.
- **Caught up by the change.** The schema's triggers log every changed row under the
  scope generation it made (``changes``), so an index at generation g reads the rows
  touched after g and nothing else: a record written elsewhere costs about one record's
  work. When the log no longer reaches back to g (pruned, or a file from before the
  log) the index is rebuilt from the rows instead.
- **Rebuilt with progress.** A rebuild reads the scope's rows in batches and reports
  ``(what, done, total)``; the default logs large rebuilds on ``agentkit.vector``.
- **Pruned.** The log of a scope is pruned through the oldest generation every index
  of it is stamped at, a batch at a time, in the writer's transaction.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar

STAMP = "agentkit-generation.json"
_BATCH = 2_000
# Prune a scope's log only once this many generations can go: one DELETE per this many
# changes keeps the cost per write nil, and the log stays small (~40 bytes a change).
PRUNE_STEP = 4_096
# Rebuilds of fewer rows than this are not worth a log line.
_LOG_FROM = 20_000

Progress = Callable[[str, int, int], None]
"""``(what, done, total)``: how far a rebuild has come (``what`` names index and scope)."""

#: Set by the command line to draw a long rebuild: called with the index kind
#: (``"lexical"``, ``"dense"``), the scope (``"ORG/DOMAIN"``, ``"-"`` when unscoped) and
#: the row count, it returns something with ``update(n)`` and ``close()``. Used when a
#: store was given no ``progress`` of its own; rebuilds of one batch or less are not drawn.
rebuild_progress: Callable[[str, str, int], Any] | None = None

_log = logging.getLogger("agentkit.vector")


def log_progress(what: str, done: int, total: int) -> None:
    """The default progress: a line at the start, each tenth, and the end of a large
    rebuild, so a slow first query after an upgrade or a crash says why it is slow."""
    if total < _LOG_FROM:
        return
    step = max(total // 10, 1)
    if done == 0 or done >= total or done // step != (done - _BATCH) // step:
        _log.info("rebuilding %s: %d/%d rows", what, done, total)


def scope_dir_name(bucket: tuple[str, str]) -> str:
    """A file-name-safe name per scope; the stamp repeats the scope to check it."""
    raw = json.dumps(list(bucket), ensure_ascii=False).encode()
    return hashlib.sha256(raw).hexdigest()


class DerivedRoot:
    """Where one kind of derived index keeps its scopes, and how they are stamped.

    ``format`` is what an index must have been built by to be read (e.g.
    ``{"analyzer": 2}``); ``legacy`` gives the value a stamp that lacks a key is taken
    to have (stamps written before the key existed). ``store_id`` None (an old file
    opened read-only) or ``writable=False`` never writes here.
    """

    def __init__(
        self,
        root: Path,
        store_id: str | None,
        *,
        writable: bool,
        format: Mapping[str, Any],
        legacy: Mapping[str, Any] | None = None,
    ) -> None:
        self.root = root
        self.store_id = store_id
        self.writable = writable and store_id is not None
        self.format = dict(format)
        self.legacy = dict(legacy or {})
        # the last stamp read per scope: (its file's identity, what it said)
        self._seen: dict[tuple[str, str], tuple[tuple[int, ...], dict[str, Any] | None]] = {}

    def dir(self, bucket: tuple[str, str]) -> Path:
        return self.root / scope_dir_name(bucket)

    @contextlib.contextmanager
    def file_lock(self, bucket: tuple[str, str]) -> Iterator[None]:
        """The scope's lock, across threads and processes (closing releases it)."""
        self.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root / (scope_dir_name(bucket) + ".lock"), os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def stamp_body(self, bucket: tuple[str, str]) -> dict[str, Any] | None:
        """The scope's stamp if it is this store's, this scope's and this format's.

        Read on every query, so it is parsed again only when the file changed: a stamp
        is replaced by rename, so its inode, times or size differ (a ``stat`` instead of
        an open, a read and a parse)."""
        path = self.dir(bucket) / STAMP
        try:
            st = os.stat(path)
        except OSError:
            return None
        sig = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)
        seen = self._seen.get(bucket)
        if seen is not None and seen[0] == sig:
            return None if seen[1] is None else dict(seen[1])
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        body = self._checked(bucket, data)
        self._seen[bucket] = (sig, body)
        return None if body is None else dict(body)

    def _checked(self, bucket: tuple[str, str], data: Any) -> dict[str, Any] | None:
        if (
            not isinstance(data, dict)
            or self.store_id is None
            or data.get("store") != self.store_id
            or data.get("scope") != list(bucket)
            or not isinstance(data.get("gen"), int)
            or isinstance(data.get("gen"), bool)
        ):
            return None
        for key, want in self.format.items():
            if data.get(key, self.legacy.get(key)) != want:
                return None
        return data

    def stamp(self, bucket: tuple[str, str]) -> int | None:
        """The generation the scope's index reflects; None: no index to trust."""
        data = self.stamp_body(bucket)
        return None if data is None else int(data["gen"])

    def write_stamp(self, bucket: tuple[str, str], gen: int | None, **extra: Any) -> None:
        """Vouch for the index at ``gen`` (atomically); None withdraws the stamp."""
        path = self.dir(bucket) / STAMP
        if gen is None:
            path.unlink(missing_ok=True)
            return
        body = {"store": self.store_id, "scope": list(bucket), "gen": gen, **self.format, **extra}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(body, ensure_ascii=False))
        os.replace(tmp, path)


# -- the change log ----------------------------------------------------------------------


def has_change_log(conn: sqlite3.Connection) -> bool:
    """Whether the file logs its changes (schema version 3 on; an older file opened
    read-only does not, and its indexes are then rebuilt rather than caught up)."""
    (found,) = conn.execute(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' "
        "AND name IN ('changes', 'change_floor')"
    ).fetchone()
    return int(found) == 2


def log_floor(conn: sqlite3.Connection, bucket: tuple[str, str]) -> int:
    """Changes at or below this generation may be gone from the scope's log."""
    row = conn.execute(
        "SELECT gen FROM change_floor WHERE org = ? AND domain = ?", bucket
    ).fetchone()
    return 0 if row is None else int(row[0])


def changed_rowids(
    conn: sqlite3.Connection, bucket: tuple[str, str], since: int
) -> list[int] | None:
    """Rowids the scope's changes after generation ``since`` touched, in ``conn``'s
    snapshot (each once, ascending); None when the log does not reach back that far.

    Whether a touched row is now in the scope, and with what, is the rows' business:
    read it in the same snapshot (``rows_of``). A row moved to another scope, or gone,
    is simply not found there.
    """
    try:
        if since < log_floor(conn, bucket):
            return None
        rows = conn.execute(
            "SELECT DISTINCT chunk_rowid FROM changes WHERE org = ? AND domain = ? AND gen > ? "
            "ORDER BY chunk_rowid",
            (*bucket, since),
        ).fetchall()
    except sqlite3.OperationalError:  # a file without the log
        return None
    return [int(r[0]) for r in rows]


def rows_of(
    conn: sqlite3.Connection, bucket: tuple[str, str], rowids: Sequence[int], columns: str
) -> Iterator[tuple[Any, ...]]:
    """``(rowid, *columns)`` of those ``rowids`` that are the scope's rows in ``conn``'s
    snapshot, in batches (one statement per batch, rowids passed as one JSON array)."""
    for start in range(0, len(rowids), _BATCH):
        part = json.dumps(list(rowids[start : start + _BATCH]))
        yield from conn.execute(
            f"SELECT rowid, {columns} FROM chunks "
            "WHERE rowid IN (SELECT value FROM json_each(?)) AND +org = ? AND +domain = ?",
            (part, *bucket),
        )


def scope_text(bucket: tuple[str, str]) -> str:
    """A scope as progress and logs name it: ``ORG/DOMAIN``, ``-`` when unscoped."""
    return "/".join(bucket) if any(bucket) else "-"


def scope_rows(
    conn: sqlite3.Connection,
    bucket: tuple[str, str],
    columns: str,
    *,
    kind: str,
    progress: Progress | None = None,
) -> Iterator[list[tuple[Any, ...]]]:
    """Every row of the scope in ``conn``'s snapshot as ``(rowid, *columns)``, in
    batches, reporting a rebuild of the ``kind`` index: to ``progress``, else to the
    command line's ``rebuild_progress`` (a bar), and to the log when large."""
    what = f"{kind} index {scope_text(bucket)}"
    report = progress or log_progress
    (count,) = conn.execute(
        "SELECT count(*) FROM chunks WHERE org = ? AND domain = ?", bucket
    ).fetchone()
    total = int(count)
    hook = rebuild_progress
    bar = None
    if progress is None and hook is not None and total > _BATCH:
        bar = hook(kind, scope_text(bucket), total)
    report(what, 0, total)
    done = 0
    rows = conn.execute(f"SELECT rowid, {columns} FROM chunks WHERE org = ? AND domain = ?", bucket)
    try:
        while batch := rows.fetchmany(_BATCH):
            yield batch
            done += len(batch)
            report(what, min(done, total), total)
            if bar is not None:
                bar.update(len(batch))
        if done < total:  # the count and the rows come from one snapshot: only to be sure
            report(what, total, total)
    finally:
        if bar is not None:
            bar.close()


def prune_log(conn: sqlite3.Connection, bucket: tuple[str, str], through: int | None) -> None:
    """Drop the scope's changes up to ``through`` (the oldest generation any of its
    indexes is stamped at; None: some index has no stamp, keep everything), once a
    batch's worth can go. Call inside a write transaction."""
    if through is None:
        return
    try:
        floor = log_floor(conn, bucket)
        if through - floor < PRUNE_STEP:
            return
        conn.execute(
            "DELETE FROM changes WHERE org = ? AND domain = ? AND gen <= ?", (*bucket, through)
        )
        conn.execute(
            "INSERT INTO change_floor(org, domain, gen) VALUES (?, ?, ?) "
            "ON CONFLICT (org, domain) DO UPDATE SET gen = max(gen, excluded.gen)",
            (*bucket, through),
        )
    except sqlite3.OperationalError:  # a file without the log
        return


_State = TypeVar("_State")


class ScopeStates(Generic[_State]):
    """What one derived index keeps per scope in this process (its lock, the base it
    mapped, its catch-up point), made on first use and shared by the threads asking."""

    def __init__(self, make: Callable[[], _State]) -> None:
        self._make = make
        self._lock = threading.Lock()
        self._states: dict[tuple[str, str], _State] = {}

    def get(self, bucket: tuple[str, str]) -> _State:
        with self._lock:
            state = self._states.get(bucket)
            if state is None:
                state = self._states[bucket] = self._make()
            return state
