"""`arena train` with generation on vLLM: an hf copy is trained and its weights reach the engine every update."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import torch

from tests.vllm.test_vllm_backend import greedy_requests, hf_greedy

CONFIG = """
arena: kuhn_poker
seed: 1
iterations: 1
groups: 2
group_size: 4
opponents: [{{spec: aggressive}}]
learners:
  - name: agent
    model: {model}
    backend: vllm
    plugins: [grpo]
    optim: {{lr: 5.0e-2, micro_batch_tokens: 4096}}
trial:
  invalid_action: {{policy: random}}
  prompt: {{max_new_tokens: 8}}
eval: {{games: 2, opponents: [random]}}
backend_options:
  vllm: {{dtype: float32, max_model_len: 2048, seed: 0, kv_cache_memory_bytes: 268435456, enforce_eager: true}}
torch_threads: 1
"""


def test_training_pushes_weights_to_the_engine(tmp_path: Path, tiny_dir: Path, hf_model: Any) -> None:
    from arena.core.config.loader import load_config
    from arena.core.learn.run import Run
    from arena.core.learn.run_config import TrainConfig

    # The shared test model allows 512 positions; a Kuhn prompt in its 400-token vocabulary is longer. RoPE lets
    # the same weights serve a longer context.
    model_dir = tmp_path / "model"
    shutil.copytree(tiny_dir, model_dir)
    config = json.loads((model_dir / "config.json").read_text())
    config["max_position_embeddings"] = 2048
    (model_dir / "config.json").write_text(json.dumps(config))
    path = tmp_path / "vllm.yaml"
    path.write_text(CONFIG.format(model=model_dir))
    run = Run(load_config(TrainConfig, path), tmp_path / "run", progress=False)
    learner = run.learner
    assert learner.needs_sync and learner.backend.name == "vllm"
    run.run()
    metrics = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert metrics[-1]["train/samples"] > 0 and "time/weight_sync" in metrics[-1]
    trained = learner.model.eval()
    assert any(not torch.equal(a, b) for a, b in zip(trained.parameters(), hf_model.parameters(), strict=True))

    eos = learner.backend.tokenizer.eos_token_id
    requests = greedy_requests()
    prompts = [learner.backend.prompt_ids(r) for r in requests]
    expected = [hf_greedy(trained, p, 12, eos) for p in prompts]
    untrained = [hf_greedy(hf_model, p, 12, eos) for p in prompts]
    assert expected != untrained  # training changed the greedy answers, so the comparison below can fail
    served = [list(group[0].token_ids) for group in learner.backend.generate(requests)]
    assert served == expected
    learner.backend.close()
