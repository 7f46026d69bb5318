"""Where the shipped checkpoint and the example documents are.

In a checkout (an editable install, or a Space folder) they sit in ``assets/`` beside the package; a
``pip install`` of the project also copies them to ``<prefix>/share/littlebird-qa/`` (pyproject.toml's
data files), so an installed ``littlebird`` finds them wherever it is run.
"""

from __future__ import annotations

import sys
from pathlib import Path

CHECKOUT_ASSETS = Path(__file__).resolve().parents[1] / "assets"
INSTALLED_ASSETS = Path(sys.prefix) / "share" / "littlebird-qa"


def asset_path(name: str) -> Path:
    """``assets/<name>`` of the checkout where it is there, else the installed copy; the checkout's path when
    neither exists (so an error names where it was looked for)."""
    for root in (CHECKOUT_ASSETS, INSTALLED_ASSETS):
        if (root / name).exists():
            return root / name
    return CHECKOUT_ASSETS / name
