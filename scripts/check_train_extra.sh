#!/usr/bin/env bash
# `pip install ".[train]"` alone runs training: in a fresh venv (no app or test packages), `littlebird --help`,
# `littlebird train recipes/default.yaml --dry-run` and a tiny three-stage recipe (teacher, distillation, export)
# on toy data, then which app packages training imported (none).
#
#   scripts/check_train_extra.sh [VENV_DIR] [WORK_DIR]      # defaults: /tmp/venv-train, /tmp/train-check
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd); VENV=${1:-/tmp/venv-train}; WORK=${2:-/tmp/train-check}
rm -rf "$VENV" "$WORK" && python3 -m venv "$VENV" && . "$VENV/bin/activate"
pip install -q torch==2.13.0 && pip install -q "$ROOT[train]"
pip list 2>/dev/null | grep -iE "^(gradio|plotly|pypdfium2|mammoth|pytest) " && { echo "app or test packages installed"; exit 1; }
mkdir -p "$WORK" && cd "$WORK"   # outside the checkout: the installed package runs
littlebird --help > help.txt && head -1 help.txt
littlebird train "$ROOT/recipes/default.yaml" --dry-run > plan.txt && head -3 plan.txt
ROOT="$ROOT" WORK="$WORK" python - <<'PY'
import os, sys
from pathlib import Path
import yaml
sys.path.insert(0, os.environ["ROOT"])  # the toy model and data of the tests
from tests.training_toys import write_tiny_bert, write_toy_data
work = Path(os.environ["WORK"])
write_toy_data(work / "data")
common = {"dev_fraction": 0.5, "batch_size": 2, "log_every": 1, "lr": 1.0e-3}
recipe = {"description": "toy", "runs": str(work / "runs"), "stages": [
    {"name": "teacher", "stage": "teacher", "source": str(write_tiny_bert(work / "tiny-bert")), "max_steps": 2,
     "max_length": 48, "doc_stride": 16, **common},
    {"name": "distil", "stage": "distill", "teacher_dir": "$teacher", "num_layers": 1, "block_size": 8,
     "pack_size": 4, "max_length": 48, "pi_probability": 1.0, "max_steps": 2, **common},
    {"name": "checkpoint", "stage": "export", "student_dir": "$distil"}]}
(work / "tiny.yaml").write_text(yaml.safe_dump(recipe, sort_keys=False))
PY
littlebird train "$WORK/tiny.yaml" --data "$WORK/data"
python -c "import sys, littlebird.training.recipe, littlebird.evaluation
print('app packages imported:', sorted(m for m in sys.modules if m.split('.')[0] in ('gradio', 'plotly', 'pypdfium2', 'mammoth')))"
ls "$WORK/runs/checkpoint/config.json"
