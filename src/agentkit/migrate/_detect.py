"""Which store a folder holds, told by the files each one writes."""

from __future__ import annotations

from pathlib import Path

from agentkit._links import links_out
from agentkit.kernel.errors import InvalidArgument
from agentkit.migrate._source import PAGE, Source

KINDS = ("llamaindex", "chroma", "faiss")
_LLAMA_FILES = ("docstore.json", "default__vector_store.json")


def detect_kind(path: str | Path) -> tuple[str, str | None]:
    """(kind, FAISS index name or None) for the folder; InvalidArgument naming what it saw."""
    folder = _folder(path)
    found: list[tuple[str, str | None]] = []
    if (folder / "chroma.sqlite3").is_file():
        found.append(("chroma", None))
    if any((folder / name).is_file() for name in _LLAMA_FILES):
        found.append(("llamaindex", None))
    name = faiss_name(folder)
    if name is not None:
        found.append(("faiss", name))
    if len(found) == 1:
        return found[0]
    if found:
        kinds = " and ".join(k for k, _ in found)
        raise InvalidArgument(
            f"{str(folder)!r} looks like {kinds} at once; choose one with --kind"
        )
    seen = sorted(p.name for p in folder.iterdir())[:8]
    raise InvalidArgument(
        f"{str(folder)!r} is not a store import can read: expected a LlamaIndex storage "
        "folder (docstore.json, default__vector_store.json), a Chroma folder "
        "(chroma.sqlite3) or a LangChain FAISS folder (index.faiss + index.pkl); "
        f"it holds {', '.join(seen) if seen else 'nothing'}"
    )


def faiss_name(folder: Path) -> str | None:
    """``index`` when index.faiss/index.pkl exist, else the one NAME.faiss with NAME.pkl."""
    if (folder / "index.faiss").is_file() and (folder / "index.pkl").is_file():
        return "index"
    pairs = [p.stem for p in folder.glob("*.faiss") if (folder / f"{p.stem}.pkl").is_file()]
    return pairs[0] if len(pairs) == 1 else None


def read_folder(
    path: str | Path,
    *,
    kind: str | None = None,
    collection: str | None = None,
    trust_pickle: bool = False,
    page: int = PAGE,
) -> Source:
    """Open the store saved in ``path`` (its kind detected unless given) as a Source.

    Every refusal (not a folder, a symlink leading out of it, an unknown layout, an
    untrusted pickle, a missing collection) comes before any record is read.
    """
    folder = _folder(path)
    _refuse_links_out(folder)
    if kind is None:
        kind, name = detect_kind(folder)
    elif kind not in KINDS:
        raise InvalidArgument(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    else:
        name = faiss_name(folder) if kind == "faiss" else None
    if collection is not None and kind != "chroma":
        raise InvalidArgument(f"--collection names a Chroma collection; {str(folder)!r} is {kind}")
    if kind == "chroma":
        from agentkit.migrate._chroma import read_chroma

        return read_chroma(folder, collection=collection, page=page)
    if kind == "faiss":
        from agentkit.migrate._faiss import read_faiss

        if name is None:
            raise InvalidArgument(
                f"{str(folder)!r} holds no NAME.faiss with its NAME.pkl (a LangChain FAISS "
                "save_local folder has index.faiss and index.pkl)"
            )
        return read_faiss(folder, trust_pickle=trust_pickle, index_name=name, page=page)
    from agentkit.migrate._llamaindex import read_llamaindex

    return read_llamaindex(folder, page=page)


def _refuse_links_out(folder: Path) -> None:
    """The readers open the folder's files by name (and Chroma its segment folders): a
    symlink among them leading elsewhere would import records the folder does not hold."""
    found = next(links_out(folder), None)
    if found is not None:
        link, target = found
        raise InvalidArgument(
            f"refusing to import {str(folder)!r}: {str(link)!r} is a symlink to "
            f"{str(target)!r}, outside the folder (import reads only the folder's own files)"
        )


def _folder(path: str | Path) -> Path:
    if not isinstance(path, (str, Path)):
        raise InvalidArgument(f"the source must be a folder path, got {type(path).__name__}")
    folder = Path(path)
    if not folder.exists():
        raise InvalidArgument(f"no such folder: {str(folder)!r}")
    if not folder.is_dir():
        raise InvalidArgument(f"{str(folder)!r} is not a folder (import reads a store's folder)")
    return folder
