"""Single-agent training (``opponents: []``) on the ``guess_digit`` test arena with the toy model: trials seat the
learner alone, evaluation uses ``eval.arena_kwargs``-free held-out seeds, the distinct-outcome count is logged
and survives a checkpoint, and the ``training_view`` / ``shape_token_advantages`` hooks reach the trainer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import torch

from arena.core.api.backend import ChatMessage
from arena.core.api.markers import hookimpl
from arena.core.api.samples import Sample
from arena.core.config.loader import load_config
from arena.core.host import catalog
from arena.core.learn.run import Run
from arena.core.learn.run_config import TrainConfig
from tests.core.free_text_env import register_guess_arena

CONFIG = """
arena: guess_digit
seed: 2
iterations: 2
groups: 2
group_size: 3
opponents: []
learners:
  - name: solo
    model: {model}
    backend: hf
    plugins: [grpo]
    optim: {{lr: 1.0e-3, micro_batch_tokens: 2048}}
trial:
  invalid_action: {{policy: forfeit, offender_reward: 0.0}}
  prompt: {{max_new_tokens: 6}}
eval: {{games: 3}}
checkpoint: {{every: 1, keep: 1}}
torch_threads: 1
"""


@pytest.fixture(autouse=True)
def guess_arena() -> Iterator[None]:
    register_guess_arena()
    yield
    catalog.reset()


def config_for(tmp_path: Path, toy_dir: Path, **data: Any) -> TrainConfig:
    path = tmp_path / "solo.yaml"
    path.write_text(CONFIG.format(model=toy_dir))
    return load_config(TrainConfig, path, data=data or None)


def test_single_agent_run_plays_alone_and_counts_outcomes(tmp_path: Path, toy_dir: Path) -> None:
    run = Run(config_for(tmp_path, toy_dir), tmp_path / "run", progress=False)
    played: list[Any] = []
    engine = run.learners[0].engine
    original = engine.run
    engine.run = lambda specs: played.extend(specs) or original(specs)  # type: ignore[method-assign]
    out = run.run()
    training = [s for s in played if s.training]
    assert training and all(s.seats == (run.learners[0].seat_spec,) for s in training)
    assert {s.meta["iteration"] for s in training} == {0, 1} and {s.meta["run_seed"] for s in training} == {2}
    assert len({s.seed for s in training if s.meta["iteration"] == 0}) == 2  # one task per group
    evals = [s for s in played if not s.training]
    assert evals and all(len(s.seats) == 1 for s in evals)
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert "eval/mean_return" in metrics[0]
    per_iteration = [m for m in metrics if m["iteration"] >= 0]
    # The toy model rarely writes a digit: every forfeit is the outcome "None" of its task.
    counts = [m["explore/distinct_outcomes"] for m in per_iteration]
    assert counts == sorted(counts) and counts[0] >= 2  # cumulative, at least one outcome per task
    assert all(m["rollout/distinct_outcomes"] <= m["explore/distinct_outcomes"] for m in per_iteration)
    state = json.loads(next(out.glob("checkpoints/*/state.json")).read_text())
    assert len(state["outcomes_seen"]["solo"]) == counts[-1]

    from click.testing import CliRunner

    from arena.core.cli.main import cli
    from arena.core.eval.passk import evaluate_run_tasks

    trained = evaluate_run_tasks(out, tasks=3, samples=2, progress=False)
    initial = evaluate_run_tasks(out, tasks=3, samples=2, initial=True, progress=False)
    assert trained["step"] == 2 and initial["step"] == 0 and initial["checkpoint"] is None
    assert [r["seed"] for r in trained["per_task"]] == [r["seed"] for r in initial["per_task"]]
    assert trained["seat"] != initial["seat"] and set(trained["pass_at_k"]) == {"1", "2"}
    other = evaluate_run_tasks(out, tasks=3, samples=2, model=f"model:{toy_dir}", progress=False)
    assert other["model"] == f"model:{toy_dir}" and other["seat"] == f"model:{toy_dir}"
    assert [r["seed"] for r in other["per_task"]] == [r["seed"] for r in initial["per_task"]]  # the run's tasks
    result = CliRunner().invoke(cli, ["eval", str(out), "--games", "2", "--json"])
    assert result.exit_code == 0, result.output
    assert '"tasks": 2' in result.output and '"pass_at_k"' in result.output  # a single-agent run: pass@k


class StripFirstLine:
    """A training view that drops the prompt's first line (a stand-in for EMPO²'s tip stripping)."""

    def __init__(self) -> None:
        self.views: list[tuple[Sample, Sample]] = []

    @hookimpl
    def training_view(self, sample: Sample, encode: Any) -> Sample:
        messages = tuple(
            ChatMessage(m.role, m.content.split("\n", 1)[-1]) if m.role == "user" else m
            for m in sample.context_messages
        )
        view = attrs.evolve(
            sample,
            context_ids=encode(messages),
            context_messages=messages,
            context_text="\n\n".join(m.content for m in messages),
            rollout_context_ids=sample.context_ids,
            rollout_context_text=sample.context_text,
        )
        self.views.append((sample, view))
        return view


class DoubleAdvantages:
    def __init__(self) -> None:
        self.calls = 0

    @hookimpl
    def shape_token_advantages(self, advantages: torch.Tensor, entropy: torch.Tensor, mask: torch.Tensor) -> Any:
        assert advantages.shape == entropy.shape == mask.shape and not entropy.requires_grad
        self.calls += 1
        return advantages * 2


def test_training_view_gets_an_encoder_that_matches_the_rollout(tmp_path: Path, toy_dir: Path) -> None:
    from arena.core.host import plugins as plugin_module

    strip, double = StripFirstLine(), DoubleAdvantages()
    original = plugin_module.PluginSet.__init__

    def with_extra(self: Any, names: Any, extra: Any = None) -> None:
        original(self, [*names, "strip", "double"], {"strip": strip, "double": double})

    plugin_module.PluginSet.__init__ = with_extra  # type: ignore[method-assign]
    try:
        run = Run(config_for(tmp_path, toy_dir, iterations=1), tmp_path / "run", progress=False)
    finally:
        plugin_module.PluginSet.__init__ = original  # type: ignore[method-assign]
    learner = run.learners[0]
    run.run()
    assert strip.views and double.calls > 0
    for rollout, view in strip.views:
        assert learner.encode(rollout.context_messages) == rollout.context_ids  # the same rendering as the rollout
        assert view.context_ids != rollout.context_ids and view.rollout_context_ids == rollout.context_ids
        assert view.behaviour_logprobs == rollout.behaviour_logprobs
