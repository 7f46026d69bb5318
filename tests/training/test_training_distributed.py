"""A training stage under torchrun with 2 CPU processes (gloo): both ranks end with the same weights."""

import os
import socket
import subprocess
import sys
from pathlib import Path

from littlebird.training.loop import LOG_FILE
from tests.training_toys import write_tiny_bert, write_toy_data
import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_process_data_parallel_teacher_stage_keeps_ranks_in_step(tmp_path):
    data = write_toy_data(tmp_path / "data")
    source = write_tiny_bert(tmp_path / "tiny-bert")
    out = tmp_path / "teacher"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
               "--master_port", str(free_port()), "-m", "littlebird.training.teacher", "--source", str(source),
               "--data-dir", str(data), "--output-dir", str(out), "--dev-fraction", "0.5", "--max-length", "48",
               "--batch-size", "2", "--max-steps", "3", "--lr", "1e-3", "--log-every", "1"]
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    log = (out / LOG_FILE).read_text()
    assert "2 process(es)" in log and "step 3/3" in log
    digests = [(out / f"weights.rank{rank}.sha256").read_text() for rank in (0, 1)]
    assert digests[0] == digests[1]
    # the ranks did train: the weights moved away from the source
    initial = tmp_path / "initial"
    subprocess.run([sys.executable, "-m", "littlebird.training.teacher", "--source", str(source), "--data-dir",
                    str(data), "--output-dir", str(initial), "--dev-fraction", "0.5", "--max-length", "48",
                    "--max-steps", "1", "--lr", "0", "--warmup-ratio", "0"],
                   cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=True)
    assert (initial / "weights.rank0.sha256").read_text() != digests[0]
