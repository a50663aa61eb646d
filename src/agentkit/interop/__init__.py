"""What both bridges need to put agentkit memory on a framework's own parts.

The tenancy codec for shared external stores (ids, stamps, widening) and the
per-store filter dialects; one implementation, so the LangChain and LlamaIndex
bridges cannot drift apart. Depends on the kernel only: no framework imports here.
"""

from agentkit.interop._tenancy import (
    CHUNK_KEY,
    DOMAIN_KEY,
    ID_NAMESPACE,
    ID_PREFIX,
    ORG_KEY,
    STAMP_KEYS,
    chunk_id_of,
    in_scope,
    is_unscoped,
    record_stamps,
    refuse_unfiltered,
    stamp,
    store_id,
    strip_stamps,
    widen,
)

__all__ = [
    # _tenancy
    "CHUNK_KEY",
    "DOMAIN_KEY",
    "ID_NAMESPACE",
    "ID_PREFIX",
    "ORG_KEY",
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
