"""SQLiteVectorStore: the durable store behind the CLI, checked as a user relies on it."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from agentkit.kernel import Scope
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType, StoreError
from agentkit.vector import Chunk, HashingEmbedder, LexicalPort, SQLiteVectorStore, VectorPort

ACME = Scope("acme", "support")
GLOBEX = Scope("globex", "support")

DOCS = [
    Chunk("cat", "the cat sat on the warm mat by the fire", {"kind": "pet", "n": 1}),
    Chunk("dog", "a dog chased the ball across the park", {"kind": "pet", "n": 2}),
    Chunk("tax", "income tax returns are due in april", {"kind": "admin", "n": 3}),
    Chunk("bus", "the night bus leaves the station at midnight", {"kind": "travel"}),
]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


async def filled(db: Path, scope: Scope = ACME) -> SQLiteVectorStore:
    store = SQLiteVectorStore(db, embedder=HashingEmbedder())
    await store.upsert(DOCS, scope=scope)
    return store


async def test_is_a_vector_and_lexical_port(db: Path) -> None:
    async with SQLiteVectorStore(db, embedder=HashingEmbedder()) as store:
        assert isinstance(store, VectorPort)
        assert isinstance(store, LexicalPort)


async def test_upsert_search_delete_round_trip(db: Path) -> None:
    store = await filled(db)
    try:
        hits = await store.search("cat on a mat", k=2, scope=ACME)
        assert hits[0][1].id == "cat"
        assert hits[0][0] >= hits[1][0]
        assert hits[0][1].metadata == {"kind": "pet", "n": 1}
        assert hits[0][1].text == DOCS[0].text
        lex = await store.lexical_search("ball park", k=5, scope=ACME)
        assert [c.id for _, c in lex] == ["dog"]
        assert lex[0][0] > 0  # positive, higher is better
        await store.delete(["dog", "never-existed"], scope=ACME)
        assert "dog" not in [c.id for _, c in await store.search("dog ball", k=5, scope=ACME)]
        assert await store.lexical_search("ball park", k=5, scope=ACME) == []
        assert await store.count(scope=ACME) == 3
    finally:
        await store.close()


async def test_upsert_replaces_text_metadata_vector_and_words(db: Path) -> None:
    store = await filled(db)
    try:
        fresh = Chunk("cat", "quarterly revenue grew", {"kind": "finance"})
        await store.upsert([fresh], scope=ACME)
        assert await store.count(scope=ACME) == len(DOCS)
        assert await store.lexical_search("warm mat", k=5, scope=ACME) == []
        [(_, hit)] = await store.lexical_search("revenue", k=5, scope=ACME)
        assert (hit.id, hit.metadata) == ("cat", {"kind": "finance"})
        top = await store.search("quarterly revenue", k=1, scope=ACME)
        assert top[0][1].id == "cat"
    finally:
        await store.close()


async def test_where_filters_dense_and_lexical(db: Path) -> None:
    store = await filled(db)
    try:
        dense = await store.search("the", k=10, scope=ACME, where={"kind": "pet"})
        assert {c.id for _, c in dense} == {"cat", "dog"}
        anyof = await store.search("the", k=10, scope=ACME, where={"kind": ["admin", "travel"]})
        assert {c.id for _, c in anyof} == {"tax", "bus"}
        # a missing key never matches, and True is not 1
        assert await store.search("the", k=10, scope=ACME, where={"missing": None}) == []
        assert await store.search("the", k=10, scope=ACME, where={"n": True}) == []
        lex = await store.lexical_search("the", k=10, scope=ACME, where={"kind": "travel"})
        assert [c.id for _, c in lex] == ["bus"]
        limited = await store.lexical_search("the", k=1, scope=ACME, where={"kind": "pet"})
        assert len(limited) == 1 and limited[0][1].metadata["kind"] == "pet"
    finally:
        await store.close()


async def test_a_batch_with_one_bad_item_lands_nothing(db: Path) -> None:
    store = await filled(db)
    try:
        before = await store.search("cat", k=10, scope=ACME)
        bad = [
            Chunk("cat", "overwritten?"),
            Chunk("new", "fresh row"),
            Chunk("oops", "x", {"when": object()}),
        ]
        with pytest.raises(InvalidArgument, match="when"):
            await store.upsert(bad, scope=ACME)
        assert await store.count(scope=ACME) == len(DOCS)
        assert await store.search("cat", k=10, scope=ACME) == before
        with pytest.raises(InvalidArgument, match="not a str"):
            await store.upsert([Chunk("k", "x", {1: "int key"})], scope=ACME)  # type: ignore[dict-item]
        with pytest.raises(InvalidArgumentType):
            await store.upsert([DOCS[0], "not a chunk"], scope=ACME)
    finally:
        await store.close()


class _BrokenEmbedder:
    """Returns the wrong shape: the store must notice before writing anything."""

    dim = 256

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.zeros((len(texts) - 1, self.dim), dtype=np.float32)


async def test_failed_embedding_writes_nothing(db: Path) -> None:
    async with SQLiteVectorStore(db, embedder=_BrokenEmbedder()) as store:
        with pytest.raises(StoreError, match="shape"):
            await store.upsert([Chunk("a", "one"), Chunk("b", "two")], scope=ACME)
        assert await store.count() == 0


async def test_database_failure_mid_batch_rolls_back(db: Path) -> None:
    store = await filled(db)
    try:
        # Another connection adds a trigger that fails on the third insert.
        with sqlite3.connect(db) as other:
            other.execute(
                "CREATE TRIGGER boom BEFORE INSERT ON chunks WHEN new.id = 'third' "
                "BEGIN SELECT RAISE(ABORT, 'injected failure'); END"
            )
        batch = [Chunk("first", "one"), Chunk("second", "two"), Chunk("third", "three")]
        with pytest.raises(StoreError, match="nothing written"):
            await store.upsert(batch, scope=ACME)
        assert await store.count(scope=ACME) == len(DOCS)
        assert await store.lexical_search("first second", k=5, scope=ACME) == []
    finally:
        await store.close()


@pytest.mark.parametrize(
    "query",
    ['"', 'cat"', "AND", "cat AND", "NEAR(", "NEAR(cat dog)", "*", "cat*", "-", "-cat",
     "cat OR", "NOT", "(", ")", "^cat", "kind:pet", "{cat}", "'", "\x00", "  "],
)
async def test_fts_syntax_in_queries_is_just_text(db: Path, query: str) -> None:
    store = await filled(db)
    try:
        hits = await store.lexical_search(query, k=5, scope=ACME)
        assert all(isinstance(score, float) for score, _ in hits)
        if "cat" in query:
            assert "cat" in {c.id for _, c in hits}
    finally:
        await store.close()


async def test_empty_or_wordless_query_returns_nothing(db: Path) -> None:
    store = await filled(db)
    try:
        assert await store.lexical_search("", k=3, scope=ACME) == []
        assert await store.lexical_search("?! ...", k=3, scope=ACME) == []
    finally:
        await store.close()


async def test_bad_arguments_are_refused_by_name(db: Path) -> None:
    async with SQLiteVectorStore(db, embedder=HashingEmbedder()) as store:
        with pytest.raises(InvalidArgument, match="k"):
            await store.search("x", k=0, scope=ACME)
        with pytest.raises(InvalidArgumentType, match="scope"):
            await store.search("x", k=1, scope=("acme", "support"))
        with pytest.raises(InvalidArgumentType, match="where"):
            await store.lexical_search("x", k=1, scope=ACME, where=["kind"])
        with pytest.raises(InvalidArgumentType, match="ids"):
            await store.delete("cat", scope=ACME)


async def test_reopen_keeps_everything(db: Path) -> None:
    store = await filled(db)
    await store.close()
    async with SQLiteVectorStore(db, embedder=HashingEmbedder()) as again:
        assert await again.count(scope=ACME) == len(DOCS)
        assert (await again.search("warm mat", k=1, scope=ACME))[0][1].id == "cat"
        assert (await again.lexical_search("april", k=1, scope=ACME))[0][1].id == "tax"


async def test_other_embedders_are_refused_on_reopen(db: Path) -> None:
    await (await filled(db)).close()
    with pytest.raises(StoreError, match=r"dim 256.*dim 64"):
        async with SQLiteVectorStore(db, embedder=HashingEmbedder(64)):
            pass

    class Named(HashingEmbedder):
        model_name = "some-other-model"

    with pytest.raises(StoreError, match="some-other-model"):
        async with SQLiteVectorStore(db, embedder=Named()):
            pass


async def test_lexical_only_needs_no_embedder(db: Path) -> None:
    await (await filled(db)).close()
    async with SQLiteVectorStore(db, embedder=None, create=False) as store:
        assert (await store.lexical_search("april", k=1, scope=ACME))[0][1].id == "tax"
        with pytest.raises(StoreError, match="embedder"):
            await store.search("april", k=1, scope=ACME)


async def test_missing_store_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no store"):
        await SQLiteVectorStore(tmp_path / "nope.db", embedder=None, create=False).open()
    with pytest.raises(StoreError, match="does not exist"):
        await SQLiteVectorStore(tmp_path / "no" / "dir.db", embedder=None, create=False).open()
    not_sqlite = tmp_path / "junk.db"
    not_sqlite.write_text("this is not a database " * 100)
    with pytest.raises(StoreError, match="not a usable"):
        await SQLiteVectorStore(not_sqlite, embedder=None).open()
    # creating makes the parent folder
    async with SQLiteVectorStore(tmp_path / "a" / "b" / "new.db", embedder=None) as store:
        assert await store.count() == 0


async def test_closed_store_refuses_work(db: Path) -> None:
    store = await filled(db)
    await store.close()
    await store.close()  # twice is fine
    with pytest.raises(StoreError, match="closed"):
        await store.count()


async def test_wal_mode_and_meta(db: Path) -> None:
    await (await filled(db)).close()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        meta = dict(conn.execute("SELECT key, value FROM meta"))
    assert meta["dim"] == "256"
    assert meta["embedder"].endswith("HashingEmbedder")


_READER = textwrap.dedent(
    """
    import asyncio, sys
    from agentkit.kernel import Scope
    from agentkit.vector import HashingEmbedder, SQLiteVectorStore

    async def main():
        seen = []
        async with SQLiteVectorStore(sys.argv[1], embedder=HashingEmbedder(), create=False) as s:
            print("ready", flush=True)
            while True:
                # The writer may land a batch between two reads, so bound the search
                # by counts taken on either side of it: stale data falls below.
                before = await s.count(scope=Scope("acme", "support"))
                hits = await s.search("row", k=3, scope=Scope("acme", "support"))
                n = await s.count(scope=Scope("acme", "support"))
                assert min(3, before) <= len(hits) <= min(3, n), (before, len(hits), n)
                assert (n - 1) % 25 == 0, n
                seen.append(n)
                if n >= int(sys.argv[2]):
                    break
                await asyncio.sleep(0.005)
        print(len(set(seen)), seen[-1])

    asyncio.run(main())
    """
)


async def test_another_process_reads_while_we_write(db: Path) -> None:
    store = SQLiteVectorStore(db, embedder=HashingEmbedder())
    await store.upsert([Chunk("seed", "row seed")], scope=ACME)
    batches = 20
    total = 1 + batches * 25
    reader = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _READER, str(db), str(total),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert reader.stdout is not None
        assert (await asyncio.wait_for(reader.stdout.readline(), 30)).strip() == b"ready"
        for b in range(batches):
            await store.upsert(
                [Chunk(f"r{b}-{i}", f"row {b} {i}") for i in range(25)], scope=ACME
            )
            await asyncio.sleep(0.01)
        out, err = await asyncio.wait_for(reader.communicate(), 60)
    finally:
        if reader.returncode is None:
            reader.kill()
            await reader.wait()
        await store.close()
    assert reader.returncode == 0, err.decode()
    distinct, last = map(int, out.split())
    assert last == total
    assert distinct > 1  # it saw intermediate states, not just the end


_WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from agentkit.kernel import Scope
    from agentkit.vector import Chunk, HashingEmbedder, SQLiteVectorStore

    async def main():
        async with SQLiteVectorStore(sys.argv[1], embedder=HashingEmbedder()) as s:
            await s.upsert([Chunk("cat", "zebra crossing")], scope=Scope("acme", "support"))
            await s.delete(["dog"], scope=Scope("acme", "support"))

    asyncio.run(main())
    """
)


async def test_cached_vectors_follow_another_process_writes(db: Path) -> None:
    store = await filled(db)
    try:
        assert (await store.search("warm mat", k=1, scope=ACME))[0][1].id == "cat"  # cached
        writer = await asyncio.create_subprocess_exec(
            sys.executable, "-c", _WRITER, str(db), stderr=asyncio.subprocess.PIPE
        )
        _, err = await asyncio.wait_for(writer.communicate(), 60)
        assert writer.returncode == 0, err.decode()
        top = await store.search("zebra crossing", k=1, scope=ACME)
        assert top[0][1].text == "zebra crossing"
        ids = {c.id for _, c in await store.search("the", k=10, scope=ACME)}
        assert "dog" not in ids and len(ids) == len(DOCS) - 1
    finally:
        await store.close()


async def test_unchanged_text_is_not_re_embedded(db: Path) -> None:
    class Counting(HashingEmbedder):
        texts = 0

        async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
            Counting.texts += len(texts)
            return await super().embed(texts)

    async with SQLiteVectorStore(db, embedder=Counting()) as store:
        await store.upsert(DOCS, scope=ACME)
        assert Counting.texts == len(DOCS)
        changed = Chunk("cat", DOCS[0].text, {"kind": "retagged"})
        await store.upsert([changed, Chunk("new", "brand new")], scope=ACME)
        assert Counting.texts == len(DOCS) + 1  # only the new text
        [(_, hit)] = await store.search("warm mat", k=1, scope=ACME, where={"kind": "retagged"})
        assert hit.id == "cat"


async def test_queries_run_concurrently_off_the_loop(db: Path) -> None:
    store = await filled(db)
    try:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0)
                ticks += 1

        task = asyncio.create_task(ticker())
        many = [Chunk(f"bulk{i}", f"bulk text number {i}") for i in range(400)]
        await store.upsert(many, scope=GLOBEX)
        task.cancel()
        assert ticks > 10  # the loop kept running while sqlite worked
        results = await asyncio.gather(
            *(store.lexical_search("bulk number", k=3, scope=GLOBEX) for _ in range(5))
        )
        assert all(len(r) == 3 for r in results)
    finally:
        await store.close()


@pytest.mark.parametrize("k", [5, 40])
async def test_lexical_ranking_is_stemmed_bm25_over_the_scope_alone(db: Path, k: int) -> None:
    """Scores are tantivy's BM25 with English stemming over this scope's texts only:
    another tenant's documents holding the same words change nothing."""
    import tantivy

    words = ["apple", "banana", "cherry", "grape", "lemon", "mango", "peach", "plum"]
    chunks = [
        Chunk(f"d{i}", f"the {words[i % 8]}s and the {words[(i * 3) % 8]} of the {i} garden")
        for i in range(40)
    ]
    query = "the apples of the gardens and the plum"
    async with SQLiteVectorStore(db, embedder=HashingEmbedder()) as store:
        await store.upsert(chunks, scope=ACME)
        await store.upsert([Chunk(f"g{i}", "apple apple plum") for i in range(30)], scope=GLOBEX)
        ours = await store.lexical_search(query, k=k, scope=ACME)
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("text", stored=True, tokenizer_name="en_stem")
    builder.add_text_field("id", stored=True)
    schema = builder.build()
    index = tantivy.Index(schema)
    writer = index.writer()
    for chunk in chunks:
        writer.add_document(tantivy.Document(text=chunk.text, id=chunk.id))
    writer.commit()
    index.reload()
    searcher = index.searcher()
    hits = searcher.search(index.parse_query(query, ["text"]), k).hits
    want = sorted((round(score, 4), searcher.doc(addr)["id"][0]) for score, addr in hits)
    assert len(ours) == k
    assert sorted((round(s, 4), c.id) for s, c in ours) == want


LONE_SURROGATES = [
    pytest.param(Chunk("t", "lone \ud800 surrogate"), r"chunk 't'.*text", id="text"),
    pytest.param(Chunk("x\udfff", "fine"), r"chunks\[1\].*id", id="id"),
    pytest.param(Chunk("mk", "fine", {"k\ud800": 1}), r"chunk 'mk'.*metadata", id="meta-key"),
    pytest.param(
        Chunk("mv", "fine", {"outer": {"list": ["ok", ("bad \udc80",)]}}),
        r"chunk 'mv'.*metadata",
        id="meta-nested-value",
    ),
]


@pytest.mark.parametrize(("bad", "names"), LONE_SURROGATES)
async def test_lone_surrogates_are_refused_naming_the_chunk(
    db: Path, bad: Chunk, names: str
) -> None:
    store = await filled(db)
    try:
        with pytest.raises(InvalidArgument, match=names):
            await store.upsert([Chunk("new", "fresh row"), bad], scope=ACME)
        assert await store.count(scope=ACME) == len(DOCS)
        assert await store.get(["new"], scope=ACME) == []
    finally:
        await store.close()


async def test_queries_ids_and_filters_with_lone_surrogates_are_refused(db: Path) -> None:
    store = await filled(db)
    try:
        with pytest.raises(InvalidArgument, match="query"):
            await store.search("cat \ud800", k=2, scope=ACME)
        with pytest.raises(InvalidArgument, match="query"):
            await store.lexical_search("cat \ud800", k=2, scope=ACME)
        with pytest.raises(InvalidArgument, match="where"):
            await store.lexical_search("cat", k=2, scope=ACME, where={"kind": "p\udc00t"})
        with pytest.raises(InvalidArgument, match=r"ids\[1\]"):
            await store.delete(["cat", "\ud800"], scope=ACME)
        with pytest.raises(InvalidArgument, match=r"ids\[0\]"):
            await store.get(["\ud800"], scope=ACME)
        with pytest.raises(InvalidArgument, match="scope"):
            await store.search("cat", k=2, scope=Scope("ac\ud800me", "support"))
        assert await store.count(scope=ACME) == len(DOCS)
    finally:
        await store.close()


def _strip_generations(db: Path) -> None:
    """Make ``db`` look like a file written before generation counters existed."""
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        for trigger in ("chunks_gen_ai", "chunks_gen_ad", "chunks_gen_au"):
            conn.execute(f"DROP TRIGGER {trigger}")
        conn.execute("DROP TABLE generations")
        conn.execute("DROP TABLE file_generation")
    finally:
        conn.close()


async def test_a_file_from_before_generations_is_read_correctly(db: Path) -> None:
    await (await filled(db)).close()
    _strip_generations(db)
    # Read-only: nothing is added to the file, and nothing cached can go stale.
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(), read_only=True) as reader:
        assert (await reader.search("warm mat", k=1, scope=ACME))[0][1].id == "cat"
        with sqlite3.connect(db) as other:
            other.execute("UPDATE chunks SET text = 'zebra crossing' WHERE id = 'cat'")
        [(_, hit)] = await reader.lexical_search("zebra", k=1, scope=ACME)
        assert hit.id == "cat"
        top = await reader.search("warm mat", k=4, scope=ACME)
        assert {c.id: c.text for _, c in top}["cat"] == "zebra crossing"
    with sqlite3.connect(db) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert "generations" not in tables
    # A writer installs the counters; from then on every writer's change bumps them.
    async with SQLiteVectorStore(db, embedder=HashingEmbedder()) as store:
        assert await store.count(scope=ACME) == len(DOCS)
        assert len(await store.search("the", k=10, scope=ACME)) == len(DOCS)
        with sqlite3.connect(db) as other:
            other.execute("DELETE FROM chunks WHERE id = 'dog'")
        assert len(await store.search("the", k=10, scope=ACME)) == len(DOCS) - 1
