"""A population run end to end on the toy model: two co-evolving learners, snapshots joining the pool, ratings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena.core.config.loader import load_config
from arena.core.learn import checkpoint as ck
from arena.core.learn.run import Run
from arena.core.learn.run_config import TrainConfig

CONFIG = """
arena: kuhn_poker
seed: 5
iterations: 2
groups: 2
group_size: 2
opponents:
  - {{spec: conservative, weight: 1.0}}
unseen: [cfr]
population:
  snapshot_every: 1
  max_snapshots: 1
  learners_as_opponents: true
  learner_weight: 1.0
  pfsp: {{enabled: true}}
learners:
  - name: alice
    model: {model}
    backend: hf
    plugins: [mage]
    options: {{mage: {{max_new_tokens: 8}}}}
    optim: {{lr: 1.0e-3, micro_batch_tokens: 2048}}
  - name: bob
    model: {model}
    backend: hf
    plugins: [grpo, reflection]
    optim: {{lr: 1.0e-3, micro_batch_tokens: 2048}}
trial:
  episodes: 2
  invalid_action: {{policy: random}}
  prompt: {{max_new_tokens: 8}}
eval: {{games: 2, opponents: [intermediate]}}
checkpoint: {{every: 1, keep: 1}}
torch_threads: 1
"""


def test_two_learners_snapshots_and_ratings(tmp_path: Path, toy_dir: Path) -> None:
    path = tmp_path / "coevolution.yaml"
    path.write_text(CONFIG.format(model=toy_dir))
    config = load_config(TrainConfig, path)
    run = Run(config, tmp_path / "run", progress=False)
    assert run.learners[0].seat_spec != run.learners[1].seat_spec  # same model, two model objects
    assert run.learners[0].model is not run.learners[1].model
    out = run.run()

    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    last = metrics[-1]
    for name in ("alice", "bob"):
        assert f"{name}/rollout/mean_return" in last and f"{name}/train/loss" in last
        assert f"{name}/eval/mean_return" in last
        assert f"rating/{name}/elo" in last

    population = json.loads((out / "population.json").read_text())
    members = {m["name"]: m for m in population["members"]}
    snapshots = [m for m in members.values() if m["kind"] == "snapshot"]
    # One snapshot per learner survives the cap of 1; the directory it points to loads as a model.
    assert sorted(m["owner"] for m in snapshots) == ["alice", "bob"]
    assert all(m["added_at"] == 2 for m in snapshots)
    for member in snapshots:
        folder = Path(member["spec"].removeprefix("model:").split("@")[0])
        assert (folder / "config.json").is_file() and (folder / "model.safetensors").is_file()
    rated = {row["name"] for row in population["ratings"]}
    assert {"alice", "bob", "conservative"} <= rated
    # Learners met each other as opponents (learners_as_opponents), never themselves.
    for learner, rows in population["learners"].items():
        assert learner not in {r["member"] for r in rows}

    latest = ck.latest_checkpoint(out)
    assert latest is not None
    models, state = ck.load_checkpoint(latest)
    assert set(models) == {"alice", "bob"} and set(state["learners"]) == {"alice", "bob"}
    assert state["population"]["ratings"]

    # A resumed run restores the population exactly: the same next matchups.
    resumed = Run(config, out, progress=False)
    resumed.load(latest)
    assert resumed.population.matchups(2, 2, "random") == run.population.matchups(2, 2, "random")


def test_co_evolving_learners_play_every_episode_of_their_trials(tmp_path: Path, toy_dir: Path) -> None:
    # Issue 22, defect 1: with early stop on and both seats LLMs, one of them wins every decisive Kuhn episode, so
    # "any LLM seat won" ended each learner-vs-learner trial after episode 1. Two live learners now play all three;
    # against a scripted member the trial still stops on the learner's own win.
    text = CONFIG.format(model=toy_dir).replace("  episodes: 2\n", "  episodes: 3\n  early_stop_on_win: true\n")
    path = tmp_path / "coevolution.yaml"
    path.write_text(text)
    config = load_config(TrainConfig, path)
    run = Run(config, tmp_path / "run", progress=False)
    alice = run.learners[0]
    matchups = [m for m in run.population.matchups(0, 8, "random") if m.learner == "alice"]
    trials, _, _ = run.play(alice, matchups)
    versus_bob = [t for t in trials if t.spec.meta["opponent"] == "bob"]
    versus_scripted = [t for t in trials if t.spec.meta["opponent"] == "conservative"]
    assert versus_bob and versus_scripted
    assert [len(t.episodes) for t in versus_bob] == [3] * len(versus_bob)
    for trial in versus_scripted:
        agent = trial.spec.seats.index(alice.seat_spec)
        won = [e.index for e in trial.episodes if e.outcomes[f"player_{agent}"] == "win"]
        assert len(trial.episodes) == (won[0] + 1 if won else 3)


@pytest.mark.slow
def test_shipped_co_evolution_config_runs_an_iteration_on_tiny(tmp_path: Path, model_cache: None) -> None:
    """``kuhn_coevolution`` as shipped, cut to one small iteration on ``tiny``: both learners train, and the trials of
    a learner against the other live learner play all three episodes (issue 22, defect 1)."""
    overrides = ["iterations=1", "groups=4", "group_size=4", "eval.every=0", "eval.games=2"]
    config = load_config(TrainConfig, "kuhn_coevolution", overrides)
    run = Run(config, tmp_path / "run", progress=False)
    alice = run.learners[0]
    matchups = [m for m in run.population.matchups(0, 8, "random") if m.learner == "alice"]
    trials, _, _ = run.play(alice, matchups)
    live = [t for t in trials if t.spec.meta["opponent"] == "bob"]
    assert live, "alice never met bob in these groups"
    assert {len(t.episodes) for t in live} == {3}
    out = Run(config, tmp_path / "fresh", progress=False).run()
    last = json.loads((out / "metrics.jsonl").read_text().splitlines()[-1])
    assert "alice/train/loss" in last and "bob/train/loss" in last
