"""Long work shows progress as it goes (issue 27): per slice of chunks embedded, with a
rate and an ETA, on a terminal; nothing when stderr is a pipe."""

from __future__ import annotations

import io
import itertools
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from agentkit.cli import _ingest, _progress
from agentkit.cli._progress import SLICE, Progress, index_rebuilds, metered
from agentkit.kernel.ctx import Scope
from agentkit.vector import HashingEmbedder, SQLiteVectorStore
from agentkit.vector._embedder_id import embedder_name


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _frames(text: str) -> list[str]:
    return [f for f in text.split("\r") if f.strip()]


def test_work_under_way_shows_before_it_lands_and_never_past_the_total() -> None:
    out = _Tty()
    bar = Progress(100, "ingest", unit="chunks", stream=out)
    assert bar.enabled  # a terminal
    bar.advance(40)
    assert bar.shown == 40 and "40/100 chunks" in _frames(out.getvalue())[-1]
    bar.update(50)  # the write landed: its 50 include the 40 already shown
    assert (bar.done, bar.shown) == (50, 50)
    bar.advance(500)
    assert bar.shown == 100
    last = _frames(out.getvalue())[-1]
    assert "chunks/s" in last and "ETA" in last
    bar.close()
    assert out.getvalue().endswith("\n")
    piped = io.StringIO()
    quiet = Progress(10, "ingest", stream=piped)
    quiet.advance(5)
    quiet.update(10)
    quiet.close()
    assert piped.getvalue() == ""  # not a terminal: no frames


async def test_one_big_write_draws_frames_while_it_embeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = itertools.count()  # a second passes between any two looks at the clock
    monkeypatch.setattr(_progress.time, "monotonic", lambda: float(next(clock)))
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(12):
        (docs / f"n{i}.txt").write_text(" ".join(f"word{i}x{j}" for j in range(600)))
    ready = _ingest.prepare([str(docs)], size=200, overlap=0)
    assert ready.chunks > 3 * SLICE
    embedder = HashingEmbedder()
    out = _Tty()
    async with SQLiteVectorStore(tmp_path / "m.db", embedder=embedder, create=True) as store:
        seen: list[int] = []
        with metered(store, seen.append) as on:
            assert on and embedder_name(store.embedder) == embedder_name(embedder)
        assert store.embedder is embedder  # put back
        sys_stderr = sys.stderr
        sys.stderr = out  # Progress draws on stderr
        try:
            stats = await _ingest.write(store, Scope(), ready, batch=10_000, progress=None)
        finally:
            sys.stderr = sys_stderr
    assert stats.written == ready.chunks
    frames = _frames(out.getvalue())
    # one store write, yet a frame for each slice along the way, each with rate and ETA
    assert len(frames) >= ready.chunks // SLICE, frames
    assert all("chunks/s" in f and "ETA" in f for f in frames)
    assert f"{ready.chunks}/{ready.chunks} chunks" in frames[-1]
    with sqlite3.connect(tmp_path / "m.db") as conn:
        recorded = dict(conn.execute("SELECT key, value FROM meta").fetchall())["embedder"]
    assert recorded == embedder_name(embedder)  # metering never changes what is recorded


class _Recording(HashingEmbedder):
    """A real embedder that remembers the texts of each call it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str]] = []

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls.append(list(texts))
        return await super().embed(texts)


async def test_metered_slices_group_like_lengths_and_keep_each_texts_vector(
    tmp_path: Path,
) -> None:
    # Lengths interleaved, as chunks of many documents arrive: slicing in arrival order
    # would give every call a long text to pad to.
    texts = [("word " * (300 if i % 2 else 3)) + str(i) for i in range(5 * SLICE)]
    inner = _Recording()
    async with SQLiteVectorStore(tmp_path / "m.db", embedder=inner, create=True) as store:
        with metered(store, lambda n: None):
            got = await store.embedder.embed(texts)
    assert np.array_equal(got, await HashingEmbedder().embed(texts))  # row i is text i's
    assert sorted(t for call in inner.calls for t in call) == sorted(texts)
    assert all(len(call) <= SLICE for call in inner.calls)
    # every call holds only long or only short texts, bar the one straddling the two
    mixed = [c for c in inner.calls if len({len(t) > 100 for t in c}) > 1]
    assert len(mixed) <= 1, [len(c) for c in mixed]


async def test_a_lexical_index_rebuild_draws_its_bar(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    from agentkit.vector import Chunk

    chunks = [Chunk(f"c{i}", f"note {i} about compost and tomatoes") for i in range(4500)]
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(), create=True) as store:
        await store.upsert(chunks, scope=Scope())
    shutil.rmtree(db.with_name(db.name + ".lexical"))  # lost: the next read rebuilds it
    out = _Tty()
    sys_stderr, sys.stderr = sys.stderr, out
    try:
        with index_rebuilds():
            async with SQLiteVectorStore(db, embedder=None, read_only=True) as store:
                hits = await store.lexical_search("compost", k=3, scope=Scope())
    finally:
        sys.stderr = sys_stderr
    assert len(hits) == 3
    frames = _frames(out.getvalue())
    assert frames and "rebuild lexical index -" in frames[-1]
    assert "4500/4500 chunks" in frames[-1]


def test_a_piped_ingest_prints_only_its_summary(tmp_path: Path) -> None:
    notes = Path(__file__).parent / "fixtures" / "notes"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTKIT_")}
    env["AGENTKIT_EMBEDDER"] = "hashing"
    done = subprocess.run(
        [sys.executable, "-m", "agentkit.cli", "--store", "m.db", "ingest", str(notes)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "\r" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("ingested 3 doc(s)")
