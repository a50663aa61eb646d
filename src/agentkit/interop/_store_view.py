"""One agentkit store seen from one scope: what a framework's vector store wraps.

LangChain's and LlamaIndex's ``AgentkitVectorStore`` put an agentkit store behind
their framework's interface the same way, here: a store passed in is used as it is
and stays its owner's to close; without one, the SQLite file the CLI reads is opened
(and closed by the object that opened it, never by a ``bind`` view); every call goes
to one scope; and a method a bare ``VectorPort`` lacks is refused by name instead of
failing as an AttributeError. The embedder comes in as a factory, so nothing here
knows a framework.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agentkit._store_path import DEFAULT_STORE_PATH, default_store_path
from agentkit.interop._runner import run_sync
from agentkit.kernel.ctx import Scope
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType, UnsupportedOperation
from agentkit.kernel.validate import check_scope
from agentkit.vector.port import Embedder, VectorPort

__all__ = ["DEFAULT_STORE_PATH", "StoreView", "default_store_path"]


class StoreView:
    """An agentkit store, the scope every call serves, and whether this view opened it.

    Args:
        store: The agentkit store.
        scope: The tenant; ``None`` is the unscoped bucket.
        owned: Whether ``aclose`` closes the store (only for a store this view opened).
    """

    __slots__ = ("owned", "scope", "store")

    def __init__(self, store: VectorPort, scope: Scope | None = None, *, owned: bool = False):
        self.store = store
        self.scope = check_scope(Scope() if scope is None else scope)
        self.owned = owned

    def __repr__(self) -> str:
        return f"StoreView({self.store!r}, scope={self.scope!r}, owned={self.owned})"

    @classmethod
    def open(
        cls,
        store: object,
        *,
        scope: Scope | None,
        path: str | Path | None,
        embedder: Callable[[], Embedder],
        builder_args: Mapping[str, object],
        wrap_hint: str,
    ) -> StoreView:
        """``store`` as it is, or (``None``) the default SQLite store, owned.

        ``builder_args`` are the keywords that only build the default store (name to
        value, in the order the error names them): beside a ready store they are refused,
        because that store embeds with its own embedder; ``wrap_hint`` tells how to give
        it the framework's model instead. The scope is checked before a file is opened.

        Raises:
            InvalidArgument: A builder keyword given with a store.
            InvalidArgumentType: A ``store`` that is not an agentkit ``VectorPort``, or a
                ``scope`` that is not a Scope.
        """
        checked = check_scope(Scope() if scope is None else scope)
        if store is None:
            from agentkit.vector.sqlite import SQLiteVectorStore  # only when it is the store

            built = embedder()
            return cls(
                SQLiteVectorStore(default_store_path(path), embedder=built), checked, owned=True
            )
        if any(value is not None for value in builder_args.values()):
            names = [f"{name}=" for name in builder_args]
            listed = ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]
            raise InvalidArgument(
                f"{listed} build the default SQLite store; a store passed in embeds with its "
                f"own embedder ({wrap_hint})"
            )
        if not isinstance(store, VectorPort):
            raise InvalidArgumentType(
                f"store must be an agentkit VectorPort, got {type(store).__name__}"
            )
        return cls(store, checked)

    def bind(self, scope: Scope) -> StoreView:
        """The same store for ``scope``, never owned: closing a view must not close the
        store under the object it came from."""
        return StoreView(self.store, scope)

    def close(self) -> None:
        """``aclose`` for sync callers, once, on agentkit's shared loop."""
        run_sync(self.aclose)

    async def aclose(self) -> None:
        """Close the store if this view opened it; a store passed in stays open."""
        close = getattr(self.store, "close", None)
        if self.owned and close is not None:
            await close()

    def offered(self, method: str, needed_by: str, instead: str) -> Any:
        """``store.method``, or UnsupportedOperation naming the store, the method, what
        needs it and what to use instead: a ``VectorPort`` need only upsert, search and
        delete."""
        found = getattr(self.store, method, None)
        if found is None:
            raise UnsupportedOperation(
                f"{type(self.store).__name__} has no {method}(), which AgentkitVectorStore "
                f"{needed_by} needs; {instead}"
            )
        return found
