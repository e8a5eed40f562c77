"""An SGE learner and an EMPO² learner in one MAGE population (issue 6): one iteration on the toy model, with
the rollouts dumped, and the checks that each method's mechanism is visible in them."""

from __future__ import annotations

import json
from pathlib import Path

from arena.core.config.loader import load_config
from arena.core.learn.run import Run
from arena.core.learn.run_config import TrainConfig

CONFIG = """
arena: kuhn_poker
seed: 4
iterations: 2
groups: 2
group_size: 3
opponents:
  - {{spec: conservative, weight: 1.0}}
population: {{learners_as_opponents: true, learner_weight: 1.0}}
learners:
  - name: sge
    model: {model}
    backend: hf
    plugins: [mage, sge]
    options:
      mage: {{max_new_tokens: 12}}
      sge: {{strategy_max_tokens: 6}}
    optim: {{lr: 1.0e-3, micro_batch_tokens: 4096}}
  - name: empo2
    model: {model}
    backend: hf
    plugins: [mage, empo2]
    options:
      mage: {{max_new_tokens: 12}}
      empo2: {{p: 1.0, q: 1.0, retrieve_threshold: -1.0, tip_max_new_tokens: 8}}
    optim: {{lr: 1.0e-3, micro_batch_tokens: 4096}}
    loss: {{clip_low: 0.2, clip_high: 0.3, dual_clip: 10.0, low_prob_mask: token}}
trial:
  episodes: 2
  invalid_action: {{policy: random}}
  prompt: {{max_new_tokens: 12}}
eval: {{games: 2, opponents: [conservative]}}
checkpoint: {{every: 1, keep: 1}}
torch_threads: 1
"""


def test_sge_and_empo2_learners_in_one_mage_population(tmp_path: Path, toy_dir: Path) -> None:
    path = tmp_path / "pop.yaml"
    path.write_text(CONFIG.format(model=toy_dir))
    out = Run(load_config(TrainConfig, path), tmp_path / "run", dump_rollouts=True, progress=False).run()
    rows = [json.loads(line) for f in sorted((out / "rollouts").glob("*.jsonl")) for line in f.read_text().splitlines()]
    learners = {row["trial_id"].split("-")[1] for row in rows}
    assert learners == {"sge", "empo2"}
    sge_actions = [r for r in rows if r["trial_id"].split("-")[1] == "sge" and r["kind"] == "action"]
    assert sge_actions and all(r["plans"]["sge"]["reflection"] in ("none", "negative", "positive") for r in sge_actions)
    for row in sge_actions:  # T_s (1.2) first, then T_a (0.7): never the other way round
        temps = row["token_temperatures"]
        assert set(temps) <= {1.2, 0.7} and temps == sorted(temps, reverse=True)
    empo2_actions = [r for r in rows if r["trial_id"].split("-")[1] == "empo2" and r["kind"] == "action"]
    # p = q = 1: every iteration is an off-policy memory iteration; from the second episode on tips are retrieved.
    tipped = [r for r in empo2_actions if "<tip>" in r["rollout_context_text"]]
    assert tipped, "no EMPO² prompt carried a tip"
    assert all("<tip>" not in r["context_text"] for r in empo2_actions)
    assert all(r["reward_terms"].get("novelty", 0.0) > 0 for r in empo2_actions)
    assert any(r["kind"].startswith("reflection:mage") for r in rows)  # MAGE's <remark> turns, both learners
