"""Comparing evaluation results: the paired bootstrap (``littlebird.comparison``), ``littlebird evaluate
--compare``, and the table of the three conversions (``experiments/conversion-comparison``) built on it."""

import importlib.util
import json
from dataclasses import asdict
from pathlib import Path

import pytest

from littlebird.cli import main as littlebird_main
from littlebird.comparison import (
    compare_results,
    compare_sets,
    comparison_table,
    paired_bootstrap,
    read_predictions,
    result_names,
    result_pattern,
)
from littlebird.evaluation import Prediction, summarize

ROOT = Path(__file__).resolve().parents[2]


def _write_results(path, data, rows, **summary):
    """An evaluation --output file of ``data`` with one question per (document tokens, F1) in ``rows``."""
    predictions = [
        asdict(Prediction(f"q{i}", "q", "x", ["x"], "en", n, 1, 0.1, f1, f1)) for i, (n, f1) in enumerate(rows)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"summary": {**summarize([]), "data": data, **summary}, "predictions": predictions}))
    return path


def _rows(f1s):
    return {("data", f"q{i}"): {"f1": f1} for i, f1 in enumerate(f1s)}


def test_paired_bootstrap_interval_holds_the_mean_difference_and_narrows_with_more_questions():
    assert paired_bootstrap(_rows([0.5] * 8), _rows([0.5] * 8)) == (8, 0.0, 0.0, 0.0)
    few = paired_bootstrap(_rows([0.0, 1.0] * 5), _rows([1.0, 1.0] * 5))
    many = paired_bootstrap(_rows([0.0, 1.0] * 200), _rows([1.0, 1.0] * 200))
    assert few[0] == 10 and many[0] == 400 and few[1] == many[1] == 50.0
    assert few[2] <= 50.0 <= few[3] and many[2] <= 50.0 <= many[3]
    assert many[3] - many[2] < few[3] - few[2]
    assert paired_bootstrap(_rows([0.0]), {("other", "q0"): {"f1": 1.0}})[0] == 0  # nothing in common


def test_paired_bootstrap_keeps_its_seed_and_resampling():
    # The numbers already printed in docs/ came from random.Random(0), 2,000 rounds of random.choices and the
    # 50th and 1950th sorted means; a change to any of them would move every interval reported so far.
    reference, other = _rows([0.0, 0.5, 1.0, 0.25, 0.75] * 4), _rows([1.0, 0.5, 0.0, 0.5, 1.0] * 4)
    n, difference, low, high = paired_bootstrap(reference, other)
    assert (n, difference) == (20, 10.0)
    assert (low, high) == (-17.5, 37.5)
    assert paired_bootstrap(reference, other, seed=1) != (n, difference, low, high)


def test_identical_sets_differ_by_zero_and_a_set_better_everywhere_has_a_positive_interval(tmp_path):
    f1s = [0.5, 0.0, 0.5, 0.25, 0.5, 0.0, 0.25, 0.5]
    gains = [0.5, 0.25, 0.125, 0.25, 0.375, 0.5, 0.125, 0.25]  # better on every question, by different amounts
    _write_results(tmp_path / "a" / "en.json", "dev-en.json", [(100, f) for f in f1s])
    _write_results(tmp_path / "same" / "en.json", "dev-en.json", [(100, f) for f in f1s])
    _write_results(tmp_path / "better" / "en.json", "dev-en.json", [(100, f + g) for f, g in zip(f1s, gains)])
    (same,) = compare_sets(str(tmp_path / "a" / "{}.json"), str(tmp_path / "same" / "{}.json"), ["en"])
    assert same["difference"] == 0.0 and same["low"] <= 0.0 <= same["high"]
    (better,) = compare_sets(str(tmp_path / "a" / "{}.json"), str(tmp_path / "better" / "{}.json"), ["en"])
    assert better["difference"] == pytest.approx(100 * sum(gains) / len(gains))
    assert 0 < better["low"] < better["difference"] < better["high"]
    verdict = comparison_table([better], "A", "B").splitlines()[-1]
    assert verdict == "B ahead on all 1 files: yes; within 1 F1 of A on all: yes"


def test_predictions_pair_across_folders_by_the_dev_file_name(tmp_path):
    # The same dev file written into two folders (runs/dev, a recipe's own dev/) holds the same questions;
    # a full-path key paired none of them, so a comparison silently had no questions to compare.
    shipped = _write_results(tmp_path / "shipped.json", "runs/dev/dev-en-paragraph.json", [(100, 0.0), (100, 0.5)])
    candidate = _write_results(
        tmp_path / "candidate.json", "runs/recipe/dev/dev-en-paragraph.json", [(100, 1.0), (100, 0.5)]
    )
    article = _write_results(tmp_path / "article.json", "runs/dev/dev-en-article.json", [(100, 1.0), (100, 1.0)])
    n, difference, _, _ = paired_bootstrap(read_predictions([shipped]), read_predictions([candidate]))
    assert (n, difference) == (2, 50.0)
    assert paired_bootstrap(read_predictions([shipped]), read_predictions([article]))[0] == 0


def test_evaluation_sets_compare_file_by_file_with_the_tolerance_verdict(tmp_path):
    # file x: B equal to A; file y: B loses 25 points on average (one question of four from 1.0 to 0.0)
    _write_results(tmp_path / "a" / "x.json", "dev-x.json", [(100, 1.0), (100, 0.5)])
    _write_results(tmp_path / "b" / "x.json", "dev-x.json", [(100, 1.0), (100, 0.5)])
    _write_results(tmp_path / "a" / "y.json", "dev-y.json", [(100, 1.0)] * 4)
    _write_results(tmp_path / "b" / "y.json", "dev-y.json", [(100, 1.0)] * 3 + [(100, 0.0)])
    rows = compare_sets(str(tmp_path / "a" / "{}.json"), str(tmp_path / "b" / "{}.json"), ["x", "y", "missing"])
    assert [r["file"] for r in rows] == ["x", "y"]  # a file without results on both sides is left out
    assert rows[0]["difference"] == 0.0 and rows[1]["difference"] == -25.0
    assert rows[1]["a_f1"] == 100.0 and rows[1]["b_f1"] == 75.0
    verdict = comparison_table(rows, "A", "B", tolerance=1.0).splitlines()[-1]
    assert verdict == "B ahead on all 2 files: no; within 1 F1 of A on all: no"
    assert comparison_table(rows[:1], "A", "B", tolerance=1.0).splitlines()[-1].endswith("within 1 F1 of A on all: yes")
    assert comparison_table(rows, "A", "B", tolerance=30).splitlines()[-1].endswith("within 30 F1 of A on all: yes")


def test_a_set_is_a_pattern_or_a_folder_and_names_its_dev_files(tmp_path):
    _write_results(tmp_path / "runs" / "shipped-dev-en.json", "dev-en.json", [(100, 1.0)])
    _write_results(tmp_path / "runs" / "shipped-dev-ko.json", "dev-ko.json", [(100, 1.0)])
    (tmp_path / "runs" / "shipped-dev-ko.log").write_text("")
    pattern = str(tmp_path / "runs" / "shipped-{}.json")
    assert result_pattern(pattern) == pattern
    assert result_pattern(str(tmp_path / "runs")) == str(tmp_path / "runs" / "{}.json")
    assert result_names(pattern) == ["dev-en", "dev-ko"]
    single = str(tmp_path / "runs" / "shipped-dev-en.json")  # one result file is a set of one
    assert result_pattern(single) == single and result_names(single) == ["shipped-dev-en"]
    assert compare_results(single, str(tmp_path / "runs")).splitlines()[2].startswith("| shipped-dev-en | 1 |")
    with pytest.raises(ValueError, match="neither a pattern"):
        result_pattern(str(tmp_path / "nowhere"))
    with pytest.raises(ValueError, match="no file of dev-xx has results in both"):
        compare_results(pattern, pattern, files=["dev-xx"])


def test_evaluate_compare_prints_the_table_and_the_verdict(tmp_path, capsys):
    # patterns as scripts/compare_to_shipped.sh writes them, against a folder of <name>.json
    _write_results(
        tmp_path / "compare" / "shipped-dev-en.json",
        "runs/dev/dev-en.json",
        [(100, 0.5)] * 4,
        no_answer_rate=0.25,
        mean_windows=1.0,
    )
    _write_results(tmp_path / "compare" / "shipped-dev-ko.json", "runs/dev/dev-ko.json", [(100, 0.5)] * 4)
    _write_results(
        tmp_path / "candidate" / "dev-en.json",
        "runs/dev/dev-en.json",
        [(100, 1.0)] * 4,
        no_answer_rate=0.0,
        mean_windows=2.5,
    )
    _write_results(tmp_path / "candidate" / "dev-ko.json", "runs/dev/dev-ko.json", [(100, 0.75)] * 4)
    assert (
        littlebird_main(
            [
                "evaluate",
                "--compare",
                str(tmp_path / "compare" / "shipped-{}.json"),
                str(tmp_path / "candidate"),
                "--files",
                "dev-en",
                "dev-ko",
                "dev-none",
                "--names",
                "shipped",
                "candidate",
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        "| dev file | questions | shipped F1 | candidate F1 | difference (95% CI) | "
        "'no answer' shipped / candidate | windows read shipped / candidate |"
    )
    assert lines[2] == "| dev-en | 4 | 50.0 | 100.0 | +50.0 (+50.0, +50.0) | 25.0% / 0.0% | 1.00 / 2.50 |"
    assert lines[3].startswith("| dev-ko | 4 | 50.0 | 75.0 | +25.0 (+25.0, +25.0) |")
    assert lines[-1] == "candidate ahead on all 2 files: yes; within 1 F1 of shipped on all: yes"
    # without --files: every dev file the first set has; the sets named A and B
    littlebird_main(
        ["evaluate", "--compare", str(tmp_path / "candidate"), str(tmp_path / "compare" / "shipped-{}.json")]
    )
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" | ")[0] for line in lines[2:-1]] == ["| dev-en", "| dev-ko"]
    assert lines[-1] == "B ahead on all 2 files: no; within 1 F1 of A on all: no"
    with pytest.raises(SystemExit, match="--compare: no file of dev-none has results in both"):
        littlebird_main(
            ["evaluate", "--compare", str(tmp_path / "candidate"), str(tmp_path / "candidate"), "--files", "dev-none"]
        )


def _load_conversion_comparison():
    path = ROOT / "experiments" / "conversion-comparison" / "compare_conversions.py"
    spec = importlib.util.spec_from_file_location("compare_conversions", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_conversion_table_pools_files_by_length_and_joins_the_benchmark(tmp_path):
    script = _load_conversion_comparison()
    english = _write_results(tmp_path / "a-en.json", "dev-en.json", [(100, 1.0), (3000, 0.0)])
    korean = _write_results(tmp_path / "a-ko.json", "dev-ko.json", [(200, 0.5), (9000, 0.25)])
    other = _write_results(tmp_path / "b.json", "dev-en.json", [(300, 0.0)])
    bench = tmp_path / "bench.json"
    bench.write_text(
        json.dumps(
            [
                {"model": "bigbird", "length": 4096, "median_s": 1.234, "peak_mb": 99.6},
                {"model": "littlebird", "length": 16384, "median_s": 2.0, "peak_mb": 10.0},
            ]
        )
    )
    table = script.main(
        [
            "--bench",
            str(bench),
            "--eval",
            "littlebird",
            str(english),
            str(korean),
            "--eval",
            "bigbird-taper",
            str(other),
        ]
    ).splitlines()
    assert table[0] == (
        "| conversion | F1 <=512 tokens | F1 2K-4K tokens | F1 >8K tokens | F1 all "
        "| F1 all - littlebird's (95% CI) | 4K s | 16K s | 4K MB | 16K MB |"
    )
    assert table[2] == "| littlebird | 75.0 (2) | 0.0 (1) | 25.0 (1) | 43.8 (4) | - | - | 2.00 | - | 10 |"
    # b.json's one question is a-en.json's q0 (same data file, same id): 0.0 against 1.0, on one question
    assert table[3] == "| bigbird-taper | 0.0 (1) | - | - | 0.0 (1) | -100.0 (-100.0, -100.0) | 1.23 | - | 100 | - |"
