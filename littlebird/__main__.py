"""``python -m littlebird``: the ``littlebird`` command."""

import sys

from .cli import main

sys.exit(main())
