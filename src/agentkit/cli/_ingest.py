"""Loading, chunking and idempotent ingestion of text, Markdown and BEIR corpora.

Ids are ``sha256(document key, position)``: the same file or BEIR record always yields
the same chunk ids, so re-ingesting replaces rows instead of adding copies. When a
document shrinks, the positions past its new end are stale: they are found by asking the
store which of them it still holds (not by trusting a count stored with the old version),
so a run that died between writing a document's new chunks and deleting its old ones is
repaired by the next run. Chunks whose text and metadata are unchanged are skipped before
any embedding happens, so re-ingesting a corpus is cheap.

Everything is read and checked before the first write (``prepare``): a file that is not
a regular file, not UTF-8, too large, or holds text no store can keep refuses the whole
run, naming the file (and the line, for a BEIR corpus).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentkit._links import stays_inside
from agentkit.cli._files import check_regular, lines, read_bytes
from agentkit.cli._progress import Progress, metered
from agentkit.kernel.ctx import Scope
from agentkit.kernel.errors import InvalidArgument
from agentkit.vector.port import Chunk, check_chunks

TEXT_SUFFIXES = (".txt", ".md", ".markdown")
BEIR_NAMES = ("corpus.jsonl", "corpus.jsonl.gz")
_SKIP_DIRS = {"node_modules", "__pycache__"}
MAX_TEXT_BYTES = 64 * 1024 * 1024  # one .txt/.md document; larger is refused, not truncated
# Chunks gathered per store write (one transaction). A write costs mostly its commit (the
# lexical index's fsyncs), not its rows, so a few thousand chunks spread it thin while a
# write stays seconds of work; whole documents only, so one may run a little over.
WRITE_CHUNKS = 4_096


@dataclass(frozen=True, slots=True)
class Doc:
    """One source document before chunking."""

    key: str  # stable identity: resolved file path, or "beir:<corpus>:<_id>"
    path: str  # what a human sees
    doc_id: str
    title: str
    text: str
    corpus: str | None = None  # BEIR dataset name, when the doc came from one
    whole: bool = False  # BEIR records are passages already: one chunk each


@dataclass(slots=True)
class IngestStats:
    docs: int = 0
    chunks: int = 0
    written: int = 0
    unchanged: int = 0
    stale: int = 0
    seconds: float = 0.0
    sources: list[str] = field(default_factory=list)

    def summary(self, scope: Scope) -> str:
        where = "/".join(x or "-" for x in scope.key) if scope.org_id or scope.domain_id else "-"
        rate = self.docs / self.seconds if self.seconds > 0 else 0.0
        return (
            f"ingested {self.docs} doc(s) -> {self.chunks} chunk(s): {self.written} written, "
            f"{self.unchanged} unchanged, {self.stale} stale removed; scope {where}; "
            f"{self.seconds:.1f}s ({rate:.1f} docs/s)"
        )


# --- finding documents -------------------------------------------------------------


def beir_corpus_file(directory: Path) -> Path | None:
    for name in BEIR_NAMES:
        candidate = directory / name
        if candidate.is_file():
            return candidate
    return None


def plan(paths: Iterable[str]) -> list[tuple[str, Path]]:
    """Expand the command line into (kind, file) pairs, refusing what cannot be read.

    Every path is checked before anything is written, so a typo in the third argument
    does not leave the first two half-ingested.
    """
    out: list[tuple[str, Path]] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise InvalidArgument(f"no such file or directory: {raw!r}")
        if path.is_dir():
            corpus = beir_corpus_file(path)
            if corpus is not None:
                out.append(("beir", corpus))
                continue
            found = sorted(_walk(path))
            for f in found:
                _check_size(f)
            if not found:
                raise InvalidArgument(f"no .txt or .md files under {raw!r}")
            out.extend(("text", f) for f in found)
        elif path.name.endswith((".jsonl", ".jsonl.gz")):
            check_regular(path)
            out.append(("beir", path))
        elif path.suffix.lower() in TEXT_SUFFIXES:
            _check_size(path)
            out.append(("text", path))
        else:
            raise InvalidArgument(
                f"cannot ingest {raw!r}: expected .txt, .md, a BEIR corpus.jsonl(.gz) "
                "or a directory"
            )
    return out


def _walk(root: Path) -> Iterator[Path]:
    """Text files under ``root``; a symlink whose target lies outside ``root`` is skipped,
    so ingesting a folder never pulls in a file from elsewhere."""
    top = root.resolve()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d not in _SKIP_DIRS]
        for name in filenames:
            if not name.startswith(".") and Path(name).suffix.lower() in TEXT_SUFFIXES:
                candidate = Path(dirpath) / name
                if stays_inside(candidate, top) and candidate.is_file():
                    yield candidate


def _check_size(path: Path) -> None:
    size = check_regular(path).st_size
    if size > MAX_TEXT_BYTES:
        raise InvalidArgument(
            f"{str(path)!r} is too large to ingest as one document ({size} bytes; "
            f"the limit is {MAX_TEXT_BYTES})"
        )


def _display(path: Path) -> str:
    resolved = path.resolve()
    try:
        return str(resolved.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(resolved)


def read_text_doc(path: Path) -> Doc:
    try:
        text = read_bytes(path, MAX_TEXT_BYTES).decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidArgument(f"{str(path)!r} is not UTF-8 text") from None
    shown = _display(path)
    return Doc(
        key=str(path.resolve()),
        path=shown,
        doc_id=shown,
        title=_title(path, text),
        text=text,
    )


def _title(path: Path, text: str) -> str:
    if path.suffix.lower() in (".md", ".markdown"):
        for line in text.splitlines():
            match = re.match(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", line)
            if match:
                return match.group(1)
    return path.stem


def beir_name(corpus: Path) -> str:
    """The dataset's name: its folder, unless the file has a name of its own."""
    if corpus.name in BEIR_NAMES:
        return corpus.resolve().parent.name
    return corpus.name.removesuffix(".gz").removesuffix(".jsonl")


def read_beir(corpus: Path) -> Iterator[Doc]:
    """One Doc per record; the chunk text is the title and the text, as BEIR scores it."""
    for _, doc in _numbered_beir(corpus):
        yield doc


def _numbered_beir(corpus: Path) -> Iterator[tuple[int, Doc]]:
    name = beir_name(corpus)
    shown = _display(corpus)
    for lineno, line in lines(corpus):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            doc_id = str(record["_id"])
        except (ValueError, KeyError, TypeError):
            raise InvalidArgument(
                f"{shown}:{lineno}: not a BEIR record (a JSON object with an _id)"
            ) from None
        title = str(record.get("title") or "").strip()
        body = str(record.get("text") or "").strip()
        yield lineno, Doc(
            key=f"beir:{name}:{doc_id}",
            path=shown,
            doc_id=doc_id,
            title=title,
            text=beir_text(title, body),
            corpus=name,
            whole=True,
        )


def beir_text(title: str, body: str) -> str:
    return f"{title}\n\n{body}" if title and body else (title or body)


def count_beir(corpus: Path) -> int:
    """Records in a BEIR corpus, each checked as ``prepare`` checks it."""
    return sum(1 for _ in _checked_beir(corpus))


def _checked_beir(corpus: Path) -> Iterator[Doc]:
    """read_beir, refusing a record no store can keep with its file and line number."""
    shown = _display(corpus)
    for lineno, doc in _numbered_beir(corpus):
        check_storable(chunks_of(doc, 1, 0), f"{shown}:{lineno}")
        yield doc


def check_storable(chunks: Sequence[Chunk], where: str) -> None:
    """What the stores would refuse mid-run (the shared batch check), refused up front.

    NUL is refused too: PostgreSQL cannot hold it, and in a text file it means binary
    or UTF-16 content, not text.
    """
    try:
        check_chunks(chunks)
    except InvalidArgument as exc:
        raise InvalidArgument(f"{where}: {exc}") from None
    for chunk in chunks:
        if "\x00" in chunk.text or any(
            isinstance(v, str) and "\x00" in v for v in chunk.metadata.values()
        ):
            raise InvalidArgument(
                f"{where}: holds a NUL character; it is not text (binary, or UTF-16?)"
            )


# --- chunking ----------------------------------------------------------------------


def split_text(text: str, size: int, overlap: int) -> list[str]:
    """Windows of about ``size`` characters sharing ``overlap`` with their neighbour.

    A window ends at the last paragraph break, else sentence end, else space in its
    second half, so chunks rarely cut a word or sentence in two.
    """
    text = text.strip()
    if not text:
        return []
    if len(text) <= size:
        return [text]
    overlap = min(overlap, size // 2)
    out: list[str] = []
    start = 0
    n = len(text)
    while start < n:
        end = min(start + size, n)
        if end < n:
            end = _cut(text, start, end)
        piece = text[start:end].strip()
        if piece:
            out.append(piece)
        if end >= n:
            break
        nxt = max(end - overlap, start + 1)
        # Start the next window on a word boundary.
        space = text.find(" ", nxt, end)
        start = space + 1 if space != -1 else nxt
    return out


def _cut(text: str, start: int, end: int) -> int:
    half = start + (end - start) // 2
    for sep in ("\n\n", ". ", "? ", "! ", "\n", " "):
        at = text.rfind(sep, half, end)
        if at != -1:
            return at + len(sep)
    return end


def chunk_id(key: str, position: int) -> str:
    # surrogatepass: a key with a lone surrogate still hashes, so check_storable can
    # refuse it by name instead of an encoder failing first. Valid text hashes as UTF-8.
    data = f"{key}\x1f{position}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:32]


def chunks_of(doc: Doc, size: int, overlap: int) -> list[Chunk]:
    pieces = [doc.text.strip()] if doc.whole else split_text(doc.text, size, overlap)
    pieces = [p for p in pieces if p]
    out: list[Chunk] = []
    for position, piece in enumerate(pieces):
        meta: dict[str, Any] = {
            "path": doc.path,
            "doc_id": doc.doc_id,
            "title": doc.title,
            "position": position,
            "n_chunks": len(pieces),
        }
        if doc.corpus is not None:
            meta["corpus"] = doc.corpus
        out.append(Chunk(chunk_id(doc.key, position), piece, meta))
    return out


# --- the pipeline ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Prepared:
    """An ingest's input, read and checked; built before any store is opened."""

    jobs: list[tuple[str, Path]]
    texts: dict[Path, tuple[Doc, list[Chunk]]]
    total: int  # documents
    chunks: int  # what the progress bar counts (a BEIR record is one chunk)
    size: int
    overlap: int


def prepare(paths: Iterable[str], *, size: int = 1200, overlap: int = 200) -> Prepared:
    """Read and check every input, so a bad one refuses the whole run untouched.

    Text files are read and chunked here (they are held until written); a BEIR corpus
    is read once to check every record and again, streaming, when it is written.
    """
    if overlap >= size:
        raise InvalidArgument(f"--overlap ({overlap}) must be smaller than --chunk-size ({size})")
    jobs = plan(paths)
    texts: dict[Path, tuple[Doc, list[Chunk]]] = {}
    total = pieces = 0
    for kind, path in jobs:
        if kind == "beir":
            records = count_beir(path)
            total += records
            pieces += records
            continue
        doc = read_text_doc(path)
        chunks = chunks_of(doc, size, overlap)
        check_storable(chunks, doc.path)
        texts[path] = (doc, chunks)
        total += 1
        pieces += len(chunks)
    return Prepared(jobs, texts, total, pieces, size, overlap)


async def ingest(
    store: Any,
    scope: Scope,
    paths: list[str],
    *,
    size: int = 1200,
    overlap: int = 200,
    batch: int | None = None,
    progress: bool | None = None,
) -> IngestStats:
    """Ingest ``paths`` into ``store`` under ``scope``; safe to run again and again."""
    ready = prepare(paths, size=size, overlap=overlap)
    return await write(store, scope, ready, batch=batch, progress=progress)


async def write(
    store: Any,
    scope: Scope,
    ready: Prepared,
    *,
    batch: int | None = None,
    progress: bool | None = None,
) -> IngestStats:
    """Write what ``prepare`` checked: whole documents gathered into store writes of
    about ``batch`` chunks (None: ``WRITE_CHUNKS``). The progress bar counts chunks: live
    as they are embedded, and for certain once their write has landed.

    Each write (``_flush``) upserts its documents' new and changed chunks in one store
    call and then deletes what those documents left past their new end. A run killed
    between the two, or during either, is repaired by the next: stale positions are
    found by asking the store, never from what this run wrote.
    """
    batch = WRITE_CHUNKS if batch is None else batch
    stats = IngestStats(sources=[str(p) for _, p in ready.jobs])
    started = time.monotonic()
    bar = Progress(ready.chunks, "ingest", unit="chunks", enabled=progress)
    pending: list[tuple[Doc, list[Chunk]]] = []
    pending_chunks = 0
    try:
        with metered(store, bar.advance):
            for doc, chunks in _chunked(ready):
                pending.append((doc, chunks))
                pending_chunks += len(chunks)
                if pending_chunks >= batch:
                    await _flush(store, scope, pending, stats)
                    bar.update(pending_chunks)
                    pending, pending_chunks = [], 0
            if pending:
                await _flush(store, scope, pending, stats)
                bar.update(pending_chunks)
    finally:
        bar.close()
    stats.seconds = time.monotonic() - started
    return stats


def _chunked(ready: Prepared) -> Iterator[tuple[Doc, list[Chunk]]]:
    for kind, path in ready.jobs:
        if kind == "beir":
            for doc in read_beir(path):
                yield doc, chunks_of(doc, ready.size, ready.overlap)
        else:
            yield ready.texts[path]


_Getter = Callable[..., Awaitable[list[Chunk]]]


async def _flush(
    store: Any, scope: Scope, pending: list[tuple[Doc, list[Chunk]]], stats: IngestStats
) -> None:
    wanted = [c for _, chunks in pending for c in chunks]
    getter: _Getter | None = getattr(store, "get", None)
    existing: dict[str, Chunk] = {}
    stale: list[str] = []
    if getter is not None:
        # Besides the new chunks, each document's first position past its new end: the
        # store holds it only when an older, longer version left chunks behind.
        ends = {doc.key: len(chunks) for doc, chunks in pending}
        probe = [c.id for c in wanted] + [chunk_id(key, end) for key, end in ends.items()]
        existing = {c.id: c for c in await getter(list(dict.fromkeys(probe)), scope=scope)}
        left = {key: end for key, end in ends.items() if chunk_id(key, end) in existing}
        if left:
            stale = await _leftovers(getter, scope, left, existing)
    todo = [c for c in wanted if not _same(existing.get(c.id), c)]
    if todo:
        await store.upsert(todo, scope=scope)
    if stale:
        await store.delete(stale, scope=scope)
    stats.docs += len(pending)
    stats.chunks += len(wanted)
    stats.written += len(todo)
    stats.unchanged += len(wanted) - len(todo)
    stats.stale += len(stale)


async def _leftovers(
    getter: _Getter, scope: Scope, starts: dict[str, int], known: dict[str, Chunk]
) -> list[str]:
    """Every stored chunk id of these documents at or past their new end, read from the store.

    Old versions were written as runs of positions from 0, so what is left is read in
    growing windows from the end on, until a window finds nothing. The first window is
    sized by the ``n_chunks`` the leftover at the end records, so one round usually
    finds them all and a second confirms.
    """
    out: list[str] = []
    window: dict[str, tuple[int, int]] = {}
    for key, end in starts.items():
        hinted = known[chunk_id(key, end)].metadata.get("n_chunks")
        width = hinted - end if isinstance(hinted, int) and hinted > end else 1
        window[key] = (end, max(width, 16))
    while window:
        ids = [chunk_id(k, p) for k, (lo, n) in window.items() for p in range(lo, lo + n)]
        found = {c.id for c in await getter(ids, scope=scope)}
        following: dict[str, tuple[int, int]] = {}
        for key, (lo, n) in window.items():
            hits = [chunk_id(key, p) for p in range(lo, lo + n) if chunk_id(key, p) in found]
            out.extend(hits)
            if hits:
                following[key] = (lo + n, 2 * n)
        window = following
    return out


def _same(old: Chunk | None, new: Chunk) -> bool:
    return old is not None and old.text == new.text and dict(old.metadata) == dict(new.metadata)
