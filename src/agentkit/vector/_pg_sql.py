"""Pure helpers for the PostgreSQL store: names, rows, filters and word queries.

Nothing here touches a connection, so all of it is checked before a query is sent.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from psycopg import sql

from agentkit.kernel import validate
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.vector.port import MAX_QUERY_TERMS, check_chunks

SCHEMA_TABLE = "agentkit_schema"
# When each (collection, scope) last lost records: row updated_at cannot say it.
WRITES_TABLE = "agentkit_writes"
# The store's own tables (the BM25 statistics are named in _pg_bm25).
_RESERVED = frozenset(
    {SCHEMA_TABLE, WRITES_TABLE, "agentkit_lex_scopes", "agentkit_lex_terms"}
)
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


def _pushable(value: Any) -> bool:
    # Only scalars whose jsonb equality agrees with matches_where's Python equality.
    if value is None or isinstance(value, (str, bool, int)):
        return True
    return isinstance(value, float) and math.isfinite(value)


def where_clause(
    where: Mapping[str, Any] | None,
) -> tuple[sql.Composable, dict[str, Any], bool]:
    """``where`` as jsonb containment, plus whether it was pushed down entirely.

    Containment can only narrow to candidates; every row is re-checked in Python with
    matches_where, so a key we cannot express is simply left to that re-check (and the
    caller over-fetches). Any-of values become an OR of containments. Placeholders are
    named ``w0``, ``w1``, ... so the caller can name its own parameters too.
    """
    if not where:
        return sql.SQL(""), {}, True
    parts: list[sql.Composable] = []
    params: dict[str, Any] = {}
    complete = True

    def param(key: str, value: Any) -> sql.Composable:
        name = f"w{len(params)}"
        params[name] = json.dumps({key: value})
        return sql.SQL("metadata @> {}::jsonb").format(sql.Placeholder(name))

    for key, wanted in where.items():
        if isinstance(wanted, (list, tuple, set, frozenset)):
            options = list(wanted)
            if not options:
                return sql.SQL(" AND FALSE"), {}, True
            if not all(_pushable(v) for v in options):
                complete = False
                continue
            ors = sql.SQL(" OR ").join(param(key, v) for v in options)
            parts.append(sql.SQL("({})").format(ors))
        elif _pushable(wanted):
            parts.append(param(key, wanted))
        else:
            complete = False
    if not parts:
        return sql.SQL(""), {}, complete
    return sql.SQL(" AND ") + sql.SQL(" AND ").join(parts), params, complete


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
