"""AgentkitRetriever: any agentkit memory stack as a LangChain retriever."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import set_config_context, var_child_runnable_config
from pydantic import ConfigDict, StrictBool, field_validator, model_validator

from agentkit.interop import run_sync
from agentkit.kernel.ctx import Ctx, Scope
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.kernel.validate import check_k, check_query, check_where
from agentkit.state.memory import MemoryItem
from agentkit_langchain._configurable import configured_tenant
from agentkit_langchain.mapping import to_documents

# Per-call keyword arguments the base class passes through on its own.
_IGNORED_KWARGS = frozenset({"verbose"})
_CTX = "_agentkit_ctx"
_ALLOWED_KWARGS = frozenset({"k", "where", "run_id"}) | _IGNORED_KWARGS
# Scope is frozen: one shared unscoped value instead of a new one per call.
_UNSCOPED = Scope()


class AgentkitRetriever(BaseRetriever):
    """A MemorySource (one source or a whole composite) behind LangChain's retriever API.

    Documents come back in the memory's order: the stack has already merged and
    ranked, and re-sorting here would undo its reranker. Per call, ``k`` and
    ``where`` may be passed as keyword arguments (``where`` merges over the
    constructor's, key by key). The tenant comes from, in order:
    ``config["configurable"]["agentkit_ctx"]`` (a whole Ctx, which then receives
    the run's observations), ``configurable`` ``org_id``/``domain_id`` (together
    they replace the default scope, never mix with it), then the constructor's
    ``ctx`` or ``scope``. The base class never hands ``config`` to
    ``_get_relevant_documents``, hence the ``invoke``/``ainvoke`` overrides.

    LangChain retrievers reached through the stack report as child runs of this
    one: the memory runs under a context whose child config carries this run's
    callbacks, the way LangChain's own runnables do it.

    ``invoke`` runs the query once on the one event loop both bridges share
    (``agentkit.interop.run_sync``: driven by the calling thread when it is free, else
    handed to whoever drives it) and waits, so it works inside a running loop too;
    ``ainvoke`` awaits it on the caller's loop. Both hand the memory the caller's Ctx
    object itself, never a copy.

    Errors follow LangChain's split. Building the retriever validates its fields as
    every LangChain component does, so a bad value there is pydantic's
    ``ValidationError`` (a ValueError, like InvalidArgument; the InvalidArgument itself
    is in ``errors()[0]["ctx"]["error"]``); a wrong type stays InvalidArgumentType,
    which pydantic does not wrap. A call's arguments are checked by ``invoke`` before
    any run starts and raise agentkit's own InvalidArgument/InvalidArgumentType, as
    the rest of agentkit does.

    Raises:
        InvalidArgumentType: A ``memory`` without async ``query()``, or a ``k``,
            ``where``, ``scope`` or ``ctx`` of the wrong type.
        pydantic.ValidationError: A ``k`` below 1, or a ``scope`` and a ``ctx`` naming
            different tenants (pydantic wraps the value errors of its validators).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    memory: Any
    """The MemorySource to recall from: one source or a whole stack."""
    k: int = 4
    """How many documents a call returns at most; a call's ``k=`` overrides it."""
    where: dict[str, Any] | None = None
    """A metadata filter every call applies; a call's ``where=`` merges over it."""
    scope: Scope | None = None
    """The tenant when the call's config names none (give this or ``ctx``, not both)."""
    ctx: Ctx | None = None
    """A whole Ctx for calls whose config names no tenant; it receives the observations."""
    include_score: StrictBool = True
    """Whether each document's metadata carries ``agentkit_score``.

    ``False`` suits wrappers that dedupe by document equality (``MultiQueryRetriever``),
    where one record scored differently by two queries would come back twice.
    """

    @field_validator("memory")
    @classmethod
    def _check_memory(cls, memory: Any) -> Any:
        if not callable(getattr(memory, "query", None)):
            raise InvalidArgumentType(
                f"memory must be a MemorySource (needs async query()), got {type(memory).__name__}"
            )
        return memory

    @field_validator("k", mode="before")
    @classmethod
    def _check_k(cls, k: Any) -> int:
        return check_k(k)

    @field_validator("where", mode="before")
    @classmethod
    def _check_where(cls, where: Any) -> dict[str, Any] | None:
        return check_where(where)

    @field_validator("scope", mode="before")
    @classmethod
    def _check_scope(cls, scope: Any) -> Scope | None:
        if scope is not None and not isinstance(scope, Scope):
            raise InvalidArgumentType(f"scope must be a Scope or None, got {type(scope).__name__}")
        return scope

    @field_validator("ctx", mode="before")
    @classmethod
    def _check_ctx(cls, ctx: Any) -> Ctx | None:
        if ctx is not None and not isinstance(ctx, Ctx):
            raise InvalidArgumentType(f"ctx must be a Ctx or None, got {type(ctx).__name__}")
        return ctx

    @model_validator(mode="after")
    def _one_tenant(self) -> AgentkitRetriever:
        if self.ctx is not None and self.scope is not None and self.ctx.scope != self.scope:
            raise InvalidArgument("pass either scope or ctx, not both (their scopes differ)")
        return self

    # --- entry points: read the tenant from config, validate, then the base run ---

    def invoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        """Recall documents for ``input``; blocks, and works inside a running loop too.

        Args:
            input: The query text.
            config: A LangChain run config; ``configurable`` may carry the tenant as
                ``agentkit_ctx`` (a Ctx) or ``org_id``/``domain_id``.
            **kwargs: ``k`` and ``where`` for this call only.

        Returns:
            The documents, in the memory's order.

        Raises:
            InvalidArgumentType: An unknown keyword, a bad ``k``/``where`` type, or an
                ``agentkit_ctx`` that is not a Ctx; raised before any run starts.
            InvalidArgument: ``k`` below 1.
        """
        if kwargs or config is not None or var_child_runnable_config.get() is not None:
            self._configure(config, kwargs)
        return super().invoke(input, config, **kwargs)

    async def ainvoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        """``invoke`` awaited on the caller's loop; same arguments, same errors."""
        if kwargs or config is not None or var_child_runnable_config.get() is not None:
            self._configure(config, kwargs)
        return await super().ainvoke(input, config, **kwargs)

    def _configure(self, config: RunnableConfig | None, kwargs: dict[str, Any]) -> None:
        """Validate the call's keywords before any run starts, and add the tenant its
        config names, if any. A call with neither (the common one) skips this: the run
        then serves the constructor's tenant, and the base class forwards no keywords.
        """
        if kwargs:  # most calls pass none: skip the checks' lookups
            for name in kwargs:
                if name not in _ALLOWED_KWARGS:
                    raise InvalidArgumentType(
                        f"AgentkitRetriever got an unexpected keyword argument {name!r}"
                    )
            if "k" in kwargs:
                kwargs["k"] = check_k(kwargs["k"])
            if "where" in kwargs:
                kwargs["where"] = check_where(kwargs["where"])
        # What ensure_config would give: an explicit configurable, else the inherited one.
        configurable = config.get("configurable") if config else None
        if configurable is None:
            inherited = var_child_runnable_config.get()
            configurable = inherited.get("configurable") if inherited else None
        if configurable:
            tenant = configured_tenant(configurable)
            if tenant is not None:
                kwargs[_CTX] = tenant

    # --- the run itself ---

    def _prepare(
        self,
        query: str,
        k: int | None,
        where: dict[str, Any] | None,
        given: Ctx | Scope | None,
        run_manager: CallbackManagerForRetrieverRun | AsyncCallbackManagerForRetrieverRun,
    ) -> tuple[str, int, dict[str, Any] | None, Ctx]:
        """The query checked, the call's k and merged where, and the Ctx the memory gets.

        The caller's own Ctx when there is one (it receives the observations); else a
        new one for the tenant, whose run id is LangChain's: one id to correlate both
        traces (only then is the run id's hex spelt).
        """
        query = check_query(query)
        if k is None:
            k = self.k
        if where is None:
            where = self.where
        elif self.where:
            where = {**self.where, **where}
        if isinstance(given, Ctx):
            return query, k, where, given
        if given is None:
            if self.ctx is not None:
                return query, k, where, self.ctx
            given = self.scope if self.scope is not None else _UNSCOPED
        return query, k, where, Ctx(given, run_id=run_manager.run_id.hex)

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        where: dict[str, Any] | None = None,
        _agentkit_ctx: Ctx | Scope | None = None,
        **_: Any,
    ) -> list[Document]:
        query, k, where, ctx = self._prepare(query, k, where, _agentkit_ctx, run_manager)
        memory = self.memory

        def make() -> Any:
            return memory.query(query, k=k, ctx=ctx, where=where)

        if run_manager.handlers or run_manager.inheritable_handlers:
            # run_sync runs the query in a copy of the context it is called in.
            with set_config_context(_child_config(run_manager)) as context:
                items: list[MemoryItem] = context.run(run_sync, make)
        else:  # nothing listens, so nothing could see the nesting: spare building it
            items = run_sync(make)
        if len(items) > k:
            items = items[:k]
        return to_documents(items, include_score=self.include_score)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        where: dict[str, Any] | None = None,
        _agentkit_ctx: Ctx | Scope | None = None,
        **_: Any,
    ) -> list[Document]:
        query, k, where, ctx = self._prepare(query, k, where, _agentkit_ctx, run_manager)
        if run_manager.handlers or run_manager.inheritable_handlers:
            with set_config_context(_child_config(run_manager)) as context:
                coro = self.memory.query(query, k=k, ctx=ctx, where=where)
                items: list[MemoryItem] = await asyncio.create_task(coro, context=context)
        else:
            items = await self.memory.query(query, k=k, ctx=ctx, where=where)
        if len(items) > k:
            items = items[:k]
        return to_documents(items, include_score=self.include_score)


def _child_config(
    run_manager: CallbackManagerForRetrieverRun | AsyncCallbackManagerForRetrieverRun,
) -> RunnableConfig:
    """The child config that makes LangChain runs inside the memory nest under this one."""
    parent = var_child_runnable_config.get()
    config: RunnableConfig = dict(parent) if parent else {}  # type: ignore[assignment]
    config["callbacks"] = run_manager.get_child()
    config.pop("run_name", None)
    config.pop("run_id", None)
    return config
