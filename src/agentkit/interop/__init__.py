"""What both bridges need to put agentkit memory on a framework's own parts.

The sync runner (one shared event loop, a wide pool for sync-only framework code),
the tenancy codec for shared external stores (ids, stamps, widening), the
per-store filter dialects and id conventions, and the scoped view of an agentkit
store that each framework's ``AgentkitVectorStore`` wraps; one implementation, so
the LangChain and LlamaIndex bridges cannot drift apart. Depends on the kernel and agentkit's
own stores only: no framework imports here.
"""

from agentkit.interop._dialects import (
    DIALECTS,
    Condition,
    Dialect,
    conditions,
    dialect_for,
    merge_filter,
    scope_conditions,
    where_conditions,
)
from agentkit.interop._exact import SPACES, chroma_space, nearest
from agentkit.interop._id_conventions import (
    ID_CONVENTIONS,
    SELF_DESCRIBING,
    IdConvention,
    id_convention,
)
from agentkit.interop._model_rows import model_rows
from agentkit.interop._rerank import RERANK_KEY, Seen, reranked_items
from agentkit.interop._reserved import (
    RESERVED_PREFIX,
    check_unreserved,
    check_where_unreserved,
    known_unreserved,
)
from agentkit.interop._runner import blocking_pool, run_blocking, run_sync
from agentkit.interop._scores import usable_score
from agentkit.interop._store_view import DEFAULT_STORE_PATH, StoreView, default_store_path
from agentkit.interop._tenancy import (
    CHUNK_KEY,
    DOMAIN_KEY,
    ID_PREFIX,
    KEYS_KEY,
    ORG_KEY,
    SCOPED_KEY,
    SCOPED_VALUE,
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
    "CHUNK_KEY",
    "DEFAULT_STORE_PATH",
    "DIALECTS",
    "DOMAIN_KEY",
    "ID_CONVENTIONS",
    "ID_PREFIX",
    "KEYS_KEY",
    "ORG_KEY",
    "RERANK_KEY",
    "RESERVED_PREFIX",
    "SCOPED_KEY",
    "SCOPED_VALUE",
    "SELF_DESCRIBING",
    "SPACES",
    "STAMP_KEYS",
    "Condition",
    "Dialect",
    "IdConvention",
    "Seen",
    "StoreView",
    "blocking_pool",
    "check_unreserved",
    "check_where_unreserved",
    "chroma_space",
    "chunk_id_of",
    "conditions",
    "default_store_path",
    "dialect_for",
    "id_convention",
    "in_scope",
    "is_unscoped",
    "known_unreserved",
    "merge_filter",
    "model_rows",
    "nearest",
    "record_stamps",
    "refuse_unfiltered",
    "reranked_items",
    "run_blocking",
    "run_sync",
    "scope_conditions",
    "stamp",
    "store_id",
    "strip_stamps",
    "usable_score",
    "where_conditions",
    "widen",
]
