"""Fixtures of the fault-injection suite: a toy model, a short run config, a finished reference run.

The run is small on purpose (2 groups of 2 one-episode Kuhn trials, 8-token answers, a 2-layer random model) so
that a resume, the unit of most tests here, costs a second or two; what it exercises is the whole resume path.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

from arena.core.config.loader import load_config
from arena.core.learn import checkpoint as ck
from arena.core.learn.run import Run
from arena.core.learn.run_config import TrainConfig
from tests.toy_model import build_model, build_tokenizer

CONFIG = """
arena: kuhn_poker
seed: 5
iterations: {iterations}
groups: 2
group_size: 2
opponents:
  - {{spec: conservative, weight: 0.5}}
  - {{spec: aggressive, weight: 0.5}}
learners:
  - name: agent
    model: {model}
    backend: hf
    plugins: [grpo]
    optim: {{lr: 1.0e-3, micro_batch_tokens: 2048}}
trial:
  episodes: 1
  invalid_action: {{policy: random}}
  prompt: {{max_new_tokens: 6}}
eval: {{games: 2, opponents: [intermediate]}}
checkpoint: {{every: 1, keep: 3}}
population: {{snapshot_every: {snapshot_every}, snapshot_weight: 1.0}}
torch_threads: 1
"""


@pytest.fixture(scope="session")
def toy_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("faults-toy") / "model"
    tokenizer = build_tokenizer()
    model = build_model(len(tokenizer), tokenizer.eos_token_id, tokenizer.pad_token_id)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def config_text(toy_dir: Path, iterations: int = 2, snapshot_every: int = 0) -> str:
    return CONFIG.format(iterations=iterations, model=toy_dir, snapshot_every=snapshot_every)


def train_config(toy_dir: Path, iterations: int = 2, snapshot_every: int = 0) -> TrainConfig:
    import yaml

    return load_config(TrainConfig, data=yaml.safe_load(config_text(toy_dir, iterations, snapshot_every)))


def write_config(folder: Path, toy_dir: Path, iterations: int = 2, snapshot_every: int = 0) -> Path:
    path = folder / "faults.yaml"
    path.write_text(config_text(toy_dir, iterations, snapshot_every))
    return path


def train(config: TrainConfig, out: Path, resume: bool = False) -> Path:
    return Run(config, out, progress=False).run(resume=resume)


def learning_metrics(run: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in m.items() if not k.startswith("time/")} for m in lines]


def weights(run: Path, step: int) -> dict[str, torch.Tensor]:
    return load_file(str(run / ck.CHECKPOINTS / f"step-{step:08d}" / "learners" / "agent" / "model.safetensors"))


def same_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return set(a) == set(b) and all(torch.equal(a[k], b[k]) for k in a)


def population(run: Path) -> Any:
    data = json.loads((run / "population.json").read_text())
    return data


@pytest.fixture(scope="session")
def reference(toy_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished 2-iteration run: checkpoints step-1 and step-2, metrics rows -1, 0, 1."""
    out = tmp_path_factory.mktemp("faults-reference") / "run"
    train(train_config(toy_dir), out)
    return out


def copy_run(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


def arena_cli(*args: str, env: dict[str, str] | None = None, **kwargs: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "arena.core.cli.main", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONHASHSEED="0", **(env or {})),
        **kwargs,
    )
