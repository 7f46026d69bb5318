"""The quick fuzzing profile: each document reader meets random and mutated bytes (tests/support/fuzz.py) and
either reads them or refuses them with a sentence. Derandomized, so a run in CI is the same every time; the long
run is ``scripts/fuzz_readers.py``. Each input that once crashed a reader is an example here."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from littlebird.documents import formats
from tests.support.fuzz import SEEDS, mutated, read_or_refuse

# Examples per format: a PDF is read in a child process (a few tenths of a second each), the others in-process.
EXAMPLES = {"pdf": 20, "png": 20, "jpeg": 20, "tiff": 20, "webp": 20}  # a picture that decodes is read by OCR: ~0.5 s
DEFAULT_EXAMPLES = 100


def test_every_format_has_a_seed_file():
    assert {format.name for format in formats.FORMATS} <= set(SEEDS), (
        "add the format's seed to tests.support.fuzz.SEEDS"
    )


@pytest.mark.parametrize("format", formats.FORMATS, ids=lambda format: format.name)
def test_a_reader_reads_or_refuses_mutated_files(format):
    @settings(
        max_examples=EXAMPLES.get(format.name, DEFAULT_EXAMPLES),
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(data=st.data())
    def read(data):
        read_or_refuse(data.draw(mutated(format.name)), format.suffixes[0])

    read()
