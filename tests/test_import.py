"""agentkit-memory import / agentkit.migrate.copy over real saved stores.

Every source is built here with the real library (a persisted LlamaIndex index, a Chroma
persistent folder, a LangChain FAISS save_local folder), its vectors made by a
deterministic embedding that differs from the store's own HashingEmbedder: so a stored
vector that scores 1.0 against the source's vector was reused, one that scores 1.0
against HashingEmbedder(text) was embedded by the store.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from agentkit.cli import main
from agentkit.kernel.ctx import Scope
from agentkit.kernel.errors import InvalidArgument, StoreError
from agentkit.migrate import (
    Record,
    copy,
    from_langchain,
    from_llamaindex,
    read_folder,
)
from agentkit.vector import Chunk, HashingEmbedder, InMemoryVectorStore
from agentkit.vector.sqlite import SQLiteVectorStore

DIM = 256
HASH = HashingEmbedder(DIM)
SCOPE = Scope("acme", "docs")

# Ids, text and metadata a real user's store holds: their own ids, a `source` path, and
# values a careless mapping would change (unicode keys, empty strings, big ints, lists).
RECORDS: dict[str, tuple[str, dict[str, Any]]] = {
    "doc-1#0": (
        "Invoices are sent on the first working day of each month.",
        {"source": "/srv/docs/billing.md", "page": 0, "ratio": -0.25, "draft": False},
    ),
    "ünï/çødé id": (
        "Refunds take five to seven days to reach the card.",
        {"source": "C:\\docs\\refunds.txt", "clé é": "ü", "empty": "", "big": 2**53},
    ),
    "42": (
        "Support answers within one business day.",
        {"source": "https://example.com/support?x=1&y=2", "tags": ["a", "b"], "n": 7},
    ),
}


def skewed(texts: Sequence[str]) -> np.ndarray:
    """The source's model: deterministic, same width, different vectors from HASH."""
    return HASH.embed_sync([f"zz qq skew {t}" for t in texts])


def hashed(text: str) -> np.ndarray:
    return HASH.embed_sync([text])[0]


def cli(*argv: str) -> int:
    return main(list(argv))


async def held(db: Path, scope: Scope = SCOPE) -> dict[str, Chunk]:
    async with SQLiteVectorStore(db, embedder=HASH, read_only=True) as store:
        return {c.id: c for c in await store.get([*RECORDS, "empty-1"], scope=scope)}


async def top(db: Path, vector: np.ndarray, scope: Scope = SCOPE) -> tuple[float, str]:
    async with SQLiteVectorStore(db, embedder=HASH, read_only=True) as store:
        (score, chunk), *_ = await store.search_by_vector(vector, k=1, scope=scope)
        return score, chunk.id


def assert_same_records(found: Mapping[str, Chunk], expected: Mapping[str, Any]) -> None:
    assert set(found) == set(expected)
    for rid, (text, meta) in expected.items():
        assert found[rid].text == text
        assert dict(found[rid].metadata) == meta


async def assert_vectors(db: Path, source: Mapping[str, np.ndarray], *, reused: bool) -> None:
    """Each record's stored vector is the source's (reused) or HASH(text) (embedded)."""
    for rid, vector in source.items():
        text = RECORDS[rid][0]
        mine = hashed(text)
        want = vector if reused else mine
        other = mine if reused else vector
        score, hit = await top(db, want)
        assert hit == rid and score == pytest.approx(1.0, abs=1e-5)
        score, hit = await top(db, other)
        assert not (hit == rid and score > 0.999)


# --- sources built with the real libraries ---------------------------------------------


def llamaindex_folder(path: Path) -> dict[str, np.ndarray]:
    """A VectorStoreIndex over TextNodes with our ids, persisted; returns its vectors."""
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.schema import TextNode

    class Skewed(BaseEmbedding):
        def _get_text_embedding(self, text: str) -> list[float]:
            return [float(x) for x in skewed([text])[0]]

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._get_text_embedding(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_text_embedding(query)

    nodes = [TextNode(id_=rid, text=text, metadata=dict(meta)) for rid, (text, meta) in
             RECORDS.items()]
    index = VectorStoreIndex(
        nodes, embed_model=Skewed(model_name="skewed"),
        storage_context=StorageContext.from_defaults(),
    )
    index.storage_context.persist(persist_dir=str(path))
    store = index.storage_context.vector_store
    return {rid: np.asarray(store.get(rid), dtype=np.float32) for rid in RECORDS}


def chroma_folder(path: Path, *, recorded: str | None = "hashing") -> dict[str, np.ndarray]:
    """Collection "docs" (metadata names `recorded` as its embedder) + a record with no
    document; a second collection "notes" so the folder needs --collection."""
    import chromadb

    client = chromadb.PersistentClient(path=str(path))
    meta = {"embedder": recorded} if recorded else None
    col = client.create_collection("docs", metadata=meta, embedding_function=None)
    vectors = skewed([text for text, _ in RECORDS.values()])
    col.add(
        ids=[*RECORDS, "empty-1"],
        documents=[text for text, _ in RECORDS.values()] + [None],  # type: ignore[list-item]
        metadatas=[m for _, m in RECORDS.values()] + [{"source": "x"}],
        embeddings=[*vectors, skewed(["nothing"])[0]],
    )
    client.create_collection("notes", embedding_function=None).add(
        ids=["n1"], documents=["a note"], embeddings=[skewed(["a note"])[0]]
    )
    return dict(zip(RECORDS, vectors, strict=True))


def faiss_folder(path: Path, *, extra: dict[str, Any] | None = None) -> dict[str, np.ndarray]:
    from langchain_community.vectorstores import FAISS
    from langchain_core.embeddings import Embeddings

    class Skewed(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return skewed(texts).tolist()  # type: ignore[no-any-return]

        def embed_query(self, text: str) -> list[float]:
            return self.embed_documents([text])[0]

    ids = list(RECORDS) + list(extra or {})
    texts = [t for t, _ in RECORDS.values()] + ["a record with a set in it"] * len(extra or {})
    metas = [m for _, m in RECORDS.values()] + list((extra or {}).values())
    FAISS.from_texts(texts, Skewed(), metadatas=metas, ids=ids).save_local(str(path))
    return dict(zip(RECORDS, skewed([t for t, _ in RECORDS.values()]), strict=True))


# --- LlamaIndex --------------------------------------------------------------------------


def test_llamaindex_folder_keeps_everything_and_reembeds_when_the_model_is_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "storage"
    llamaindex_folder(src)
    db = tmp_path / "m.db"
    assert cli("--store", str(db), "--hashing", "--scope", "acme/docs", "import", str(src)) == 0
    out = capsys.readouterr().out
    assert "read 3 record(s) from llamaindex" in out
    assert "wrote 3 (3 new, 0 updated), 0 unchanged, 0 skipped" in out
    assert "0 reused, 3 embedded" in out and "does not record" in out
    assert "verified: the store holds all 3 imported id(s)" in out
    assert_same_records(asyncio.run(held(db)), RECORDS)


async def test_llamaindex_vectors_reused_when_declared(tmp_path: Path) -> None:
    src = tmp_path / "storage"
    vectors = llamaindex_folder(src)
    async with SQLiteVectorStore(tmp_path / "m.db", embedder=HASH) as store:
        report = await copy(read_folder(src), store, scope=SCOPE, source_embedder="hashing")
    assert (report.reused, report.embedded, report.verified) == (3, 0, True)
    assert "'hashing' (declared) is the store's" in report.vectors
    await assert_vectors(tmp_path / "m.db", vectors, reused=True)


async def test_llamaindex_index_object_from_python(tmp_path: Path) -> None:
    from llama_index.core import StorageContext, VectorStoreIndex, load_index_from_storage

    llamaindex_folder(tmp_path / "storage")
    from llama_index.core.embeddings import MockEmbedding

    index = load_index_from_storage(
        StorageContext.from_defaults(persist_dir=str(tmp_path / "storage")),
        embed_model=MockEmbedding(embed_dim=DIM),
    )
    assert isinstance(index, VectorStoreIndex)
    store = InMemoryVectorStore(HASH)
    report = await copy(from_llamaindex(index), store, scope=SCOPE)
    assert (report.read, report.new, report.embedded) == (3, 3, 3)
    assert_same_records({c.id: c for c in await store.get(list(RECORDS), scope=SCOPE)}, RECORDS)


# --- Chroma ------------------------------------------------------------------------------


def test_chroma_folder_recorded_embedder_reuses_vectors_and_skips_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "chroma"
    vectors = chroma_folder(src)
    db = tmp_path / "m.db"
    argv = ["--store", str(db), "--hashing", "--scope", "acme/docs", "import", str(src)]
    # Two collections: the folder alone does not say which one.
    assert cli(*argv) == 1
    err = capsys.readouterr().err
    assert "holds 2 collections ('docs', 'notes'); name one with --collection" in err
    assert not db.exists()

    assert cli(*argv, "--collection", "docs") == 0
    out = capsys.readouterr().out
    assert "read 4 record(s) from chroma" in out
    assert "wrote 3 (3 new, 0 updated), 0 unchanged, 1 skipped" in out
    assert "skipped 1: empty text ('empty-1')" in out
    assert "3 reused, 0 embedded" in out and "'hashing' (recorded)" in out
    assert_same_records(asyncio.run(held(db)), RECORDS)
    asyncio.run(assert_vectors(db, vectors, reused=True))


def test_chroma_other_model_is_reembedded(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    src = tmp_path / "chroma"
    vectors = chroma_folder(src, recorded="sentence-transformers/all-mpnet-base-v2")
    db = tmp_path / "m.db"
    assert cli("--store", str(db), "--hashing", "--scope", "acme/docs", "import", str(src),
               "--collection", "docs") == 0
    out = capsys.readouterr().out
    assert "0 reused, 3 embedded" in out
    assert "from 'sentence-transformers/all-mpnet-base-v2' (recorded), not the store's" in out
    asyncio.run(assert_vectors(db, vectors, reused=False))


def test_rerun_changes_nothing_and_a_changed_record_is_updated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import chromadb

    src = tmp_path / "chroma"
    chroma_folder(src)
    db = tmp_path / "m.db"
    argv = ["--store", str(db), "--hashing", "--scope", "acme/docs", "import", str(src),
            "--collection", "docs"]
    assert cli(*argv) == 0
    capsys.readouterr()
    before = asyncio.run(held(db))
    mtime = (db.stat().st_mtime_ns, db.stat().st_size)

    assert cli(*argv) == 0
    out = capsys.readouterr().out
    assert "wrote 0 (0 new, 0 updated), 3 unchanged, 1 skipped" in out
    assert "0 reused, 0 embedded" in out
    assert asyncio.run(held(db)) == before
    assert (db.stat().st_mtime_ns, db.stat().st_size) == mtime  # not a byte written

    col = chromadb.PersistentClient(path=str(src)).get_collection("docs")
    col.update(ids=["42"], metadatas=[{"n": 8}])  # Chroma merges: other keys stay
    assert cli(*argv) == 0
    out = capsys.readouterr().out
    assert "wrote 1 (0 new, 1 updated), 2 unchanged, 1 skipped" in out
    assert asyncio.run(held(db))["42"].metadata["n"] == 8


# --- FAISS -------------------------------------------------------------------------------


def test_faiss_is_refused_without_trust_pickle_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "faiss"
    faiss_folder(src)
    db = tmp_path / "m.db"
    assert cli("--store", str(db), "--hashing", "import", str(src)) == 1
    err = capsys.readouterr().err
    assert "refusing to load the FAISS folder" in err and "--trust-pickle" in err
    assert not db.exists()
    with pytest.raises(InvalidArgument, match="--trust-pickle"):
        read_folder(src)


def test_faiss_with_trust_pickle_keeps_ids_text_metadata(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "faiss"
    vectors = faiss_folder(src, extra={"odd-set": {"source": "s.md", "tags": {"not", "json"}}})
    db = tmp_path / "m.db"
    argv = ["--store", str(db), "--hashing", "--scope", "acme/docs", "import", str(src),
            "--trust-pickle", "--source-embedder", "hashing"]
    assert cli(*argv) == 0
    out = capsys.readouterr().out
    assert "read 4 record(s) from faiss" in out
    assert "wrote 3 (3 new, 0 updated), 0 unchanged, 1 skipped" in out
    assert "skipped 1: metadata is not JSON-serialisable ('odd-set')" in out
    assert "3 reused, 0 embedded" in out
    assert_same_records(asyncio.run(held(db)), RECORDS)
    asyncio.run(assert_vectors(db, vectors, reused=True))
    assert cli(*argv) == 0
    assert "wrote 0 (0 new, 0 updated), 3 unchanged, 1 skipped" in capsys.readouterr().out


def test_faiss_and_in_memory_langchain_objects(tmp_path: Path) -> None:
    from agentkit_langchain import AgentkitEmbeddings
    from langchain_community.vectorstores import FAISS
    from langchain_core.documents import Document
    from langchain_core.vectorstores import InMemoryVectorStore as LCMemory

    faiss_folder(tmp_path / "faiss")

    class _Never:
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            raise AssertionError("not used")

    loaded = FAISS.load_local(str(tmp_path / "faiss"), _Never(),  # type: ignore[arg-type]
                              allow_dangerous_deserialization=True)
    lc = LCMemory(AgentkitEmbeddings(HASH))
    lc.add_documents([Document(page_content=t, metadata=m) for t, m in RECORDS.values()],
                     ids=list(RECORDS))

    async def go() -> None:
        for obj, reused in ((loaded, 0), (lc, 3)):
            store = InMemoryVectorStore(HASH)
            report = await copy(from_langchain(obj), store, scope=SCOPE)
            assert (report.read, report.new, report.reused, report.verified) == (
                3, 3, reused, True)
            assert_same_records(
                {c.id: c for c in await store.get(list(RECORDS), scope=SCOPE)}, RECORDS)
        # AgentkitEmbeddings over the store's own embedder proves the model: recorded.
        assert from_langchain(lc).embedder == "agentkit.vector.hashing.HashingEmbedder"

    asyncio.run(go())


async def test_chroma_objects_from_langchain_and_llamaindex() -> None:
    import chromadb
    from agentkit_langchain import AgentkitEmbeddings
    from langchain_chroma import Chroma
    from llama_index.core.schema import TextNode
    from llama_index.vector_stores.chroma import ChromaVectorStore

    client = chromadb.EphemeralClient()
    lc = Chroma(collection_name="lc-docs", client=client,
                embedding_function=AgentkitEmbeddings(HASH))
    lc.add_texts([t for t, _ in RECORDS.values()], metadatas=[m for _, m in RECORDS.values()],
                 ids=list(RECORDS))
    # LlamaIndex's Chroma adapter takes flat values only: no list.
    flat = {rid: (t, {k: v for k, v in m.items() if k != "tags"})
            for rid, (t, m) in RECORDS.items()}
    li = ChromaVectorStore(chroma_collection=client.create_collection("li-docs"))
    li.add([TextNode(id_=rid, text=t, metadata=dict(m), embedding=list(skewed([t])[0]))
            for rid, (t, m) in flat.items()])
    for source, reused, expected in ((from_langchain(lc), 3, RECORDS),
                                     (from_llamaindex(li), 0, flat)):
        store = InMemoryVectorStore(HASH)
        report = await copy(source, store, scope=SCOPE)
        assert (report.new, report.reused, report.embedded, report.verified) == (
            3, reused, 3 - reused, True)
        assert_same_records(
            {c.id: c for c in await store.get(list(RECORDS), scope=SCOPE)}, expected)


# --- refusals and the generic path ---------------------------------------------------------


def test_bad_folders_are_refused_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "notes.txt").write_text("hello")
    db = tmp_path / "m.db"
    cases = [
        (junk, "is not a store import can read", "notes.txt"),
        (tmp_path / "missing", "no such folder", "missing"),
        (junk / "notes.txt", "is not a folder", "notes.txt"),
    ]
    for path, message, named in cases:
        assert cli("--store", str(db), "--hashing", "import", str(path)) == 1
        err = capsys.readouterr().err.strip()
        assert err.startswith("agentkit-memory: error: ") and len(err.splitlines()) == 1
        assert message in err and named in err
    assert cli("--store", str(db), "--hashing", "import", str(junk), "--kind", "chroma",
               "--collection", "x") == 1
    assert not db.exists()


def test_missing_package_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    src = tmp_path / "chroma"
    src.mkdir()
    (src / "chroma.sqlite3").write_bytes(b"")
    monkeypatch.setitem(sys.modules, "chromadb", None)
    with pytest.raises(StoreError, match=r"needs the 'chromadb' package.*pip install chromadb"):
        read_folder(src)


async def test_generic_records_skip_with_reasons_and_keep_the_rest() -> None:
    store = InMemoryVectorStore(HASH)
    records = [
        Record("a", "alpha", {"source": "a.md"}),
        Record("a", "alpha again", {}),
        Record("", "no id", {}),
        Record(7, "int id", {}),
        Record("b", "", {}),
        Record("c", None, {}),
        Record("d", "bad \ud800 text", {}),
        Record("e", "nul \x00 inside", {}),
        Record("f", "fine", {"nested": {"k": [1, None]}}, vector=[1.0, 2.0]),
        Record("g", "deep surrogate", {"nested": ["ok", {"k": "x\udc00"}]}),
        Record("h", "surrogate key", {"bad \ud800 key": 1}),
    ]
    report = await copy(records, store, scope=SCOPE, source_embedder="hashing", page=4)
    assert report.read == 11 and report.new == 2 and report.skipped_total == 9
    assert report.skipped == {
        "duplicate id (the first copy was kept)": 1,
        "id is not a non-empty string": 2,
        "empty text": 2,
        "not valid Unicode (lone surrogate)": 3,
        "NUL character in text or metadata": 1,
    }
    # "f" declared the store's model but its vector is 2 wide: embedded, and said so.
    assert (report.reused, report.embedded) == (0, 2)
    got = {c.id: c for c in await store.get(["a", "f"], scope=SCOPE)}
    assert got["a"].text == "alpha" and dict(got["f"].metadata) == {"nested": {"k": [1, None]}}
    # Another scope sees nothing of it.
    assert await store.count(scope=Scope("other", "docs")) == 0


async def test_verification_fails_when_the_store_loses_a_record() -> None:
    class Lossy(InMemoryVectorStore):  # failure injection: drops the last record
        async def upsert_vectors(self, chunks: Any, vectors: Any, *, scope: Scope) -> None:
            await super().upsert_vectors(chunks[:-1], np.asarray(vectors)[:-1], scope=scope)

    report = await copy([Record(str(i), f"text {i}", {}) for i in range(5)], Lossy(HASH),
                         scope=SCOPE)
    assert not report.verified and report.missing == ["4"] and report.missing_count == 1
    assert any(line.startswith("VERIFICATION FAILED: 1 of 5") for line in report.lines())


def test_cli_exits_non_zero_when_verification_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "storage"
    llamaindex_folder(src)
    real = SQLiteVectorStore.upsert_vectors

    async def lossy(self: SQLiteVectorStore, chunks: Any, vectors: Any, *, scope: Scope) -> None:
        await real(self, chunks[1:], np.asarray(vectors)[1:], scope=scope)

    monkeypatch.setattr(SQLiteVectorStore, "upsert_vectors", lossy)
    assert cli("--store", str(tmp_path / "m.db"), "--hashing", "import", str(src)) == 1
    assert "VERIFICATION FAILED: 1 of 3 id(s) are not in the store" in capsys.readouterr().out


async def test_sqlite_upsert_vectors_checks_and_normalises(tmp_path: Path) -> None:
    async with SQLiteVectorStore(tmp_path / "v.db", embedder=HashingEmbedder(4)) as store:
        await store.upsert_vectors([Chunk("a", "alpha", {"k": 1})], [[3.0, 0, 0, 4.0]],
                                   scope=SCOPE)
        for bad in ([[1.0, 2.0]], [[np.nan, 0, 0, 1]]):
            with pytest.raises(InvalidArgument):
                await store.upsert_vectors([Chunk("b", "beta")], bad, scope=SCOPE)
        (score, chunk), = await store.search_by_vector([0.6, 0, 0, 0.8], k=5, scope=SCOPE)
        assert chunk == Chunk("a", "alpha", {"k": 1}) and score == pytest.approx(1.0)
        assert await store.count() == 1


def test_import_command_runs_as_a_process(tmp_path: Path) -> None:
    """The console entry point end to end (no terminal: no progress bar noise)."""
    src = tmp_path / "storage"
    llamaindex_folder(src)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTKIT_")}
    env["AGENTKIT_EMBEDDER"] = "hashing"
    done = subprocess.run(
        [sys.executable, "-m", "agentkit.cli", "--store", str(tmp_path / "m.db"), "import",
         str(src), "--kind", "llamaindex"],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "verified: the store holds all 3 imported id(s)" in done.stdout
    assert done.stderr == ""


async def test_flat_metadata_is_screened_like_nested_metadata() -> None:
    # Flat metadata of plain values takes a quick path; each way it can be unstorable
    # must still be skipped under the same reason as when it sits deeper, and valid
    # non-ASCII text must be kept exactly.
    store = InMemoryVectorStore(HASH)
    records = [
        Record("ok", "kept", {"title": "Café – naïve 日本", "n": 3, "f": 0.5, "b": False,
                              "none": None}),
        Record("nul-value", "t", {"k": "a\x00b"}),
        Record("nul-key", "t", {"a\x00": 1}),
        Record("sur-value", "t", {"k": "x\udc00"}),
        Record("nan", "t", {"k": float("nan")}),
        Record("inf", "t", {"k": float("inf")}),
        Record("bytes", "t", {"k": b"raw"}),
        Record("int-key", "t", {1: "one"}),
        # Several problems: the metadata's shape is named first, then NUL, then Unicode.
        Record("both", "nul \x00 text", {"k": "x\udc00"}),
        Record("shape-first", "nul \x00 text", {"k": {1, 2}}),
        Record("literal", "backslash text", {"path": "C:\\u0041"}),
    ]
    report = await copy(records, store, scope=SCOPE)
    assert report.skipped == {
        "NUL character in text or metadata": 3,
        "not valid Unicode (lone surrogate)": 1,
        "metadata is not JSON-serialisable": 4,
        "metadata is not a mapping with string keys": 1,
    }
    assert report.examples["NUL character in text or metadata"] == [
        "nul-value", "nul-key", "both"
    ]
    assert report.new == 2 and report.verified
    got = {c.id: c for c in await store.get(["ok", "literal"], scope=SCOPE)}
    assert dict(got["ok"].metadata) == {"title": "Café – naïve 日本", "n": 3, "f": 0.5,
                                        "b": False, "none": None}
    assert dict(got["literal"].metadata) == {"path": "C:\\u0041"}


# --- symlinks leading out of the folder ------------------------------------------------


def _link_out(folder: Path, name: str, elsewhere: Path) -> Path:
    """Move ``folder/name`` to ``elsewhere`` and leave a symlink to it in its place."""
    elsewhere.mkdir(exist_ok=True)
    target = elsewhere / name
    (folder / name).rename(target)
    (folder / name).symlink_to(target, target_is_directory=target.is_dir())
    return target


@pytest.mark.parametrize(
    ("kind", "name", "extra"),
    [
        ("llamaindex", "docstore.json", ()),
        ("chroma", "chroma.sqlite3", ("--collection", "docs")),
        ("chroma", "<segment folder>", ("--collection", "docs")),
        ("faiss", "index.pkl", ("--trust-pickle",)),
    ],
)
def test_import_refuses_a_symlink_out_of_the_folder_and_imports_nothing(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    kind: str,
    name: str,
    extra: tuple[str, ...],
) -> None:
    src = tmp_path / kind
    {"llamaindex": llamaindex_folder, "chroma": chroma_folder, "faiss": faiss_folder}[kind](src)
    if name == "<segment folder>":  # Chroma keeps each collection's vectors in a folder
        name = next(p.name for p in src.iterdir() if p.is_dir())
    _link_out(src, name, tmp_path / "elsewhere")
    db = tmp_path / "m.db"
    assert cli("--store", str(db), "--hashing", "import", str(src), *extra) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("agentkit-memory: error: ") and len(err.splitlines()) == 1
    assert "symlink" in err and "outside the folder" in err
    assert str(src / name) in err and str(tmp_path / "elsewhere" / name) in err
    assert not db.exists()
    with pytest.raises(InvalidArgument, match="outside the folder"):
        read_folder(src, kind=kind, trust_pickle=True)


def test_llamaindex_docstore_linked_to_another_folder_never_imports_its_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reported case: a persist dir whose docstore.json is another index's file."""
    from llama_index.core import MockEmbedding, StorageContext, VectorStoreIndex
    from llama_index.core.schema import TextNode

    theirs = tmp_path / "theirs"
    VectorStoreIndex(
        [TextNode(id_="theirs-1", text="another team's private record")],
        storage_context=StorageContext.from_defaults(),
        embed_model=MockEmbedding(embed_dim=8),
    ).storage_context.persist(persist_dir=str(theirs))
    mine = tmp_path / "mine"
    llamaindex_folder(mine)
    (mine / "docstore.json").rename(mine / "own-docstore.json")
    (mine / "docstore.json").symlink_to(theirs / "docstore.json")
    db = tmp_path / "m.db"
    assert cli("--store", str(db), "--hashing", "import", str(mine)) == 1
    assert str(mine / "docstore.json") in capsys.readouterr().err
    assert not db.exists()
    # A link that stays inside the folder is the folder's own file: imported as usual.
    (mine / "docstore.json").unlink()
    (mine / "docstore.json").symlink_to("own-docstore.json")
    assert cli("--store", str(db), "--hashing", "--scope", "acme/docs", "import", str(mine)) == 0
    assert "verified: the store holds all 3 imported id(s)" in capsys.readouterr().out
    assert_same_records(asyncio.run(held(db)), RECORDS)
