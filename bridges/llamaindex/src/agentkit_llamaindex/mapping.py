"""MemoryItem <-> NodeWithScore: the only place the bridge translates items.

``metadata["source"]`` already means a file or URL to LlamaIndex users, so the
backend name rides in ``agentkit_source`` instead, with ``agentkit_score`` and
``agentkit_id`` beside it. All three are hidden from the LLM and embed text:
they are bookkeeping, and leaking them into prompts would change answers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore, TextNode

from agentkit.interop import RESERVED_PREFIX, check_unreserved, known_unreserved, usable_score
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.state.memory import MemoryItem

__all__ = ["RESERVED_PREFIX", "STAMP_KEYS", "from_node", "to_node", "to_nodes"]

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


def _check_item(item: object) -> None:
    if not isinstance(item, MemoryItem):
        raise InvalidArgumentType(f"item must be a MemoryItem, got {type(item).__name__}")


def _node(node_id: str, text: str, meta: dict[str, Any], score: float | None) -> NodeWithScore:
    # The tuple as is: pydantic validates it into a fresh list for each node anyway.
    node = TextNode(
        id_=node_id,
        text=text,
        metadata=meta,
        excluded_embed_metadata_keys=STAMP_KEYS,
        excluded_llm_metadata_keys=STAMP_KEYS,
    )
    return NodeWithScore(node=node, score=score)


def to_node(item: MemoryItem) -> NodeWithScore:
    """A fresh ``NodeWithScore(TextNode)`` for ``item``, stamped for an exact round trip.

    Fresh on every call because fusion retrievers overwrite ``score`` in place on the
    objects they are handed.

    Args:
        item: The item to carry.

    Returns:
        A new ``NodeWithScore`` whose ``TextNode`` holds the content, id and metadata
        plus the ``agentkit_*`` stamps (hidden from the LLM and the embedder).
    """
    _check_item(item)
    return to_nodes((item,))[0]


def to_nodes(items: Iterable[MemoryItem], *, include_score: bool = True) -> list[NodeWithScore]:
    """``to_node`` for a whole result, ids made unique so LlamaIndex drops none.

    ``include_score=False`` leaves the ``agentkit_score`` stamp out of the metadata
    (the node score still carries the score): ``QueryFusionRetriever`` fuses copies
    of a node by a hash of its text and metadata, so a record that each generated
    query scored differently would otherwise never be fused. ``from_node`` then reads
    the node score, which a fusion may have replaced.
    """
    nodes: list[NodeWithScore] = []
    seen: set[str] = set()
    for item in items:
        if not isinstance(item, MemoryItem):
            _check_item(item)  # raises, naming the type
        given = item.metadata
        if not known_unreserved(given):
            check_unreserved(given)
        # A plain dict, cloned whole: dict(given) would merge key by key from the subclass.
        stamped: dict[str, Any] = given.copy()
        source = item.source
        stamped[SOURCE_KEY] = source
        score = item.score
        if include_score and score is not None:
            stamped[SCORE_KEY] = score
        node_id = item.id
        if node_id is None:
            node_id = _stable_id(source, item.content)
        else:
            stamped[ID_KEY] = node_id
        if node_id in seen:
            n = 2
            while f"{node_id}{_DUP_SEP}{n}" in seen:
                n += 1
            node_id = f"{node_id}{_DUP_SEP}{n}"
        seen.add(node_id)
        nodes.append(_node(node_id, item.content, stamped, score))
    return nodes


def _is_copy_of(node_id: str, base: str) -> bool:
    if node_id == base:
        return True
    prefix = base + _DUP_SEP
    return node_id.startswith(prefix) and node_id[len(prefix) :].isdigit()


def _content(node: BaseNode) -> str:
    if isinstance(node, TextNode):
        return node.text
    return node.get_content(metadata_mode=MetadataMode.NONE)


def from_node(
    node_with_score: NodeWithScore | BaseNode, *, source: str | None = None
) -> MemoryItem:
    """The item a node stands for; the inverse of ``to_node``.

    The bridge's stamps win over everything else (``agentkit_source`` over ``source=``,
    ``agentkit_score`` over the node score) and are removed from the metadata. The node
    id wins over ``agentkit_id`` when they differ, except for the ``~n`` copies
    ``to_nodes`` made. A node that never came from agentkit keeps its own id and
    score and gets ``source`` (default ``"llamaindex"``).

    Args:
        node_with_score: A ``NodeWithScore``, or a bare node (then unscored).
        source: The source name for a node without an ``agentkit_source`` stamp;
            ``None`` means ``"llamaindex"``.

    Returns:
        A new MemoryItem; for a node made by ``to_node``, the original item.

    Raises:
        InvalidArgumentType: Neither a ``NodeWithScore`` nor a node.
        InvalidArgument: An empty or non-str ``source``.
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
    score = usable_score(stamped_score) if has_score else usable_score(node_score)
    return MemoryItem(content, item_source, score, meta, id=item_id)
