"""BM25 inside PostgreSQL, with statistics kept per tenant bucket.

``ts_rank`` knows nothing about how rare a word is, so lexical ranking on PostgreSQL
fell well behind BM25. Here two shared tables hold what BM25 needs, per collection and
per (org_id, domain_id) bucket, so one tenant's writes never move another's scores:

- ``agentkit_lex_scopes``: documents and total length (in tokens) per bucket;
- ``agentkit_lex_terms``: document frequency per (bucket, lexeme).

Statement-level triggers with transition tables keep them exact in the writing
transaction (one aggregated upsert per statement, not one per row), so they commit or
roll back with the rows, replicate with them, and every process sees them at once. Each
trigger locks the bucket's row in the scopes table before any term row, so writers to
one bucket queue there instead of deadlocking over terms. A
document's tokens are the positions of PostgreSQL's own ``to_tsvector('english')`` (the
column the GIN index already holds); its length is how many there are.

Queries use MaxScore pruning: a term's contribution is below ``idf * (k1 + 1)``, so
once the k-th best score is known, documents holding only low-idf terms whose bounds sum
below it cannot enter the top k and are never scored. Typical queries score the rows
matching their rare words, found through the GIN index, instead of every match.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import psycopg
from psycopg import sql

SCOPES_TABLE = "agentkit_lex_scopes"
TERMS_TABLE = "agentkit_lex_terms"
K1 = 1.2
B = 0.75
# First scoring round: the rarest terms until their postings reach this many per k.
_FIRST_ROUND_POSTINGS_PER_K = 10

TOKENS_FUNCTION = """
CREATE OR REPLACE FUNCTION agentkit_tsv_tokens(tsvector) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $f$ SELECT coalesce(sum(cardinality(positions)), 0)::integer FROM unnest($1) $f$
"""
"""A document's length for BM25: its tokens, i.e. the positions in its tsvector.

Stored in a generated column (``TOKENS_COLUMN``) because counting positions at query
time means unnesting every candidate's whole tsvector.
"""

TOKENS_COLUMN = (
    "tokens integer GENERATED ALWAYS AS"
    " (agentkit_tsv_tokens(to_tsvector('english'::regconfig, text))) STORED"
)

_FUNCTIONS = """
CREATE OR REPLACE FUNCTION agentkit_lex_insert() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  INSERT INTO agentkit_lex_scopes AS s (collection, org_id, domain_id, docs, tokens)
  SELECT TG_ARGV[0], r.org_id, r.domain_id, count(*), sum(r.tokens)
  FROM agentkit_new r GROUP BY r.org_id, r.domain_id ORDER BY 2, 3
  ON CONFLICT (collection, org_id, domain_id) DO UPDATE
    SET docs = s.docs + EXCLUDED.docs, tokens = s.tokens + EXCLUDED.tokens;
  INSERT INTO agentkit_lex_terms AS t (collection, org_id, domain_id, lexeme, df)
  SELECT TG_ARGV[0], r.org_id, r.domain_id, u.lexeme, count(*)
  FROM agentkit_new r, unnest(r.tsv) u GROUP BY 2, 3, 4 ORDER BY 2, 3, 4
  ON CONFLICT (collection, org_id, domain_id, lexeme) DO UPDATE SET df = t.df + EXCLUDED.df;
  RETURN NULL;
END $f$;

CREATE OR REPLACE FUNCTION agentkit_lex_delete() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  INSERT INTO agentkit_lex_scopes AS s (collection, org_id, domain_id, docs, tokens)
  SELECT TG_ARGV[0], r.org_id, r.domain_id, -count(*), -sum(r.tokens)
  FROM agentkit_old r GROUP BY r.org_id, r.domain_id ORDER BY 2, 3
  ON CONFLICT (collection, org_id, domain_id) DO UPDATE
    SET docs = s.docs + EXCLUDED.docs, tokens = s.tokens + EXCLUDED.tokens;
  UPDATE agentkit_lex_terms AS t SET df = t.df - d.n
  FROM (SELECT r.org_id, r.domain_id, u.lexeme, count(*) AS n
        FROM agentkit_old r, unnest(r.tsv) u GROUP BY 1, 2, 3 ORDER BY 1, 2, 3) d
  WHERE t.collection = TG_ARGV[0] AND t.org_id = d.org_id AND t.domain_id = d.domain_id
    AND t.lexeme = d.lexeme;
  DELETE FROM agentkit_lex_terms AS t
  USING (SELECT DISTINCT r.org_id, r.domain_id, u.lexeme FROM agentkit_old r, unnest(r.tsv) u) d
  WHERE t.collection = TG_ARGV[0] AND t.org_id = d.org_id AND t.domain_id = d.domain_id
    AND t.lexeme = d.lexeme AND t.df <= 0;
  RETURN NULL;
END $f$;

CREATE OR REPLACE FUNCTION agentkit_lex_truncate() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  DELETE FROM agentkit_lex_scopes WHERE collection = TG_ARGV[0];
  DELETE FROM agentkit_lex_terms WHERE collection = TG_ARGV[0];
  RETURN NULL;
END $f$;

CREATE OR REPLACE FUNCTION agentkit_lex_update() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  INSERT INTO agentkit_lex_scopes AS s (collection, org_id, domain_id, docs, tokens)
  SELECT TG_ARGV[0], x.org_id, x.domain_id, sum(x.docs), sum(x.tokens)
  FROM (SELECT r.org_id, r.domain_id, 1 AS docs, r.tokens FROM agentkit_new r
        UNION ALL
        SELECT r.org_id, r.domain_id, -1, -r.tokens FROM agentkit_old r) x
  GROUP BY x.org_id, x.domain_id ORDER BY 2, 3
  ON CONFLICT (collection, org_id, domain_id) DO UPDATE
    SET docs = s.docs + EXCLUDED.docs, tokens = s.tokens + EXCLUDED.tokens;
  INSERT INTO agentkit_lex_terms AS t (collection, org_id, domain_id, lexeme, df)
  SELECT TG_ARGV[0], x.org_id, x.domain_id, x.lexeme, sum(x.n)
  FROM (SELECT r.org_id, r.domain_id, u.lexeme, 1 AS n FROM agentkit_new r, unnest(r.tsv) u
        UNION ALL
        SELECT r.org_id, r.domain_id, u.lexeme, -1 FROM agentkit_old r, unnest(r.tsv) u) x
  GROUP BY x.org_id, x.domain_id, x.lexeme HAVING sum(x.n) <> 0 ORDER BY 2, 3, 4
  ON CONFLICT (collection, org_id, domain_id, lexeme) DO UPDATE SET df = t.df + EXCLUDED.df;
  DELETE FROM agentkit_lex_terms AS t
  USING (SELECT DISTINCT r.org_id, r.domain_id, u.lexeme FROM agentkit_old r, unnest(r.tsv) u) d
  WHERE t.collection = TG_ARGV[0] AND t.org_id = d.org_id AND t.domain_id = d.domain_id
    AND t.lexeme = d.lexeme AND t.df <= 0;
  RETURN NULL;
END $f$;
"""


async def install(
    conn: psycopg.AsyncConnection[tuple[object, ...]], collection: str, *, fresh: bool
) -> None:
    """Create the statistics tables, functions and the collection's triggers; backfill.

    Runs inside the caller's schema transaction (under its advisory lock). ``fresh``:
    the collection's table was just created, so any statistics left by a dropped
    table of the same name are cleared rather than recounted.
    """
    await conn.execute(
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} ("
            " collection text NOT NULL, org_id text NOT NULL, domain_id text NOT NULL,"
            " docs bigint NOT NULL, tokens bigint NOT NULL,"
            " PRIMARY KEY (collection, org_id, domain_id))"
        ).format(sql.Identifier(SCOPES_TABLE))
    )
    await conn.execute(
        sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} ("
            " collection text NOT NULL, org_id text NOT NULL, domain_id text NOT NULL,"
            " lexeme text NOT NULL, df bigint NOT NULL,"
            " PRIMARY KEY (collection, org_id, domain_id, lexeme))"
        ).format(sql.Identifier(TERMS_TABLE))
    )
    await conn.execute(_FUNCTIONS)
    table = sql.Identifier(collection)
    # The table lock keeps writers out between the triggers appearing and the backfill.
    await conn.execute(sql.SQL("LOCK TABLE {} IN SHARE ROW EXCLUSIVE MODE").format(table))
    await conn.execute(
        sql.SQL("ALTER TABLE {} ADD COLUMN IF NOT EXISTS {}").format(table, sql.SQL(TOKENS_COLUMN))
    )
    for event, function, refs in (
        ("INSERT", "agentkit_lex_insert", "NEW TABLE AS agentkit_new"),
        ("DELETE", "agentkit_lex_delete", "OLD TABLE AS agentkit_old"),
        ("UPDATE", "agentkit_lex_update", "OLD TABLE AS agentkit_old NEW TABLE AS agentkit_new"),
        ("TRUNCATE", "agentkit_lex_truncate", ""),
    ):
        # AFTER triggers fire in name order: last, so the bucket's row is locked only
        # from the end of the statement to the commit, not while other triggers run.
        name = sql.Identifier(f"zz_agentkit_lex_{event.lower()}")
        await conn.execute(sql.SQL("DROP TRIGGER IF EXISTS {} ON {}").format(name, table))
        await conn.execute(
            sql.SQL(
                "CREATE TRIGGER {n} AFTER {e} ON {t} {r}"
                " FOR EACH STATEMENT EXECUTE FUNCTION {f}({c})"
            ).format(
                n=name,
                e=sql.SQL(event),
                t=table,
                r=sql.SQL(f"REFERENCING {refs}" if refs else ""),
                f=sql.Identifier(function),
                c=sql.Literal(collection),
            )
        )
    await backfill(conn, collection, fresh=fresh)


async def backfill(
    conn: psycopg.AsyncConnection[tuple[object, ...]], collection: str, *, fresh: bool = False
) -> None:
    """Recount the collection's statistics from its rows (the rows are the truth)."""
    for name in (SCOPES_TABLE, TERMS_TABLE):
        await conn.execute(
            sql.SQL("DELETE FROM {} WHERE collection = %s").format(sql.Identifier(name)),
            (collection,),
        )
    if fresh:
        return
    table = sql.Identifier(collection)
    await conn.execute(
        sql.SQL(
            "INSERT INTO {s} (collection, org_id, domain_id, docs, tokens)"
            " SELECT %s, org_id, domain_id, count(*), sum(tokens)"
            " FROM {t} GROUP BY org_id, domain_id"
        ).format(s=sql.Identifier(SCOPES_TABLE), t=table),
        (collection,),
    )
    await conn.execute(
        sql.SQL(
            "INSERT INTO {s} (collection, org_id, domain_id, lexeme, df)"
            " SELECT %s, r.org_id, r.domain_id, u.lexeme, count(*)"
            " FROM {t} r, unnest(r.tsv) u GROUP BY r.org_id, r.domain_id, u.lexeme"
        ).format(s=sql.Identifier(TERMS_TABLE), t=table),
        (collection,),
    )


@dataclass(frozen=True, slots=True)
class Term:
    lexeme: str
    df: int
    idf: float

    @property
    def bound(self) -> float:
        """More than this term can add to any document's score (tf / (tf + K) < 1)."""
        return self.idf * (K1 + 1.0)


def idf(docs: int, df: int) -> float:
    """Lucene's BM25 idf, never negative, as the SQLite store computes it."""
    return math.log(1.0 + (docs - df + 0.5) / (df + 0.5))


def terms_statement() -> sql.Composed:
    """The query's lexemes (PostgreSQL's own analysis) with their df in the bucket."""
    return sql.SQL(
        "SELECT q.lexeme, coalesce(t.df, 0), coalesce(s.docs, 0)"
        " FROM unnest(to_tsvector('english'::regconfig, %(text)s)) AS q"
        " LEFT JOIN {terms} AS t ON t.collection = %(c)s AND t.org_id = %(org)s"
        "  AND t.domain_id = %(dom)s AND t.lexeme = q.lexeme"
        " LEFT JOIN {scopes} AS s ON s.collection = %(c)s AND s.org_id = %(org)s"
        "  AND s.domain_id = %(dom)s"
    ).format(terms=sql.Identifier(TERMS_TABLE), scopes=sql.Identifier(SCOPES_TABLE))


def score_statement(table: sql.Identifier, where: sql.Composable) -> sql.Composed:
    """Exact BM25 of the bucket's rows matching any of ``%(find)s``, top ``%(limit)s``.

    Scored over all of the query's lexemes ``%(lex)s``, with N, avgdl and df read once,
    in the same snapshot as the rows, in float8 throughout (numeric is many times
    slower). Each row's tsvector is cut down to the query's lexemes (``setweight`` marks
    them, ``ts_filter`` keeps them) before it is unnested, which costs a fraction of
    unnesting it whole. Only the winners' text and metadata are read.
    """
    return sql.SQL(
        "WITH st AS MATERIALIZED (SELECT s.docs::float8 AS n,"
        "  s.tokens::float8 / greatest(s.docs, 1) AS avgdl,"
        "  array_agg(t.lexeme ORDER BY t.lexeme) AS lex,"
        "  array_agg(ln(1 + (s.docs - t.df + 0.5::float8) / (t.df + 0.5::float8))"
        "   ORDER BY t.lexeme) AS idf"
        "  FROM {scopes} AS s JOIN {terms} AS t ON t.collection = s.collection"
        "  AND t.org_id = s.org_id AND t.domain_id = s.domain_id"
        "  AND t.lexeme = ANY(%(lex)s::text[])"
        "  WHERE s.collection = %(c)s AND s.org_id = %(org)s AND s.domain_id = %(dom)s"
        "  GROUP BY s.docs, s.tokens),"
        " hit AS (SELECT r.id, ("
        "   SELECT sum(st.idf[array_position(st.lex, u.lexeme)] * cardinality(u.positions)"
        "    * {k1p}::float8 / (cardinality(u.positions) + {k1}::float8"
        "    * ({omb}::float8 + {b}::float8 * r.tokens / st.avgdl)))"
        "   FROM unnest(ts_filter(setweight(r.tsv, 'A', st.lex), '{{a}}')) AS u) AS score"
        "  FROM {t} AS r, st"
        "  WHERE r.org_id = %(org)s AND r.domain_id = %(dom)s"
        "  AND r.tsv @@ %(find)s::tsquery{w}"
        "  ORDER BY score DESC, r.id LIMIT %(limit)s)"
        " SELECT hit.score, r.id, r.text, r.metadata FROM hit JOIN {t} AS r"
        "  ON r.org_id = %(org)s AND r.domain_id = %(dom)s AND r.id = hit.id"
        " ORDER BY hit.score DESC, hit.id"
    ).format(
        scopes=sql.Identifier(SCOPES_TABLE),
        terms=sql.Identifier(TERMS_TABLE),
        t=table,
        w=where,
        k1=sql.Literal(K1),
        k1p=sql.Literal(K1 + 1.0),
        b=sql.Literal(B),
        omb=sql.Literal(1.0 - B),
    )


def tsquery_of(lexemes: Sequence[str]) -> str:
    """An OR of these lexemes as tsquery input, each quoted so none is read as syntax."""
    quoted = ("'" + lex.replace("\\", "\\\\").replace("'", "''") + "'" for lex in lexemes)
    return " | ".join(quoted)


def first_round(terms: Sequence[Term], k: int) -> list[Term]:
    """The rarest terms, until their postings could plausibly fill the top k well."""
    chosen: list[Term] = []
    postings = 0
    for term in sorted(terms, key=lambda t: (-t.idf, t.lexeme)):
        chosen.append(term)
        postings += term.df
        if postings >= _FIRST_ROUND_POSTINGS_PER_K * k:
            break
    return chosen


def needed(terms: Sequence[Term], threshold: float) -> list[Term]:
    """Terms a document must hold to possibly score above ``threshold`` (MaxScore).

    The lowest-bound terms whose bounds sum below the threshold are left out: a document
    holding only those scores less than the k-th best already found.
    """
    ordered = sorted(terms, key=lambda t: (t.bound, t.lexeme))
    total = 0.0
    for n, term in enumerate(ordered):
        total += term.bound
        if not total < threshold:
            return ordered[n:]
    return []
