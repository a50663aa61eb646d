"""``stats().bytes_on_disk`` of the SQLite store is everything it keeps on disk: the
file, its ``-wal`` and ``-shm`` side files and the lexical indexes in ``<file>.lexical/``
(which can outweigh the rows), so a user sizing a disk or a backup is not misled."""

from __future__ import annotations

from pathlib import Path

from agentkit.kernel import Scope
from agentkit.vector import Chunk, HashingEmbedder, SQLiteVectorStore
from agentkit.vector.stats import bytes_under

ACME = Scope("acme", "support")
GLOBEX = Scope("globex", "support")


def on_disk(db: Path) -> tuple[int, int]:
    """(bytes of the file and its side files, bytes under the lexical folder)."""
    files = sum(p.stat().st_size for p in db.parent.iterdir()
                if p.is_file() and p.name in {db.name, db.name + "-wal", db.name + "-shm"})
    lexical = sum(p.stat().st_size for p in (db.parent / (db.name + ".lexical")).rglob("*")
                  if p.is_file())
    return files, lexical


async def test_size_on_disk_counts_the_wal_side_files_and_the_lexical_folder(
    tmp_path: Path,
) -> None:
    db = tmp_path / "store.db"
    docs = [Chunk(f"c{i}", f"row {i} about walrus tusks and arctic ice {i % 7}")
            for i in range(300)]
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=32)) as store:
        await store.upsert(docs, scope=ACME)
        await store.upsert(docs[:50], scope=GLOBEX)
        assert (db.parent / "store.db-wal").exists()  # the writer keeps its WAL open
        files, lexical = on_disk(db)
        assert lexical > 0 and files > db.stat().st_size
        assert (await store.stats()).bytes_on_disk == files + lexical
    # Read-only, as the CLI's stats opens it, after the writer closed.
    async with SQLiteVectorStore(db, embedder=None, read_only=True) as ro:
        reported = (await ro.stats()).bytes_on_disk
        files, lexical = on_disk(db)
        assert lexical > 0
        assert reported == files + lexical


def test_bytes_under_walks_folders_and_ignores_missing_paths(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"x" * 10)
    nested = tmp_path / "dir" / "sub"
    nested.mkdir(parents=True)
    (nested / "b").write_bytes(b"y" * 7)
    (tmp_path / "dir" / "c").write_bytes(b"z" * 5)
    assert bytes_under([tmp_path / "a", tmp_path / "dir", tmp_path / "missing"]) == 22
    assert bytes_under([]) == 0
