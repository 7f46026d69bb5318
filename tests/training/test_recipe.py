"""`littlebird train RECIPE`: a tiny recipe end to end, its plan, resuming, and refusals before anything runs."""

import json
from pathlib import Path

import pytest
import torch
import yaml

from littlebird.checkpoint import load_qa_model
from littlebird.cli import main as littlebird
from littlebird.training.loop import MODEL_DIR, STATE_FILE
from littlebird.training.recipe import STAGES, load_recipe
from tests.support.training import write_tiny_bert, write_toy_data

ROOT = Path(__file__).resolve().parents[2]
COMMON = {"dev_fraction": 0.5, "batch_size": 2, "log_every": 1, "lr": 1.0e-3}


def tiny_recipe(source: Path, *, teacher_steps: int = 2) -> dict:
    """Teacher, distillation, long context and export at toy scale, two optimizer steps each."""
    return {
        "description": "toy",
        "runs": "unused",
        "stages": [
            {
                "name": "teacher",
                "stage": "teacher",
                "source": str(source),
                "max_steps": teacher_steps,
                "max_length": 48,
                "doc_stride": 16,
                **COMMON,
            },
            {
                "name": "distil",
                "stage": "distill",
                "teacher_dir": "$teacher",
                "num_layers": 1,
                "block_size": 8,
                "pack_size": 4,
                "max_length": 48,
                "pi_probability": 1.0,
                "max_steps": 2,
                **COMMON,
            },
            {
                "name": "long",
                "stage": "long_context",
                "student_dir": "$distil",
                "max_length": 96,
                "max_steps": 2,
                **COMMON,
            },
            {"name": "checkpoint", "stage": "export", "student_dir": "$long"},
        ],
    }


def write_recipe(path: Path, recipe: dict) -> Path:
    path.write_text(yaml.safe_dump(recipe, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def toys(tmp_path_factory):
    root = tmp_path_factory.mktemp("toys")
    return {"data": write_toy_data(root / "data"), "source": write_tiny_bert(root / "tiny-bert")}


def test_a_tiny_recipe_runs_end_to_end_and_a_rerun_skips_what_is_done(toys, tmp_path, capsys):
    recipe = write_recipe(tmp_path / "tiny.yaml", tiny_recipe(toys["source"]))
    runs = tmp_path / "runs"
    assert littlebird(["train", str(recipe), "--data", str(toys["data"]), "--runs", str(runs)]) == 0
    for stage in ("teacher", "distil", "long"):
        summary = json.loads((runs / stage / "summary.json").read_text())
        assert summary["step"] == summary["total_steps"] == 2
    # each stage read the one before it: the student's config names the teacher's layer it came from
    model = load_qa_model(runs / "checkpoint")
    trained = load_qa_model(runs / "long" / MODEL_DIR)
    for name, tensor in trained.state_dict().items():  # the export is the last stage's model, in fp16
        torch.testing.assert_close(model.state_dict()[name], tensor, rtol=1e-3, atol=1e-3, msg=name)
    capsys.readouterr()

    assert littlebird(["train", str(recipe), "--data", str(toys["data"]), "--runs", str(runs)]) == 0
    out = capsys.readouterr().out
    assert all(f"{stage}: done" in out for stage in ("teacher", "distil", "long"))
    assert "checkpoint: export" in out  # an export is written again from what its stage reads


def test_a_stopped_stage_resumes_and_a_longer_plan_goes_on_from_its_state(toys, tmp_path):
    runs = tmp_path / "runs"
    short = write_recipe(tmp_path / "short.yaml", tiny_recipe(toys["source"], teacher_steps=2))
    littlebird(["train", str(short), "--data", str(toys["data"]), "--runs", str(runs), "--until-stage", "teacher"])
    longer = write_recipe(tmp_path / "longer.yaml", tiny_recipe(toys["source"], teacher_steps=3))
    recipe = load_recipe(longer, runs=runs, data=str(toys["data"]))
    assert recipe.stages[0].status() == "resumes"  # its summary says step 2, this plan ends at 3
    littlebird(["train", str(longer), "--data", str(toys["data"]), "--runs", str(runs), "--until-stage", "teacher"])
    assert torch.load(runs / "teacher" / STATE_FILE, weights_only=False)["step"] == 3
    assert "resumed from" in (runs / "teacher" / "log.txt").read_text()


def test_the_dry_run_prints_every_stage_of_the_shipped_recipe_without_data(capsys, monkeypatch):
    monkeypatch.delenv("LITTLEBIRD_DATA", raising=False)
    assert littlebird(["train", str(ROOT / "recipes" / "default.yaml"), "--dry-run", "--runs", "/nonexistent"]) == 0
    out = capsys.readouterr().out
    recipe = yaml.safe_load((ROOT / "recipes" / "default.yaml").read_text())
    for index, stage in enumerate(recipe["stages"], 1):
        row = next(line for line in out.splitlines() if line.split()[:3] == [str(index), stage["name"], stage["stage"]])
        assert "to run" in row
    assert "teacher_dir=$teacher_all, init_from=$mixed_more" in out and "5354 steps x 16" in out


@pytest.mark.parametrize("name", ["default.yaml", "from-encoder.yaml", "page-shaped.yaml", "fast.yaml"])
def test_every_shipped_recipe_plans(name):
    recipe = load_recipe(ROOT / "recipes" / name, runs="/nonexistent", data="/nonexistent-data")
    assert recipe.stages and all(stage.kind in STAGES for stage in recipe.stages)


def test_the_page_shaped_recipe_trains_the_shipped_checkpoint_on_page_shaped_and_plain_windows():
    recipe = load_recipe(ROOT / "recipes" / "page-shaped.yaml", runs="/nonexistent", data="/nonexistent-data")
    stage = recipe.stages[0].options
    assert stage.student_dir == "assets/littlebird-qa" and 0 < stage.page_shaped_share < 1
    assert stage.unanswerable_rate > 0 and stage.short_en_questions and stage.short_ko_questions


def test_the_fast_recipe_distils_the_shipped_checkpoint_into_half_its_layers_then_adds_hard_negatives():
    recipe = load_recipe(ROOT / "recipes" / "fast.yaml", runs="/nonexistent", data="/nonexistent-data")
    stage = recipe.stages[0].options
    assert stage.teacher_dir == "assets/littlebird-qa" and stage.num_layers == 6 and stage.init_from is None
    assert stage.attention_weight == 0 and stage.hidden_weight > 0 and stage.answerable_weight > 0
    # then the shipped checkpoint's hard negatives, from the exported student, and the compact checkpoint
    negatives = next(s for s in recipe.stages if s.kind == "long_context")
    assert negatives.options.unanswerable_rate > 0 and negatives.options.student_dir.endswith("distil_export")
    assert recipe.stages[-1].kind == "export" and recipe.stages[-1].options.student_dir.endswith("negatives/model")


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda r: r["stages"][1].update(teacher_dir="$long"), r"\$long names no earlier stage"),
        (lambda r: r["stages"][1].update(temprature=2.0), "unknown option.*temprature"),
        (lambda r: r["stages"][0].update(lr="fast"), "lr is float"),
        (lambda r: r["stages"][0].update(stage="pretrain"), "'pretrain' is not one of"),
        (lambda r: r["stages"][2].update(name="teacher"), "a stage named 'teacher' comes earlier"),
        (lambda r: r["stages"][0].update(output_dir="elsewhere"), "the stage's folder is"),
        (lambda r: r["stages"][0].update(mixed_precision="fp8"), "mixed_precision is one of auto, no, bf16"),
        (lambda r: r["stages"][3].update(other_layers="6-"), "numbers or ranges such as 6-11"),
        (lambda r: r["stages"][3].update(other_layers="0"), "other_layers needs average_with"),
    ],
)
def test_a_wrong_recipe_is_refused_before_anything_runs(toys, tmp_path, change, message):
    recipe = tiny_recipe(toys["source"])
    change(recipe)
    path = write_recipe(tmp_path / "wrong.yaml", recipe)
    with pytest.raises(SystemExit, match=message):
        littlebird(["train", str(path), "--data", str(toys["data"]), "--runs", str(tmp_path / "runs")])
    assert not (tmp_path / "runs").exists()


def test_a_recipe_without_a_data_folder_names_both_ways_to_give_one(toys, tmp_path, monkeypatch):
    monkeypatch.delenv("LITTLEBIRD_DATA", raising=False)
    path = write_recipe(tmp_path / "tiny.yaml", tiny_recipe(toys["source"]))
    with pytest.raises(SystemExit, match="--data.*LITTLEBIRD_DATA"):
        littlebird(["train", str(path), "--runs", str(tmp_path / "runs")])


def test_set_overrides_one_option_and_stage_ranges_select_the_stages(toys, tmp_path, capsys):
    path = write_recipe(tmp_path / "tiny.yaml", tiny_recipe(toys["source"]))
    recipe = load_recipe(path, data=str(toys["data"]), settings=["distil.temperature=3", "long.max_steps=5"])
    assert recipe.stages[1].options.temperature == 3.0 and recipe.stages[2].options.max_steps == 5
    littlebird(
        [
            "train",
            str(path),
            "--data",
            str(toys["data"]),
            "--dry-run",
            "--from-stage",
            "distil",
            "--until-stage",
            "long",
        ]
    )
    rows = [line.split()[1] for line in capsys.readouterr().out.splitlines()[2:]]
    assert rows == ["distil", "long"]
    with pytest.raises(SystemExit, match="no stage 'distill'"):
        littlebird(["train", str(path), "--data", str(toys["data"]), "--dry-run", "--from-stage", "distill"])
