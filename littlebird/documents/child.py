"""Running a reader's native code (PDFium, Tesseract) in a child process, bounded in memory and time.

Native readers inflate, render and decode without bounds of their own, and a crash in one would take the
server down with it. In a child process the operating system enforces both bounds, and a crash is a refused
file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence


def run_bounded(
    command: Sequence[str],
    data: bytes,
    *,
    seconds: float,
    memory_bytes: int,
    environment: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess:
    """Run ``command`` with ``data`` on its standard input; its output and errors come back as bytes.

    The child may address at most ``memory_bytes`` (on POSIX systems) and is killed after ``seconds``, which
    raises :class:`subprocess.TimeoutExpired` as :func:`subprocess.run` does. ``environment`` is added to this
    process's.
    """

    def limit_memory() -> None:  # in the child, before the command starts
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))

    return subprocess.run(
        list(command),
        input=data,
        capture_output=True,
        timeout=max(seconds, 0.01),
        env={**os.environ, **(environment or {})},
        preexec_fn=limit_memory if sys.platform != "win32" else None,
    )
