"""BM25 inside PostgreSQL, with statistics kept per tenant bucket.

``ts_rank`` knows nothing about how rare a word is, so lexical ranking on PostgreSQL
fell well behind BM25. Here two shared tables hold what BM25 needs, per collection and
per (org_id, domain_id) bucket, so one tenant's writes never move another's scores:

- ``agentkit_lex_scopes``: documents and total length (in tokens) per bucket;
- ``agentkit_lex_terms``: per (bucket, lexeme) the document frequency, the largest tf
  and, per tf, the shortest document holding the lexeme that often (bounds: below).

Statement-level triggers with transition tables keep them in the writing transaction
(one aggregated upsert per statement, not one per row), so they commit or roll back
with the rows, replicate with them, and every process sees them at once. df is exact;
the lengths and largest tf only ever widen (a delete leaves them), so they stay valid
bounds, and a backfill makes them exact again. Each trigger locks the bucket's row in
the scopes table before any term row, so writers to one bucket queue there instead of
deadlocking over terms. A document's tokens are the positions of PostgreSQL's own
``to_tsvector('english')`` (the column the GIN index already holds); its length is how
many there are.

Queries prune as search engines do, exactly: no posting of a term can score more than
its bound (idf times the best tf factor its stored tf/length pairs allow), so once a
first round over the rarest words has scored some k documents, only documents whose
words' bounds can sum to that k-th score are candidates, and GIN finds them as "anchor
AND any feasible partner" searches (``candidate_clauses``) instead of every document
holding any query word.
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
# The word index's pending-insert list, in kB (see ``install``).
GIN_PENDING_LIST_KB = 128
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

# A term's tf-part bound needs, per tf, the shortest document holding it that often:
# min_dl[v] for tf = v (v < _TF_BUCKETS), and min_dl[_TF_BUCKETS] with max_tf for the rest.
_TF_BUCKETS = 8
_MIN_DL = (
    "ARRAY["
    + ", ".join(
        f"min(r.tokens) FILTER (WHERE cardinality(u.positions) = {v})"
        for v in range(1, _TF_BUCKETS)
    )
    + f", min(r.tokens) FILTER (WHERE cardinality(u.positions) >= {_TF_BUCKETS})]"
)
# Merging keeps the smaller length per tf; a row without bounds (written before they
# existed) stays without, since its postings' lengths are unknown.
_MERGE = (
    "max_tf = CASE WHEN t.max_tf IS NULL OR t.min_dl IS NULL THEN NULL"
    " ELSE greatest(t.max_tf, EXCLUDED.max_tf) END,"
    " min_dl = CASE WHEN t.max_tf IS NULL OR t.min_dl IS NULL THEN NULL ELSE ARRAY["
    + ", ".join(f"least(t.min_dl[{i}], EXCLUDED.min_dl[{i}])" for i in range(1, _TF_BUCKETS + 1))
    + "] END"
)
_ADD_TERMS = f"""
  INSERT INTO agentkit_lex_terms AS t
    (collection, org_id, domain_id, lexeme, df, max_tf, min_dl)
  SELECT TG_ARGV[0], r.org_id, r.domain_id, u.lexeme, count(*),
    max(cardinality(u.positions)), {_MIN_DL}
  FROM %s r, unnest(r.tsv) u GROUP BY 2, 3, 4 ORDER BY 2, 3, 4
  ON CONFLICT (collection, org_id, domain_id, lexeme) DO UPDATE
    SET df = t.df + EXCLUDED.df, {_MERGE};
"""
_DROP_TERMS = """
  UPDATE agentkit_lex_terms AS t SET df = t.df - d.n
  FROM (SELECT r.org_id, r.domain_id, u.lexeme, count(*) AS n
        FROM %s r, unnest(r.tsv) u GROUP BY 1, 2, 3 ORDER BY 1, 2, 3) d
  WHERE t.collection = TG_ARGV[0] AND t.org_id = d.org_id AND t.domain_id = d.domain_id
    AND t.lexeme = d.lexeme;
  DELETE FROM agentkit_lex_terms AS t
  USING (SELECT DISTINCT r.org_id, r.domain_id, u.lexeme FROM %s r, unnest(r.tsv) u) d
  WHERE t.collection = TG_ARGV[0] AND t.org_id = d.org_id AND t.domain_id = d.domain_id
    AND t.lexeme = d.lexeme AND t.df <= 0;
"""
# Rows of one transition table whose words differ from their other version (an
# update that keeps the text, e.g. new metadata, leaves the term rows alone).
_CHANGED = (
    "(SELECT x.* FROM {a} x WHERE NOT EXISTS (SELECT 1 FROM {b} y"
    " WHERE y.org_id = x.org_id AND y.domain_id = x.domain_id AND y.id = x.id"
    " AND y.tokens = x.tokens AND y.tsv = x.tsv))"
)
_NEW_CHANGED = _CHANGED.format(a="agentkit_new", b="agentkit_old")
_OLD_CHANGED = _CHANGED.format(a="agentkit_old", b="agentkit_new")

# Version 3 functions have their own names: a version 2 process re-creating its
# functions cannot change what a version 3 collection's triggers run.
_FUNCTIONS = f"""
CREATE OR REPLACE FUNCTION agentkit_lex3_insert() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  INSERT INTO agentkit_lex_scopes AS s (collection, org_id, domain_id, docs, tokens)
  SELECT TG_ARGV[0], r.org_id, r.domain_id, count(*), sum(r.tokens)
  FROM agentkit_new r GROUP BY r.org_id, r.domain_id ORDER BY 2, 3
  ON CONFLICT (collection, org_id, domain_id) DO UPDATE
    SET docs = s.docs + EXCLUDED.docs, tokens = s.tokens + EXCLUDED.tokens;
  {_ADD_TERMS % "agentkit_new"}
  RETURN NULL;
END $f$;

CREATE OR REPLACE FUNCTION agentkit_lex3_delete() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  INSERT INTO agentkit_lex_scopes AS s (collection, org_id, domain_id, docs, tokens)
  SELECT TG_ARGV[0], r.org_id, r.domain_id, -count(*), -sum(r.tokens)
  FROM agentkit_old r GROUP BY r.org_id, r.domain_id ORDER BY 2, 3
  ON CONFLICT (collection, org_id, domain_id) DO UPDATE
    SET docs = s.docs + EXCLUDED.docs, tokens = s.tokens + EXCLUDED.tokens;
  {_DROP_TERMS % ("agentkit_old", "agentkit_old")}
  RETURN NULL;
END $f$;

CREATE OR REPLACE FUNCTION agentkit_lex3_truncate() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  DELETE FROM agentkit_lex_scopes WHERE collection = TG_ARGV[0];
  DELETE FROM agentkit_lex_terms WHERE collection = TG_ARGV[0];
  RETURN NULL;
END $f$;

CREATE OR REPLACE FUNCTION agentkit_lex3_update() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  INSERT INTO agentkit_lex_scopes AS s (collection, org_id, domain_id, docs, tokens)
  SELECT TG_ARGV[0], x.org_id, x.domain_id, sum(x.docs), sum(x.tokens)
  FROM (SELECT r.org_id, r.domain_id, 1 AS docs, r.tokens FROM agentkit_new r
        UNION ALL
        SELECT r.org_id, r.domain_id, -1, -r.tokens FROM agentkit_old r) x
  GROUP BY x.org_id, x.domain_id ORDER BY 2, 3
  ON CONFLICT (collection, org_id, domain_id) DO UPDATE
    SET docs = s.docs + EXCLUDED.docs, tokens = s.tokens + EXCLUDED.tokens;
  {_ADD_TERMS % _NEW_CHANGED}
  {_DROP_TERMS % (_OLD_CHANGED, _OLD_CHANGED)}
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
    # Version 3: per-term bounds (NULL in rows a version 2 trigger wrote: unknown).
    await conn.execute(
        sql.SQL(
            "ALTER TABLE {} ADD COLUMN IF NOT EXISTS max_tf integer,"
            " ADD COLUMN IF NOT EXISTS min_dl integer[]"
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
        ("INSERT", "agentkit_lex3_insert", "NEW TABLE AS agentkit_new"),
        ("DELETE", "agentkit_lex3_delete", "OLD TABLE AS agentkit_old"),
        ("UPDATE", "agentkit_lex3_update", "OLD TABLE AS agentkit_old NEW TABLE AS agentkit_new"),
        ("TRUNCATE", "agentkit_lex3_truncate", ""),
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
    # GIN's fast-update list is searched linearly by every query until a vacuum or an
    # overflow merges it into the index; at the default 4 MB, a freshly written table
    # answers word searches several times slower. Kept small, writers merge it often.
    index = sql.Identifier(f"{collection}_tsv")
    await conn.execute(
        sql.SQL("ALTER INDEX {} SET (gin_pending_list_limit = {})").format(
            index, sql.Literal(GIN_PENDING_LIST_KB)
        )
    )
    await conn.execute("SELECT gin_clean_pending_list(%s::regclass)", (f"{collection}_tsv",))
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
            "INSERT INTO {s} (collection, org_id, domain_id, lexeme, df, max_tf, min_dl)"
            " SELECT %s, r.org_id, r.domain_id, u.lexeme, count(*),"
            " max(cardinality(u.positions)), {m}"
            " FROM {t} r, unnest(r.tsv) u GROUP BY r.org_id, r.domain_id, u.lexeme"
        ).format(s=sql.Identifier(TERMS_TABLE), t=table, m=sql.SQL(_MIN_DL)),
        (collection,),
    )


@dataclass(frozen=True, slots=True)
class Term:
    lexeme: str
    df: int
    idf: float
    bound: float
    """More than this term adds to any document's score in the bucket."""


def idf(docs: int, df: int) -> float:
    """Lucene's BM25 idf, never negative, as the SQLite store computes it."""
    return math.log(1.0 + (docs - df + 0.5) / (df + 0.5))


def tf_part(tf: float, dl: float, avgdl: float) -> float:
    """BM25's saturating tf factor, rising with tf and falling with the length."""
    return tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * dl / avgdl))


def term(
    lexeme: str,
    df: int,
    docs: int,
    avgdl: float,
    max_tf: int | None,
    min_dl: Sequence[int | None] | None,
) -> Term:
    """A query term with its idf and the most any of its postings can score.

    The tf factor is below ``k1 + 1`` for any posting; with the shortest document per
    tf kept beside df (the statistics triggers never let those lengths grow, so they
    stay lower bounds), the largest factor a posting can have under today's average
    length is known, usually well below that: tighter bounds leave fewer candidates.
    """
    weight = idf(docs, df)
    peak = K1 + 1.0
    if max_tf is not None and min_dl is not None and len(min_dl) == _TF_BUCKETS:
        found = [
            tf_part(float(v + 1 if v + 1 < _TF_BUCKETS else max_tf), float(dl), avgdl)
            for v, dl in enumerate(min_dl)
            if dl is not None
        ]
        if found:
            peak = min(peak, max(found))
    return Term(lexeme, df, weight, weight * peak)


def terms_statement() -> sql.Composed:
    """The query's lexemes (PostgreSQL's own analysis): df, bounds, the bucket's N and length."""
    return sql.SQL(
        "SELECT q.lexeme, coalesce(t.df, 0), coalesce(s.docs, 0), coalesce(s.tokens, 0),"
        " t.max_tf, t.min_dl,"
        " (SELECT c.reltuples FROM pg_class AS c WHERE c.oid = %(table)s::regclass)"
        " FROM unnest(to_tsvector('english'::regconfig, %(text)s)) AS q"
        " LEFT JOIN {terms} AS t ON t.collection = %(c)s AND t.org_id = %(org)s"
        "  AND t.domain_id = %(dom)s AND t.lexeme = q.lexeme"
        " LEFT JOIN {scopes} AS s ON s.collection = %(c)s AND s.org_id = %(org)s"
        "  AND s.domain_id = %(dom)s"
    ).format(terms=sql.Identifier(TERMS_TABLE), scopes=sql.Identifier(SCOPES_TABLE))


def score_statement(
    table: sql.Identifier, where: sql.Composable, *, through_words: bool = False
) -> sql.Composed:
    """Exact BM25 of the bucket's rows matching any tsquery in ``%(find)s``, top ``%(limit)s``.

    ``%(lex)s`` (sorted) and ``%(idf)s`` are the query's lexemes and their idf, and
    ``%(avgdl)s`` the bucket's average length, all read by ``terms_statement`` in the same
    snapshot (the caller's transaction), so the statement touches no statistics table.
    Float8 throughout (numeric is many times slower). Each candidate's tsvector is cut
    down to the query's lexemes (``setweight`` marks them, ``ts_filter`` keeps them)
    before it is unnested. ``find`` is an array so that each candidate clause is its own
    GIN search, OR-ed in one bitmap: a clause's rarest lexeme drives GIN's skipping, which
    one big OR-ed tsquery would lose. Only the winners' text and metadata are read.

    ``through_words``: the bucket is checked with IS NOT DISTINCT FROM (the same test
    on these NOT NULL columns, but no index condition), so the rows can only come from
    the word index. The planner prices matching a many-clause tsquery array as nearly
    free per row and would otherwise read a large bucket whole through the primary
    key, matching every row; the caller asks for this when the bucket is a good part
    of the table, and leaves a small bucket in a big shared table to the planner.
    """
    return sql.SQL(
        "WITH hit AS (SELECT r.id, ("
        "   SELECT sum((%(idf)s::float8[])"
        "    [array_position(%(lex)s::text[], u.lexeme)] * cardinality(u.positions)"
        "    * {k1p}::float8 / (cardinality(u.positions) + {k1}::float8"
        "    * ({omb}::float8 + {b}::float8 * r.tokens / %(avgdl)s::float8)))"
        "   FROM unnest(ts_filter(setweight(r.tsv, 'A', %(lex)s::text[]), '{{a}}')) AS u)"
        "   AS score"
        "  FROM {t} AS r"
        "  WHERE {bucket}"
        "  AND r.tsv @@ ANY(%(find)s::tsquery[]){w}"
        "  ORDER BY score DESC, r.id LIMIT %(limit)s)"
        " SELECT hit.score, r.id, r.text, r.metadata FROM hit JOIN {t} AS r"
        "  ON r.org_id = %(org)s AND r.domain_id = %(dom)s AND r.id = hit.id"
        " ORDER BY hit.score DESC, hit.id"
    ).format(
        t=table,
        w=where,
        bucket=sql.SQL(
            "(r.org_id, r.domain_id) IS NOT DISTINCT FROM (%(org)s, %(dom)s)"
            if through_words
            else "r.org_id = %(org)s AND r.domain_id = %(dom)s"
        ),
        k1=sql.Literal(K1),
        k1p=sql.Literal(K1 + 1.0),
        b=sql.Literal(B),
        omb=sql.Literal(1.0 - B),
    )


def _quoted(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def tsquery_of(lexemes: Sequence[str]) -> str:
    """An OR of these lexemes as tsquery input, each quoted so none is read as syntax."""
    return " | ".join(_quoted(lex) for lex in lexemes)


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


def candidate_clauses(terms: Sequence[Term], threshold: float) -> list[tuple[Term, list[Term]]]:
    """Which documents can still score ``threshold`` or more: (anchor, partners) pairs.

    Order the terms rarest first. A document's score is below the sum of the bounds of
    the terms it holds; call its rarest one the anchor and its next rarest the partner.
    Then it can reach the threshold only if anchor + partner + every term commoner than
    the partner can. So the candidates are the documents holding an anchor and one of
    its feasible partners (or the anchor alone, when its bound reaches the threshold
    by itself): an AND that GIN answers by walking the anchor's postings, which for a
    selective query is a small fraction of the documents holding any query word.
    Anchors too common to reach the threshold even with every commoner term are
    dropped (MaxScore's non-essential terms). ``threshold`` must be a score some k
    documents reach, so the true top k all pass.
    """
    ordered = sorted(terms, key=lambda t: (-t.bound, t.lexeme))
    # A hair of slack for float rounding between Python's bounds and SQL's sums.
    goal = threshold * (1.0 - 1e-9)
    suffix = [0.0] * (len(ordered) + 1)
    for n in range(len(ordered) - 1, -1, -1):
        suffix[n] = suffix[n + 1] + ordered[n].bound
    out: list[tuple[Term, list[Term]]] = []
    for j, anchor in enumerate(ordered):
        if anchor.bound + suffix[j + 1] < goal:
            break  # every later anchor has even less to work with
        if anchor.bound >= goal:
            out.append((anchor, []))
            continue
        partners = [
            partner
            for m, partner in enumerate(ordered[j + 1 :], start=j + 1)
            if anchor.bound + partner.bound + suffix[m + 1] >= goal
        ]
        if partners:
            out.append((anchor, partners))
    return out


def clause_tsqueries(clauses: Sequence[tuple[Term, Sequence[Term]]]) -> list[str]:
    """Each (anchor, partners) clause as tsquery input: anchor & (p1 | p2 | ...)."""
    out: list[str] = []
    for anchor, partners in clauses:
        if partners:
            out.append(f"{_quoted(anchor.lexeme)} & ({tsquery_of([p.lexeme for p in partners])})")
        else:
            out.append(_quoted(anchor.lexeme))
    return out
