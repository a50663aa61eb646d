"""Make the shared fakes in spec_support importable (pytest runs with importlib mode)."""

import sys
from pathlib import Path

_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
