"""MemoryItem <-> NodeWithScore: the only place the bridge translates items.

``metadata["source"]`` already means a file or URL to LlamaIndex users, so the
backend name rides in ``agentkit_source`` instead, with ``agentkit_score`` and
``agentkit_id`` beside it. All three are hidden from the LLM and embed text:
they are bookkeeping, and leaking them into prompts would change answers.
"""

from __future__ import annotations

import hashlib
import math
import numbers
from collections.abc import Callable, Iterable
from typing import Any

from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore, TextNode
from pydantic import BaseModel

from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.state.memory import MemoryItem

__all__ = ["RESERVED_PREFIX", "STAMP_KEYS", "from_node", "to_node", "to_nodes"]

RESERVED_PREFIX = "agentkit_"
SOURCE_KEY = "agentkit_source"
SCORE_KEY = "agentkit_score"
ID_KEY = "agentkit_id"
STAMP_KEYS: tuple[str, ...] = (SOURCE_KEY, SCORE_KEY, ID_KEY)
_DEFAULT_SOURCE = "llamaindex"
# Suffix for a repeated id inside one result: LlamaIndex keeps only the first node per
# id, so the second copy of "x" becomes "x~2"; from_node reads it back as "x".
_DUP_SEP = "~"


def _stable_id(source: str, content: str) -> str:
    digest = hashlib.sha256(f"{source}\x00{content}".encode()).hexdigest()
    return f"agentkit-{digest[:32]}"


def _check_reserved(metadata: Iterable[str]) -> None:
    for key in metadata:
        if key.startswith(RESERVED_PREFIX):
            raise InvalidArgument(
                f"metadata key {key!r} is reserved for the bridge (prefix {RESERVED_PREFIX!r}); "
                "rename it: overwriting it would break the round trip"
            )


def _check_item(item: object) -> None:
    if not isinstance(item, MemoryItem):
        raise InvalidArgumentType(f"item must be a MemoryItem, got {type(item).__name__}")


_SEP = "\x00"
_BOUNDARY = _SEP + RESERVED_PREFIX
_new = object.__new__


def _slot_setter(name: str) -> Callable[[object, Any], None]:
    """The raw setter of one of pydantic's instance slots: a C call, no attribute lookup."""
    descriptor = vars(BaseModel).get(name)
    setter = getattr(descriptor, "__set__", None)
    if setter is None:  # another pydantic layout: _fast fails its check, validation is used
        return lambda obj, value: object.__setattr__(obj, name, value)
    return setter  # type: ignore[no-any-return]


_set_dict = _slot_setter("__dict__")
_set_fields = _slot_setter("__pydantic_fields_set__")
_set_extra = _slot_setter("__pydantic_extra__")
_set_private = _slot_setter("__pydantic_private__")
_TEXT_FIELDS_SET = frozenset(
    {"id_", "text", "metadata", "excluded_embed_metadata_keys", "excluded_llm_metadata_keys"}
)
_SCORED_FIELDS_SET = frozenset({"node", "score"})
_STR_ONLY = {str}


def _validated(node_id: str, text: str, meta: dict[str, Any], score: float | None) -> NodeWithScore:
    node = TextNode(
        id_=node_id,
        text=text,
        metadata=meta,
        excluded_embed_metadata_keys=list(STAMP_KEYS),
        excluded_llm_metadata_keys=list(STAMP_KEYS),
    )
    return NodeWithScore(node=node, score=score)


def _fast(node_id: str, text: str, meta: dict[str, Any], score: float | None) -> NodeWithScore:
    """The same node as ``_validated``, without pydantic's validation pass.

    MemoryItem has already checked every type, and validating ten nodes is most of
    what a retrieve costs. Every container is fresh per node, as validation would make
    it. ``_FAST`` checks this against a validated node at import time and the bridge
    falls back to ``_validated`` if a LlamaIndex or pydantic upgrade changes the layout.
    """
    node = _new(TextNode)
    _set_dict(
        node,
        {
            "id_": node_id,
            "embedding": None,
            "metadata": meta,
            "excluded_embed_metadata_keys": list(STAMP_KEYS),
            "excluded_llm_metadata_keys": list(STAMP_KEYS),
            "relationships": {},
            "metadata_template": _METADATA_TMPL,
            "metadata_separator": "\n",
            "text": text,
            "mimetype": "text/plain",
            "start_char_idx": None,
            "end_char_idx": None,
            "text_template": _TEXT_TMPL,
        },
    )
    _set_fields(node, set(_TEXT_FIELDS_SET))
    _set_extra(node, None)
    _set_private(node, None)
    scored = _new(NodeWithScore)
    _set_dict(scored, {"node": node, "score": score})
    _set_fields(scored, set(_SCORED_FIELDS_SET))
    _set_extra(scored, None)
    _set_private(scored, None)
    return scored


_METADATA_TMPL: str = TextNode.model_fields["metadata_template"].default
_TEXT_TMPL: str = TextNode.model_fields["text_template"].default


_LLM = MetadataMode.LLM


def _same(fast: Any, slow: Any) -> bool:
    return (
        type(fast) is type(slow)
        and list(fast.__dict__) == list(slow.__dict__)
        and fast.__dict__ == slow.__dict__
        and fast.__pydantic_fields_set__ == slow.__pydantic_fields_set__
        and fast.__pydantic_extra__ == slow.__pydantic_extra__
        and fast.__pydantic_private__ == slow.__pydantic_private__
    )


def _fast_is_exact() -> bool:
    try:
        for score in (0.5, None):
            fast = _fast("i", "t", {"k": 1, SOURCE_KEY: "s"}, score)
            slow = _validated("i", "t", {"k": 1, SOURCE_KEY: "s"}, score)
            if not (
                _same(fast, slow)
                and _same(fast.node, slow.node)
                and fast == slow
                and fast.model_dump() == slow.model_dump()
                and fast.model_dump_json() == slow.model_dump_json()
                and fast.node.get_content(_LLM) == slow.node.get_content(_LLM)
                and fast.node.hash == slow.node.hash
            ):
                return False
        return True
    except Exception:
        return False


_FAST = _fast_is_exact()


def to_node(item: MemoryItem) -> NodeWithScore:
    """A fresh ``NodeWithScore(TextNode)`` for ``item``, stamped for an exact round trip.

    Fresh on every call because fusion retrievers overwrite ``score`` in place on the
    objects they are handed.
    """
    _check_item(item)
    return to_nodes((item,))[0]


def to_nodes(items: Iterable[MemoryItem]) -> list[NodeWithScore]:
    """``to_node`` for a whole result, ids made unique so LlamaIndex drops none.

    One tight loop: on the sync retrieve path this is the bridge's largest cost.
    """
    nodes: list[NodeWithScore] = []
    append = nodes.append
    seen: set[str] = set()
    fast = _FAST
    for item in items:
        if type(item) is not MemoryItem:
            _check_item(item)
        meta = item.metadata
        content = item.content
        # Validation would turn str subclasses into plain str; only exact types skip it.
        exact = fast and type(content) is str
        if meta:
            # One C-level scan instead of a Python loop per key; a hit (or a key that
            # merely contains the prefix) gets the exact check, which names the key.
            if _BOUNDARY in _SEP + _SEP.join(meta):
                _check_reserved(meta)
            exact = exact and set(map(type, meta)) == _STR_ONLY
        stamped: dict[str, Any] = dict(meta)
        source = item.source
        stamped[SOURCE_KEY] = source
        score = item.score
        if score is not None:
            stamped[SCORE_KEY] = score
        node_id = item.id
        if node_id is None:
            node_id = _stable_id(source, content)
        else:
            exact = exact and type(node_id) is str
            stamped[ID_KEY] = node_id
        if node_id in seen:
            n = 2
            while f"{node_id}{_DUP_SEP}{n}" in seen:
                n += 1
            node_id = f"{node_id}{_DUP_SEP}{n}"
        seen.add(node_id)
        append((_fast if exact else _validated)(node_id, content, stamped, score))
    return nodes


def _is_copy_of(node_id: str, base: str) -> bool:
    if node_id == base:
        return True
    prefix = base + _DUP_SEP
    return node_id.startswith(prefix) and node_id[len(prefix) :].isdigit()


def _as_score(value: Any) -> float | None:
    if value is None or isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    score = float(value)  # numpy floats from stores become plain floats
    return score if math.isfinite(score) else None


def _content(node: BaseNode) -> str:
    if isinstance(node, TextNode):
        return node.text
    return node.get_content(metadata_mode=MetadataMode.NONE)


def from_node(
    node_with_score: NodeWithScore | BaseNode, *, source: str | None = None
) -> MemoryItem:
    """The item a node stands for; the inverse of :func:`to_node`.

    The bridge's stamps win over everything else (``agentkit_source`` over ``source=``,
    ``agentkit_score`` over the node score) and are removed from the metadata. The node
    id wins over ``agentkit_id`` when they differ, except for the ``~n`` copies
    :func:`to_nodes` made. A node that never came from agentkit keeps its own id and
    score and gets ``source`` (default ``"llamaindex"``).
    """
    if isinstance(node_with_score, NodeWithScore):
        node = node_with_score.node
        node_score: Any = node_with_score.score
    elif isinstance(node_with_score, BaseNode):
        node, node_score = node_with_score, None
    else:
        raise InvalidArgumentType(
            f"expected a NodeWithScore or BaseNode, got {type(node_with_score).__name__}"
        )
    if source is not None and (not isinstance(source, str) or not source):
        raise InvalidArgument(f"source must be a non-empty str or None, got {source!r}")
    meta = dict(node.metadata)
    stamped_source = meta.pop(SOURCE_KEY, None)
    stamped_id = meta.pop(ID_KEY, None)
    has_score = SCORE_KEY in meta
    stamped_score = meta.pop(SCORE_KEY, None)
    content = _content(node)
    node_id = node.node_id

    if isinstance(stamped_source, str) and stamped_source:
        item_source = stamped_source
        if isinstance(stamped_id, str):
            item_id: str | None = stamped_id if _is_copy_of(node_id, stamped_id) else node_id
        elif _is_copy_of(node_id, _stable_id(item_source, content)):
            item_id = None
        else:
            item_id = node_id
    else:
        item_source = source or _DEFAULT_SOURCE
        item_id = stamped_id if isinstance(stamped_id, str) and not node_id else node_id
    score = _as_score(stamped_score) if has_score else _as_score(node_score)
    return MemoryItem(content, item_source, score, meta, id=item_id)
