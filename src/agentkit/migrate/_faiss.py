"""Reading a LangChain FAISS folder (``FAISS.save_local``): ``index.faiss`` + ``index.pkl``.

The ``.pkl`` half is a pickle, and unpickling runs whatever code the file names, so it
is loaded only when the caller says it trusts the file (LangChain demands the same with
``allow_dangerous_deserialization``). The refusal comes before anything is read.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentkit.kernel.errors import InvalidArgument
from agentkit.migrate._need import need
from agentkit.migrate._source import PAGE, Record, Source

TRUST_HINT = (
    "its index.pkl is a pickle, and loading a pickle runs any code it names; "
    "import it only if you made it or trust who did, with --trust-pickle "
    "(trust_pickle=True)"
)


def read_faiss(
    path: str | Path, *, trust_pickle: bool = False, index_name: str = "index",
    page: int = PAGE,
) -> Source:
    """The records of a saved LangChain FAISS store; ``trust_pickle`` must be True."""
    folder = Path(path)
    if trust_pickle is not True:
        raise InvalidArgument(f"refusing to load the FAISS folder {str(folder)!r}: {TRUST_HINT}")
    faiss_mod = need("langchain_community.vectorstores", "langchain-community", "a FAISS folder")
    need("faiss", "faiss-cpu", "a FAISS folder")
    store = faiss_mod.FAISS.load_local(
        str(folder), _no_embeddings(), index_name=index_name,
        allow_dangerous_deserialization=True,
    )
    return faiss_source(store, f"{str(folder)!r}", page=page)


def faiss_source(store: Any, location: str, *, page: int = PAGE) -> Source:
    """A Source over a LangChain FAISS object (loaded from a folder or built in Python)."""
    return Source(
        "faiss",
        location,
        _pages(store, page),
        total=len(store.index_to_docstore_id),
        note="LangChain's FAISS does not save its embedding model",
    )


def _pages(store: Any, page: int) -> Iterator[list[Record]]:
    index = store.index
    ids: dict[int, str] = store.index_to_docstore_id
    total = int(index.ntotal)
    for start in range(0, total, page):
        size = min(page, total - start)
        try:
            rows: Any = index.reconstruct_n(start, size)
        except RuntimeError:  # an index kind that cannot give its vectors back
            rows = None
        out: list[Record] = []
        for offset in range(size):
            rid = ids.get(start + offset)
            doc = store.docstore.search(rid) if rid is not None else None
            if doc is None or isinstance(doc, str):  # the docstore's "not found" string
                out.append(Record(rid, None, {}))
                continue
            vector = None if rows is None else rows[offset]
            out.append(Record(rid, doc.page_content, dict(doc.metadata or {}), vector))
        yield out


def _no_embeddings() -> Any:
    """load_local wants an Embeddings; reading the store never embeds anything."""
    from langchain_core.embeddings import Embeddings

    class _Refuse(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            raise RuntimeError("import reads a FAISS store; it never embeds with it")

        def embed_query(self, text: str) -> list[float]:
            raise RuntimeError("import reads a FAISS store; it never embeds with it")

    return _Refuse()
