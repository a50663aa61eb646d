"""Many writers and readers at once: through one pool, and from two processes."""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap
import time
from collections.abc import Callable

import psycopg
from psycopg import sql

from agentkit.kernel import Scope
from agentkit.vector import Chunk
from agentkit.vector.postgres import COPY_THRESHOLD, PostgresVectorStore

ACME = Scope("acme", "support")
GLOBEX = Scope("globex", "support")


async def test_pool_runs_statements_side_by_side(
    make_store: Callable[..., PostgresVectorStore], pg_url: str, collection: str
) -> None:
    store = make_store(max_size=8)
    await store.count()
    # Every insert statement sleeps 0.3 s on the server: overlap is the only way to
    # finish eight of them in well under 8 * 0.3 s.
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "CREATE OR REPLACE FUNCTION agentkit_slow() RETURNS trigger AS $$"
            " BEGIN PERFORM pg_sleep(0.3); RETURN NULL; END $$ LANGUAGE plpgsql"
        )
        conn.execute(
            sql.SQL(
                "CREATE TRIGGER slow AFTER INSERT ON {} FOR EACH STATEMENT"
                " EXECUTE FUNCTION agentkit_slow()"
            ).format(sql.Identifier(collection))
        )
    started = time.perf_counter()
    await asyncio.gather(
        *(store.upsert([Chunk(f"w{i}", f"writer {i}")], scope=ACME) for i in range(8))
    )
    elapsed = time.perf_counter() - started
    assert await store.count(scope=ACME) == 8
    assert elapsed < 8 * 0.3 / 2, f"writes did not overlap ({elapsed:.2f}s)"


async def test_many_concurrent_writers_and_readers_lose_nothing(
    make_store: Callable[..., PostgresVectorStore],
) -> None:
    store = make_store(max_size=6)
    await store.upsert([Chunk("seed", "seed text for readers")], scope=GLOBEX)

    async def writer(w: int) -> None:
        for batch in range(5):
            await store.upsert(
                [Chunk(f"w{w}-{batch}-{j}", f"writer {w} batch {batch} row {j}") for j in range(8)],
                scope=ACME,
            )

    async def reader(r: int) -> int:
        found = 0
        for _ in range(5):
            hits = await store.search(f"writer {r % 10} row", k=5, scope=ACME)
            assert all(c.id.startswith("w") for _, c in hits)  # never the other tenant
            lex = await store.lexical_search("seed readers", k=5, scope=GLOBEX)
            assert [c.id for _, c in lex] == ["seed"]
            found += len(hits)
        return found

    results = await asyncio.gather(
        *(writer(w) for w in range(10)), *(reader(r) for r in range(20))
    )
    assert await store.count(scope=ACME) == 10 * 5 * 8
    assert await store.count(scope=GLOBEX) == 1
    assert sum(r for r in results if r is not None) > 0


_WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from agentkit.kernel import Scope
    from agentkit.vector import Chunk, HashingEmbedder
    from agentkit.vector.postgres import PostgresVectorStore

    async def main(url, collection, tag, n, batch):
        async with PostgresVectorStore(
            url, embedder=HashingEmbedder(dim=64), collection=collection, max_size=3
        ) as store:
            for start in range(0, n, batch):
                rows = [
                    Chunk(f"{tag}-{i}", f"process {tag} wrote row {i}", {"tag": tag})
                    for i in range(start, min(n, start + batch))
                ]
                await store.upsert(rows, scope=Scope("acme", "support"))

    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])))
    """
)


async def test_two_processes_write_while_this_one_reads(
    make_store: Callable[..., PostgresVectorStore], pg_url: str, collection: str
) -> None:
    store = make_store()
    await store.count()  # the schema exists before the writers race for it
    n = COPY_THRESHOLD * 2 + 50
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [
        # One writer goes through COPY batches, the other through small INSERT batches.
        await asyncio.create_subprocess_exec(
            sys.executable, "-c", _WRITER, pg_url, collection, tag, str(n), str(batch),
            env=env,
            stderr=asyncio.subprocess.PIPE,
        )
        for tag, batch in (("copy", COPY_THRESHOLD), ("small", 40))
    ]
    while any(p.returncode is None for p in procs):
        hits = await store.search("process wrote row", k=10, scope=ACME)
        assert all(c.metadata["tag"] in {"copy", "small"} for _, c in hits)
        await asyncio.sleep(0.05)
    for p in procs:
        _, err = await p.communicate()
        assert p.returncode == 0, err.decode()
    assert await store.count(scope=ACME) == 2 * n
    for tag in ("copy", "small"):
        hits = await store.lexical_search(
            "process wrote row", k=2 * n, scope=ACME, where={"tag": tag}
        )
        assert len(hits) == n
