"""BM25 on PostgreSQL: exact scores, statistics per tenant, kept exact by every write.

The reference below recomputes BM25 in Python from PostgreSQL's own analysis of the
texts (``to_tsvector('english')``), so only the ranking arithmetic and the statistics
are under test, not the tokeniser.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable

import psycopg
import pytest
from psycopg import sql

from agentkit.kernel import Scope
from agentkit.vector import Chunk
from agentkit.vector.postgres import PostgresVectorStore

A = Scope("acme", "support")
B = Scope("globex", "support")
K1, BB = 1.2, 0.75

_WORDS = (
    "cell protein gene expression tumour cancer mouse human blood insulin receptor "
    "signalling pathway increases decreases running runner runs studies studied study "
    "patients patient treatment treatments clinical trial dose response immune vaccine "
    "virus infection bacteria antibiotic resistance neuron brain memory sleeping sleep"
).split()

_DOCS = [
    "Insulin receptor signalling increases glucose uptake in human muscle cells.",
    "Tumour cells resist treatment when the immune response is weak.",
    "Sleep deprivation impairs memory consolidation in mice and in humans.",
    "Antibiotic resistance spreads among bacteria through plasmids.",
    "A clinical trial of a vaccine dose: the immune response increased with dose.",
    "Running and runners: studies of patients who run show lower blood pressure.",
    "Gene expression in the brain changes during sleeping and waking.",
    "Cancer cells cancer cells cancer cells: a protein pathway studied at length in "
    "many many patients over many years of follow-up and clinical treatment.",
]


def _corpus(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 30))) for _ in range(n)]


def _lexemes(conn: psycopg.Connection[tuple[object, ...]], text: str) -> Counter[str]:
    rows = conn.execute(
        "SELECT lexeme, cardinality(positions) FROM unnest(to_tsvector('english', %s))",
        (text,),
    ).fetchall()
    return Counter({str(lex): int(tf) for lex, tf in rows})  # type: ignore[call-overload]


def _reference(url: str, docs: dict[str, str], query: str) -> dict[str, float]:
    """BM25 (Lucene idf) of every document holding a query lexeme, from first principles."""
    with psycopg.connect(url) as conn:
        bags = {i: _lexemes(conn, text) for i, text in docs.items()}
        terms = set(_lexemes(conn, query))
    n = len(bags)
    avgdl = sum(sum(bag.values()) for bag in bags.values()) / n
    df = Counter(lex for bag in bags.values() for lex in bag)
    scores: dict[str, float] = {}
    for i, bag in bags.items():
        length = sum(bag.values())
        hits = [t for t in terms if bag[t]]
        if not hits:
            continue
        scores[i] = sum(
            math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
            * bag[t] * (K1 + 1) / (bag[t] + K1 * (1 - BB + BB * length / avgdl))
            for t in hits
        )
    return scores


def _top(scores: dict[str, float], k: int) -> list[tuple[str, float]]:
    return sorted(scores.items(), key=lambda p: (-p[1], p[0]))[:k]


@pytest.mark.parametrize("k", [1, 3, 10, 1000])
async def test_scores_match_a_reference_bm25(
    store: PostgresVectorStore, pg_url: str, k: int
) -> None:
    docs = {f"d{n}": text for n, text in enumerate(_DOCS + _corpus(120, seed=1))}
    await store.upsert([Chunk(i, t) for i, t in docs.items()], scope=A)
    # Another tenant's rows share the vocabulary; they must not enter A's statistics.
    await store.upsert([Chunk(f"b{n}", t) for n, t in enumerate(_corpus(300, 2))], scope=B)
    for query in (
        "cancer cells treatment",
        "Does insulin receptor signalling increase glucose uptake in muscle?",
        "running runner runs",
        "sleeping brain memory patients study",
        "plasmids",
    ):
        expected = _top(_reference(pg_url, docs, query), k)
        got = await store.lexical_search(query, k=k, scope=A)
        assert [c.id for _, c in got] == [i for i, _ in expected], query
        for (score, _), (_, want) in zip(got, expected, strict=True):
            assert score == pytest.approx(want, abs=1e-6), query


async def test_a_tenants_scores_ignore_other_tenants_writes(store: PostgresVectorStore) -> None:
    await store.upsert(
        [Chunk("rare", "a note about plasmids and bacteria"), *(
            Chunk(f"a{n}", t) for n, t in enumerate(_corpus(40, seed=3)))],
        scope=A,
    )
    queries = ("plasmids", "bacteria resistance", "cancer cells in patients", "sleep")
    before = [await store.lexical_search(q, k=20, scope=A) for q in queries]
    # B writes a large corpus sharing all of A's words, the rare one included.
    big = [Chunk(f"b{n}", t + " plasmids") for n, t in enumerate(_corpus(2000, seed=4))]
    await store.bulk_upsert(big, scope=B)
    after = [await store.lexical_search(q, k=20, scope=A) for q in queries]
    assert after == before
    assert before[0][0][1].id == "rare"
    # And B's own statistics do see its corpus: the same word is common there.
    b_hits = await store.lexical_search("plasmids", k=1, scope=B)
    assert b_hits[0][0] < before[0][0][0]


def _stats(url: str, collection: str) -> tuple[set[tuple[object, ...]], set[tuple[object, ...]]]:
    with psycopg.connect(url) as conn:
        scopes = conn.execute(
            "SELECT org_id, domain_id, docs, tokens FROM agentkit_lex_scopes"
            " WHERE collection = %s AND docs <> 0",
            (collection,),
        ).fetchall()
        terms = conn.execute(
            "SELECT org_id, domain_id, lexeme, df FROM agentkit_lex_terms"
            " WHERE collection = %s",
            (collection,),
        ).fetchall()
    return set(scopes), set(terms)


def _recount(url: str, collection: str) -> tuple[set[tuple[object, ...]], set[tuple[object, ...]]]:
    t = sql.Identifier(collection)
    with psycopg.connect(url) as conn:
        scopes = conn.execute(
            sql.SQL(
                "SELECT org_id, domain_id, count(*), sum((SELECT coalesce(sum("
                "cardinality(u.positions)), 0) FROM unnest(tsv) u))::bigint"
                " FROM {} GROUP BY 1, 2"
            ).format(t)
        ).fetchall()
        terms = conn.execute(
            sql.SQL(
                "SELECT r.org_id, r.domain_id, u.lexeme, count(*) FROM {} r, unnest(r.tsv) u"
                " GROUP BY 1, 2, 3"
            ).format(t)
        ).fetchall()
    return set(scopes), set(terms)


async def test_writes_and_deletes_keep_statistics_exact(
    store: PostgresVectorStore, pg_url: str, collection: str
) -> None:
    texts = _corpus(400, seed=5)
    first = [Chunk(f"a{n}", t, {"n": n % 3}) for n, t in enumerate(texts[:100])]
    await store.upsert(first, scope=A)
    await store.bulk_upsert([Chunk(f"c{n}", t) for n, t in enumerate(texts[100:])], scope=A)
    await store.upsert([Chunk(f"b{n}", t) for n, t in enumerate(texts[:50])], scope=B)
    assert _stats(pg_url, collection) == _recount(pg_url, collection)
    # Updates: new text, same text with new metadata, and a batch repeating an id.
    await store.upsert([Chunk("a1", "completely new words: plasmids vaccine"),
                        Chunk("a2", texts[2], {"n": 99}),
                        Chunk("a3", "first"), Chunk("a3", "second version wins")], scope=A)
    await store.bulk_upsert([Chunk(f"c{n}", t + " extra") for n, t in enumerate(texts[:300])],
                            scope=A)
    assert _stats(pg_url, collection) == _recount(pg_url, collection)
    assert await store.delete(["a1", "a5", "missing"], scope=A) == 2
    assert await store.delete_where({"n": 1}, scope=A) > 0
    assert await store.delete_scope(scope=B) == 50
    assert _stats(pg_url, collection) == _recount(pg_url, collection)
    # A word whose last document went leaves no statistics behind.
    with psycopg.connect(pg_url) as conn:
        assert conn.execute(
            "SELECT count(*) FROM agentkit_lex_terms WHERE collection = %s AND lexeme = 'plasmid'",
            (collection,),
        ).fetchone() == (0,)


async def test_truncate_clears_statistics(
    store: PostgresVectorStore, pg_url: str, collection: str
) -> None:
    await store.upsert([Chunk("a", "plasmids and bacteria")], scope=A)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("TRUNCATE {}").format(sql.Identifier(collection)))
    assert _stats(pg_url, collection) == _recount(pg_url, collection) == (set(), set())
    await store.upsert([Chunk("b", "plasmids again")], scope=A)
    assert _stats(pg_url, collection) == _recount(pg_url, collection)


async def test_a_version_1_collection_is_upgraded_and_backfilled(
    store: PostgresVectorStore,
    make_store: Callable[..., PostgresVectorStore],
    pg_url: str,
    collection: str,
) -> None:
    docs = {f"d{n}": text for n, text in enumerate(_DOCS)}
    await store.upsert([Chunk(i, t) for i, t in docs.items()], scope=A)
    await store.close()
    # What the previous version left: no statistics, no triggers, version 1.
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for event in ("insert", "update", "delete", "truncate"):
            conn.execute(sql.SQL("DROP TRIGGER {} ON {}").format(
                sql.Identifier(f"zz_agentkit_lex_{event}"), sql.Identifier(collection)))
        for table in ("agentkit_lex_scopes", "agentkit_lex_terms"):
            conn.execute(sql.SQL("DELETE FROM {} WHERE collection = %s").format(
                sql.Identifier(table)), (collection,))
        conn.execute(sql.SQL("ALTER TABLE {} DROP COLUMN tokens").format(
            sql.Identifier(collection)))
        conn.execute("UPDATE agentkit_schema SET version = 1 WHERE collection = %s",
                     (collection,))
    upgraded = make_store()
    got = await upgraded.lexical_search("cancer cells treatment", k=3, scope=A)
    expected = _top(_reference(pg_url, docs, "cancer cells treatment"), 3)
    assert [(c.id, pytest.approx(s, abs=1e-6)) for s, c in got] == expected
    await upgraded.upsert([Chunk("new", "cancer again")], scope=A)
    assert _stats(pg_url, collection) == _recount(pg_url, collection)
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT version FROM agentkit_schema WHERE collection = %s",
                            (collection,)).fetchone() == (3,)


async def test_query_syntax_is_only_words(store: PostgresVectorStore) -> None:
    await store.upsert([Chunk("x", "cats and dogs"), Chunk("y", "birds")], scope=A)
    got = await store.lexical_search("cat & !dog | 'bird':* <-> (x", k=5, scope=A)
    assert sorted(c.id for _, c in got) == ["x", "y"]
    assert await store.lexical_search("& | ! :* ()", k=5, scope=A) == []
    assert await store.lexical_search("the and of", k=5, scope=A) == []  # stop words only


def _bags(url: str, collection: str, scope: Scope) -> dict[str, Counter[str]]:
    """Each stored document of ``scope`` as PostgreSQL analysed it: lexeme -> tf."""
    bags: dict[str, Counter[str]] = {}
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            sql.SQL(
                "SELECT r.id, u.lexeme, cardinality(u.positions) FROM {} r, unnest(r.tsv) u"
                " WHERE r.org_id = %s AND r.domain_id = %s"
            ).format(sql.Identifier(collection)),
            (scope.org_id, scope.domain_id),
        ).fetchall()
    for i, lex, tf in rows:
        bags.setdefault(str(i), Counter())[str(lex)] = int(tf)  # type: ignore[call-overload]
    return bags


def _reference_of(bags: dict[str, Counter[str]], terms: set[str]) -> dict[str, float]:
    n = len(bags)
    avgdl = sum(sum(bag.values()) for bag in bags.values()) / n
    df = Counter(lex for bag in bags.values() for lex in bag)
    scores: dict[str, float] = {}
    for i, bag in bags.items():
        hits = [t for t in terms if bag[t]]
        if hits:
            length = sum(bag.values())
            scores[i] = sum(
                math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                * bag[t] * (K1 + 1) / (bag[t] + K1 * (1 - BB + BB * length / avgdl))
                for t in hits
            )
    return scores


def _zipf_corpus(n: int, seed: int) -> list[str]:
    """Skewed word frequencies and lengths, so some words are rare and some everywhere,
    and a few documents repeat a word: the shape in which pruning has work to do."""
    rng = random.Random(seed)
    vocab = [f"{w}{s}" for w in _WORDS for s in ("", "x", "q", "z")]
    weights = [1.0 / (r + 1) for r in range(len(vocab))]
    out = []
    for _ in range(n):
        words = rng.choices(vocab, weights, k=rng.choice([2, 3, 5, 8, 13, 30]))
        if rng.random() < 0.1:
            words += [words[0]] * rng.randint(1, 6)
        out.append(" ".join(words))
    return out


async def test_pruned_top_k_is_exact_on_a_skewed_corpus(
    store: PostgresVectorStore, pg_url: str, collection: str
) -> None:
    """The two-round search (first round's k-th score, then only the documents whose
    word bounds can still reach it) returns exactly the top k of scoring every match."""
    texts = _zipf_corpus(1500, seed=11)
    await store.bulk_upsert([Chunk(f"d{n}", t) for n, t in enumerate(texts)], scope=A)
    # Updates that keep the words but raise a tf in a short document, and deletes:
    # the bounds must cover the new postings, and may stay loose after deletes.
    await store.upsert([Chunk("d1", "cellq cellq cellq cellq cellq"),
                        Chunk("d2", "plasmids " * 7)], scope=A)
    await store.delete([f"d{n}" for n in range(10, 60)], scope=A)
    bags = _bags(pg_url, collection, A)
    rng = random.Random(12)
    vocab = sorted({lex for bag in bags.values() for lex in bag})
    queries = ["plasmids cell", "cellq cellq cancer"] + [
        " ".join(rng.sample(vocab, rng.randint(2, 7))) for _ in range(25)
    ]
    with psycopg.connect(pg_url) as conn:
        analysed = {q: set(_lexemes(conn, q)) for q in queries}
    for query in queries:
        expected = _reference_of(bags, analysed[query])
        for k in (1, 4, 10):
            got = await store.lexical_search(query, k=k, scope=A)
            want = _top(expected, k)
            assert [c.id for _, c in got] == [i for i, _ in want], (query, k)
            assert [s for s, _ in got] == pytest.approx([s for _, s in want], abs=1e-6)


def test_candidate_clauses_never_drop_a_document_that_can_reach_the_threshold() -> None:
    """Every set of words whose bounds reach the threshold is covered by some clause:
    a document holding the clause's anchor and, if it names any, one of its partners."""
    from itertools import combinations

    from agentkit.vector import _pg_bm25

    rng = random.Random(7)
    for _ in range(300):
        terms = [
            _pg_bm25.Term(f"t{n}", rng.randint(1, 500), 0.0, rng.uniform(0.1, 9.0))
            for n in range(rng.randint(1, 7))
        ]
        threshold = rng.uniform(0.0, sum(t.bound for t in terms) * 1.1)
        clauses = _pg_bm25.candidate_clauses(terms, threshold)
        for size in range(1, len(terms) + 1):
            for held in combinations(terms, size):
                names = {t.lexeme for t in held}
                covered = any(
                    anchor.lexeme in names
                    and (not partners or any(p.lexeme in names for p in partners))
                    for anchor, partners in clauses
                )
                if sum(t.bound for t in held) >= threshold:
                    assert covered, (terms, threshold, names)


async def test_bounds_cover_every_posting_after_writes(
    store: PostgresVectorStore, pg_url: str, collection: str
) -> None:
    """Per term, the stored shortest length for each tf is at most any posting's, and the
    largest tf at least any posting's, whatever inserts, updates and deletes did."""
    texts = _zipf_corpus(300, seed=21)
    await store.upsert([Chunk(f"d{n}", t, {"n": n}) for n, t in enumerate(texts)], scope=A)
    await store.upsert([Chunk("d3", "cell " * 12), Chunk("d4", texts[4], {"n": -1}),
                        Chunk("d5", "cell cell")], scope=A)
    await store.delete(["d6", "d7"], scope=A)
    with psycopg.connect(pg_url) as conn:
        broken = conn.execute(
            sql.SQL(
                "SELECT r.id, u.lexeme FROM {t} r, unnest(r.tsv) u"
                " JOIN agentkit_lex_terms t ON t.collection = %s AND t.lexeme = u.lexeme"
                " WHERE t.org_id = r.org_id AND t.domain_id = r.domain_id"
                " AND (t.max_tf < cardinality(u.positions)"
                "  OR t.min_dl[least(cardinality(u.positions), 8)] > r.tokens"
                "  OR t.min_dl[least(cardinality(u.positions), 8)] IS NULL)"
            ).format(t=sql.Identifier(collection)),
            (collection,),
        ).fetchall()
    assert broken == []


async def test_a_version_2_database_is_upgraded_and_backfilled(db_url: str) -> None:
    """What version 2 left (no bound columns, its own triggers) becomes version 3 on
    open: bounds backfilled from the rows, new triggers keeping them, same answers."""
    from agentkit.vector import HashingEmbedder

    emb = HashingEmbedder(dim=16)
    texts = _zipf_corpus(400, seed=31)
    old = PostgresVectorStore(db_url, embedder=emb, collection="kb")
    async with old:
        await old.upsert([Chunk(f"d{n}", t) for n, t in enumerate(texts)], scope=A)
        before = await old.lexical_search("plasmids cellq cancerz", k=5, scope=A)
    with psycopg.connect(db_url, autocommit=True) as conn:
        for event in ("insert", "update", "delete", "truncate"):
            conn.execute(sql.SQL("DROP TRIGGER {} ON kb").format(
                sql.Identifier(f"zz_agentkit_lex_{event}")))
        conn.execute("ALTER TABLE agentkit_lex_terms DROP COLUMN max_tf, DROP COLUMN min_dl")
        conn.execute("UPDATE agentkit_schema SET version = 2 WHERE collection = 'kb'")
    new = PostgresVectorStore(db_url, embedder=emb, collection="kb")
    async with new:
        assert await new.lexical_search("plasmids cellq cancerz", k=5, scope=A) == before
        await new.upsert([Chunk("late", "plasmids plasmids cellq")], scope=A)
        assert _stats(db_url, "kb") == _recount(db_url, "kb")
        bags = _bags(db_url, "kb", A)
        with psycopg.connect(db_url) as conn:
            terms = set(_lexemes(conn, "plasmids cellq cancerz"))
        got = await new.lexical_search("plasmids cellq cancerz", k=5, scope=A)
        assert [c.id for _, c in got] == [i for i, _ in _top(_reference_of(bags, terms), 5)]
    with psycopg.connect(db_url) as conn:
        assert conn.execute(
            "SELECT version FROM agentkit_schema WHERE collection = 'kb'"
        ).fetchone() == (3,)
        assert conn.execute(
            "SELECT count(*) FROM agentkit_lex_terms WHERE collection = 'kb'"
            " AND (max_tf IS NULL OR min_dl IS NULL)"
        ).fetchone() == (0,)
        # The word index keeps a short pending list, so fresh writes stay fast to search.
        assert conn.execute(
            "SELECT reloptions FROM pg_class WHERE relname = 'kb_tsv'"
        ).fetchone() == (["gin_pending_list_limit=128"],)
