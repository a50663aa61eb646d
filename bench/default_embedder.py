"""The default embedder (all-MiniLM-L6-v2 on ONNX Runtime) beside sentence-transformers +
torch, in one run (issue 27).

    python bench/default_embedder.py [DIR] [--n 600] [--queries 200] [--cold-runs 3]
                                     [--eval-limit N] [--skip-st]

DIR is a BEIR folder (default ``../shared/data/scifact``), read in place.

1. Cold process to first vector: a fresh interpreter that builds the embedder and
   encodes one text (imports and model load included), median of ``--cold-runs``.
2. Ingest: the first ``--n`` records through the CLI's ingest write path into a fresh
   SQLite store, per engine: sentence-transformers (torch), ONNX fp32, ONNX int8 (the
   default). Target: int8 >= 3x sentence-transformers' docs/s.
   The floor beside it: the same texts through each engine's own call alone (a bare
   ``onnxruntime.InferenceSession.run`` on pre-tokenised batches sorted by length, with
   the embedder's session and with onnxruntime's default options;
   ``SentenceTransformer.encode``), cut at 256 tokens (what both engines do) and at 128
   (what the model's shipped ``tokenizer.json`` says). The 3x line is restated against
   that floor in RESULTS.md: the default embedder's ingest >= 0.85x its own onnxruntime
   session's run() alone at 256 tokens (tokenising, the store and its indexes: <= 15%).
3. Warm query encode: one short text per call, ``--queries`` SciFact claims. Target:
   int8 p50 <= 3 ms (on an idle machine).
4. The whole corpus in a store built by ``agentkit-memory ingest`` with the default
   embedder (cached under bench/.cache): a cold ``agentkit-memory query`` (hybrid)
   against a cold ``query --lexical``, alternating, median of ``--cold-runs``. Target:
   hybrid <= 2x lexical.
5. ``agentkit-memory mcp`` over stdio on the demo store (docs/ and README.md), per
   engine: from spawn to the first memory_search answer. Target: <= 2 s when idle.
6. SciFact train nDCG@10 on that store, dense and hybrid. Targets: >= 0.655 / >= 0.725.

``--skip-st`` leaves sentence-transformers out (the smoke run). Prints a table per part
and ``RESULT name=value`` lines (see run_all.py); the machine's load average is printed
too, since every time here is wall clock.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from _embed_cache import CACHE_DIR, file_hash  # noqa: E402

from agentkit.cli import _eval, _ingest  # noqa: E402
from agentkit.cli._embedder_choice import DEFAULT  # noqa: E402
from agentkit.kernel import Scope  # noqa: E402
from agentkit.vector import SQLiteVectorStore  # noqa: E402

ENGINES: dict[str, str] = {
    "st": "from agentkit.vector import SentenceTransformerEmbedder as E; e = E()",
    "onnx_fp32": "from agentkit.vector import OnnxEmbedder as E; e = E('fp32')",
    "onnx_int8": "from agentkit.vector import OnnxEmbedder as E; e = E()",
}
FLAG = {"st": "st", "onnx_fp32": "onnx:fp32", "onnx_int8": "onnx:int8"}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTKIT_")}
    env.setdefault("HF_HUB_OFFLINE", "1")
    return env


def _make(engine: str) -> Any:
    scope: dict[str, Any] = {}
    exec(ENGINES[engine], scope)  # the same statement the cold process runs
    return scope["e"]


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def cold_first_vector(engine: str, runs: int) -> float:
    code = ENGINES[engine] + "; e.embed_sync(['hello world'])"
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", code], check=True, env=_env(), timeout=600, capture_output=True
        )
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _prepared(corpus: Path, n: int) -> Any:
    """The first ``n`` records as ``prepare`` would hand them to ``write``, streamed from
    the corpus in place (one job per record, each its own chunk, as BEIR ingests)."""
    texts: dict[Path, Any] = {}
    for i, doc in enumerate(_ingest.read_beir(corpus)):
        if i >= n:
            break
        texts[Path(f"record-{i}")] = (doc, _ingest.chunks_of(doc, 1200, 200))
    jobs = [("text", p) for p in texts]
    chunks = sum(len(c) for _, c in texts.values())
    return _ingest.Prepared(jobs, texts, len(texts), chunks, 1200, 200)


async def ingest_rate(engine: str, embedder: Any, corpus: Path, n: int, work: Path) -> float:
    ready = _prepared(corpus, n)
    db = work / f"ingest-{engine}.db"
    async with SQLiteVectorStore(db, embedder=embedder, create=True) as store:
        start = time.perf_counter()
        await _ingest.write(store, Scope(), ready, progress=False)
        seconds = time.perf_counter() - start
    return ready.total / seconds


def _ingest_texts(corpus: Path, n: int) -> list[str]:
    """The chunk texts ``ingest_rate`` embeds, in its order."""
    ready = _prepared(corpus, n)
    return [c.text for _, chunks in ready.texts.values() for c in chunks]


def session_rate(texts: list[str], max_length: int, tuned: bool, rounds: int = 2) -> float:
    """docs/s of onnxruntime's own ``InferenceSession.run`` with the int8 graph over
    ``texts`` tokenised beforehand, cut at ``max_length``, sorted by length and padded per
    batch of 32: the SDK's cost alone, best of ``rounds``. ``tuned``: the session the
    default embedder runs (its options); else onnxruntime's default options."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    from agentkit.vector.onnx_embedder import OnnxEmbedder, model_dir

    folder = model_dir()
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_length)
    ids = sorted((e.ids for e in tokenizer.encode_batch(texts)), key=len, reverse=True)
    batches = []
    for start in range(0, len(ids), 32):
        rows = ids[start : start + 32]
        width = len(rows[0])
        batch = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for r, row in enumerate(rows):
            batch[r, : len(row)] = row
            mask[r, : len(row)] = 1
        batches.append({"input_ids": batch, "attention_mask": mask})
    if tuned:  # the embedder's own session object, to time its run() alone
        session = OnnxEmbedder("int8")._session
    else:
        session = ort.InferenceSession(
            str(folder / "int8.onnx"), providers=["CPUExecutionProvider"]
        )
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for feed in batches:
            session.run(None, feed)
        best = min(best, time.perf_counter() - start)
    return len(texts) / best


def st_rate(texts: list[str], max_length: int, rounds: int = 2) -> float:
    """docs/s of ``SentenceTransformer.encode`` itself (batch 32, cut at ``max_length``)."""
    from sentence_transformers import SentenceTransformer

    from agentkit.vector.sentence import bundled_model_path

    model = SentenceTransformer(str(bundled_model_path()), device="cpu", local_files_only=True)
    model.max_seq_length = max_length
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        model.encode(texts, batch_size=32)
        best = min(best, time.perf_counter() - start)
    return len(texts) / best


def floors(texts: list[str], with_st: bool) -> dict[tuple[str, int], float]:
    """Each engine's own call on ``texts`` at 256 and 128 tokens, alternating engines."""
    out: dict[tuple[str, int], float] = {}
    for length in (256, 128):
        out[("onnxruntime int8 session", length)] = session_rate(texts, length, tuned=True)
        out[("onnxruntime int8, default options", length)] = session_rate(texts, length, False)
        if with_st:
            out[("sentence-transformers encode", length)] = st_rate(texts, length)
    return out


def warm_encode(embedder: Any, queries: list[str]) -> float:
    for q in queries[:10]:
        embedder.embed_sync([q])
    times = []
    for q in queries:
        start = time.perf_counter()
        embedder.embed_sync([q])
        times.append(time.perf_counter() - start)
    return _median_ms(times)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "agentkit.cli", *args],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if done.returncode != 0:
        raise SystemExit(f"agentkit-memory {' '.join(args)} failed: {done.stderr.strip()}")
    return done


def corpus_store(corpus: Path) -> Path:
    """The whole corpus ingested with the default embedder, built once and cached."""
    db = CACHE_DIR / f"default-embedder-{file_hash(corpus)}.db"
    if db.exists():
        with sqlite3.connect(db) as conn:
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("embedder") == DEFAULT.name:  # else an older model's vectors
            return db
        db.unlink()
        for derived in db.parent.glob(db.name + ".*"):  # its indexes beside it
            shutil.rmtree(derived, ignore_errors=True)
    db.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    _cli("--store", str(db), "ingest", str(corpus), cwd=ROOT)
    print(f"built {db.name} with the default embedder in {time.perf_counter() - start:.0f} s")
    return db


def cold_queries(db: Path, claims: list[str], runs: int) -> tuple[float, float]:
    hybrid: list[float] = []
    lexical: list[float] = []
    for i in range(runs):  # alternating, so a load spike hits both
        for mode, out in (("hybrid", hybrid), ("lexical", lexical)):
            args = ["--store", str(db), "query", claims[i % len(claims)], "-k", "10"]
            if mode == "lexical":
                args.append("--lexical")
            start = time.perf_counter()
            _cli(*args, cwd=db.parent)
            out.append(time.perf_counter() - start)
    return statistics.median(hybrid), statistics.median(lexical)


async def mcp_ready(db: Path, flag: str) -> float:
    """Seconds from spawning ``agentkit-memory mcp`` to its first memory_search answer."""
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        # The flag, since without one an st store is served by ONNX fp32 (same vectors).
        args=["-m", "agentkit.cli", "--store", str(db), "mcp", "--embedder", flag],
        env=_env(),
        cwd=str(db.parent),
    )
    start = time.perf_counter()
    async with Client(params, read_timeout_seconds=600) as client:
        result = await client.call_tool("memory_search", {"query": "keep tenants apart", "k": 5})
        if result.is_error:
            raise SystemExit(f"memory_search failed: {result.content}")
        return time.perf_counter() - start


def _claims(folder: Path, n: int) -> list[str]:
    out = []
    with (folder / "queries.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            out.append(str(json.loads(line)["text"]))
            if len(out) >= n:
                break
    return out


def _timed(label: str, fn: Callable[[], Any]) -> Any:
    start = time.perf_counter()
    value = fn()
    print(f"  ({label}: {time.perf_counter() - start:.0f} s)", flush=True)
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dir", nargs="?", default=str(ROOT.parent / "shared/data/scifact"))
    parser.add_argument("--n", type=int, default=600)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--cold-runs", type=int, default=3)
    parser.add_argument("--eval-limit", type=int, default=None)
    parser.add_argument("--skip-st", action="store_true")
    opts = parser.parse_args()
    folder = Path(opts.dir)
    corpus = _ingest.beir_corpus_file(folder)
    if corpus is None:
        raise SystemExit(f"no BEIR corpus in {folder}")
    engines = [e for e in ENGINES if not (opts.skip_st and e == "st")]
    claims = _claims(folder, opts.queries)
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

    print(
        "\n| engine | cold process to first vector (s) | ingest docs/s | vs st | "
        "warm encode p50 (ms) |\n|---|---|---|---|---|"
    )
    rates: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="embedder-bench-") as tmp:
        work = Path(tmp)
        for engine in engines:
            cold = cold_first_vector(engine, opts.cold_runs)
            embedder = _make(engine)
            rates[engine] = asyncio.run(ingest_rate(engine, embedder, corpus, opts.n, work))
            p50 = warm_encode(embedder, claims)
            ratio = rates[engine] / rates["st"] if "st" in rates else float("nan")
            print(
                f"| {engine} | {cold:.2f} | {rates[engine]:.1f} | {ratio:.2f}x | {p50:.2f} |",
                flush=True,
            )
            print(f"RESULT embedder_{engine}_cold_first_vector_s={cold:.3f}")
            print(f"RESULT embedder_{engine}_ingest_docs_per_s={rates[engine]:.2f}")
            print(f"RESULT embedder_{engine}_warm_encode_p50_ms={p50:.3f}")
            del embedder
        if "st" in rates:
            ratio = rates["onnx_int8"] / rates["st"]
            print(f"\nint8 ingest vs sentence-transformers: {ratio:.2f}x (issue: >= 3x)")
            print(f"RESULT embedder_int8_vs_st_ingest_ratio={ratio:.3f}")

        texts = _ingest_texts(corpus, opts.n)
        floor = floors(texts, with_st="st" in rates)
        print(
            f"\neach engine's own call on the same {len(texts)} texts (docs/s)\n"
            "| engine | 256 tokens | 128 tokens |\n|---|---|---|"
        )
        for engine in dict.fromkeys(name for name, _ in floor):
            print(f"| {engine} | {floor[(engine, 256)]:.1f} | {floor[(engine, 128)]:.1f} |")
            key = "_".join(engine.replace(",", "").split()[:3]).replace("-", "_")
            for length in (256, 128):
                print(
                    f"RESULT embedder_floor_{key}_{length}_docs_per_s={floor[(engine, length)]:.2f}"
                )
        ort256 = floor[("onnxruntime int8 session", 256)]
        vs_floor = rates["onnx_int8"] / ort256
        print(
            f"default embedder's ingest vs onnxruntime's own int8 session at 256 tokens: "
            f"{vs_floor:.2f}x (restated line: >= 0.85x)"
        )
        print(f"RESULT embedder_int8_ingest_vs_session_floor={vs_floor:.3f}")
        if "st" in rates:
            st256 = floor[("sentence-transformers encode", 256)]
            st128 = floor[("sentence-transformers encode", 128)]
            ort128 = floor[("onnxruntime int8 session", 128)]
            print(
                f"onnxruntime int8 vs sentence-transformers, each engine's own call: "
                f"{ort256 / st256:.2f}x at 256 tokens, {ort128 / st128:.2f}x at 128; "
                f"int8 at 128 against st at 256 (the issue's table): {ort128 / st256:.2f}x"
            )
            print(f"RESULT embedder_floor_int8_vs_st_256={ort256 / st256:.3f}")
            print(f"RESULT embedder_floor_int8_vs_st_128={ort128 / st128:.3f}")
            print(f"RESULT embedder_floor_int8_128_vs_st_256={ort128 / st256:.3f}")

        db = _timed("corpus store", lambda: corpus_store(corpus))
        with sqlite3.connect(db) as conn:
            rows = int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])
        hybrid, lexical = cold_queries(db, claims, opts.cold_runs)
        print(
            f"\ncold CLI query on {rows} chunks: hybrid {hybrid:.2f} s, --lexical "
            f"{lexical:.2f} s: {hybrid / lexical:.2f}x (target <= 2x)"
        )
        print(f"RESULT embedder_cold_hybrid_query_s={hybrid:.3f}")
        print(f"RESULT embedder_cold_lexical_query_s={lexical:.3f}")
        print(f"RESULT embedder_cold_hybrid_vs_lexical_ratio={hybrid / lexical:.3f}")

        print("\n| engine | mcp ready to answer (s) |\n|---|---|")
        for engine in engines:
            demo = work / f"demo-{engine}.db"
            _cli(
                "--store",
                str(demo),
                "ingest",
                str(ROOT / "docs"),
                str(ROOT / "README.md"),
                "--embedder",
                FLAG[engine],
                cwd=work,
            )
            ready = asyncio.run(mcp_ready(demo, FLAG[engine]))
            print(f"| {engine} | {ready:.2f} |", flush=True)
            print(f"RESULT embedder_{engine}_mcp_ready_s={ready:.3f}")

    data = _eval.load(folder, "train")
    embedder = _make("onnx_int8")

    async def scores() -> list[Any]:
        async with SQLiteVectorStore(db, embedder=embedder, read_only=True) as store:
            out, _ = await _eval.evaluate(
                store, Scope(), data, ["dense", "hybrid"], limit=opts.eval_limit, progress=False
            )
            return out

    print(f"\n{data.name} {data.split} nDCG@10 with the default (int8) model:")
    for s in asyncio.run(scores()):
        print(f"  {s.mode}: nDCG@10 {s.ndcg:.4f}, recall@100 {s.recall:.4f} ({s.queries} queries)")
        print(f"RESULT embedder_int8_{s.mode}_ndcg10={s.ndcg:.4f}")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
