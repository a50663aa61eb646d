"""AgentkitRetriever: any agentkit memory stack as a LangChain retriever."""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import (
    _set_config_context,
    var_child_runnable_config,
)
from pydantic import ConfigDict, field_validator, model_validator

from agentkit.kernel.ctx import Ctx, Scope, Timeline
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.kernel.validate import check_k, check_query, check_where
from agentkit.state.memory import MemoryItem
from agentkit_langchain import _sync
from agentkit_langchain.mapping import to_documents

# Per-call keyword arguments the base class passes through on its own.
_IGNORED_KWARGS = frozenset({"verbose"})
_CTX = "_agentkit_ctx"


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
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    memory: Any
    k: int = 4
    where: dict[str, Any] | None = None
    scope: Scope | None = None
    ctx: Ctx | None = None

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
        kwargs[_CTX] = self._tenant(config, kwargs)
        return super().invoke(input, config, **kwargs)

    async def ainvoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        kwargs[_CTX] = self._tenant(config, kwargs)
        return await super().ainvoke(input, config, **kwargs)

    def _tenant(self, config: RunnableConfig | None, kwargs: dict[str, Any]) -> Ctx | Scope:
        """Validate the call before any run starts; return its Ctx, or the Scope for one."""
        for name in kwargs:
            if name not in ("k", "where", "run_id") and name not in _IGNORED_KWARGS:
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
        configurable = configurable or {}
        given = configurable.get("agentkit_ctx")
        if given is not None:
            if not isinstance(given, Ctx):
                raise InvalidArgumentType(
                    f"configurable['agentkit_ctx'] must be a Ctx, got {type(given).__name__}"
                )
            return given
        org = configurable.get("org_id")
        domain = configurable.get("domain_id")
        if org is not None or domain is not None:
            return Scope(org, domain)
        if self.ctx is not None:
            return self.ctx
        return self.scope if self.scope is not None else Scope()

    # --- the run itself ---

    def _call(
        self, query: str, k: int | None, where: dict[str, Any] | None
    ) -> tuple[str, int, dict[str, Any] | None]:
        query = check_query(query)
        k = self.k if k is None else k
        if where is None:
            merged = self.where
        else:
            merged = {**self.where, **where} if self.where else where
        return query, k, merged

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
        query, k, where = self._call(query, k, where)
        ctx, visible = self._ctx(_agentkit_ctx, run_manager.run_id.hex)
        context = _child_context(run_manager)
        memory = self.memory
        runs: list[Ctx] = []

        def make() -> Any:
            # A caller-visible Ctx is never handed to an attempt that may be thrown
            # away: each attempt observes into a scratch timeline, and only the
            # attempt whose answer is returned has its observations replayed.
            run_ctx = Ctx(ctx.scope, run_id=ctx.run_id, timeline=Timeline()) if visible else ctx
            runs.append(run_ctx)
            return memory.query(query, k=k, ctx=run_ctx, where=where)

        def accept() -> bool:
            # A member failure logged by an inline attempt may have been caused by
            # the missing loop itself: let a real loop answer instead.
            timeline = runs[-1].timeline
            return not len(timeline) or not timeline.of("memory.source_failed")

        items = _sync.run_sync(make, key=memory, context=context, accept=accept)
        if visible:
            for observation in runs[-1].timeline:
                ctx.timeline.append(observation)
        return _documents(items, k)

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
        query, k, where = self._call(query, k, where)
        ctx = self._ctx(_agentkit_ctx, run_manager.run_id.hex)[0]
        context = _child_context(run_manager)
        coro = self.memory.query(query, k=k, ctx=ctx, where=where)
        items = await (coro if context is None else asyncio.create_task(coro, context=context))
        return _documents(items, k)

    def _ctx(self, given: Ctx | Scope | None, run_id: str) -> tuple[Ctx, bool]:
        """The run's Ctx, and whether the caller can see it (so must get observations)."""
        if isinstance(given, Ctx):
            return given, True
        if given is None:
            if self.ctx is not None:
                return self.ctx, True
            given = self.scope if self.scope is not None else Scope()
        # The agentkit run id is LangChain's run id: one id to correlate both traces.
        return Ctx(given, run_id=run_id), False


def _child_context(
    run_manager: CallbackManagerForRetrieverRun | AsyncCallbackManagerForRetrieverRun,
) -> contextvars.Context | None:
    """A context whose child config points callbacks at this run, so children nest.

    ``None`` when no handler is listening (nothing could see the nesting), which
    spares the sync path building a child callback manager per call.
    """
    if not run_manager.handlers and not run_manager.inheritable_handlers:
        return None
    parent = var_child_runnable_config.get()
    config: RunnableConfig = dict(parent) if parent else {}  # type: ignore[assignment]
    config["callbacks"] = run_manager.get_child()
    config.pop("run_name", None)
    config.pop("run_id", None)
    context = contextvars.copy_context()
    # Also points LangSmith's tracing context at this run when its tracer is on.
    context.run(_set_config_context, config)
    return context


def _documents(items: list[MemoryItem], k: int) -> list[Document]:
    if len(items) > k:
        items = items[:k]
    return to_documents(items)
