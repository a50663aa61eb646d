"""The tenancy codec: keeping tenants apart on one shared external vector store.

A framework store (a LangChain ``VectorStore``, a LlamaIndex vector store) has one id
space and one metadata bag per record, and knows nothing of scopes. Both bridges put
scopes on top of it the same way, here:

* **Stamps.** A scoped record carries its scope in flat metadata keys (``ORG_KEY``,
  ``DOMAIN_KEY``; ``""`` for an unset half, because some stores drop ``None``) and
  ``SCOPED_KEY: SCOPED_VALUE``, a constant: "not equal to it" is how a store that
  cannot say "key absent" (Chroma) still selects the unscoped bucket in one pass. A
  record with no stamp - anything a user wrote with plain LangChain/LlamaIndex code -
  is the *unscoped bucket*. So is a legacy record stamped ``("", "")``.
* **Store ids.** The unscoped bucket keeps its own ids (chunk ``"doc-1"`` is record
  ``"doc-1"``), so existing data is read, updated and deleted by the ids its owner
  knows. A scoped record's id is ``ID_PREFIX`` followed by org, domain and chunk id,
  each percent-escaped and joined by ``":"``: injective, whatever characters a scope
  id holds, and never the shape of a raw unscoped id (an unscoped id that itself
  starts with ``ID_PREFIX`` is escaped the same way, with empty org and domain,
  which no scoped scope has). Stores that only take UUID ids (Qdrant) get a
  version-8 UUID hashed (SHA-256) from that encoding, except an unscoped id that
  already is a canonical UUID of another version, used as is (existing Qdrant data:
  langchain-qdrant and LlamaIndex write uuid4s). Version 8 is the partition: an
  unscoped v8 id is hashed too, so no raw id can ever name a tenant's point, even
  one that read the tenant's id off the store.
* **Chunk ids back.** ``CHUNK_KEY`` carries the chunk id whenever the store id is not
  the chunk id itself; reading back takes it, else the store id.
* **Self-describing records.** On a store whose id convention is unknown (it may
  drop the record id, or add keys of its own to what it returns), a record also
  carries its chunk id always, and the user's own metadata keys under ``KEYS_KEY``;
  reading back keeps only those keys.
* **Widening.** A store that filters after its own top-N (FAISS), approximately
  (Chroma) or not at all for some condition returns fewer matches than exist;
  :func:`widen` asks again, wider, until ``k`` survive the re-check or the store
  has nothing more.
"""

from __future__ import annotations

import hashlib
import json
import uuid as _uuid
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any, TypeVar

from agentkit.kernel.ctx import Scope
from agentkit.kernel.errors import InvalidArgument, StoreError

__all__ = [
    "CHUNK_KEY",
    "DOMAIN_KEY",
    "ID_PREFIX",
    "KEYS_KEY",
    "ORG_KEY",
    "SCOPED_KEY",
    "SCOPED_VALUE",
    "STAMP_KEYS",
    "chunk_id_of",
    "in_scope",
    "is_unscoped",
    "record_stamps",
    "refuse_unfiltered",
    "stamp",
    "store_id",
    "strip_stamps",
    "widen",
]

T = TypeVar("T")

ORG_KEY = "agentkit_org_id"
"""Metadata key holding a scoped record's ``Scope.org_id``."""
DOMAIN_KEY = "agentkit_domain_id"
"""Metadata key holding a scoped record's ``Scope.domain_id``."""
CHUNK_KEY = "agentkit_chunk_id"
"""Metadata key holding the agentkit chunk id that the store id encodes."""
SCOPED_KEY = "agentkit_scoped"
"""Metadata key marking a record as written for a tenant (value ``SCOPED_VALUE``)."""
SCOPED_VALUE = "1"
"""The value under ``SCOPED_KEY``: a string, which every store's filter can compare."""
KEYS_KEY = "agentkit_keys"
"""Metadata key listing (JSON) the user's own keys of a record on a self-describing store."""
STAMP_KEYS = frozenset({ORG_KEY, DOMAIN_KEY, CHUNK_KEY, SCOPED_KEY, KEYS_KEY})
"""Every key the port adds; ``strip_stamps`` removes them before a user sees a record."""
ID_PREFIX = "agentkit:"
"""How a scoped record's store id begins, telling it apart from a user's own ids."""

_SEP = ":"


def is_unscoped(scope: Scope) -> bool:
    """The bucket of records written without agentkit (and of ``Scope()`` calls)."""
    return scope.org_id is None and scope.domain_id is None


def stamp(scope: Scope) -> dict[str, str]:
    """The scope keys a record of ``scope`` carries; ``{}`` for the unscoped bucket.

    Unscoped records carry no stamp, so they look exactly like a user's own records:
    one bucket, one rule, whoever wrote them. To select the bucket in a store's
    filter: ``SCOPED_KEY`` not equal to ``SCOPED_VALUE`` (absent counts as not
    equal); the re-check with ``in_scope`` stays the authority.
    """
    if is_unscoped(scope):
        return {}
    return {
        ORG_KEY: scope.org_id or "",
        DOMAIN_KEY: scope.domain_id or "",
        SCOPED_KEY: SCOPED_VALUE,
    }


def store_id(scope: Scope, chunk_id: str, *, uuid: bool = False) -> str:
    """The record id of chunk ``chunk_id`` of ``scope`` in the shared store.

    ``uuid=True`` for stores whose point ids must be UUIDs (Qdrant, in both
    frameworks). Injective over (scope, chunk id) in both modes (``uuid`` mode up to
    SHA-256 collisions).
    """
    if not isinstance(chunk_id, str) or not chunk_id:
        raise InvalidArgument(f"chunk id must be a non-empty str, got {chunk_id!r}")
    if is_unscoped(scope) and not chunk_id.startswith(ID_PREFIX):
        if not uuid or _is_canonical_uuid(chunk_id):
            return chunk_id
    encoded = ID_PREFIX + _SEP.join(
        _escape(part) for part in (scope.org_id or "", scope.domain_id or "", chunk_id)
    )
    return _hashed_uuid(encoded) if uuid else encoded


def record_stamps(
    scope: Scope, chunk_id: str, record_id: str, *, own_keys: Collection[str] | None = None
) -> dict[str, str]:
    """Everything the port adds to a record's metadata: scope stamp, and ``CHUNK_KEY``
    when the store id does not say the chunk id by itself.

    ``own_keys`` (the user's metadata keys) makes the record self-describing, for a
    store whose id convention is unknown: ``CHUNK_KEY`` always, and ``KEYS_KEY``.
    """
    out = stamp(scope)
    if record_id != chunk_id or own_keys is not None:
        out[CHUNK_KEY] = chunk_id
    if own_keys is not None:
        out[KEYS_KEY] = json.dumps(sorted(own_keys))
    return out


def chunk_id_of(record_id: str | None, metadata: Mapping[str, Any]) -> str | None:
    """The chunk id a stored record stands for (None: the store gave no id at all)."""
    carried = metadata.get(CHUNK_KEY)
    if isinstance(carried, str) and carried:
        return carried
    if not record_id:
        return None
    if record_id.startswith(ID_PREFIX):
        parts = record_id[len(ID_PREFIX) :].split(_SEP)
        if len(parts) == 3 and parts[2]:
            return _unescape(parts[2])
    return record_id


def in_scope(metadata: Mapping[str, Any], scope: Scope) -> bool:
    """Whether a stored record belongs to ``scope``'s bucket.

    No stamp (or a legacy ``""`` stamp) is the unscoped bucket; a stamp of any other
    type than str is nobody's, so a malformed record never leaks into a tenant. A
    record marked scoped (``SCOPED_KEY``) is never the unscoped bucket's, even with its
    scope keys lost: that is what the stores' own filter says, and the re-check must
    never let through what the filter keeps out.
    """
    if is_unscoped(scope):
        if metadata.get(SCOPED_KEY) == SCOPED_VALUE:
            return False
    elif ORG_KEY not in metadata or DOMAIN_KEY not in metadata:
        return False  # a tenant's record carries both keys; half a stamp is nobody's
    return _stamp_value(metadata, ORG_KEY) == (scope.org_id or "") and _stamp_value(
        metadata, DOMAIN_KEY
    ) == (scope.domain_id or "")


def strip_stamps(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The record's own metadata: what the user wrote, without the port's keys (and,
    on a self-describing record, without any key the store added)."""
    own = _own_keys(metadata.get(KEYS_KEY)) if KEYS_KEY in metadata else None
    return {
        key: value
        for key, value in metadata.items()
        if key not in STAMP_KEYS and (own is None or key in own)
    }


def _own_keys(listed: object) -> frozenset[str] | None:
    """The keys ``KEYS_KEY`` lists; None (keep every key) when it is not a key list."""
    if not isinstance(listed, str):
        return None
    try:
        keys = json.loads(listed)
    except ValueError:
        return None
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        return None
    return frozenset(keys)


def refuse_unfiltered(store: str, scope: Scope, *, hint: str = "") -> None:
    """Refuse scoped use of a store that cannot filter, before anything is written.

    Unscoped use is always allowed: with no tenants there is nothing to keep apart.
    Both bridges raise this one error, so users see one message.
    """
    if is_unscoped(scope):
        return
    raise StoreError(
        f"{store} cannot filter by metadata (or agentkit does not know its filter "
        f"dialect), so it cannot keep tenants apart: refusing scoped use for {scope!r}. "
        f"Use it unscoped (Scope()), one store per tenant"
        + (f", or {hint}" if hint else "")
        + "."
    )


async def widen(
    fetch: Callable[[int], Awaitable[list[T]]],
    keep: Callable[[T], bool],
    k: int,
    *,
    first: int,
    total: int | None = None,
) -> list[T]:
    """The first ``k`` results ``keep`` accepts, asking the store wider until found.

    ``fetch(n)`` runs the store's search for ``n`` results, best first. Each round
    doubles ``n`` until ``k`` results survive ``keep`` or the store is exhausted: by
    default when it returned fewer than asked; with ``total`` (the store's record
    count) when ``n`` reached it, for stores whose answer is short because they
    filtered their top ``n`` (FAISS' ``fetch_k``). The first round asks for
    ``max(first, k)``, so a store returning enough matches is one pass.
    """
    n = max(first, k, 1)
    if total is not None:
        n = min(n, max(total, 1))
    while True:
        batch = await fetch(n)
        kept = [item for item in batch if keep(item)]
        if len(kept) >= k:
            return kept[:k]
        exhausted = n >= total if total is not None else len(batch) < n
        if exhausted:
            return kept
        n *= 2
        if total is not None:
            n = min(n, total)


def _stamp_value(metadata: Mapping[str, Any], key: str) -> str | None:
    value = metadata.get(key)
    if value is None:
        return ""
    return value if isinstance(value, str) else None


def _is_canonical_uuid(text: str) -> bool:
    """A UUID spelled as stores spell it back, and not of our own version (8)."""
    try:
        parsed = _uuid.UUID(text)
    except ValueError:
        return False
    return str(parsed) == text and parsed.version != 8


def _hashed_uuid(encoded: str) -> str:
    """A version-8 (RFC 9562 custom) UUID from the encoded id's SHA-256."""
    raw = bytearray(hashlib.sha256(encoded.encode("utf-8")).digest()[:16])
    raw[6] = (raw[6] & 0x0F) | 0x80
    raw[8] = (raw[8] & 0x3F) | 0x80
    return str(_uuid.UUID(bytes=bytes(raw)))


def _escape(part: str) -> str:
    """Percent-escape ``%``, the separator, control characters and lone surrogates.

    Escaping ``%`` itself keeps the encoding reversible (hence injective); escaping
    NUL and other control characters keeps ids storable (PostgreSQL text refuses
    NUL), and surrogates keep them encodable as UTF-8.
    """
    if part.isprintable() and "%" not in part and _SEP not in part:
        return part
    out: list[str] = []
    for ch in part:
        code = ord(ch)
        if ch == "%" or ch == _SEP or code < 0x20 or code == 0x7F:
            out.append(f"%{code:02X}")
        elif 0xD800 <= code <= 0xDFFF:
            out.append(f"%u{code:04X}")
        else:
            out.append(ch)
    return "".join(out)


def _unescape(part: str) -> str:
    if "%" not in part:
        return part
    out: list[str] = []
    i = 0
    while i < len(part):
        ch = part[i]
        if ch != "%":
            out.append(ch)
            i += 1
        elif part.startswith("u", i + 1):
            out.append(chr(int(part[i + 2 : i + 6], 16)))
            i += 6
        else:
            out.append(chr(int(part[i + 1 : i + 3], 16)))
            i += 3
    return "".join(out)
