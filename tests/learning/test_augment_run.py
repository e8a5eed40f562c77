"""HeRL and GOLF inside a training run (``augment_group``): the letters test arena with the toy model.

Pins down what the rollout dump must show (injected samples marked, their context and loss kind, the bonus only on
candidates, GOLF's refiner group with the feedback prompt) and that every extra generation of an iteration goes
to the backend in one batch.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arena.core.config.loader import load_config
from arena.core.host import catalog
from arena.core.learn import run as train_module
from arena.core.learn.rescoring import AnswerScore
from arena.core.learn.run import Run
from arena.core.learn.run_config import TrainConfig
from tests.core.free_text_env import register_letters_arena

CONFIG = """
arena: letters
seed: 5
iterations: 1
groups: 3
group_size: 4
opponents: []
learners:
  - name: solo
    model: {model}
    backend: hf
    plugins: {plugins}
    options: {options}
    optim: {{lr: 1.0e-3, micro_batch_tokens: 4096}}
trial:
  episodes: {episodes}
  prompt: {{max_new_tokens: 8}}
eval: {{games: 2}}
checkpoint: {{every: 1, keep: 1}}
torch_threads: 1
"""


@pytest.fixture(autouse=True)
def letters_arena() -> Iterator[None]:
    register_letters_arena()
    yield
    catalog.reset()


def run(
    tmp_path: Path, toy_dir: Path, plugins: str, options: str = "{}", episodes: int = 1
) -> tuple[Run, list[dict[str, Any]]]:
    path = tmp_path / "augment.yaml"
    path.write_text(CONFIG.format(model=toy_dir, plugins=plugins, options=options, episodes=episodes))
    config = load_config(TrainConfig, path)
    r = Run(config, tmp_path / "run", dump_rollouts=True, progress=False)
    batches: list[list[str]] = []
    generate = r.learner.backend.generate

    def spy(requests):  # type: ignore[no-untyped-def]
        batches.append([q.purpose for q in requests])
        return generate(requests)

    r.learner.backend.generate = spy  # type: ignore[method-assign]
    r.run()
    r.batches = batches  # type: ignore[attr-defined]
    rows = [json.loads(line) for line in (tmp_path / "run" / "rollouts" / "iter_00000.jsonl").read_text().splitlines()]
    return r, rows


def test_herl_in_a_run(tmp_path: Path, toy_dir: Path) -> None:
    r, rows = run(tmp_path, toy_dir, "[herl, grpo]")
    metrics = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    it = metrics[-1]
    triggered = it.get("augment/herl/triggered_groups", 0.0)
    revision_batches = [b for b in r.batches if "herl_revision" in b]  # type: ignore[attr-defined]
    assert len(revision_batches) == (1 if triggered else 0)  # every revision of the iteration in one batch
    if revision_batches:
        assert set(revision_batches[0]) == {"herl_revision"}
        assert len(revision_batches[0]) == it["augment/generations"]
    injected = [row for row in rows if row["injected"] == "herl"]
    assert len(injected) == triggered  # one per triggered group
    assert triggered >= 1  # the toy model's gibberish never satisfies every letter of three groups
    for row in injected:
        assert row["loss"] == "shaped_ratio" and row["shaped_gamma"] == 1.0
        if not row["context_text"].startswith("Write a short text."):  # a revision, not the fallback copy
            assert "Here is an instruction and a draft answer" in row["context_text"]
            assert "Draft:" in row["context_text"]
    bonus_rows = [row for row in rows if "herl_bonus" in row["reward_terms"]]
    assert all(row["injected"] is None for row in bonus_rows)
    groups = {row["group_id"] for row in rows}
    assert len(rows) == 12 and len(groups) == 3  # slots replaced, never added


def test_golf_in_a_run_injects_a_perfect_refinement(
    tmp_path: Path, toy_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = train_module.score_answer
    perfect_texts: set[str] = set()

    def score(arena_id, arena_kwargs, seed, answer):  # type: ignore[no-untyped-def]
        # Make the first refinement text of every group count as perfect, so injection is exercised for sure.
        verdict = real(arena_id, arena_kwargs, seed, answer)
        if seed not in {s for s, _ in perfect_texts}:
            perfect_texts.add((seed, answer))
            return AnswerScore(reward=1.0, details={**verdict.details, "score": 1.0}, feedback="All met.")
        return verdict

    monkeypatch.setattr(train_module, "score_answer", score)
    r, rows = run(tmp_path, toy_dir, "[golf, grpo]", "{golf: {n: 3, threshold: 1.0}, grpo: {std_norm: false}}")
    refiners = [row for row in rows if row["kind"] == "refinement"]
    originals = [row for row in rows if row["kind"] == "action"]
    assert len(originals) == 12
    assert refiners and all(row["group_id"].endswith("/golf-e0") for row in refiners)
    assert all("Earlier attempts at this task did not fully succeed" in row["context_text"] for row in refiners)
    assert all(row["loss"] == "ppo" and row["injected"] is None for row in refiners)
    injected = [row for row in rows if row["injected"] == "golf"]
    groups_refined = {row["group_id"].removesuffix("/golf-e0") for row in refiners}
    assert len(injected) == len(groups_refined)  # threshold 1.0: every refined group without 4 correct gets one
    for row in injected:
        assert row["loss"] == "shaped_prob" and row["shaped_gamma"] == 0.1
        assert row["reward_terms"] == {"env": 1.0}
        assert row["context_text"].startswith("Write a short text.")  # the original prompt
        assert "did not fully succeed" in row["rollout_context_text"]
    refinement_batches = [b for b in r.batches if "golf_refinement" in b]  # type: ignore[attr-defined]
    assert len(refinement_batches) == 1


@pytest.mark.parametrize("plugin", ["herl", "golf"])
def test_next_to_mage_every_episode_is_its_own_group(tmp_path: Path, toy_dir: Path, plugin: str) -> None:
    """MAGE's multi-episode trials: each episode's answers form a group; MAGE's returns and advantages still apply."""
    _, rows = run(tmp_path, toy_dir, f"[mage, {plugin}]", episodes=2)
    actions = [row for row in rows if row["kind"] == "action"]
    assert len(actions) == 3 * 4 * 2  # every slot of both episodes is kept
    assert any(row["kind"].startswith("reflection") for row in rows)
    if plugin == "herl":
        assert {row["episode"] for row in actions if row["injected"] == "herl"} == {0, 1}
    else:
        refined = {row["group_id"] for row in rows if row["kind"] == "refinement"}
        assert {g.rsplit("-", 1)[1] for g in refined} == {"e0", "e1"}
    assert all(isinstance(row["advantage"], float) for row in rows)
