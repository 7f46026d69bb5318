"""Entry point of the Hugging Face Space (and of `python app.py` anywhere).

Serves the LittleBird QA demo. The checkpoint is ``assets/littlebird-qa`` unless
``LITTLEBIRD_CHECKPOINT`` names another directory or Hub id; ``demo.launch()`` reads
``GRADIO_SERVER_NAME`` and ``GRADIO_SERVER_PORT`` as usual (Spaces set them).
"""

import os

from littlebird.app.ui import build_demo

demo = build_demo(os.environ.get("LITTLEBIRD_CHECKPOINT") or None)

if __name__ == "__main__":
    demo.launch()
