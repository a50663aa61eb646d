"""Which embedder the CLI runs, and what a store's record lets in (issue 27).

The default is all-MiniLM-L6-v2 int8 on ONNX Runtime, with no torch anywhere on the
path; a store written before engines were recorded (sentence-transformers, fp32) is
extended with no flag and no re-embedding; a flag whose vectors would differ from the
store's is refused in one line that says what to do, and nothing in the store changes.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from agentkit.cli._embedder_choice import Choice, parse_spec
from agentkit.kernel.ctx import Scope
from agentkit.kernel.errors import InvalidArgument
from agentkit.vector import Chunk, OnnxEmbedder, SQLiteVectorStore
from agentkit.vector._embedder_id import DEFAULT_MODEL, embedder_name, parse, same_vectors
from agentkit.vector.onnx_embedder import model_dir

NOTES = Path(__file__).parent / "fixtures" / "notes"
INT8 = f"{DEFAULT_MODEL} (onnxruntime int8.3)"
OLD_INT8 = f"{DEFAULT_MODEL} (onnxruntime int8)"  # agentkit-minilm-onnx 0.1's int8
FP32 = f"{DEFAULT_MODEL} (onnxruntime fp32)"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTKIT_")}
    env.update(extra)
    return env


def cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentkit.cli", *args],
        cwd=cwd, env=_env() if env is None else env, capture_output=True, text=True, timeout=300,
    )


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def meta(db: Path) -> dict[str, str]:
    with sqlite3.connect(db) as conn:
        return dict(conn.execute("SELECT key, value FROM meta").fetchall())


def vectors(db: Path) -> dict[str, bytes]:
    with sqlite3.connect(db) as conn:
        return {str(i): bytes(v) for i, v in conn.execute("SELECT id, vector FROM chunks")}


def test_the_rule_for_sharing_a_store() -> None:
    legacy = DEFAULT_MODEL  # what every store written before engines were recorded says
    st = f"{DEFAULT_MODEL} (sentence-transformers fp32)"
    assert parse(INT8) == (DEFAULT_MODEL, "onnxruntime", "int8.3")
    assert not same_vectors(INT8, OLD_INT8) and not same_vectors(OLD_INT8, FP32)
    assert not same_vectors(INT8, f"{DEFAULT_MODEL} (onnxruntime int8.2)")  # 0.2's
    assert parse(legacy) == (DEFAULT_MODEL, None, "fp32")
    assert same_vectors(legacy, FP32) and same_vectors(st, FP32) and same_vectors(legacy, st)
    assert not same_vectors(INT8, FP32) and not same_vectors(INT8, legacy)
    assert not same_vectors("some/model (sentence-transformers fp32)", st)
    assert parse_spec("onnx") == Choice("onnxruntime", precision="int8")
    assert parse_spec("onnx:fp32").name == FP32
    assert parse_spec("st").name == st
    assert parse_spec("st:all-MiniLM-L6-v2").name == st  # aliases are one model
    assert parse_spec("st:my/model").flag == "st:my/model"
    for bad in ("onnx:fp16", "st:", "torch", ""):
        with pytest.raises(InvalidArgument, match="--embedder takes"):
            parse_spec(bad)


def test_default_path_ingests_and_queries_without_torch(tmp_path: Path) -> None:
    shutil.copytree(NOTES, tmp_path / "notes")
    script = (
        "import sys, json\n"
        "from agentkit.cli import main\n"
        "codes = [main(['--store', 'm.db', 'ingest', 'notes']),\n"
        "         main(['--store', 'm.db', 'query', 'tomatoes need sunlight', '-k', '1'])]\n"
        "heavy = sorted(m for m in ('torch', 'transformers', 'sentence_transformers')\n"
        "               if m in sys.modules)\n"
        "print(json.dumps({'codes': codes, 'heavy': heavy}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    *table, last = done.stdout.strip().splitlines()
    report = json.loads(last)
    assert report == {"codes": [0, 0], "heavy": []}
    assert "notes/gardening.txt#0" in table[1]
    assert meta(tmp_path / "m.db")["embedder"] == INT8
    stats = cli("--store", "m.db", "stats", cwd=tmp_path)
    assert f"embedder: {INT8} (dim 384)" in stats.stdout


class _Legacy:
    """Writes a store as agentkit did before engines were recorded: the model name alone.

    Its vectors are ONNX fp32's, which are sentence-transformers' (test_onnx_embedder).
    """

    def __init__(self) -> None:
        self._inner = OnnxEmbedder("fp32")
        self.model_name = DEFAULT_MODEL
        self.dim = self._inner.dim

    async def embed(self, texts: list[str]) -> object:
        return await self._inner.embed(texts)


async def _legacy_store(db: Path) -> None:
    chunks = [Chunk(f"old-{p.stem}", p.read_text(), {"path": f"old/{p.name}"})
              for p in sorted(NOTES.iterdir())]
    async with SQLiteVectorStore(db, embedder=_Legacy(), create=True) as store:
        await store.upsert(chunks, scope=Scope())


def test_a_store_from_before_opens_with_no_flag_and_no_reembedding(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    asyncio.run(_legacy_store(db))
    assert meta(db)["embedder"] == DEFAULT_MODEL
    before = vectors(db)
    out = cli("--store", str(db), "query", "tomatoes need sunlight", "--dense", "-k", "1",
              "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["results"][0]["id"] == "old-gardening"
    shutil.copytree(NOTES, tmp_path / "more")
    added = cli("--store", str(db), "ingest", "more", cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    after = vectors(db)
    assert {k: after[k] for k in before} == before  # nothing re-embedded
    assert len(after) > len(before)
    assert meta(db)["embedder"] == FP32  # now says which engine and precision
    # and int8 is refused there, naming the store's own flag and re-embedding
    line = one_line(cli("--store", str(db), "ingest", "more", "--embedder", "onnx",
                        cwd=tmp_path))
    assert f"refusing to mix in '{INT8}'" in line
    assert "--embedder onnx:fp32" in line and "re-embed" in line
    assert vectors(db) == after


def test_mixing_is_refused_in_one_line_and_the_store_is_unchanged(tmp_path: Path) -> None:
    shutil.copytree(NOTES, tmp_path / "notes")
    assert cli("--store", "m.db", "ingest", "notes", cwd=tmp_path).returncode == 0
    before = (tmp_path / "m.db").read_bytes()
    for flags in (["--embedder", "onnx:fp32"], ["--embedder", "st"], ["--model", "other/m"],
                  ["--hashing"]):
        line = one_line(cli("--store", "m.db", "ingest", "notes", *flags, cwd=tmp_path))
        assert "refusing to mix in" in line and "--embedder onnx:int8" in line, line
    env = _env(AGENTKIT_EMBEDDER="onnx:fp32")  # the environment is a choice too
    assert "refusing to mix in" in one_line(cli("--store", "m.db", "query", "x", cwd=tmp_path,
                                                env=env))
    assert (tmp_path / "m.db").read_bytes() == before
    both = cli("--store", "m.db", "query", "x", "--embedder", "onnx", "--hashing", cwd=tmp_path)
    assert both.returncode == 2 and "mutually exclusive" in both.stderr
    # an explicit flag beats the environment
    ok = cli("--store", "m.db", "query", "x", "--embedder", "onnx:int8", cwd=tmp_path, env=env)
    assert ok.returncode == 0, ok.stderr


class _OldInt8:
    """Records what an older agentkit-minilm-onnx's int8 model recorded; its vectors were
    int8 ones near these (cosine 0.995-0.998), which is why they must not share a store."""

    model_name = DEFAULT_MODEL
    engine = "onnxruntime"

    def __init__(self, precision: str) -> None:
        self.precision = precision
        self._inner = OnnxEmbedder()
        self.dim = self._inner.dim

    async def embed(self, texts: list[str]) -> object:
        return await self._inner.embed(texts)


@pytest.mark.parametrize(("label", "release"), [("int8", "0.1"), ("int8.2", "0.2")])
def test_a_store_of_an_old_int8_model_is_refused_and_unchanged(
    tmp_path: Path, label: str, release: str
) -> None:
    db = tmp_path / "old-int8.db"
    recorded = f"{DEFAULT_MODEL} (onnxruntime {label})"
    chunks = [Chunk(f"old-{p.stem}", p.read_text(), {"path": f"old/{p.name}"})
              for p in sorted(NOTES.iterdir())]

    async def write() -> None:
        async with SQLiteVectorStore(db, embedder=_OldInt8(label), create=True) as store:
            await store.upsert(chunks, scope=Scope())

    asyncio.run(write())
    assert meta(db)["embedder"] == recorded
    before = db.read_bytes()
    shutil.copytree(NOTES, tmp_path / "more")
    for flags in ([], ["--embedder", "onnx"], ["--embedder", "onnx:int8"]):
        line = one_line(cli("--store", str(db), "ingest", "more", *flags, cwd=tmp_path))
        assert recorded in line and "re-embed" in line and "--lexical" in line, line
    line = one_line(cli("--store", str(db), "query", "tomatoes", "--dense", cwd=tmp_path))
    assert f"agentkit-minilm-onnx {release}," in line
    assert db.read_bytes() == before
    lexical = cli("--store", str(db), "query", "tomatoes need sunlight", "--lexical", "-k", "1",
                  cwd=tmp_path)
    assert lexical.returncode == 0 and "old/gardening.txt" in lexical.stdout, lexical.stderr


def test_a_damaged_model_file_is_one_line_and_the_store_is_unchanged(tmp_path: Path) -> None:
    shutil.copytree(NOTES, tmp_path / "notes")
    assert cli("--store", "m.db", "ingest", "notes", cwd=tmp_path).returncode == 0
    before = (tmp_path / "m.db").read_bytes()
    broken = tmp_path / "model"
    shutil.copytree(model_dir(), broken)
    with (broken / "int8.onnx").open("r+b") as fh:
        fh.truncate(1000)
    (tmp_path / "notes" / "new.txt").write_text("a new note about compost heaps")
    line = one_line(cli("--store", "m.db", "ingest", "notes", cwd=tmp_path,
                        env=_env(AGENTKIT_ONNX_DIR=str(broken))))
    assert str(broken / "int8.onnx") in line and "pip install --force-reinstall" in line
    assert (tmp_path / "m.db").read_bytes() == before


def test_sentence_transformers_stays_an_option(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    shutil.copytree(NOTES, tmp_path / "notes")
    done = cli("--store", "st.db", "ingest", "notes", "--embedder", "st", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert meta(tmp_path / "st.db")["embedder"] == f"{DEFAULT_MODEL} (sentence-transformers fp32)"
    # the same vector space: ONNX fp32 extends it with no flag, and without torch
    query = cli("--store", "st.db", "query", "tomatoes need sunlight", "--dense", "-k", "1",
                cwd=tmp_path)
    assert query.returncode == 0 and "notes/gardening.txt#0" in query.stdout
    assert embedder_name(OnnxEmbedder("fp32")) == FP32
