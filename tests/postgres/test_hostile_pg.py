"""Hostile input on PostgreSQL: the same table's store rows, against a real server.

Gigantic ``k``, SQL-looking text, tsquery syntax, NUL bytes and metadata that is not
JSON. Each row expects a named error or a sane answer, and the collection's rows must be
byte-for-byte what they were before.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from psycopg import sql

from agentkit.kernel import Ctx, Scope
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.state.memory import LexicalMemory, MemoryItem, VectorMemory
from agentkit.vector import Chunk
from agentkit.vector.postgres import PostgresVectorStore

ACME = Scope("acme", "support")
GLOBEX = Scope("globex", "support")
CTX = Ctx(ACME)
SECRET = "globex secret hunter2"
SEED = [
    Chunk("a", "alpha beta notes", {"tag": "x"}),
    Chunk("g", "gamma delta", {"tag": "y"}),
    Chunk("ag", "alpha gamma", {"tag": "x"}),
]

Action = Callable[[PostgresVectorStore], Awaitable[Any]]


@dataclass(frozen=True)
class Case:
    id: str
    action: Action
    expect: tuple[type[BaseException], str] | Callable[[Any], Awaitable[None] | None]


def _q(kind: str, query: Any, k: Any = 5, **kw: Any) -> Action:
    async def act(store: PostgresVectorStore) -> Any:
        mem = VectorMemory(store) if kind == "dense" else LexicalMemory(store)
        return await mem.query(query, k=k, ctx=CTX, **kw)

    return act


def _upsert(meta: Any, text: str = "t", cid: str = "bad") -> Action:
    async def act(store: PostgresVectorStore) -> Any:
        await store.upsert([Chunk("new", "fresh row", {}), Chunk(cid, text, meta)], scope=ACME)

    return act


def sane(got: Any) -> None:
    assert isinstance(got, list)
    assert all(SECRET not in i.content for i in got), got
    assert all(i.score is None or math.isfinite(i.score) for i in got)


def what_exists(kind: str) -> Callable[[Any], Awaitable[None]]:
    async def check(got: Any) -> None:
        sane(got)
        assert sorted(i.id for i in got) == ["a", "ag", "g"]

    return check


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"x": value}
    return value


CASES: list[Case] = []
for _kind in ("dense", "lexical"):
    CASES += [
        Case(f"{_kind}-k-600", _q(_kind, "alpha gamma", k=600), what_exists(_kind)),
        Case(f"{_kind}-k-10**12", _q(_kind, "alpha gamma", k=10**12), what_exists(_kind)),
        Case(f"{_kind}-k-2**63", _q(_kind, "alpha gamma", k=2**63), what_exists(_kind)),
        Case(f"{_kind}-k-zero", _q(_kind, "alpha", k=0), (InvalidArgument, "k must be >= 1")),
        Case(f"{_kind}-query-bytes", _q(_kind, b"alpha"), (InvalidArgumentType, "query")),
        Case(f"{_kind}-sql-drop", _q(_kind, "'; DROP TABLE agentkit_schema; --", k=50), sane),
        Case(f"{_kind}-sql-or", _q(_kind, "x' OR '1'='1", k=50), sane),
        Case(f"{_kind}-nul", _q(_kind, "alpha\x00gamma", k=50), sane),
        Case(f"{_kind}-empty", _q(_kind, "", k=50), sane),
        Case(
            f"{_kind}-where-sql-key",
            _q(_kind, "alpha", where={"tag') OR true --": "x"}),
            lambda got: None if got == [] else pytest.fail(f"{got}"),
        ),
    ]
for _i, _syntax in enumerate(
    ["alpha & !gamma", "alpha:*", "alpha <-> gamma", "!alpha", "'", "(", "alpha:A", "\\"]
):
    words = " ".join(re.findall(r"[^\W_]+", _syntax))

    def _same(query: str = _syntax, plain: str = words) -> Action:
        async def act(store: PostgresVectorStore) -> Any:
            mem = LexicalMemory(store)
            got = await mem.query(query, k=50, ctx=CTX)
            want = await mem.query(plain, k=50, ctx=CTX) if plain else []
            assert [i.id for i in got] == [i.id for i in want], (query, plain)
            return got

        return act

    CASES.append(Case(f"tsquery-syntax-{_i}", _same(), sane))


def _scoped(scope: Scope, kind: str) -> Action:
    async def act(store: PostgresVectorStore) -> Any:
        mem = VectorMemory(store) if kind == "dense" else LexicalMemory(store)
        try:
            return await mem.query("alpha", k=50, ctx=Ctx(scope))
        except InvalidArgument as exc:  # refusing a scope that cannot exist is fine too
            assert "scope" in str(exc).lower(), exc
            return []

    return act


def _nul_scope_ok(got: Any) -> None:
    """Nothing can be stored under such a scope: empty answer, or a clear refusal."""
    assert got == [], got


CASES += [
    Case(f"scope-{name}-{kind}", _scoped(scope, kind), _nul_scope_ok)
    for kind in ("dense", "lexical")
    for name, scope in (
        ("sql", Scope("acme' OR '1'='1", "support")),
        ("nul", Scope("acme\x00", "support")),
        ("like", Scope("%", "%")),
    )
]
CASES += [
    Case("meta-nested-deep", _upsert({"deep": _nested(100_000)}), (InvalidArgument, "JSON")),
    Case("meta-datetime", _upsert({"when": dt.datetime(2026, 1, 1)}), (InvalidArgument, "JSON")),
    Case("meta-nan", _upsert({"n": float("nan")}), (InvalidArgument, "JSON")),
    Case("meta-bytes", _upsert({"b": b"x"}), (InvalidArgument, "JSON")),
    Case("text-nul", _upsert({}, text="a\x00b"), (InvalidArgument, "NUL")),
    # A lone surrogate is refused by the check every store shares, naming the chunk.
    Case("text-surrogate", _upsert({}, text="a\ud800b"), (InvalidArgument, r"chunk 'bad'.*text")),
    Case(
        "meta-surrogate",
        _upsert({"tags": ["ok", {"k": "\udc00"}]}),
        (InvalidArgument, r"chunk 'bad'.*metadata\['tags'\]\[1\]\['k'\]"),
    ),
    Case("id-surrogate", _upsert({}, cid="b\udfff"), (InvalidArgument, r"chunks\[1\].*id")),
    Case("dense-query-surrogate", _q("dense", "alpha \ud800"), (InvalidArgument, "query")),
    Case("lexical-query-surrogate", _q("lexical", "alpha \ud800"), (InvalidArgument, "query")),
    Case(
        "memory-write-str",
        lambda s: VectorMemory(s).write(["raw"], ctx=CTX),  # type: ignore[list-item]
        (InvalidArgumentType, r"items\[0\]"),
    ),
    Case(
        "memory-write-item-meta-set",
        lambda s: VectorMemory(s).write(
            [MemoryItem("ok", "u"), MemoryItem("x", "u", metadata={"s": {1}})], ctx=CTX
        ),
        (InvalidArgument, "JSON"),
    ),
]


async def _rows(url: str, table: str) -> list[tuple[Any, ...]]:
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute(
            sql.SQL(
                "SELECT org_id, domain_id, id, text, metadata::text, embedding::text FROM {}"
                " ORDER BY 1, 2, 3"
            ).format(sql.Identifier(table))
        )
        return await cur.fetchall()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
async def test_hostile_input_on_postgres(
    case: Case, store: PostgresVectorStore, pg_url: str, collection: str
) -> None:
    await store.upsert(SEED, scope=ACME)
    await store.upsert([Chunk("a", f"alpha {SECRET}", {"tag": "x"})], scope=GLOBEX)
    before = await _rows(pg_url, collection)
    if isinstance(case.expect, tuple):
        exc, match = case.expect
        with pytest.raises(exc, match=match):
            await case.action(store)
    else:
        got = await case.action(store)
        verdict = case.expect(got)
        if verdict is not None:
            await verdict
    assert await _rows(pg_url, collection) == before, f"{case.id}: stored data changed"
    assert await store.count(scope=ACME) == len(SEED)
