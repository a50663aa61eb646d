"""``eval``: BEIR-style nDCG@k and recall@N for dense, lexical and hybrid retrieval.

The corpus is ingested into the chosen store and scope first (a no-op when it is
already there and unchanged), then every judged query of the split is run through each
mode. Chunks map back to BEIR documents through their ``doc_id`` metadata; a document's
rank is that of its best chunk. Only chunks of this corpus count, but sharing a scope
with other content still costs depth — give a benchmark its own ``--scope``.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentkit.cli._files import check_regular, lines
from agentkit.cli._ingest import beir_corpus_file, beir_name
from agentkit.cli._progress import Progress
from agentkit.kernel.ctx import Ctx, Scope
from agentkit.kernel.errors import InvalidArgument
from agentkit.state.memory import HybridMemory, HybridMode


@dataclass(frozen=True, slots=True)
class Dataset:
    name: str
    corpus: Path
    split: str
    queries: dict[str, str]  # judged queries only, in file order
    qrels: dict[str, dict[str, int]]


@dataclass(frozen=True, slots=True)
class Scores:
    mode: str
    ndcg: float
    recall: float
    queries: int
    ms_per_query: float


def load(directory: str | Path, split: str | None = None) -> Dataset:
    root = Path(directory)
    if not root.is_dir():
        raise InvalidArgument(f"eval needs a BEIR folder; {str(root)!r} is not a directory")
    corpus = beir_corpus_file(root)
    if corpus is None:
        raise InvalidArgument(f"no corpus.jsonl or corpus.jsonl.gz in {str(root)!r}")
    queries_file = root / "queries.jsonl"
    if not queries_file.exists():
        raise InvalidArgument(f"no queries.jsonl in {str(root)!r}")
    check_regular(queries_file)
    qdir = root / "qrels"
    available = sorted(p.stem for p in qdir.glob("*.tsv")) if qdir.is_dir() else []
    if split is None:
        if "test" in available:
            split = "test"
        elif len(available) == 1:
            split = available[0]
        else:
            raise InvalidArgument(
                f"pick a split with --split; {str(qdir)!r} has {available or 'no .tsv files'}"
            )
    if split not in available:
        raise InvalidArgument(f"no qrels/{split}.tsv in {str(root)!r} (have: {available})")
    qrels = _read_qrels(qdir / f"{split}.tsv")
    queries: dict[str, str] = {}
    for lineno, line in lines(queries_file):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            qid, text = str(record["_id"]), str(record["text"])
        except (ValueError, KeyError, TypeError):
            raise InvalidArgument(f"{queries_file}:{lineno}: not a BEIR query") from None
        if qid in qrels:
            queries[qid] = text
    if not queries:
        raise InvalidArgument(f"no query in queries.jsonl has a judgment in qrels/{split}.tsv")
    return Dataset(beir_name(corpus), corpus, split, queries, qrels)


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for lineno, line in lines(path):
        parts = line.rstrip("\r\n").split("\t")
        if len(parts) < 3 or (lineno == 1 and parts[0] == "query-id"):
            continue
        try:
            score = int(parts[2])
        except ValueError:
            raise InvalidArgument(f"{path}:{lineno}: score is not an integer") from None
        qrels.setdefault(parts[0], {})[parts[1]] = score
    return qrels


def ndcg(ranked: Sequence[str], rels: Mapping[str, int], k: int) -> float:
    """Linear-gain nDCG@k, as pytrec_eval (and so BEIR) computes it."""
    dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted((r for r in rels.values() if r > 0), reverse=True)[:k]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall(ranked: Sequence[str], rels: Mapping[str, int], n: int) -> float:
    relevant = {d for d, r in rels.items() if r > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked[:n])) / len(relevant)


async def evaluate(
    store: Any,
    scope: Scope,
    data: Dataset,
    modes: Sequence[HybridMode],
    *,
    k: int = 10,
    recall_at: int = 100,
    limit: int | None = None,
    depth: int = 100,
    weights: Mapping[str, float] | None = None,
    progress: bool | None = None,
) -> tuple[list[Scores], dict[str, dict[str, list[str]]]]:
    """Scores per mode, plus each mode's ranked doc ids per query (for deeper analysis)."""
    want = max(k, recall_at)
    qids = list(data.queries)[:limit] if limit else list(data.queries)
    ctx = Ctx(scope)
    results: list[Scores] = []
    runs: dict[str, dict[str, list[str]]] = {}
    for mode in modes:
        memory = HybridMemory(store, mode=mode, depth=max(depth, want), weights=weights)
        bar = Progress(len(qids), f"eval {mode}", unit="queries", enabled=progress)
        ranked_by_q: dict[str, list[str]] = {}
        start = time.perf_counter()
        for qid in qids:
            items = await memory.query(data.queries[qid], k=want, ctx=ctx)
            ranked_by_q[qid] = _doc_ranking(items, data.name)
            bar.update()
        elapsed = time.perf_counter() - start
        bar.close()
        n = len(qids)
        results.append(
            Scores(
                mode=mode,
                ndcg=sum(ndcg(ranked_by_q[q], data.qrels[q], k) for q in qids) / n,
                recall=sum(recall(ranked_by_q[q], data.qrels[q], recall_at) for q in qids) / n,
                queries=n,
                ms_per_query=elapsed * 1000 / n,
            )
        )
        runs[mode] = ranked_by_q
    return results, runs


def _doc_ranking(items: Sequence[Any], corpus: str) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        meta = item.metadata
        if meta.get("corpus") != corpus:
            continue
        doc = meta.get("doc_id")
        if doc is not None:
            seen.setdefault(str(doc), None)
    return list(seen)


def render(scores: Sequence[Scores], data: Dataset, k: int, recall_at: int) -> str:
    head = (f"{data.name} ({data.split} split, {scores[0].queries if scores else 0} "
            "judged queries)")
    rows = [("mode", f"nDCG@{k}", f"recall@{recall_at}", "ms/query")]
    rows += [(s.mode, f"{s.ndcg:.4f}", f"{s.recall:.4f}", f"{s.ms_per_query:.1f}") for s in scores]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = [head]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)
