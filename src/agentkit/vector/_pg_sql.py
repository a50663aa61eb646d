"""Pure helpers for the PostgreSQL store: names, rows, filters and word queries.

Nothing here touches a connection, so all of it is checked before a query is sent.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from psycopg import sql

from agentkit.kernel import validate
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.kernel.where import And, Field, Not, Where
from agentkit.vector.port import MAX_QUERY_TERMS, check_chunks

SCHEMA_TABLE = "agentkit_schema"
# When each (collection, scope) last lost records: row updated_at cannot say it.
WRITES_TABLE = "agentkit_writes"
# The store's own tables (the BM25 statistics are named in _pg_bm25).
_RESERVED = frozenset({SCHEMA_TABLE, WRITES_TABLE, "agentkit_lex_scopes", "agentkit_lex_terms"})
_COLLECTION = re.compile(r"[a-z_][a-z0-9_]{0,47}")
# Words only: letters and digits (no "_", which the text parser splits on anyway).
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def check_collection(name: object) -> str:
    """A collection becomes a table name; keep it a plain lower-case identifier."""
    if not isinstance(name, str):
        raise InvalidArgumentType(f"collection must be a str, got {type(name).__name__}")
    if not _COLLECTION.fullmatch(name) or name in _RESERVED:
        raise InvalidArgument(
            f"collection must match [a-z_][a-z0-9_]* (at most 48 chars) and not be one of "
            f"{sorted(_RESERVED)}, got {name!r}"
        )
    return name


def check_scope(scope: object) -> tuple[str, str]:
    """The two NOT NULL bucket columns; an unset id is stored as ''."""
    scope = validate.check_scope(scope)
    bucket = (scope.org_id or "", scope.domain_id or "")
    if "\x00" in bucket[0] or "\x00" in bucket[1]:
        raise InvalidArgument(f"scope {scope!r}: PostgreSQL text cannot hold NUL characters")
    return bucket


def check_ids(ids: object) -> list[str]:
    # No stored id can hold NUL, so such an id names nothing and is dropped.
    return [i for i in validate.check_ids(ids) if "\x00" not in i]


def prepare_chunks(chunks: object) -> list[tuple[str, str, str]]:
    """Validate a batch and encode it as (id, text, metadata json) rows.

    Later copies of an id win, exactly as if the batch were upserted one by one (and
    because one INSERT ... ON CONFLICT cannot touch the same row twice).
    """
    rows: dict[str, tuple[str, str, str]] = {}
    for chunk in check_chunks(chunks):
        if "\x00" in chunk.id or "\x00" in chunk.text:
            raise InvalidArgument(f"chunk {chunk.id!r}: PostgreSQL text cannot hold NUL characters")
        try:
            meta = json.dumps(dict(chunk.metadata), allow_nan=False, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError) as exc:
            raise InvalidArgument(
                f"chunk {chunk.id!r}: metadata must be JSON-serialisable ({exc})"
            ) from exc
        if "\\u0000" in meta:
            raise InvalidArgument(f"chunk {chunk.id!r}: metadata cannot hold NUL characters")
        rows.pop(chunk.id, None)
        rows[chunk.id] = (chunk.id, chunk.text, meta)
    return list(rows.values())


def key_index(collection: str, key: str) -> tuple[str, sql.Composable]:
    """The name and the indexed expression of ``indexed_keys``' index on ``key``: a
    btree on ``metadata -> key`` (jsonb order), which serves the orderings below."""
    digest = hashlib.sha1(key.encode("utf-8")).hexdigest()[:8]  # names stay under 63
    return f"{collection}_mk_{digest}", sql.SQL("(metadata -> {})").format(sql.Literal(key))


def check_indexed_keys(keys: object) -> tuple[str, ...]:
    """``indexed_keys``: metadata keys (non-empty str, no NUL) to keep a btree on."""
    if isinstance(keys, (str, bytes)) or not isinstance(keys, (list, tuple, set, frozenset)):
        raise InvalidArgumentType(
            f"indexed_keys must be a list of metadata keys, got {type(keys).__name__}"
        )
    out: list[str] = []
    for key in keys:
        if not isinstance(key, str) or not key or "\x00" in key:
            raise InvalidArgument(f"indexed_keys holds {key!r}; each must be a non-empty str")
        validate.check_unicode(key, "indexed_keys")
        out.append(key)
    return tuple(dict.fromkeys(out))


def where_clause(where: Where | None) -> tuple[sql.Composable, dict[str, Any]]:
    """``where`` compiled to jsonb SQL, as `` AND (...)``, with its parameters.

    Equality is jsonb containment (``metadata @> '{"k": v}'``: JSON types kept, ``1``
    equals ``1.0``, ``true`` is not ``1``), which the table's GIN index serves.
    Orderings test ``jsonb_typeof`` first: numbers compare as jsonb numbers (exact
    numeric), strings as text in the "C" collation (code point order, the reference
    evaluator's, whatever the database's collation). Every test is true or false, never
    NULL, so ``NOT`` is the exact complement. Placeholders are named ``w0``, ``w1``,
    ... so the caller can name its own parameters too. The whole filter is in the SQL:
    nothing is left to re-check.
    """
    if where is None:
        return sql.SQL(""), {}
    params: dict[str, Any] = {}
    return sql.SQL(" AND ") + _node(where, params), params


def _param(params: dict[str, Any], value: Any) -> sql.Composable:
    name = f"w{len(params)}"
    params[name] = value
    return sql.Placeholder(name)


def _node(where: Where, params: dict[str, Any], negated: bool = False) -> sql.Composable:
    """``negated``: under a NOT, where a test must be true or false, never NULL. Outside
    one, NULL reads as false for AND/OR alike, so an ordering stays a bare comparison
    the planner can serve from an index."""
    if isinstance(where, Field):
        return _field(where, params, negated)
    if isinstance(where, Not):
        return sql.SQL("NOT {}").format(_node(where.part, params, True))
    joiner = sql.SQL(" AND " if isinstance(where, And) else " OR ")
    return sql.SQL("({})").format(joiner.join(_node(p, params, negated) for p in where.parts))


def _contains(params: dict[str, Any], key: str, value: Any) -> sql.Composable:
    doc = json.dumps({key: value}, ensure_ascii=False, allow_nan=False)
    return sql.SQL("(metadata @> {}::jsonb)").format(_param(params, doc))


def _field(field: Field, params: dict[str, Any], negated: bool) -> sql.Composable:
    op, key, value = field.op, field.key, field.value
    test: sql.Composable
    if op == "exists":
        test = sql.SQL("(metadata ? {})").format(_param(params, key))
        return test if value else sql.SQL("NOT {}").format(test)
    if op in ("eq", "ne"):
        test = _contains(params, key, value)
        return test if op == "eq" else sql.SQL("NOT {}").format(test)
    if op in ("in", "nin"):
        if not value:
            test = sql.SQL("(FALSE)")
        else:
            ors = sql.SQL(" OR ").join(_contains(params, key, v) for v in value)
            test = sql.SQL("({})").format(ors)
        return test if op == "in" else sql.SQL("NOT {}").format(test)
    sign = sql.SQL({"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}[op])
    # The key as a quoted literal, not a parameter: ``metadata -> 'year'`` is then the
    # very expression of an index made with ``indexed_keys``, which the planner can use.
    name = sql.Literal(key)
    if isinstance(value, str):
        test = sql.SQL(
            '((metadata ->> {k}) COLLATE "C" {s} {v}'
            " AND jsonb_typeof(metadata -> {k}) = 'string')"
        ).format(k=name, s=sign, v=_param(params, value))
    else:
        test = sql.SQL(
            "((metadata -> {k}) {s} {v}::jsonb AND jsonb_typeof(metadata -> {k}) = 'number')"
        ).format(k=name, s=sign, v=_param(params, json.dumps(value)))
    # A missing key makes both halves NULL: false, once coalesced, under a NOT.
    return sql.SQL("coalesce({}, false)").format(test) if negated else test


def query_words(query: str) -> str | None:
    """The user's words, space-separated, for PostgreSQL's text analysis; None: no words.

    Only runs of letters and digits survive, so nothing the user typed can become query
    syntax downstream. Only the first ``MAX_QUERY_TERMS`` distinct words count, as in
    every store.
    """
    words: dict[str, None] = {}
    for match in _WORD.finditer(query):
        words[match.group().lower()] = None
        if len(words) >= MAX_QUERY_TERMS:
            break
    if not words:
        return None
    return " ".join(words)
