"""Which vectors a store holds: the name a store records, and when two names agree.

A store records ``embedder_name(embedder)``: the model name alone for embedders that name
no engine (HashingEmbedder's class, custom embedders, and every store written before
engines were recorded, which all ran sentence-transformers in fp32), else
``"MODEL (ENGINE PRECISION)"``, e.g. ``"sentence-transformers/all-MiniLM-L6-v2
(onnxruntime int8)"``.

Two names may share a store when they make the same vectors. The rule, measured on the
bundled MiniLM (docs/sources.md): every fp32 engine of one model agrees with every
other to cosine >= 0.9999 (onnxruntime fp32 against sentence-transformers on torch:
1.000000 mean and min), so they are one vector space, and so is a legacy name; a lower
precision agrees only to about 0.995 (int8: mean 0.995, 0.96 on very short texts), below
the 0.999 a store needs, so it is a space of its own. Mixing two spaces is refused.

A rebuilt model whose vectors move records a new precision label: the int8 model of
agentkit-minilm-onnx 0.2 (fused attention, first FFN output in float) agrees with 0.1's
int8 only to cosine 0.998 mean, so it recorded ``int8.2``; 0.3's (smoothed activations,
float16 word table) moves again (cosine 0.995 to 0.2's) and records ``int8.3``. A store
of an older label (``OLD_ONNX_INT8``) is never extended with today's.
"""

from __future__ import annotations

import os
import re
from typing import NamedTuple

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
# Names that mean "the bundled MiniLM": resolved to the packaged files, never the Hub.
BUNDLED_NAMES = frozenset({DEFAULT_MODEL, "all-MiniLM-L6-v2"})
FULL_PRECISION = "fp32"
#: The end of every refusal to mix two vector spaces in one store.
MIX_HINT = "Open it with the embedder it records, or re-embed into a new store."
#: The label a store records for each precision of the bundled ONNX model (see above).
ONNX_RECORDED = {"int8": "int8.3", "fp32": FULL_PRECISION}
#: What the int8 models of older agentkit-minilm-onnx releases recorded, by release; this
#: install cannot make their vectors.
OLD_ONNX_INT8 = {"int8": "0.1", "int8.2": "0.2"}
_RECORD = re.compile(r"^(?P<model>.+) \((?P<engine>[A-Za-z0-9_.-]+) (?P<precision>[\w.]+)\)$")


class Recorded(NamedTuple):
    """A recorded name taken apart; ``engine`` is None for names that record none."""

    model: str
    engine: str | None
    precision: str


def canonical_name(model: str | os.PathLike[str] | None) -> str:
    """The name recorded for ``model``: every alias of the bundled MiniLM is one name."""
    name = DEFAULT_MODEL if model is None else os.fspath(model)
    return DEFAULT_MODEL if name in BUNDLED_NAMES else name


def embedder_name(embedder: object) -> str:
    """What a store records about who wrote its vectors.

    ``model_name`` when the embedder has one, with its ``engine`` and ``precision`` when
    it names them; otherwise its class, which is enough to tell a HashingEmbedder from a
    real model.
    """
    name = getattr(embedder, "model_name", None)
    if not isinstance(name, str) or not name:
        return f"{type(embedder).__module__}.{type(embedder).__qualname__}"
    engine = getattr(embedder, "engine", None)
    precision = getattr(embedder, "precision", None)
    if isinstance(engine, str) and engine and isinstance(precision, str) and precision:
        return f"{name} ({engine} {precision})"
    return name


def parse(recorded: str) -> Recorded:
    """Take a recorded name apart; a bare model name is a full-precision one."""
    match = _RECORD.match(recorded)
    if match is None:
        return Recorded(recorded, None, FULL_PRECISION)
    return Recorded(match["model"], match["engine"], match["precision"])


def same_vectors(a: str, b: str) -> bool:
    """True when vectors recorded as ``a`` and ``b`` may share a store (see above)."""
    pa, pb = parse(a), parse(b)
    return (pa.model, pa.precision) == (pb.model, pb.precision)
