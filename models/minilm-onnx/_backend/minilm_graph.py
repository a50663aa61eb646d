"""all-MiniLM-L6-v2 as an ONNX graph, written from its safetensors weights without torch.

The model is a 6-layer BERT (hidden 384, 12 heads, GELU with erf, LayerNorm eps 1e-12)
followed by sentence-transformers' mean pooling over the attention mask and L2
normalisation. Writing the graph by hand from the tensors keeps torch out of the build:
the only inputs are the weights file and the ``onnx`` package. The graph ends in the
pooled, normalised sentence vector, so the runtime only tokenises and calls it.

Self-attention is onnxruntime's fused ``com.microsoft.Attention`` (Q, K and V as one GEMM,
then the masked softmax and the context in one kernel), which quantises to ``QAttention``:
the same vectors as the written-out form (cosine 1.00000 in fp32), less time and memory
traffic than the score tensors of a traced export. The graph is for onnxruntime only.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HIDDEN = 384
HEADS = 12
LAYERS = 6
EPS = 1e-12
OPSET = 18  # LayerNormalization from 17; reduce ops take axes as an input from 18
CONTRIB = "com.microsoft"  # onnxruntime's own operators (Attention)
FLOAT = TensorProto.FLOAT

_DTYPES = {"F32": np.float32, "I64": np.int64, "F16": np.float16}


def read_safetensors(data: bytes) -> dict[str, np.ndarray[Any, Any]]:
    """Tensors by name from a safetensors file's bytes (8-byte length, JSON header, data)."""
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    body = memoryview(data)[8 + length :]
    out: dict[str, np.ndarray[Any, Any]] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        dtype = _DTYPES[info["dtype"]]
        out[name] = np.frombuffer(body[start:end], dtype=dtype).reshape(info["shape"]).copy()
    return out


class _Graph:
    """Collects nodes and initializers; names are generated so the builder stays short."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self._n = 0

    def const(self, name: str, value: np.ndarray[Any, Any]) -> str:
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, kind: str, inputs: list[str], n_out: int = 1, **attrs: Any) -> Any:
        self._n += 1
        outs = [f"{kind.lower()}_{self._n}_{i}" for i in range(n_out)]
        node = helper.make_node(kind, inputs, outs, name=f"{kind}_{self._n}", **attrs)
        self.nodes.append(node)
        return outs[0] if n_out == 1 else outs


def build(weights: dict[str, np.ndarray[Any, Any]]) -> onnx.ModelProto:
    """The whole sentence encoder: (input_ids, attention_mask) -> sentence_embedding."""
    w = {k: v.astype(np.float32) if v.dtype != np.int64 else v for k, v in weights.items()}
    g = _Graph()
    ids, mask = "input_ids", "attention_mask"

    # Embeddings: word + position + token type 0 (every input is one segment), LayerNorm.
    # The word table (30522 x 384, most of the package's bytes) is stored in float16 and
    # widened after the lookup: half the size, and the fp32 vectors stay
    # sentence-transformers' (cosine >= 0.999999).
    table = w["embeddings.word_embeddings.weight"].astype(np.float16)
    word = g.op("Cast", [g.op("Gather", [g.const("word_embeddings", table), ids])], to=FLOAT)
    pos_table = (
        w["embeddings.position_embeddings.weight"] + w["embeddings.token_type_embeddings.weight"][0]
    )
    seq_1d = g.op("Shape", [ids], start=1, end=2)
    pos = g.op(
        "Slice",
        [g.const("position_table", pos_table), g.const("zero_1d", np.array([0], np.int64)), seq_1d],
    )
    x = g.op("Add", [word, pos])
    x = _layer_norm(g, x, w, "embeddings.LayerNorm")

    # Self-attention is onnxruntime's fused Attention (QAttention once quantised): one
    # kernel for the Q/K/V projection, the masked softmax and the context, with no
    # [B, heads, S, S] score tensor written out between ops (issue 27: ~10% of the int8
    # model's time, and the fusions it keeps). The mask is the 0/1 attention mask.
    maskf = g.op("Cast", [mask], to=TensorProto.FLOAT)
    mask_index = g.op("Cast", [mask], to=TensorProto.INT32)
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        parts = ("query", "key", "value")
        qkv_w = np.concatenate([w[f"{p}attention.self.{n}.weight"] for n in parts], axis=0).T
        qkv_b = np.concatenate([w[f"{p}attention.self.{n}.bias"] for n in parts])
        ctx = g.op(
            "Attention",
            [x, g.const(f"l{i}_qkv_w", qkv_w), g.const(f"l{i}_qkv_b", qkv_b), mask_index],
            domain=CONTRIB,
            num_heads=HEADS,
        )
        attn = _dense(g, ctx, w, p + "attention.output.dense", f"l{i}_attn_out")
        x = _layer_norm(g, g.op("Add", [attn, x]), w, p + "attention.output.LayerNorm")
        h = _dense(g, x, w, p + "intermediate.dense", f"l{i}_ffn_in")
        h = _gelu(g, h)
        out = _dense(g, h, w, p + "output.dense", f"l{i}_ffn_out")
        x = _layer_norm(g, g.op("Add", [out, x]), w, p + "output.LayerNorm")

    # Mean pooling over real tokens, then L2 normalisation (torch's F.normalize eps).
    m3 = g.op("Unsqueeze", [maskf, g.const("axis2", np.array([2], np.int64))])
    axis1 = g.const("axis1", np.array([1], np.int64))
    summed = g.op("ReduceSum", [g.op("Mul", [x, m3]), axis1], keepdims=0)
    count = g.op(
        "Max",
        [
            g.op("ReduceSum", [m3, axis1], keepdims=0),
            g.const("count_floor", np.array(1e-9, np.float32)),
        ],
    )
    pooled = g.op("Div", [summed, count])
    norm = g.op("ReduceL2", [pooled, g.const("axis_last", np.array([-1], np.int64))], keepdims=1)
    norm = g.op("Max", [norm, g.const("norm_floor", np.array(1e-12, np.float32))])
    g.nodes.append(helper.make_node("Div", [pooled, norm], ["sentence_embedding"], name="l2"))

    graph = helper.make_graph(
        g.nodes,
        "all-MiniLM-L6-v2",
        [
            helper.make_tensor_value_info(ids, TensorProto.INT64, ["batch", "sequence"]),
            helper.make_tensor_value_info(mask, TensorProto.INT64, ["batch", "sequence"]),
        ],
        [helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", HIDDEN])],
        initializer=g.inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(CONTRIB, 1)],
        producer_name="agentkit-minilm-onnx",
    )
    model.ir_version = 8  # readable by every onnxruntime from 1.14 on
    onnx.checker.check_model(model)
    return model


def _dense(g: _Graph, x: str, w: dict[str, Any], prefix: str, name: str) -> str:
    weight = g.const(f"{name}_w", w[prefix + ".weight"].T)
    return str(
        g.op("Add", [g.op("MatMul", [x, weight]), g.const(f"{name}_b", w[prefix + ".bias"])])
    )


def _layer_norm(g: _Graph, x: str, w: dict[str, Any], prefix: str) -> str:
    scale = g.const(prefix + ".weight", w[prefix + ".weight"])
    shift = g.const(prefix + ".bias", w[prefix + ".bias"])
    return str(g.op("LayerNormalization", [x, scale, shift], axis=-1, epsilon=EPS))


def _gelu(g: _Graph, x: str) -> str:
    # 0.5 * x * (1 + erf(x / sqrt(2))): BERT's exact GELU; onnxruntime fuses it.
    erf = g.op("Erf", [g.op("Div", [x, g.const(f"sqrt2_{x}", np.array(np.sqrt(2.0), np.float32))])])
    one = g.op("Add", [erf, g.const(f"one_{x}", np.array(1.0, np.float32))])
    return str(
        g.op("Mul", [g.op("Mul", [x, one]), g.const(f"half_{x}", np.array(0.5, np.float32))])
    )


def build_file(safetensors: Path, out: Path, metadata: dict[str, str]) -> None:
    """Write the fp32 model to ``out``, with ``metadata`` in its metadata_props."""
    model = build(read_safetensors(safetensors.read_bytes()))
    helper.set_model_props(model, metadata)
    onnx.save_model(model, str(out))
