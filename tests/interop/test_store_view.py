"""StoreView: how both bridges' AgentkitVectorStore open, scope, bind and close a store."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from agentkit.interop import DEFAULT_STORE_PATH, StoreView, default_store_path
from agentkit.kernel.ctx import Scope
from agentkit.kernel.errors import (
    InvalidArgument,
    InvalidArgumentType,
    StoreError,
    UnsupportedOperation,
)
from agentkit.vector import Chunk, HashingEmbedder, InMemoryVectorStore
from agentkit.vector.sqlite import SQLiteVectorStore

ACME = Scope("acme", "support")


def _open(store: object = None, **kwargs: object) -> StoreView:
    args = {"scope": None, "path": None, "embedder": lambda: HashingEmbedder(dim=32)}
    args |= {"builder_args": {"embedding": None, "path": None, "dim": None}, "wrap_hint": "hint"}
    args |= kwargs
    return StoreView.open(store, **args)  # type: ignore[arg-type]


def test_default_path_is_the_clis(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("AGENTKIT_STORE", raising=False)
    assert default_store_path(None) == DEFAULT_STORE_PATH
    monkeypatch.setenv("AGENTKIT_STORE", str(tmp_path / "env.db"))
    assert default_store_path(None) == str(tmp_path / "env.db")
    assert default_store_path(tmp_path / "given.db") == tmp_path / "given.db"


async def test_no_store_opens_the_sqlite_file_owned_and_a_bind_never_owns(tmp_path: Path) -> None:
    view = _open(path=tmp_path / "m.db", scope=ACME)
    assert isinstance(view.store, SQLiteVectorStore) and view.owned and view.scope == ACME
    await view.store.upsert([Chunk("a", "acme text")], scope=ACME)
    other = view.bind(Scope("globex", "support"))
    assert other.store is view.store and not other.owned
    assert other.scope == Scope("globex", "support")
    await other.aclose()  # a view leaves the store open
    assert await view.store.search("acme", k=1, scope=Scope("globex", "support")) == []
    await view.aclose()
    with pytest.raises(StoreError, match="closed"):
        await view.store.search("acme", k=1, scope=ACME)


async def test_a_given_store_is_used_as_is_and_left_open() -> None:
    store = InMemoryVectorStore(HashingEmbedder(dim=32))
    built: list[bool] = []
    view = _open(store, embedder=lambda: built.append(True) or HashingEmbedder())
    assert view.store is store and not view.owned and view.scope == Scope() and built == []
    await view.aclose()
    await store.upsert([Chunk("a", "still open")], scope=Scope())


def test_bad_arguments_are_refused_before_a_file_is_opened(tmp_path: Path) -> None:
    store = InMemoryVectorStore(HashingEmbedder(dim=32))
    with pytest.raises(
        InvalidArgument,
        match=r"^embedding=, path= and dim= build the default SQLite store; .*\(hint\)$",
    ):
        _open(store, builder_args={"embedding": None, "path": None, "dim": 8})
    with pytest.raises(InvalidArgumentType, match="VectorPort, got object"):
        _open(object())
    with pytest.raises(InvalidArgumentType):
        _open(path=tmp_path / "never.db", scope="acme")
    assert not (tmp_path / "never.db").exists()


def test_offered_names_what_a_bare_port_lacks() -> None:
    class Bare:
        async def upsert(self, chunks: Sequence[Chunk], *, scope: Scope) -> None: ...
        async def search(
            self, query: str, *, k: int, scope: Scope, where: object = None
        ) -> list[object]:
            return []

        async def delete(self, ids: Sequence[str], *, scope: Scope) -> int:
            return 0

    view = StoreView(Bare())  # type: ignore[arg-type]
    assert view.offered("search", "x", "y") == view.store.search
    with pytest.raises(
        UnsupportedOperation,
        match=r"^Bare has no scan\(\), which AgentkitVectorStore listing needs; pass ids$",
    ):
        view.offered("scan", "listing", "pass ids")
