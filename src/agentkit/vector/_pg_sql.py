"""Pure helpers for the PostgreSQL store: names, rows, filters and word queries.

Nothing here touches a connection, so all of it is checked before a query is sent.
"""

from __future__ import annotations

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


def _node(where: Where, params: dict[str, Any]) -> sql.Composable:
    if isinstance(where, Field):
        return _field(where, params)
    if isinstance(where, Not):
        return sql.SQL("NOT {}").format(_node(where.part, params))
    joiner = sql.SQL(" AND " if isinstance(where, And) else " OR ")
    return sql.SQL("({})").format(joiner.join(_node(p, params) for p in where.parts))


def _contains(params: dict[str, Any], key: str, value: Any) -> sql.Composable:
    doc = json.dumps({key: value}, ensure_ascii=False, allow_nan=False)
    return sql.SQL("(metadata @> {}::jsonb)").format(_param(params, doc))


def _field(field: Field, params: dict[str, Any]) -> sql.Composable:
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
    name = _param(params, key)
    if isinstance(value, str):
        return sql.SQL(
            "coalesce(jsonb_typeof(metadata -> {k}) = 'string'"
            ' AND (metadata ->> {k}) COLLATE "C" {s} {v}, false)'
        ).format(k=name, s=sign, v=_param(params, value))
    return sql.SQL(
        "coalesce(jsonb_typeof(metadata -> {k}) = 'number' AND (metadata -> {k}) {s} {v}::jsonb,"
        " false)"
    ).format(k=name, s=sign, v=_param(params, json.dumps(value)))


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
