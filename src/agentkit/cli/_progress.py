"""A dependency-free progress bar for stderr, drawn only for a human at a terminal."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """``label  done/total  [####....]  rate/s  ETA``, redrawn at most ten times a second.

    ``enabled=None`` means "when stderr is a terminal": pipes and test runners get no
    carriage-return noise, only the summary the command prints afterwards.
    """

    def __init__(
        self,
        total: int,
        label: str,
        *,
        enabled: bool | None = None,
        stream: TextIO | None = None,
        width: int = 30,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.total = max(total, 0)
        self.label = label
        self.width = width
        self.done = 0
        self._start = time.monotonic()
        self._drawn = 0.0
        self._shown = False

    def update(self, n: int = 1) -> None:
        self.done += n
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._drawn >= 0.1 or self.done >= self.total:
            self._drawn = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        elapsed = max(now - self._start, 1e-9)
        rate = self.done / elapsed
        frac = min(self.done / self.total, 1.0) if self.total else 1.0
        filled = int(frac * self.width)
        bar = "#" * filled + "." * (self.width - filled)
        left = (self.total - self.done) / rate if rate > 0 and self.total else 0.0
        self.stream.write(
            f"\r{self.label}  {self.done}/{self.total}  [{bar}]  {rate:.1f}/s  ETA {left:.0f}s "
        )
        self.stream.flush()
        self._shown = True

    def close(self) -> None:
        if self.enabled and self._shown:
            self.stream.write("\n")
            self.stream.flush()
