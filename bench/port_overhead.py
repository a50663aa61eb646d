"""A search through the VectorPorts next to the store's own filtered search, per store.

10,000 records in ten tenants of 1,000, top-4, the hashing embedder on both sides (so
embedding costs the same). The port side is ``port.search(query, k=4, scope=tenant)``:
argument checks, the scope turned into the store's filter, the store's search, the
re-check and the chunks built from the store's documents/nodes. The baseline is what
a user would write by hand against the same records: the store's own async
similarity search with an equality filter on the two scope keys the port stamped.
For LangChain's FAISS, which filters after its top ``fetch_k``, the baseline gets the
smallest ``fetch_k`` (doubling from 20) that returns all four, found before timing, as a
careful user would. Both answers are checked equal before anything is timed.

The unscoped line is a second store of 10,000 records a user wrote with plain framework
code, queried through the port with the empty scope next to the store's unfiltered
search: with no tenants in the store, the port must make one pass.

Stores: LangChain InMemoryVectorStore, Chroma (in-process), Qdrant (local, in memory),
FAISS; LlamaIndex's simple store, Chroma and Qdrant (FAISS there cannot filter: its
unscoped line only). Measured interleaved, the ratio is the median of per-round
ratios. Target: scoped <= 1.3x.

    python bench/port_overhead.py [--rounds N] [--n N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import time
import uuid
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
warnings.filterwarnings("ignore")  # langchain-community's sunset notice, score-range notes

import chromadb  # noqa: E402
import faiss  # noqa: E402
from agentkit_langchain import AgentkitEmbeddings, LangChainVectorPort  # noqa: E402
from agentkit_llamaindex import AgentkitEmbedding, LlamaIndexVectorPort  # noqa: E402
from langchain_chroma import Chroma  # noqa: E402
from langchain_community.docstore.in_memory import InMemoryDocstore  # noqa: E402
from langchain_community.vectorstores import FAISS  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore  # noqa: E402
from langchain_qdrant import QdrantVectorStore as LangChainQdrant  # noqa: E402
from llama_index.core import StorageContext, VectorStoreIndex  # noqa: E402
from llama_index.core.schema import TextNode  # noqa: E402
from llama_index.core.vector_stores.types import (  # noqa: E402
    FilterCondition,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
)
from llama_index.vector_stores.chroma import ChromaVectorStore  # noqa: E402
from llama_index.vector_stores.faiss import FaissVectorStore  # noqa: E402
from llama_index.vector_stores.qdrant import QdrantVectorStore as LlamaIndexQdrant  # noqa: E402
from qdrant_client import QdrantClient, models  # noqa: E402

from agentkit.interop import DOMAIN_KEY, ORG_KEY  # noqa: E402
from agentkit.kernel import Scope  # noqa: E402
from agentkit.vector import Chunk, HashingEmbedder  # noqa: E402

DIM = 256
K = 4
TENANTS = 10
BATCH = 500
WORDS = (
    "refund shipping invoice password account order parcel delivery tracking label "
    "customs warranty repair battery screen charger cable adapter subscription plan "
    "upgrade downgrade billing card payment receipt discount coupon voucher gift "
    "return exchange size colour stock warehouse courier express standard weekend "
    "holiday office hours support ticket agent chat email phone callback survey "
    "privacy cookie consent data export delete profile login session token device"
).split()
QUERIES = [
    "refund for a damaged parcel",
    "reset my account password",
    "express delivery on the weekend",
    "warranty repair for the screen",
    "export my profile data",
]
EMBEDDER = HashingEmbedder(dim=DIM)
TENANT = Scope("tenant-3", "support")


def _texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [f"{' '.join(rng.choices(WORDS, k=8))} (record {i})" for i in range(n)]


@dataclass
class Case:
    label: str
    port: Callable[[str], Awaitable[list[str]]]  # query -> texts, through the port
    own: Callable[[str], Awaitable[list[str]]]  # query -> texts, the store's own search


# --- LangChain --------------------------------------------------------------------------


def _scopes() -> list[Scope]:
    return [Scope(f"tenant-{t}", "support") for t in range(TENANTS)]


async def _fill_port(port: Any, n: int) -> None:
    texts = _texts(n, seed=1)
    per = n // TENANTS
    for t, scope in enumerate(_scopes()):
        mine = texts[t * per : (t + 1) * per]
        for start in range(0, len(mine), BATCH):
            part = mine[start : start + BATCH]
            chunks = [Chunk(f"r{t}-{start + i}", text) for i, text in enumerate(part)]
            await port.upsert(chunks, scope=scope)


def _lc_texts(hits: list[Any]) -> list[str]:
    return [doc.page_content for doc, _ in hits]


def _port_texts(hits: list[tuple[float, Chunk]]) -> list[str]:
    return [chunk.text for _, chunk in hits]


def _lc_port_call(port: LangChainVectorPort, scope: Scope) -> Callable[[str], Awaitable[list[str]]]:
    async def call(query: str) -> list[str]:
        return _port_texts(await port.search(query, k=K, scope=scope))

    return call


async def _lc_cases(n: int) -> list[Case]:
    emb = AgentkitEmbeddings(EMBEDDER)
    org, dom = TENANT.org_id or "", TENANT.domain_id or ""
    client = chromadb.EphemeralClient()
    cases: list[Case] = []

    def qdrant(name: str) -> tuple[QdrantClient, LangChainQdrant]:
        qc = QdrantClient(location=":memory:")
        qc.create_collection(
            name, vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE)
        )
        return qc, LangChainQdrant(client=qc, collection_name=name, embedding=emb)

    def faiss_store() -> FAISS:
        return FAISS(embedding_function=emb, index=faiss.IndexFlatL2(DIM),
                     docstore=InMemoryDocstore(), index_to_docstore_id={})

    def builders() -> dict[str, Callable[[], Any]]:
        return {
            "inmemory": lambda: InMemoryVectorStore(emb),
            "chroma": lambda: Chroma(collection_name="c" + uuid.uuid4().hex, client=client,
                                     embedding_function=emb),
            "qdrant": lambda: qdrant("q" + uuid.uuid4().hex)[1],
            "faiss": faiss_store,
        }

    def keep(doc: Any) -> bool:
        return bool(doc.metadata.get(ORG_KEY) == org and doc.metadata.get(DOMAIN_KEY) == dom)

    chroma_filter = {"$and": [{ORG_KEY: {"$eq": org}}, {DOMAIN_KEY: {"$eq": dom}}]}
    qdrant_filter = models.Filter(must=[
        models.FieldCondition(key=f"metadata.{ORG_KEY}", match=models.MatchValue(value=org)),
        models.FieldCondition(key=f"metadata.{DOMAIN_KEY}", match=models.MatchValue(value=dom)),
    ])
    for name, build in builders().items():
        store = build()
        port = LangChainVectorPort(store)
        await _fill_port(port, n)
        if name == "inmemory":
            own = _lc_own(store, _fixed({"filter": keep}))
        elif name == "faiss":
            flat = {ORG_KEY: org, DOMAIN_KEY: dom}
            fetch = {q: await _faiss_fetch_k(store, q, flat) for q in QUERIES}
            print(f"  (LangChain FAISS baseline: fetch_k per query {sorted(fetch.values())})")
            own = _lc_own(store, _fixed({"filter": flat}, fetch))
        else:
            flt = chroma_filter if name == "chroma" else qdrant_filter
            own = _lc_own(store, _fixed({"filter": flt}))
        cases.append(Case(f"langchain_{name}_scoped", _lc_port_call(port, TENANT), own))

        plain = build()  # a user's own records: no tenants, no stamps
        texts = _texts(n, seed=2)
        for start in range(0, n, BATCH):
            part = texts[start : start + BATCH]
            ids = [str(uuid.uuid4()) for _ in part]
            await plain.aadd_texts(part, metadatas=[{"source": f"doc{start + i}.md"}
                                                    for i in range(len(part))], ids=ids)

        cases.append(Case(f"langchain_{name}_unscoped",
                          _lc_port_call(LangChainVectorPort(plain), Scope()),
                          _lc_own(plain, _fixed({}))))
    return cases


def _fixed(kwargs: dict[str, Any], fetch_k: dict[str, int] | None = None) -> Callable[
        [str], dict[str, Any]]:
    """Search keyword arguments for a query: the same filter, FAISS's fetch_k per query."""

    def per_query(query: str) -> dict[str, Any]:
        return kwargs if fetch_k is None else {**kwargs, "fetch_k": fetch_k[query]}

    return per_query


def _lc_own(store: Any, kwargs: Callable[[str], dict[str, Any]]) -> Callable[
        [str], Awaitable[list[str]]]:
    """The store's own async search; InMemoryVectorStore has no relevance scores."""
    relevance = not isinstance(store, InMemoryVectorStore)

    async def call(query: str) -> list[str]:
        if relevance:
            hits = await store.asimilarity_search_with_relevance_scores(
                query, k=K, **kwargs(query))
        else:
            hits = await store.asimilarity_search_with_score(query, k=K, **kwargs(query))
        return _lc_texts(hits)

    return call


async def _faiss_fetch_k(store: Any, query: str, flt: dict[str, Any]) -> int:
    fetch = 20
    while True:
        hits = await store.asimilarity_search_with_relevance_scores(
            query, k=K, filter=flt, fetch_k=fetch)
        if len(hits) >= K or fetch >= store.index.ntotal:
            return fetch
        fetch *= 2


# --- LlamaIndex -------------------------------------------------------------------------


async def _li_cases(n: int) -> list[Case]:
    emb = AgentkitEmbedding(EMBEDDER)
    org, dom = TENANT.org_id or "", TENANT.domain_id or ""
    client = chromadb.EphemeralClient()
    filters = MetadataFilters(
        filters=[MetadataFilter(key=ORG_KEY, value=org), MetadataFilter(key=DOMAIN_KEY, value=dom)],
        condition=FilterCondition.AND,
    )
    cases: list[Case] = []

    def builders() -> dict[str, Callable[[], Any]]:
        return {
            "simple": lambda: None,
            "chroma": lambda: ChromaVectorStore(
                chroma_collection=client.create_collection("c" + uuid.uuid4().hex)),
            "qdrant": lambda: LlamaIndexQdrant(client=QdrantClient(location=":memory:"),
                                               collection_name="q" + uuid.uuid4().hex),
            "faiss": lambda: FaissVectorStore(faiss_index=faiss.IndexFlatL2(DIM)),
        }

    def index_over(store: Any) -> VectorStoreIndex:
        if store is None:
            return VectorStoreIndex(nodes=[], embed_model=emb)
        return VectorStoreIndex(nodes=[], embed_model=emb,
                                storage_context=StorageContext.from_defaults(vector_store=store))

    def own_search(index: VectorStoreIndex, flt: MetadataFilters | None) -> Callable[
            [str], Awaitable[list[str]]]:
        store = index.vector_store

        async def call(query: str) -> list[str]:
            vector = await emb.aget_query_embedding(query)
            # Sync: LlamaIndex's default aquery runs query inline anyway, and a Qdrant
            # store built with a sync client only (as here) has no async path.
            result = store.query(
                VectorStoreQuery(query_embedding=vector, similarity_top_k=K, filters=flt))
            if result.nodes:
                return [node.get_content() for node in result.nodes]
            table = index.index_struct.nodes_dict
            nodes = index.docstore.get_nodes([table[i] for i in result.ids or []])
            return [node.get_content() for node in nodes]

        return call

    for name, build in builders().items():
        if name != "faiss":
            index = index_over(build())
            port = LlamaIndexVectorPort(index)
            await _fill_port(port, n)
            cases.append(Case(f"llamaindex_{name}_scoped", _li_port_call(port, TENANT),
                              own_search(index, filters)))
        plain = index_over(build())
        texts = _texts(n, seed=2)
        for start in range(0, n, BATCH):
            part = texts[start : start + BATCH]
            plain.insert_nodes([  # sync: a Qdrant store with a sync client has no async path
                TextNode(id_=str(uuid.uuid4()), text=text,
                         metadata={"file_path": f"doc{start + i}.md"})
                for i, text in enumerate(part)
            ])
        cases.append(Case(f"llamaindex_{name}_unscoped",
                          _li_port_call(LlamaIndexVectorPort(plain), Scope()),
                          own_search(plain, None)))
    return cases


def _li_port_call(port: LlamaIndexVectorPort, scope: Scope) -> Callable[
        [str], Awaitable[list[str]]]:
    async def call(query: str) -> list[str]:
        return _port_texts(await port.search(query, k=K, scope=scope))

    return call


# --- timing -----------------------------------------------------------------------------


async def _measure(case: Case, rounds: int) -> tuple[float, float, float]:
    for query in QUERIES:  # same work on both sides, or the ratio means nothing
        ours, theirs = await case.port(query), await case.own(query)
        if sorted(ours) != sorted(theirs):
            raise SystemExit(f"{case.label}: port and store disagree on {query!r}:\n"
                             f"  port:  {ours}\n  store: {theirs}")
        if len(ours) != K:
            raise SystemExit(f"{case.label}: {len(ours)} hits for {query!r}, expected {K}")
    port_t: list[float] = []
    own_t: list[float] = []
    ratios: list[float] = []
    for r in range(rounds):
        query = QUERIES[r % len(QUERIES)]
        order = (case.port, case.own) if r % 2 == 0 else (case.own, case.port)
        times = {}
        for call in order:
            t0 = time.perf_counter()
            await call(query)
            times[call] = time.perf_counter() - t0
        port_t.append(times[case.port])
        own_t.append(times[case.own])
        ratios.append(times[case.port] / times[case.own])
    return statistics.median(port_t), statistics.median(own_t), statistics.median(ratios)


async def main(n: int, rounds: int) -> None:
    t0 = time.perf_counter()
    cases = [*await _lc_cases(n), *await _li_cases(n)]
    print(f"{n:,} records per store ({TENANTS} tenants of {n // TENANTS:,} when scoped), "
          f"top-{K}, hashing embedder dim {DIM}, {rounds} interleaved rounds, medians; "
          f"set-up {time.perf_counter() - t0:.0f}s")
    print(f"  {'case':<30} {'port ms':>9} {'store ms':>9} {'ratio':>7}")
    for case in cases:
        ours, theirs, ratio = await _measure(case, rounds)
        target = "  (target <= 1.3x)" if case.label.endswith("_scoped") else ""
        print(f"  {case.label:<30} {ours * 1e3:9.2f} {theirs * 1e3:9.2f} {ratio:6.2f}x{target}")
        print(f"RESULT port_{case.label}_port_ms={ours * 1e3:.3f}")
        print(f"RESULT port_{case.label}_store_ms={theirs * 1e3:.3f}")
        print(f"RESULT port_{case.label}_ratio={ratio:.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=31)
    args = parser.parse_args()
    asyncio.run(main(args.n, args.rounds))
