"""Where the built all-MiniLM-L6-v2 ONNX files are; agentkit-memory's default embedder.

The files are made when this package's wheel is built (see its ``_backend`` folder), so
importing this module touches nothing but paths.
"""

from __future__ import annotations

from pathlib import Path

__version__ = "0.3.0"
__all__ = ["MODEL_DIR", "REBUILD_HINT", "__version__"]

#: Holds fp32.onnx, int8.onnx, tokenizer.json and manifest.json.
MODEL_DIR = Path(__file__).resolve().parent / "model"
#: What to run when a file in MODEL_DIR is damaged: the wheel build makes them again.
REBUILD_HINT = (
    "pip install --force-reinstall --no-deps agentkit-minilm-onnx "
    "(from a clone: pip install --force-reinstall --no-deps ./models/minilm-onnx)"
)
