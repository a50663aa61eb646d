"""Hostile input: one table of what was tried and what each attempt must get back.

Every row runs against a fresh environment of real things (a SQLite store on disk, a
LocalFiles root with a secret next to it, symlinks pointing out, a FIFO, a sparse huge
file, an in-memory store, the LangChain and LlamaIndex ports, the CLI as a process) and
expects either a named exception with a message that names the culprit, or a result
that is safe (checked by the row). After EVERY row, whatever happened, the stored data
must be exactly what it was before: rows, files, the secret outside the root.
"""

from __future__ import annotations

import asyncio
import math
import os
import re
import resource
import sqlite3
import subprocess
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from agentkit_langchain import AgentkitEmbeddings, LangChainVectorPort
from agentkit_llamaindex import AgentkitEmbedding, LlamaIndexVectorPort
from langchain_core.vectorstores import InMemoryVectorStore as LCInMemoryVectorStore
from llama_index.core import VectorStoreIndex

from agentkit.kernel import Ctx, Scope
from agentkit.kernel.errors import (
    InvalidArgument,
    InvalidArgumentType,
    PathEscapeError,
)
from agentkit.state.files import LocalFiles
from agentkit.state.memory import (
    CachedMemory,
    CompactedMemory,
    CompositeMemory,
    FileMemory,
    LexicalMemory,
    MemoryItem,
    ReadOnlyMemory,
    SequentialMemory,
    VectorMemory,
)
from agentkit.vector import Chunk, HashingEmbedder, InMemoryVectorStore, SQLiteVectorStore

ACME = Scope("acme", "support")
GLOBEX = Scope("globex", "support")
CTX = Ctx(ACME)
SECRET = "top secret hunter2"
SEED = [
    Chunk("a", "alpha beta notes", {"path": "/notes/a.md", "tag": "x"}),
    Chunk("g", "gamma delta", {"path": "/notes/g.md", "tag": "y"}),
    Chunk("ag", "alpha gamma", {"path": "/notes/ag.md", "tag": "x"}),
]
HUGE = 100 * 1024 * 1024  # sparse; over LocalFiles' 64 MiB default cap


# --- the environment -----------------------------------------------------------------------


@dataclass
class Env:
    tmp: Path
    root: Path
    outside: Path
    files: LocalFiles
    store: SQLiteVectorStore
    inmem: InMemoryVectorStore
    lc_store: LCInMemoryVectorStore
    li_index: VectorStoreIndex
    sources: dict[str, Any]

    @property
    def fm(self) -> FileMemory:
        return self.sources["files"]  # type: ignore[no-any-return]


def _make_tree(tmp: Path) -> tuple[Path, Path]:
    root, outside = tmp / "root", tmp / "outside"
    (root / "notes").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    for chunk in SEED:
        (root / chunk.metadata["path"].lstrip("/")).write_text(chunk.text)
    (root / "latin1.txt").write_bytes(b"caf\xe9 alpha")
    with open(root / "huge.md", "wb") as fh:
        fh.truncate(HUGE)
    os.mkfifo(root / "pipe")
    os.symlink(outside / "secret.txt", root / "leak.txt")
    os.symlink(outside, root / "outdir")
    return root, outside


async def make_env(tmp: Path) -> Env:
    root, outside = await asyncio.to_thread(_make_tree, tmp)
    files = LocalFiles(root)

    emb = HashingEmbedder(dim=64)
    store = SQLiteVectorStore(tmp / "store.db", embedder=emb)
    await store.upsert(SEED, scope=ACME)
    await store.upsert([Chunk("a", f"alpha {SECRET} globex", {"path": "/g.md"})], scope=GLOBEX)
    inmem = InMemoryVectorStore(emb)
    await inmem.upsert(SEED, scope=ACME)
    await inmem.upsert([Chunk("a", f"alpha {SECRET} globex", {})], scope=GLOBEX)
    lc_store = LCInMemoryVectorStore(AgentkitEmbeddings(emb))
    lc = VectorMemory(LangChainVectorPort(lc_store), name="langchain")
    li_index = VectorStoreIndex([], embed_model=AgentkitEmbedding(emb))
    li = VectorMemory(LlamaIndexVectorPort(li_index), name="llamaindex")
    for mem in (lc, li):
        await mem.write(
            [MemoryItem(c.text, "seed", metadata={**c.metadata, "id": c.id}) for c in SEED],
            ctx=CTX,
        )
        await mem.write([MemoryItem(f"alpha {SECRET}", "seed")], ctx=Ctx(GLOBEX))
    sqlite_dense = VectorMemory(store, name="sqlite")
    inmem_dense = VectorMemory(inmem, name="inmem")
    fm = FileMemory(files)
    sources: dict[str, Any] = {
        "sqlite": sqlite_dense,
        "lexical": LexicalMemory(store),
        "inmem": inmem_dense,
        "files": fm,
        "langchain": lc,
        "llamaindex": li,
        "composite": CompositeMemory([sqlite_dense, inmem_dense, fm]),
        "sequential": SequentialMemory([inmem_dense, sqlite_dense]),
        "cached": CachedMemory(sqlite_dense),
    }
    return Env(tmp, root, outside, files, store, inmem, lc_store, li_index, sources)


def _tree(base: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dirpath, dirnames, filenames in os.walk(base):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(base).as_posix()
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                out[rel] = ("dir",)
            elif not path.is_file():
                out[rel] = ("special",)
            elif path.stat().st_size > 1 << 20:
                out[rel] = ("big", path.stat().st_size)
            else:
                out[rel] = ("file", path.read_bytes())
    return out


def _rows(db: Path) -> list[tuple[Any, ...]]:
    if not db.exists():
        return []
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return conn.execute(
            "SELECT org, domain, id, text, metadata, vector FROM chunks ORDER BY org, domain, id"
        ).fetchall()


async def snapshot(env: Env) -> dict[str, Any]:
    held = {}
    for scope in (ACME, GLOBEX):
        hits = await env.inmem.search("alpha", k=1000, scope=scope)
        held[scope] = sorted((c.id, c.text, sorted(c.metadata.items())) for _, c in hits)
    return {
        "root": await asyncio.to_thread(_tree, env.root),
        "outside": await asyncio.to_thread(_tree, env.outside),
        "sqlite": await asyncio.to_thread(_rows, env.tmp / "store.db"),
        "inmem": held,
        "langchain": sorted(env.lc_store.store),
        "llamaindex": sorted(env.li_index.docstore.docs),
    }


# --- the CLI, run as a user runs it ----------------------------------------------------------


@dataclass
class CliResult:
    code: int
    stderr: str
    before: list[tuple[Any, ...]]
    after: list[tuple[Any, ...]]


def _limit_memory() -> None:  # pragma: no cover - runs in the child
    # A hostile file must be refused, not allocated; cap the child so a regression
    # fails this test instead of the machine.
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


async def cli_ingest(env: Env, *paths: str, extra: tuple[str, ...] = ()) -> CliResult:
    """Ingest a good doc first (so there is something to lose), then the hostile paths."""
    db = env.tmp / "cli.db"
    good = env.tmp / "good.md"
    good.write_text("# Good\n\nharmless alpha text")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        environ = {k: v for k, v in os.environ.items() if not k.startswith("AGENTKIT_")}
        return subprocess.run(
            [sys.executable, "-m", "agentkit.cli", "--store", str(db), "--hashing", *args],
            cwd=env.tmp,
            env=environ,
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=_limit_memory,
        )

    first = await asyncio.to_thread(run, "ingest", str(good))
    assert first.returncode == 0, first.stderr
    before = await asyncio.to_thread(_rows, db)
    result = await asyncio.to_thread(run, "ingest", *extra, *paths)
    after = await asyncio.to_thread(_rows, db)
    return CliResult(result.returncode, result.stderr, before, after)


def cli_refused(pattern: str) -> Callable[[CliResult, Env], None]:
    def check(res: CliResult, env: Env) -> None:
        lines = res.stderr.strip().splitlines()
        assert res.code != 0, "hostile input was accepted"
        assert len(lines) == 1 and lines[0].startswith("agentkit-memory: error: "), res.stderr
        assert "internal error" not in lines[0], lines[0]
        assert re.search(pattern, lines[0]), lines[0]
        assert res.after == res.before, "a refused ingest changed the store"

    return check


def cli_secret_not_ingested(res: CliResult, env: Env) -> None:
    assert "Traceback" not in res.stderr
    assert not any(SECRET in row[3] for row in res.after), (
        "a symlink inside the ingested folder pulled a file from outside it into the store"
    )
    if res.code != 0:
        assert res.after == res.before


# --- expectations ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Raises:
    exc: type[BaseException]
    match: str


Check = Callable[[Any, Env], "Awaitable[None] | None"]


@dataclass(frozen=True)
class Case:
    id: str
    action: Callable[[Env], Awaitable[Any]]
    expect: Raises | Check


def raises(exc: type[BaseException], match: str) -> Raises:
    return Raises(exc, match)


def _item(*args: Any, **kwargs: Any) -> Callable[[Env], Awaitable[Any]]:
    async def act(env: Env) -> Any:
        return MemoryItem(*args, **kwargs)

    return act


def _call(fn: Callable[[Env], Any]) -> Callable[[Env], Awaitable[Any]]:
    async def act(env: Env) -> Any:
        result = fn(env)
        if asyncio.iscoroutine(result):
            result = await result
        return result

    return act


def _query(source: str, query: Any, k: Any = 5, **kw: Any) -> Callable[[Env], Awaitable[Any]]:
    return _call(lambda env: env.sources[source].query(query, k=k, ctx=CTX, **kw))


def returns_what_exists(source: str) -> Check:
    """A gigantic k is an upper bound, not an allocation: the answer is what k=100 gives."""

    async def check(got: Any, env: Env) -> None:
        baseline = await env.sources[source].query("alpha", k=100, ctx=CTX)
        assert got, f"{source}: nothing came back"
        assert [(i.id, i.content) for i in got] == [(i.id, i.content) for i in baseline]
        a_list_without_leaks(got, env)

    return check


def empty(got: Any, env: Env) -> None:
    assert got == [], got


def a_list_without_leaks(got: Any, env: Env) -> None:
    assert isinstance(got, list)
    assert all(SECRET not in i.content for i in got), got
    assert all(i.score is None or math.isfinite(i.score) for i in got)


def same_as_words(query: str) -> Check:
    """FTS5 syntax is data: the hits are exactly those of the query's plain words."""
    words = " ".join(re.findall(r"[^\W_]+", query))

    async def check(got: Any, env: Env) -> None:
        plain = await env.sources["lexical"].query(words, k=50, ctx=CTX) if words else []
        assert [i.id for i in got] == [i.id for i in plain], (query, words)
        a_list_without_leaks(got, env)

    return check


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"x": value}
    return value


def _upsert_meta(meta: Any) -> Callable[[Env], Awaitable[Any]]:
    """A good chunk then a bad one, in one batch: the batch must land whole or not at all."""

    async def act(env: Env) -> Any:
        await env.store.upsert([Chunk("new", "fresh row", {}), Chunk("bad", "t", meta)], scope=ACME)

    return act


def _fm_write(*items: MemoryItem) -> Callable[[Env], Awaitable[Any]]:
    return _call(lambda env: env.fm.write(list(items), ctx=CTX))


SOURCES = [
    "sqlite",
    "lexical",
    "inmem",
    "files",
    "langchain",
    "llamaindex",
    "composite",
    "sequential",
    "cached",
]
FTS = [
    "alpha OR gamma",
    "alpha AND NOT gamma",
    "NOT alpha",
    "NEAR(alpha gamma)",
    "alpha*",
    '"alpha',
    "text:alpha",
    "^alpha",
    "-alpha",
    "(",
    "*",
    "chunks_fts MATCH 'alpha'",
    "alpha\x00gamma",
    "{text}: gamma",
]
SQL = [
    "'; DROP TABLE chunks; --",
    "x' OR '1'='1",
    'alpha"); DELETE FROM chunks; --',
    "%' UNION SELECT org, domain, id, text, metadata, vector FROM chunks --",
]

CASES: list[Case] = [
    # -- LocalFiles: traversal and symlink escapes --------------------------------------
    Case(
        "files-dotdot",
        _call(lambda e: e.files.view("/../outside/secret.txt")),
        raises(PathEscapeError, r"'\.\.'"),
    ),
    Case(
        "files-dotdot-relative",
        _call(lambda e: e.files.view("../outside/secret.txt")),
        raises(PathEscapeError, r"'\.\.'"),
    ),
    Case(
        "files-dotdot-create",
        _call(lambda e: e.files.create("/notes/../../x.txt", "x")),
        raises(PathEscapeError, r"'\.\.'"),
    ),
    Case(
        "files-dotdot-delete",
        _call(lambda e: e.files.delete("/../outside/secret.txt")),
        raises(PathEscapeError, r"'\.\.'"),
    ),
    Case(
        "files-nul",
        _call(lambda e: e.files.view("/notes/a.md\x00.txt")),
        raises(PathEscapeError, "NUL"),
    ),
    Case(
        "files-backslash",
        _call(lambda e: e.files.view("\\..\\outside\\secret.txt")),
        raises(PathEscapeError, "backslash"),
    ),
    Case(
        "files-not-rooted",
        _call(lambda e: e.files.view("notes/a.md")),
        raises(InvalidArgument, "must start with '/'"),
    ),
    Case(
        "files-bytes-path",
        _call(lambda e: e.files.view(b"/notes/a.md")),  # type: ignore[arg-type]
        raises(InvalidArgumentType, "path must be a str"),
    ),
    Case(
        "files-symlink-file-view",
        _call(lambda e: e.files.view("/leak.txt")),
        raises(PathEscapeError, "outside the files root"),
    ),
    Case(
        "files-symlink-dir-view",
        _call(lambda e: e.files.view("/outdir/secret.txt")),
        raises(PathEscapeError, "outside the files root"),
    ),
    Case(
        "files-symlink-file-create",
        _call(lambda e: e.files.create("/leak.txt", "pwned")),
        raises(PathEscapeError, "outside the files root"),
    ),
    Case(
        "files-symlink-dir-create",
        _call(lambda e: e.files.create("/outdir/new.txt", "x")),
        raises(PathEscapeError, "outside the files root"),
    ),
    Case(
        "files-symlink-dir-delete",
        _call(lambda e: e.files.delete("/outdir/secret.txt")),
        raises(PathEscapeError, "outside the files root"),
    ),
    Case(
        "files-non-utf8",
        _call(lambda e: e.files.view("/latin1.txt")),
        raises(InvalidArgument, "not valid UTF-8"),
    ),
    Case(
        "files-huge",
        _call(lambda e: e.files.view("/huge.md")),
        raises(InvalidArgument, "over max_bytes"),
    ),
    Case(
        "files-fifo",
        _call(lambda e: e.files.view("/pipe")),
        raises(InvalidArgument, "not a regular file"),
    ),
    Case(
        "files-non-str-text",
        _call(lambda e: e.files.create("/n.md", 42)),  # type: ignore[arg-type]
        raises(InvalidArgumentType, "text must be a str"),
    ),
    # -- FileMemory over that tree --------------------------------------------------------
    Case(
        "filememory-write-escape",
        _fm_write(
            MemoryItem("ok", "u", metadata={"path": "/notes/new.md"}),
            MemoryItem("x", "u", metadata={"path": "/notes/../../x.md"}),
        ),
        raises(PathEscapeError, r"'\.\.'"),
    ),
    Case(
        "filememory-write-symlink",
        _fm_write(
            MemoryItem("ok", "u", metadata={"path": "/notes/new.md"}),
            MemoryItem("pwned", "u", metadata={"path": "/outdir/secret.txt"}),
        ),
        raises(PathEscapeError, "outside the files root"),
    ),
    Case(
        "filememory-write-path-type",
        _fm_write(MemoryItem("x", "u", metadata={"path": 5})),
        raises(InvalidArgumentType, r"metadata\['path'\]"),
    ),
    Case(
        "filememory-query-skips-escapes-and-junk",
        _query("files", f"{SECRET} alpha caf", k=50),
        a_list_without_leaks,
    ),
    Case(
        "filememory-where-unknown-key-matches-nothing",
        _query("files", "alpha", where={"org": "globex"}),
        empty,
    ),
    # -- the CLI ------------------------------------------------------------------------------
    Case(
        "cli-symlink-file-inside-folder",
        _call(lambda e: cli_ingest(e, "linkedf")),
        cli_secret_not_ingested,
    ),
    Case(
        "cli-symlink-dir-inside-folder",
        _call(lambda e: cli_ingest(e, "linked")),
        cli_secret_not_ingested,
    ),
    Case(
        "cli-non-utf8-after-good-files",
        _call(lambda e: cli_ingest(e, "root/notes", "root/latin1.txt", extra=("--batch", "1"))),
        cli_refused(r"latin1\.txt.*UTF-8"),
    ),
    Case("cli-huge-file", _call(lambda e: cli_ingest(e, "big.txt")), cli_refused(r"big\.txt")),
    Case(
        "cli-missing-file",
        _call(lambda e: cli_ingest(e, "root/notes", "nope.md")),
        cli_refused(r"nope\.md"),
    ),
    Case("cli-unsupported-file", _call(lambda e: cli_ingest(e, "root/pipe")), cli_refused(r"pipe")),
    # -- scores and content ---------------------------------------------------------------
    Case("score-nan", _item("x", "s", float("nan")), raises(InvalidArgument, "finite")),
    Case("score-inf", _item("x", "s", math.inf), raises(InvalidArgument, "finite")),
    Case("score-neg-inf", _item("x", "s", -math.inf), raises(InvalidArgument, "finite")),
    Case("score-str", _item("x", "s", "0.9"), raises(InvalidArgumentType, "score")),
    Case("score-bool", _item("x", "s", True), raises(InvalidArgumentType, "score")),
    Case("content-bytes", _item(b"x", "s"), raises(InvalidArgumentType, "content must be a str")),
    Case("content-none", _item(None, "s"), raises(InvalidArgumentType, "content must be a str")),
    Case("content-int", _item(42, "s"), raises(InvalidArgumentType, "content must be a str")),
    Case(
        "metadata-int-key",
        _item("x", "s", metadata={1: "x"}),
        raises(InvalidArgumentType, "metadata keys must be str"),
    ),
    Case(
        "chunk-text-int",
        _call(lambda e: Chunk("id", 5)),  # type: ignore[arg-type]
        raises(InvalidArgumentType, "Chunk.text must be a str"),
    ),
    Case(
        "write-a-str-not-items",
        _call(lambda e: e.sources["sqlite"].write("abc", ctx=CTX)),
        raises(InvalidArgumentType, "items must be an iterable of MemoryItem"),
    ),
    Case(
        "write-str-element",
        _call(lambda e: e.sources["sqlite"].write([MemoryItem("ok", "u"), "raw"], ctx=CTX)),
        raises(InvalidArgumentType, r"items\[1\]"),
    ),
    Case(
        "upsert-tuple-element",
        _call(lambda e: e.store.upsert([Chunk("n", "ok"), ("id", "text")], scope=ACME)),
        raises(InvalidArgumentType, r"chunks\[1\]"),
    ),
    # -- metadata the SQLite store cannot hold as JSON -----------------------------------
    Case(
        "sqlite-meta-nested-deep",
        _upsert_meta({"deep": _nested(100_000)}),
        raises(InvalidArgument, "deep"),
    ),
    Case(
        "sqlite-meta-datetime",
        _upsert_meta({"when": __import__("datetime").datetime(2026, 1, 1)}),
        raises(InvalidArgument, r"metadata\['when'\] is not JSON"),
    ),
    Case(
        "sqlite-meta-bytes",
        _upsert_meta({"b": b"\x00"}),
        raises(InvalidArgument, r"metadata\['b'\] is not JSON"),
    ),
    Case(
        "sqlite-meta-set",
        _upsert_meta({"s": {1, 2}}),
        raises(InvalidArgument, r"metadata\['s'\] is not JSON"),
    ),
    Case(
        "sqlite-meta-nan",
        _upsert_meta({"n": float("nan")}),
        raises(InvalidArgument, r"metadata\['n'\] is not JSON"),
    ),
    Case(
        "sqlite-meta-object",
        _upsert_meta({"o": object()}),
        raises(InvalidArgument, r"metadata\['o'\] is not JSON"),
    ),
    Case(
        "sqlite-meta-int-key",
        _upsert_meta({1: "x"}),
        raises(InvalidArgument, "metadata key 1 is not a str"),
    ),
    Case(
        "sqlite-meta-via-memory",
        _call(
            lambda e: e.sources["sqlite"].write(
                [MemoryItem("ok", "u"), MemoryItem("x", "u", metadata={"d": {1, 2}})], ctx=CTX
            )
        ),
        raises(InvalidArgument, r"metadata\['d'\] is not JSON"),
    ),
    # -- text that is not valid Unicode (lone surrogates): refused by name, nothing lands ----
    Case(
        "sqlite-text-surrogate",
        _call(lambda e: e.store.upsert([Chunk("new", "ok"), Chunk("bad", "x\ud800")], scope=ACME)),
        raises(InvalidArgument, r"chunk 'bad': text holds a lone surrogate"),
    ),
    Case(
        "sqlite-meta-surrogate",
        _upsert_meta({"tags": ["fine", {"k\udfff": 1}]}),
        raises(InvalidArgument, r"chunk 'bad': metadata\['tags'\]\[1\] has a key"),
    ),
    Case(
        "inmem-id-surrogate",
        _call(lambda e: e.inmem.upsert([Chunk("new", "ok"), Chunk("\udc00", "t")], scope=ACME)),
        raises(InvalidArgument, r"chunks\[1\]: id"),
    ),
    Case(
        "sqlite-surrogate-via-memory",
        _call(
            lambda e: e.sources["sqlite"].write(
                [MemoryItem("ok", "u"), MemoryItem("bad \ud83d", "u")], ctx=CTX
            )
        ),
        raises(InvalidArgument, "lone surrogate"),
    ),
    # -- where filters that look like SQL -----------------------------------------------------
    Case("where-sql-key", _query("sqlite", "alpha", where={"path' OR 1=1 --": "x"}), empty),
    Case("where-like-wildcard", _query("lexical", "alpha", where={"path": "%"}), empty),
    Case(
        "where-not-a-mapping",
        _query("sqlite", "alpha", where=["tag"]),
        raises(InvalidArgumentType, "where must be a mapping"),
    ),
    Case(
        "scope-sql",
        _call(
            lambda e: e.sources["lexical"].query(
                "alpha", k=50, ctx=Ctx(Scope("acme' OR '1'='1", "support"))
            )
        ),
        empty,
    ),
    Case(
        "scope-nul",
        _call(
            lambda e: e.sources["lexical"].query(
                "alpha", k=50, ctx=Ctx(Scope("acme\x00", "support"))
            )
        ),
        empty,
    ),
    Case(
        "query-long-distinct-words",
        _query("lexical", " ".join(f"w{i}" for i in range(5000))),
        a_list_without_leaks,
    ),
    # -- unknown policies ---------------------------------------------------------------------
    Case(
        "policy-composite-on-error",
        _call(lambda e: CompositeMemory([e.sources["inmem"]], on_error="ignore")),  # type: ignore[arg-type]
        raises(InvalidArgument, "unknown on_error 'ignore'"),
    ),
    Case(
        "policy-composite-dedupe",
        _call(lambda e: CompositeMemory([e.sources["inmem"]], dedupe="hash")),  # type: ignore[arg-type]
        raises(InvalidArgument, "unknown dedupe 'hash'"),
    ),
    Case(
        "policy-composite-timeout-nan",
        _call(lambda e: CompositeMemory([e.sources["inmem"]], timeout=float("nan"))),
        raises(InvalidArgument, "timeout"),
    ),
    Case(
        "policy-sequential-on-error",
        _call(lambda e: SequentialMemory([e.sources["inmem"]], on_error="retry")),  # type: ignore[arg-type]
        raises(InvalidArgument, "unknown on_error 'retry'"),
    ),
    Case(
        "policy-readonly-on-write",
        _call(lambda e: ReadOnlyMemory(e.sources["inmem"], on_write="drop")),  # type: ignore[arg-type]
        raises(InvalidArgument, "on_write"),
    ),
    Case(
        "policy-cache-ttl",
        _call(lambda e: CachedMemory(e.sources["inmem"], ttl_seconds=0)),
        raises(InvalidArgument, "ttl_seconds"),
    ),
    Case(
        "policy-compacted-max-items",
        _call(lambda e: CompactedMemory(e.sources["inmem"], _NoCompactor(), max_items=0)),
        raises(InvalidArgument, "max_items"),
    ),
    Case(
        "policy-langchain-filter-style",
        _call(lambda e: LangChainVectorPort(e.lc_store, filter_style="sql")),  # type: ignore[arg-type]
        raises(InvalidArgument, "unknown filter_style 'sql'"),
    ),
]


class _NoCompactor:
    async def compact(self, messages: Any, *, ctx: Ctx) -> Any:
        return messages


# Per-source rows: wrong query types, bad k, and gigantic k (which must allocate nothing
# and return what exists), and SQL-looking text on every source.
for _s in SOURCES:
    CASES += [
        Case(
            f"{_s}-query-none", _query(_s, None), raises(InvalidArgumentType, "query must be a str")
        ),
        Case(
            f"{_s}-query-bytes",
            _query(_s, b"alpha"),
            raises(InvalidArgumentType, "query must be a str"),
        ),
        Case(f"{_s}-k-zero", _query(_s, "alpha", k=0), raises(InvalidArgument, "k must be >= 1")),
        Case(
            f"{_s}-k-negative", _query(_s, "alpha", k=-5), raises(InvalidArgument, "k must be >= 1")
        ),
        Case(
            f"{_s}-k-bool",
            _query(_s, "alpha", k=True),
            raises(InvalidArgumentType, "k must be an int"),
        ),
        Case(
            f"{_s}-k-float",
            _query(_s, "alpha", k=2.0),
            raises(InvalidArgumentType, "k must be an int"),
        ),
        Case(f"{_s}-k-10**12", _query(_s, "alpha", k=10**12), returns_what_exists(_s)),
        Case(f"{_s}-k-2**63", _query(_s, "alpha", k=2**63), returns_what_exists(_s)),
        Case(f"{_s}-k-10**30", _query(_s, "alpha", k=10**30), returns_what_exists(_s)),
        Case(f"{_s}-empty-query", _query(_s, ""), a_list_without_leaks),
        Case(
            f"{_s}-query-surrogate",
            _query(_s, "alpha \ud800"),
            raises(InvalidArgument, "query holds a lone surrogate"),
        ),
        Case(f"{_s}-punctuation-query", _query(_s, "?!*()\"'"), a_list_without_leaks),
    ]
    CASES += [
        Case(f"{_s}-sql-{i}", _query(_s, q, k=50), a_list_without_leaks) for i, q in enumerate(SQL)
    ]
CASES += [
    Case(f"lexical-fts-{i}", _query("lexical", q, k=50), same_as_words(q))
    for i, q in enumerate(FTS)
]


def _prepare(case_id: str, tmp: Path, env: Env) -> None:
    if case_id == "cli-huge-file":
        with open(tmp / "big.txt", "wb") as fh:
            fh.truncate(6 << 30)  # sparse: costs no disk, but 6 GiB to whoever reads it
    if case_id == "cli-symlink-file-inside-folder":
        (tmp / "linkedf").mkdir()
        (tmp / "linkedf" / "own.md").write_text("own alpha words")
        os.symlink(env.outside / "secret.txt", tmp / "linkedf" / "leak.txt")
    if case_id == "cli-symlink-dir-inside-folder":
        (tmp / "linked").mkdir()
        (tmp / "linked" / "own.md").write_text("own alpha words")
        os.symlink(env.outside, tmp / "linked" / "elsewhere")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_hostile_input(case: Case, tmp_path: Path) -> None:
    env = await make_env(tmp_path)
    try:
        await asyncio.to_thread(_prepare, case.id, tmp_path, env)
        check = case.expect
        before = await snapshot(env)
        if isinstance(check, Raises):
            with pytest.raises(check.exc, match=check.match):
                await asyncio.wait_for(case.action(env), timeout=60)
        else:
            result = await asyncio.wait_for(case.action(env), timeout=60)
            verdict = check(result, env)
            if verdict is not None:
                await verdict
        after = await snapshot(env)
        assert after == before, f"{case.id}: stored data changed"
        # The store still opens and answers after whatever the row did.
        assert await env.store.count(scope=ACME) == len(SEED)
    finally:
        await env.store.close()


# --- not hostile, but found while building the table ------------------------------------------


async def test_reading_a_tiny_file_does_not_reserve_the_size_cap(tmp_path: Path) -> None:
    """LocalFiles reads at most ``max_bytes + 1``; for a 10-byte file that must not mean
    allocating 64 MiB (16 concurrent reads in a FileMemory walk would reserve 1 GiB)."""
    import tracemalloc

    (tmp_path / "a.md").write_text("alpha beta")
    files = LocalFiles(tmp_path)
    tracemalloc.start()
    try:
        assert await files.view("/a.md") == "alpha beta"
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, f"viewing a 10-byte file peaked at {peak / 2**20:.1f} MiB"
