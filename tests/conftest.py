"""Shared test settings: a fixed thread count keeps timings stable on the 2-core machines."""

import os

import torch

torch.set_num_threads(int(os.environ.get("LITTLEBIRD_TEST_THREADS", "2")))
