"""Shared test settings: a fixed thread count keeps timings stable on the 2-core machines."""

import os

import pytest
import torch

from littlebird.modeling_littlebird import USW_ATTENTION_BACKENDS
from littlebird.reference import register_dense_reference

torch.set_num_threads(int(os.environ.get("LITTLEBIRD_TEST_THREADS", "2")))


@pytest.fixture()
def dense_reference():
    """The dense n x n reference as an attention backend for one test; yields its name."""
    name = register_dense_reference()
    yield name
    del USW_ATTENTION_BACKENDS[name]
