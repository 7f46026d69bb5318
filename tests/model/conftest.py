"""The model tests' shared fixtures."""

import logging

import pytest
from transformers.utils import logging as transformers_logging


@pytest.fixture()
def transformers_warnings():
    """What transformers logs at WARNING or above while the test runs (its loading reports among them)."""
    records = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = records.append
    logger = transformers_logging.get_logger()
    logger.addHandler(handler)
    yield records
    logger.removeHandler(handler)
