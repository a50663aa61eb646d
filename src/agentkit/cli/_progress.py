"""Live progress for long commands, on stderr, drawn only for a human at a terminal.

One mechanism for ingest, import, eval and lexical index rebuilds: a ``Progress`` bar counts work
that has landed (``update``) and work under way that will land with the next write
(``advance``), so a write of several thousand chunks shows each slice as it is embedded
rather than one frame at the end. ``metered(store, bar.advance)`` is how the embedding
is seen: while inside it the store's embedder reports every slice of texts it embeds.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TextIO

import numpy as np
import numpy.typing as npt

from agentkit.vector._embedder_id import embedder_name

#: Texts per embedder call while metered: small enough for a frame every second or so.
SLICE = 64


class Progress:
    """``label  done/total unit  [####....]  rate unit/s  ETA``, redrawn at most ten times
    a second.

    ``enabled=None`` means "when stderr is a terminal": pipes and test runners get no
    carriage-return noise, only the summary the command prints afterwards.
    """

    def __init__(
        self,
        total: int,
        label: str,
        *,
        unit: str = "",
        enabled: bool | None = None,
        stream: TextIO | None = None,
        width: int = 30,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.total = max(total, 0)
        self.label = label
        self.unit = f" {unit}" if unit else ""
        self.width = width
        self.done = 0
        self.ahead = 0  # under way: counted by advance(), confirmed by update()
        self._start = time.monotonic()
        self._drawn = 0.0
        self._shown = False

    @property
    def shown(self) -> int:
        """What the bar shows: landed work plus work under way, never past the total."""
        seen = self.done + self.ahead
        return min(seen, self.total) if self.total else seen

    def update(self, n: int = 1) -> None:
        """``n`` more have landed; they include any that ``advance`` already counted."""
        self.done += n
        self.ahead = max(self.ahead - n, 0)
        self._tick()

    def advance(self, n: int) -> None:
        """``n`` more are under way (embedded, not yet written)."""
        self.ahead += n
        self._tick()

    def _tick(self) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._drawn >= 0.1 or self.shown >= self.total:
            self._drawn = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        elapsed = max(now - self._start, 1e-9)
        shown = self.shown
        rate = shown / elapsed
        frac = min(shown / self.total, 1.0) if self.total else 1.0
        filled = int(frac * self.width)
        bar = "#" * filled + "." * (self.width - filled)
        left = (self.total - shown) / rate if rate > 0 and self.total else 0.0
        self.stream.write(
            f"\r{self.label}  {shown}/{self.total}{self.unit}  [{bar}]  "
            f"{rate:.1f}{self.unit}/s  ETA {_clock(left)} "
        )
        self.stream.flush()
        self._shown = True

    def close(self) -> None:
        if self.enabled and self._shown:
            self.stream.write("\n")
            self.stream.flush()


def _clock(seconds: float) -> str:
    s = int(seconds + 0.5)
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


@contextlib.contextmanager
def metered(store: Any, on_embedded: Callable[[int], None]) -> Iterator[bool]:
    """While inside, ``store.embedder`` calls ``on_embedded(n)`` after each slice of
    ``n`` texts it embeds. Yields False (and changes nothing) for a store without one."""
    inner = getattr(store, "embedder", None)
    if inner is None or not callable(getattr(inner, "embed", None)):
        yield False
        return
    store.embedder = _Metered(inner, on_embedded)
    try:
        yield True
    finally:
        store.embedder = inner


class _Metered:
    """The store's embedder, embedding in slices and counting them; the same vectors,
    and the same name in the store's record (``embedder_name``)."""

    def __init__(self, inner: Any, on_embedded: Callable[[int], None]) -> None:
        self._inner = inner
        self._on_embedded = on_embedded
        self.dim: int = inner.dim
        # Recorded names come from model_name/engine/precision, else the class: keep the
        # inner embedder's either way.
        self.model_name: str = getattr(inner, "model_name", None) or embedder_name(inner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __repr__(self) -> str:
        return repr(self._inner)

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        batch = list(texts) if not isinstance(texts, str) else texts
        if isinstance(batch, str) or len(batch) <= SLICE:
            out: npt.NDArray[np.float32] = await self._inner.embed(batch)
            self._on_embedded(len(batch))
            return out
        # Slices of texts of like length: an embedder pads each call to its longest text,
        # so slicing in arrival order would pay for padding the whole-write order avoids.
        order = sorted(range(len(batch)), key=lambda i: -len(batch[i]))
        out = np.empty((len(batch), self.dim), dtype=np.float32)
        for start in range(0, len(order), SLICE):
            rows = order[start : start + SLICE]
            out[rows] = await self._inner.embed([batch[i] for i in rows])
            self._on_embedded(len(rows))
        return out


@contextlib.contextmanager
def index_rebuilds(enabled: bool | None = None) -> Iterator[None]:
    """While inside, an index beside the store (lexical or dense) rebuilt from many rows
    draws its own bar."""
    from agentkit.vector import _derived

    def report(kind: str, scope: str, total: int) -> Progress:
        return Progress(total, f"rebuild {kind} index {scope}", unit="chunks", enabled=enabled)

    before = _derived.rebuild_progress
    _derived.rebuild_progress = report
    try:
        yield
    finally:
        _derived.rebuild_progress = before
