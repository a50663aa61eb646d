"""Records with the structure of real embeddings, for the scale benches (not a bench itself).

HNSW recall on random vectors says nothing about real ones (field notes: 0.02–0.11 at
recall@10 on ``rng.standard_normal``), and encoding a million texts with MiniLM would take
hours here. So the sentences of a corpus (SciFact abstracts, read in place) are encoded
ONCE, through the content-addressed cache of ``_embed_cache``, and every record is three
sentences drawn with a fixed seed: its text is their concatenation, its vector the
normalised mean of theirs. A million records then cost one pass over ~44k sentences.

The record vectors themselves are kept as one float32 ``.npy`` per (pool, n, seed) in the
cache folder, memory-mapped by whoever reads them, so a bench over 1M records never holds
two copies.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from _embed_cache import CACHE_DIR, CachedEmbedder, cache_path, file_hash  # noqa: E402

DEFAULT_CORPUS = ROOT.parent / "shared" / "data" / "scifact"
_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z(])")
SEED = 25
# Sentences encoded (corpus order). 20k sentences make ~1.3e12 distinct triples, and
# encoding them takes ~15 minutes on two busy cores (all ~44k of SciFact's, twice that).
POOL = 20_000


def corpus_file(folder: Path) -> Path:
    for name in ("corpus.jsonl.gz", "corpus.jsonl"):
        if (folder / name).exists():
            return folder / name
    raise SystemExit(f"no corpus.jsonl(.gz) in {folder}")


def sentences(folder: Path, limit: int = POOL) -> list[str]:
    """The first ``limit`` distinct sentences of 30–400 characters of the corpus's
    ``text`` fields, in order."""
    path = corpus_file(folder)
    opener = gzip.open if path.suffix == ".gz" else open
    seen: dict[str, None] = {}
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            for part in _SPLIT.split(json.loads(line)["text"]):
                part = part.strip()
                if 30 <= len(part) <= 400:
                    seen.setdefault(part, None)
            if len(seen) >= limit:
                break
    return list(seen)[:limit]


def sentence_vectors(folder: Path, batch: int = 512) -> tuple[list[str], npt.NDArray[np.float32]]:
    """The sentence pool and its MiniLM vectors, encoding only what the cache lacks."""
    from agentkit.vector.sentence import SentenceTransformerEmbedder

    pool = sentences(folder)
    model = SentenceTransformerEmbedder()
    digest = file_hash(corpus_file(folder)) + "-sentences"
    cached = CachedEmbedder(model, cache_path(model.model_name, digest))
    out = np.zeros((len(pool), model.dim), dtype=np.float32)
    for start in range(0, len(pool), batch):
        out[start : start + batch] = cached.embed_sync(pool[start : start + batch])
        if cached.misses and start % (batch * 10) == 0:
            cached.save()
            print(f"  encoded {start + batch}/{len(pool)} sentences", file=sys.stderr, flush=True)
    cached.save()
    return pool, out


def picks(n: int, pool_size: int, seed: int = SEED) -> npt.NDArray[np.int64]:
    """Three distinct-ish sentence indices per record, fixed by the seed."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, pool_size, size=(n, 3), dtype=np.int64)


def record_vectors(
    pool_vectors: npt.NDArray[np.float32], n: int, seed: int = SEED
) -> npt.NDArray[np.float32]:
    """``n`` record vectors (memory-mapped from the cache; built on first use)."""
    path = CACHE_DIR / f"scale-{len(pool_vectors)}-{n}-{seed}.npy"
    if path.exists():
        return np.load(path, mmap_mode="r")
    path.parent.mkdir(parents=True, exist_ok=True)
    idx = picks(n, len(pool_vectors), seed)
    tmp = path.with_suffix(".tmp.npy")
    out = np.lib.format.open_memmap(
        tmp, mode="w+", dtype=np.float32, shape=(n, pool_vectors.shape[1])
    )
    step = 100_000
    for start in range(0, n, step):
        chunk = pool_vectors[idx[start : start + step]].mean(axis=1)
        chunk /= np.linalg.norm(chunk, axis=1, keepdims=True)
        out[start : start + step] = chunk
    out.flush()
    del out
    tmp.replace(path)
    return np.load(path, mmap_mode="r")


def record_texts(pool: list[str], n: int, seed: int = SEED, start: int = 0) -> Iterator[str]:
    """The texts of records ``start..n`` (the same draws as ``record_vectors``)."""
    idx = picks(n, len(pool), seed)
    for a, b, c in idx[start:]:
        yield f"{pool[a]} {pool[b]} {pool[c]}"


def claims(folder: Path, count: int) -> list[str]:
    """The first ``count`` query texts of the BEIR folder (SciFact's claims): what the
    lexical and hybrid lines search for, real questions rather than record text."""
    path = folder / "queries.jsonl"
    if not path.exists():
        raise SystemExit(f"no queries.jsonl in {folder}")
    out: list[str] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            text = json.loads(line)["text"].strip()
            if text:
                out.append(text)
            if len(out) >= count:
                break
    return out


def claim_vectors(folder: Path, texts: list[str]) -> npt.NDArray[np.float32]:
    """The claims' MiniLM vectors (cached like the sentences'): the hybrid line's query
    vectors, so its dense half searches by what its text means."""
    from agentkit.vector.sentence import SentenceTransformerEmbedder

    model = SentenceTransformerEmbedder()
    digest = file_hash(corpus_file(folder)) + "-claims"
    cached = CachedEmbedder(model, cache_path(model.model_name, digest))
    out = cached.embed_sync(texts)
    cached.save()
    return np.ascontiguousarray(out, dtype=np.float32)


def query_vectors(
    pool_vectors: npt.NDArray[np.float32], count: int, seed: int = SEED + 1
) -> npt.NDArray[np.float32]:
    """Queries shaped like the records (a two-sentence mean) but not equal to any of them."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(pool_vectors), size=(count, 2))
    q = pool_vectors[idx].mean(axis=1)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return np.ascontiguousarray(q, dtype=np.float32)


if __name__ == "__main__":
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_CORPUS
    pool, vecs = sentence_vectors(folder)
    print(f"{len(pool)} sentences, vectors {vecs.shape}")
