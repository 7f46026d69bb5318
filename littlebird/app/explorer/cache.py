"""The windows whose captures the explorer holds: the last :data:`MAX_WINDOWS` opened, shared by the page's
sessions, by :func:`capture_key`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from littlebird.app.explorer.capture import TokenCapture
from littlebird.app.explorer.target import ExplorerTarget

MAX_WINDOWS = 2
"""Windows whose layer inputs :data:`CAPTURES` keeps (~74 MB each at 8K tokens)."""


def capture_key(target: ExplorerTarget) -> tuple:
    """What makes a window's capture: the checkpoint, the question, the document, the window, its length."""
    document = target.document
    return (
        target.checkpoint,
        target.question,
        len(document.model_text),
        hash(document.model_text),
        target.document_start,
        target.max_length,
    )


class CaptureCache:
    """The last ``size`` windows' :class:`TokenCapture`, least recently used dropped first; shared by the
    page's sessions (their explorers mostly show the same few windows) and safe across threads."""

    def __init__(self, size: int = MAX_WINDOWS) -> None:
        self.size = size
        self._captures: OrderedDict[tuple, TokenCapture] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple) -> TokenCapture | None:
        with self._lock:
            capture = self._captures.get(key)
            if capture is not None:
                self._captures.move_to_end(key)
            return capture

    def put(self, key: tuple, capture: TokenCapture) -> None:
        with self._lock:
            self._captures[key] = capture
            self._captures.move_to_end(key)
            while len(self._captures) > self.size:
                self._captures.popitem(last=False)

    def forget(self, key: tuple | None) -> None:
        """Let ``key``'s window go, if held."""
        with self._lock:
            self._captures.pop(key, None)

    def __len__(self) -> int:
        return len(self._captures)

    def clear(self) -> None:
        with self._lock:
            self._captures.clear()


CAPTURES = CaptureCache()
"""The windows the explorer opened last, for :func:`token_keys`."""
"""The windows the explorer opened last, for ``explorer.keys.token_keys``."""
