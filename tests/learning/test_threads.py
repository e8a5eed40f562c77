"""A run's ``torch_threads`` holds while it trains or evaluates and is given back afterwards (core/learn/threads.py).

Before, ``Run``, ``evaluate_run`` and ``evaluate_run_tasks`` set torch's process-wide thread count and left it: in
the test suite the tests with ``torch_threads: 1`` left every later slow test on one of two cores.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from arena.core.config.loader import load_config
from arena.core.eval.evaluation import evaluate_run
from arena.core.eval.passk import evaluate_run_tasks
from arena.core.learn.run import Run
from arena.core.learn.run_config import TrainConfig
from arena.core.learn.threads import torch_threads
from tests.learning.test_train_run import write_config

VAULT = """
arena: vault
seed: 0
iterations: 1
groups: 2
group_size: 2
opponents: []
learners:
  - name: agent
    model: {model}
    plugins: [grpo]
    optim: {{lr: 1.0e-3}}
trial:
  episodes: 1
  invalid_action: {{policy: random}}
  prompt: {{max_new_tokens: 8}}
eval: {{every: 0}}
torch_threads: 1
"""

TWO_THREADS = pytest.mark.skipif(torch.get_num_threads() < 2, reason="needs two threads to tell 1 from torch's")


def test_the_context_restores_torch_s_setting_and_zero_leaves_it() -> None:
    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with torch_threads(0):
        assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError), torch_threads(1):
        raise RuntimeError("a failed run gives the setting back too")
    assert torch.get_num_threads() == before


@TWO_THREADS
def test_a_run_and_its_evaluations_use_torch_threads_and_give_them_back(
    tmp_path: Path, toy_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = torch.get_num_threads()
    config = load_config(TrainConfig, write_config(tmp_path, toy_dir, iterations=1))
    assert config.torch_threads == 1
    seen: list[int] = []
    step = Run.step

    def counting_step(self: Run) -> dict[str, Any]:
        seen.append(torch.get_num_threads())
        return step(self)

    monkeypatch.setattr(Run, "step", counting_step)
    run_dir = Run(config, tmp_path / "run", progress=False).run()
    assert seen == [1]  # the run trained on the thread it was told to
    assert torch.get_num_threads() == before
    evaluate_run(run_dir, opponents="train", games=2, progress=False)
    assert torch.get_num_threads() == before


@TWO_THREADS
def test_pass_at_k_on_a_run_gives_torch_s_setting_back(tmp_path: Path, toy_dir: Path) -> None:
    before = torch.get_num_threads()
    path = tmp_path / "vault.yaml"
    path.write_text(VAULT.format(model=toy_dir))
    run_dir = Run(load_config(TrainConfig, path), tmp_path / "run", progress=False).run()
    assert torch.get_num_threads() == before
    report = evaluate_run_tasks(run_dir, tasks=2, samples=1, progress=False)
    assert report["tasks"] == 2
    assert torch.get_num_threads() == before
