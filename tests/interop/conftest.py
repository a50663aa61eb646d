"""Offline real stores for the port contract: Chroma must not phone home."""

from __future__ import annotations

import os

# Read when chromadb builds its settings, so it has to be set before any test imports it.
os.environ["ANONYMIZED_TELEMETRY"] = "False"
