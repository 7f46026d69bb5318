"""Progress of a long command in the terminal: a tqdm bar with its rate and the time left when a person is
watching (standard error is a terminal), plain lines now and then when the output goes to a file or a log."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from tqdm import tqdm


def _duration(seconds: float) -> str:
    """``seconds`` as a person reads it: "45 s", "12 min", "3.5 h"."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class Progress:
    """Counts work done out of ``total`` (``unit``s, such as questions or steps), from ``initial``.

    On a terminal it draws a tqdm bar (rate, elapsed and time left); elsewhere it writes one line every
    ``every_seconds`` ("evaluating: 120/400 questions, 1.90 questions/s, about 2 min left"), and one at the end
    if it wrote any (a short run stays quiet).
    :meth:`write` prints a line without breaking the bar. Use it as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        total: int | None,
        description: str,
        *,
        unit: str = "item",
        initial: int = 0,
        stream: TextIO | None = None,
        interactive: bool | None = None,
        every_seconds: float = 30.0,
    ):
        self.stream = sys.stderr if stream is None else stream
        self.total, self.description, self.unit, self.done = total, description, unit, initial
        self.interactive = self.stream.isatty() if interactive is None else interactive
        self.every_seconds = every_seconds
        self.started = self.last_line = time.monotonic()
        self.initial, self.lines = initial, 0
        self.bar = (
            tqdm(
                total=total,
                initial=initial,
                desc=description,
                unit=f" {unit}s",
                file=self.stream,
                dynamic_ncols=True,
                smoothing=0.1,
            )
            if self.interactive
            else None
        )

    def update(self, count: int = 1) -> None:
        """``count`` more done."""
        self.done += count
        if self.bar is not None:
            self.bar.update(count)
        elif time.monotonic() - self.last_line >= self.every_seconds:
            self._line()

    def _line(self) -> None:
        elapsed = time.monotonic() - self.started
        rate = (self.done - self.initial) / elapsed if elapsed > 0 else 0.0
        of = f"/{self.total}" if self.total is not None else ""
        left = ""
        if self.total is not None and rate > 0 and self.done < self.total:
            left = f", about {_duration((self.total - self.done) / rate)} left"
        self.stream.write(f"{self.description}: {self.done}{of} {self.unit}s, {rate:.2f} {self.unit}s/s{left}\n")
        self.stream.flush()
        self.last_line = time.monotonic()
        self.lines += 1

    def write(self, line: str) -> None:
        """Print ``line`` to standard output, above the bar when there is one."""
        if self.bar is not None:
            self.bar.write(line, file=sys.stdout)
        else:
            print(line, flush=True)

    def close(self) -> None:
        """End the bar, or write the last plain line."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        elif self.lines and self.done > self.initial:
            self._line()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
