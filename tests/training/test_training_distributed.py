"""A recipe under torchrun with 2 CPU processes (gloo): the ranks train each stage in step, and the main one
exports while the other waits."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from littlebird.training.loop import LOG_FILE
from tests.support.training import write_tiny_bert, write_toy_data

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_process_data_parallel_recipe_keeps_ranks_in_step(tmp_path):
    data = write_toy_data(tmp_path / "data")
    source = write_tiny_bert(tmp_path / "tiny-bert")
    common = {"source": str(source), "dev_fraction": 0.5, "max_length": 48, "batch_size": 2, "log_every": 1}
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(
        yaml.safe_dump(
            {
                "runs": str(tmp_path / "runs"),
                "stages": [
                    {"name": "teacher", "stage": "teacher", "max_steps": 3, "lr": 1.0e-3, **common},
                    {"name": "untrained", "stage": "teacher", "max_steps": 1, "lr": 0, "warmup_ratio": 0, **common},
                    {
                        "name": "student",
                        "stage": "distill",
                        "teacher_dir": "$teacher",
                        "num_layers": 1,
                        "block_size": 8,
                        "pack_size": 4,
                        "max_steps": 2,
                        **{k: v for k, v in common.items() if k != "source"},
                    },
                    {"name": "checkpoint", "stage": "export", "student_dir": "$student"},  # the main process only
                ],
            }
        )
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_addr",
        "127.0.0.1",
        "--master_port",
        str(free_port()),
        "-m",
        "littlebird",
        "train",
        str(recipe),
        "--data",
        str(data),
    ]
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    out = tmp_path / "runs" / "teacher"
    log = (out / LOG_FILE).read_text()
    assert "2 process(es)" in log and "step 3/3" in log
    digests = [(out / f"weights.rank{rank}.sha256").read_text() for rank in (0, 1)]
    assert digests[0] == digests[1]
    # the ranks did train: the weights moved away from the source's, which a step at rate 0 keeps
    assert (tmp_path / "runs" / "untrained" / "weights.rank0.sha256").read_text() != digests[0]
    assert (tmp_path / "runs" / "checkpoint" / "config.json").is_file()
    assert result.stdout.count("checkpoint: finished") == 2  # both ranks passed the export, one wrote it
