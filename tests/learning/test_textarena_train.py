"""One `arena train` iteration of the shipped TextArena config (configs/textarena_mage.yaml) on the toy model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("textarena")


@pytest.mark.slow
def test_one_training_iteration_on_textarena_tictactoe(tmp_path: Path, toy_dir: Path) -> None:
    run = tmp_path / "run"
    overrides = [
        "iterations=1",
        "groups=2",
        "group_size=2",
        f"learners.0.model={toy_dir}",
        "learners.0.optim.micro_batch_tokens=2048",
        "learners.0.options.mage.max_new_tokens=8",
        "trial.prompt.max_new_tokens=8",
        "eval.games=2",
        "report_to=none",
    ]
    cmd = [sys.executable, "-m", "arena.core.cli.main", "train", "--population", "textarena_mage", *overrides]
    proc = subprocess.run([*cmd, "--out", str(run), "--dump-rollouts"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    trained = [r for r in rows if r["iteration"] == 0]
    assert trained and "train/loss" in trained[0] and "rollout/textarena-random/win_rate" in trained[0]
    samples = [json.loads(line) for line in (run / "rollouts" / "iter_00000.jsonl").read_text().splitlines()]
    assert samples and all("TicTacToe" in s["context_text"] for s in samples if s.get("context_text"))
