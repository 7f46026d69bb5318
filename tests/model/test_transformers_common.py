"""transformers' own common model and config tests, run on LittleBird as on any library model.

``ModelTesterMixin`` and ``ConfigTester`` come from the source distribution of the installed transformers
(``pip download transformers==<version> --no-binary :all:``), unpacked once under the LittleBird cache
(``$LITTLEBIRD_CACHE`` or ``~/.cache/littlebird``) and never copied into this repository. The sdist ships
the two files but not three modules they import for mixins LittleBird has no use for (export, generation)
and the common config kwargs; ``_SHIMS`` stands in for those. The tester below follows the library's BERT
tester: tiny sizes, a length that is not a block multiple, a random padding mask; a second run of the same
tests takes a length of whole blocks. Nothing of the upstream tests is skipped or overridden here.
"""

import importlib
import subprocess
import sys
import tarfile
import tempfile
import unittest
from pathlib import Path

import pytest
import torch
import transformers

from littlebird import LittleBirdConfig, LittleBirdForQuestionAnswering, LittleBirdModel
from littlebird.checkpoint import cache_dir

pytestmark = pytest.mark.network

pytest.importorskip("parameterized", reason="transformers' common tests need `parameterized` (the test extra)")

PACKAGE = "transformers_common_tests"
_SHIMS = {
    "__init__.py": "",
    "exporters/__init__.py": "",
    "exporters/test_export.py": "class ExportTesterMixin:\n    pass\n",
    "generation/__init__.py": "",
    "generation/test_utils.py": "class GenerationTesterMixin:\n    pass\n",
    "utils/__init__.py": "",
    # a value that differs from the default for every field PreTrainedConfig keeps
    "utils/test_configuration_utils.py": (
        "config_common_kwargs = {'return_dict': False, 'output_hidden_states': True, 'output_attentions': True,\n"
        "    'dtype': 'float16', 'chunk_size_feed_forward': 5, 'architectures': ['BertModel'],\n"
        "    'id2label': {0: 'label'}, 'label2id': {'label': '0'}, 'problem_type': 'regression'}\n"
    ),
}
_COMMON_FILES = ("test_modeling_common.py", "test_configuration_common.py")


def common_tests_package() -> Path:
    """The folder holding :data:`PACKAGE`: the sdist's two common test files plus the shims."""
    version = transformers.__version__
    root = cache_dir() / f"transformers-{version}-common-tests"
    package = root / PACKAGE
    if all((package / name).is_file() for name in _COMMON_FILES):
        return root
    with tempfile.TemporaryDirectory() as download:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                f"transformers=={version}",
                "--no-binary",
                ":all:",
                "--no-deps",
                "--no-build-isolation",
                "-d",
                download,
                "-q",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        sdists = list(Path(download).glob("transformers-*.tar.gz"))
        if result.returncode or not sdists:
            pytest.skip(f"transformers {version} sdist not available: {result.stderr.strip()[-300:]}")
        partial = root.with_suffix(".partial")
        (partial / PACKAGE).mkdir(parents=True, exist_ok=True)
        with tarfile.open(sdists[0]) as archive:
            for name in _COMMON_FILES:
                member = archive.extractfile(f"transformers-{version}/tests/{name}")
                (partial / PACKAGE / name).write_bytes(member.read())
        for name, text in _SHIMS.items():
            (partial / PACKAGE / name).parent.mkdir(parents=True, exist_ok=True)
            (partial / PACKAGE / name).write_text(text)
        root.parent.mkdir(parents=True, exist_ok=True)
        partial.rename(root) if not root.exists() else None
    return root


def _import_common():
    root = str(common_tests_package())
    if root not in sys.path:
        sys.path.insert(0, root)
    modeling = importlib.import_module(f"{PACKAGE}.test_modeling_common")
    configuration = importlib.import_module(f"{PACKAGE}.test_configuration_common")
    return modeling, configuration


_modeling_common, _configuration_common = _import_common()
ModelTesterMixin = _modeling_common.ModelTesterMixin
ids_tensor = _modeling_common.ids_tensor
random_attention_mask = _modeling_common.random_attention_mask
ConfigTester = _configuration_common.ConfigTester


class LittleBirdModelTester:
    """Tiny configs and inputs, in the shape of transformers' ``BertModelTester``."""

    def __init__(
        self,
        parent,
        batch_size=13,
        seq_length=11,
        vocab_size=99,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        block_size=4,
        pack_size=3,
        type_vocab_size=2,
    ):
        self.parent = parent
        self.batch_size = batch_size
        self.seq_length = seq_length  # not a block multiple: padding happens inside
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.block_size = block_size
        self.pack_size = pack_size
        self.type_vocab_size = type_vocab_size
        self.is_training = True

    def get_config(self) -> LittleBirdConfig:
        return LittleBirdConfig(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            num_hidden_layers=self.num_hidden_layers,
            num_attention_heads=self.num_attention_heads,
            intermediate_size=self.intermediate_size,
            block_size=self.block_size,
            pack_size=self.pack_size,
            type_vocab_size=self.type_vocab_size,
            hidden_dropout_prob=0.1,
            attention_probs_dropout_prob=0.1,
            max_answer_length=5,
            top_k_starts=3,
        )

    def prepare_config_and_inputs(self):
        input_ids = ids_tensor([self.batch_size, self.seq_length], self.vocab_size)
        attention_mask = random_attention_mask([self.batch_size, self.seq_length])
        token_type_ids = ids_tensor([self.batch_size, self.seq_length], self.type_vocab_size)
        return self.get_config(), input_ids, attention_mask, token_type_ids

    def prepare_config_and_inputs_for_common(self):
        config, input_ids, attention_mask, token_type_ids = self.prepare_config_and_inputs()
        return config, {"input_ids": input_ids, "attention_mask": attention_mask, "token_type_ids": token_type_ids}


# Where a model inside the library is listed by name; the common tests pick labels and skip loss checks by them.
_NAME_TABLES = {
    "MODEL_MAPPING_NAMES": "LittleBirdModel",
    "MODEL_FOR_QUESTION_ANSWERING_MAPPING_NAMES": "LittleBirdForQuestionAnswering",
}


class LittleBirdModelTest(ModelTesterMixin, unittest.TestCase):
    all_model_classes = (LittleBirdModel, LittleBirdForQuestionAnswering)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        for table, name in _NAME_TABLES.items():
            getattr(_modeling_common, table)[LittleBirdConfig.model_type] = name

    @classmethod
    def tearDownClass(cls):
        for table in _NAME_TABLES:
            getattr(_modeling_common, table).pop(LittleBirdConfig.model_type, None)
        super().tearDownClass()

    def setUp(self):
        self.model_tester = LittleBirdModelTester(self)
        # as BertModelTest: 37 is no multiple of the 12 default heads, which only a model would refuse
        self.config_tester = ConfigTester(self, config_class=LittleBirdConfig, hidden_size=37)

    def test_config(self):
        self.config_tester.run_common_tests()


class LittleBirdBlockMultipleModelTest(LittleBirdModelTest):
    """The same tests on a length of whole blocks (12 = 3 x 4), which the model reads without padding: the
    encoder takes another path then (no padding to cut from the hidden states it returns)."""

    def setUp(self):
        super().setUp()
        self.model_tester = LittleBirdModelTester(self, seq_length=12)


def _tiny_qa_model(**overrides) -> LittleBirdForQuestionAnswering:
    torch.manual_seed(0)
    config = LittleBirdModelTester(None).get_config()
    for name, value in overrides.items():
        setattr(config, name, value)
    return LittleBirdForQuestionAnswering(config)


def test_trainer_reports_eval_loss_from_start_and_end_positions(tmp_path):
    """A plain start/end dataset: Trainer finds its labels without label_names and reports the model's loss."""
    from transformers import Trainer, TrainingArguments

    model = _tiny_qa_model(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0).eval()
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(5, 99, (6, 12), generator=generator)
    starts = torch.randint(0, 8, (6,), generator=generator)
    ends = starts + torch.randint(0, 4, (6,), generator=generator)
    dataset = [
        {
            "input_ids": ids[i],
            "attention_mask": torch.ones(12, dtype=torch.long),
            "start_positions": starts[i],
            "end_positions": ends[i],
        }
        for i in range(6)
    ]
    args = TrainingArguments(output_dir=str(tmp_path), per_device_eval_batch_size=6, report_to=[], use_cpu=True)
    try:
        metrics = Trainer(model=model, args=args, eval_dataset=dataset).evaluate()
    finally:  # Trainer's accelerator state is process-wide: the training loop's tests set their own
        from accelerate.state import AcceleratorState

        AcceleratorState._reset_state(reset_partial_state=True)
    assert "eval_loss" in metrics
    with torch.no_grad():
        expected = model(
            input_ids=ids, attention_mask=torch.ones_like(ids), start_positions=starts, end_positions=ends
        ).loss
    assert abs(metrics["eval_loss"] - expected.item()) < 1e-4


def test_attn_implementation_picks_the_backend_and_falls_back(tmp_path, caplog):
    _tiny_qa_model().save_pretrained(tmp_path)

    def load(implementation):
        return LittleBirdForQuestionAnswering.from_pretrained(tmp_path, attn_implementation=implementation).config

    assert (load("sdpa")._attn_implementation, load("sdpa").attention_backend) == ("sdpa", "blocked")
    assert load("eager").attention_backend == "blocked"
    assert (load("flex_attention")._attn_implementation, load("flex_attention").attention_backend) == (
        "flex_attention",
        "flex",
    )
    with caplog.at_level("WARNING"):
        fallback = load("flash_attention_2")
    assert (fallback._attn_implementation, fallback.attention_backend) == ("sdpa", "blocked")
    with pytest.raises(ValueError, match="not supported"):
        load("no_such_attention")


def test_inputs_embeds_give_what_the_ids_give():
    model = _tiny_qa_model().eval()
    ids = torch.randint(5, 99, (2, 10))
    mask = torch.tensor([[1] * 10, [1] * 7 + [0] * 3])
    with torch.no_grad():
        from_ids = model(input_ids=ids, attention_mask=mask)
        from_embeddings = model(inputs_embeds=model.get_input_embeddings()(ids), attention_mask=mask)
    for name in ("start_logits", "end_logits", "answerable_logits", "top_end_logits"):
        torch.testing.assert_close(getattr(from_embeddings, name), getattr(from_ids, name))
    with pytest.raises(ValueError, match="exactly one"):
        model(input_ids=ids, inputs_embeds=model.get_input_embeddings()(ids))


def test_gradient_checkpointing_gives_the_same_gradients():
    model = _tiny_qa_model(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0).train()
    ids = torch.randint(5, 99, (3, 21))
    batch = {"input_ids": ids, "start_positions": torch.tensor([1, 4, 0]), "end_positions": torch.tensor([2, 6, 0])}
    model(**batch).loss.backward()
    plain = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    assert all(layer.gradient_checkpointing for layer in model.littlebird.encoder.layer)
    model(**batch).loss.backward()
    checkpointed = {name: p.grad for name, p in model.named_parameters() if p.grad is not None}
    assert checkpointed.keys() == plain.keys()
    for name, grad in plain.items():
        torch.testing.assert_close(checkpointed[name], grad, atol=1e-5, rtol=1e-4)
