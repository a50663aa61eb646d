"""Which embedder a command runs: the flags, else what the store records, else the default.

``--embedder`` (or ``$AGENTKIT_EMBEDDER``) names one: ``onnx`` (all-MiniLM-L6-v2 int8 on
ONNX Runtime, the default for a new store), ``onnx:int8``, ``onnx:fp32``, ``st`` (the
bundled MiniLM on sentence-transformers + torch), ``st:MODEL`` (any sentence-transformers
model) or ``hashing``. ``--model NAME`` is kept: the bundled MiniLM's names mean "MiniLM
on the default engine", any other name is ``st:NAME``.

Without a flag, a store's recorded embedder decides; the bundled MiniLM runs on ONNX
Runtime at the recorded precision, so a store written by sentence-transformers (fp32) is
extended with the same vectors and no torch. A flag whose vectors would not agree with
the store's is refused before any model loads, naming both and what to do.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

from agentkit.kernel.errors import InvalidArgument, StoreError
from agentkit.vector._embedder_id import (
    BUNDLED_NAMES,
    DEFAULT_MODEL,
    FULL_PRECISION,
    OLD_ONNX_INT8,
    ONNX_RECORDED,
    canonical_name,
    embedder_name,
    parse,
    same_vectors,
)
from agentkit.vector.hashing import HashingEmbedder
from agentkit.vector.port import Embedder

_HASHING = embedder_name(HashingEmbedder())
_ONNX = "onnxruntime"
_ST = "sentence-transformers"
_ONNX_PRECISIONS = ("int8", "fp32")
_FROM_LABEL = {label: precision for precision, label in ONNX_RECORDED.items()}
_FALLBACK = "(or use --hashing, or query --lexical)"
_NO_ONNX_HINT = (
    "the default embedder's model (agentkit-minilm-onnx) is not installed; install it with: "
    "pip install 'agentkit-memory[embeddings]' (from a clone: make demo) " + _FALLBACK
)
_NO_ST_HINT = (
    "sentence-transformers is not installed; install it with: "
    "pip install 'agentkit-memory[st]' " + _FALLBACK
)


@dataclass(frozen=True, slots=True)
class Choice:
    """An embedder not yet built: loading one costs a second or more, refusing costs none."""

    engine: str  # "hashing", "onnxruntime" or "sentence-transformers"
    model: str = DEFAULT_MODEL
    precision: str = FULL_PRECISION
    dim: int = 256  # hashing only

    @property
    def name(self) -> str:
        """What a store will record for it (``embedder_name`` of the built embedder)."""
        if self.engine == "hashing":
            return _HASHING
        label = ONNX_RECORDED[self.precision] if self.engine == _ONNX else self.precision
        return f"{self.model} ({self.engine} {label})"

    @property
    def flag(self) -> str:
        """The ``--embedder`` value that asks for it."""
        if self.engine == "hashing":
            return "hashing"
        if self.engine == _ONNX:
            return f"onnx:{self.precision}"
        return "st" if self.model == DEFAULT_MODEL else f"st:{self.model}"


DEFAULT = Choice(_ONNX, precision="int8")


def parse_spec(text: str) -> Choice:
    """``--embedder``'s value as a Choice; InvalidArgument names what is accepted."""
    spec = text.strip()
    kind, sep, rest = spec.partition(":")
    kind = kind.lower()
    if kind == "hashing" and not sep:
        return Choice("hashing")
    if kind == "onnx":
        precision = rest.lower() if sep else DEFAULT.precision
        if precision in _ONNX_PRECISIONS:
            return Choice(_ONNX, precision=precision)
    if kind in ("st", "sentence-transformers") and (not sep or rest.strip()):
        return Choice(_ST, model=canonical_name(rest.strip() if sep else None))
    raise InvalidArgument(
        f"--embedder takes onnx, onnx:int8, onnx:fp32, st, st:MODEL or hashing, got {text!r}"
    )


def normalise(args: argparse.Namespace) -> None:
    """Fold the embedder flags, else ``$AGENTKIT_EMBEDDER``/``$AGENTKIT_MODEL``, into
    ``args.choice`` (None: the store's own, else the default). Flags beat the environment;
    two flags are a usage error, as is an unknown ``--embedder`` value."""
    from agentkit.cli._args import UsageError

    given = [
        flag
        for flag, on in (
            ("--embedder", args.embedder is not None),
            ("--hashing", bool(args.hashing)),
            ("--model", args.model is not None),
        )
        if on
    ]
    if len(given) > 1:
        raise UsageError(f"{' and '.join(given)} are mutually exclusive")
    spec: str | None = args.embedder
    if not given:
        spec = os.environ.get("AGENTKIT_EMBEDDER", "").strip() or None
        if spec is None:
            args.model = os.environ.get("AGENTKIT_MODEL") or None
    elif args.hashing:
        spec = "hashing"
    try:
        choice = parse_spec(spec) if spec is not None else None
    except InvalidArgument as exc:
        raise UsageError(str(exc)) from None
    if choice is None and args.model is not None:
        name = canonical_name(args.model)
        # The bundled MiniLM's names keep meaning "that model", now on the default engine.
        choice = None if name == DEFAULT_MODEL else Choice(_ST, model=name)
    args.choice = choice
    args.hashing = choice is not None and choice.engine == "hashing"


def from_record(recorded: tuple[str, int]) -> Choice:
    """The embedder that makes the vectors a store records, preferring ONNX for MiniLM."""
    name, dim = recorded
    if name == _HASHING:
        return Choice("hashing", dim=dim)
    model, engine, precision = parse(name)
    if model == DEFAULT_MODEL and precision == FULL_PRECISION and engine in (None, _ST, _ONNX):
        if engine != _ONNX and not _onnx_installed():
            return Choice(_ST)  # same vectors; only the engine this install has
        return Choice(_ONNX, precision=FULL_PRECISION)
    if model == DEFAULT_MODEL and engine == _ONNX and precision in _FROM_LABEL:
        return Choice(_ONNX, precision=_FROM_LABEL[precision])
    if engine in (None, _ST) and precision == FULL_PRECISION:
        return Choice(_ST, model=model)
    made_by = (
        f" (the int8 model of agentkit-minilm-onnx {OLD_ONNX_INT8[precision]}, whose vectors "
        "this one's differ from)"
        if model == DEFAULT_MODEL and engine == _ONNX and precision in OLD_ONNX_INT8
        else ""
    )
    raise StoreError(
        f"the store's vectors are from {name!r}{made_by}, which this install cannot make; "
        "query it with --lexical, or re-embed into a new store"
    )


def check(choice: Choice | None, recorded: tuple[str, int] | None, path: Path | str) -> None:
    """Refuse an explicit choice whose vectors differ from the store's, before loading it."""
    if choice is None or recorded is None:
        return
    name, dim = recorded
    if choice.engine == "hashing" and name == _HASHING:
        return  # the recorded width is kept
    if same_vectors(name, choice.name):
        return
    ours = from_record(recorded).flag if _makeable(recorded) else None
    use = (
        f"drop the flag or pass --embedder {ours} to use the store's own"
        if ours
        else ("query it with --lexical")
    )
    raise StoreError(
        f"store {str(path)!r} holds vectors from embedder {name!r} (dim {dim}); refusing to "
        f"mix in {choice.name!r}, whose vectors differ. Either {use}, or re-embed: ingest "
        "the sources into a new store file with the embedder you want"
    )


def build(choice: Choice) -> Embedder:
    """Load the embedder; a missing install is one line saying what to install."""
    if choice.engine == "hashing":
        return HashingEmbedder(choice.dim)
    if choice.engine == _ONNX:
        if not _onnx_installed():
            raise StoreError(_NO_ONNX_HINT)
        from agentkit.vector.onnx_embedder import OnnxEmbedder

        return OnnxEmbedder(choice.precision)
    try:
        import sentence_transformers  # noqa: F401  (probe only; the embedder imports it)
    except ImportError:
        raise StoreError(_NO_ST_HINT) from None
    from agentkit.vector.sentence import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(None if choice.model in BUNDLED_NAMES else choice.model)


def make_embedder(args: argparse.Namespace, recorded: tuple[str, int] | None) -> Embedder:
    """Explicit flags first, then what the store recorded, then the default (ONNX int8)."""
    choice: Choice | None = getattr(args, "choice", None)
    if choice is not None and choice.engine == "hashing" and recorded and recorded[0] == _HASHING:
        choice = Choice("hashing", dim=recorded[1])
    if choice is None:
        choice = from_record(recorded) if recorded is not None else DEFAULT
    return build(choice)


def _makeable(recorded: tuple[str, int]) -> bool:
    try:
        from_record(recorded)
    except StoreError:
        return False
    return True


def _onnx_installed() -> bool:
    if os.environ.get("AGENTKIT_ONNX_DIR"):
        return True
    import importlib.util

    return importlib.util.find_spec("agentkit_minilm_onnx") is not None
