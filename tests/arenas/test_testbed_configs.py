"""The issue-24 testbed configs: they load, name opponents that play their arena, and their GRPO twins really are
GRPO on per-episode rewards."""

from __future__ import annotations

import attrs
import pytest

from arena.core.api.samples import Sample
from arena.core.config.loader import load_config
from arena.core.learn.run_config import TrainConfig
from arena.plugins import mage
from arena.plugins.grpo import grpo_advantages

CONFIGS = [
    "rps_types_mage",
    "rps_types_grpo_memory",
    "rps_types_grpo",
    "doors_mage",
    "doors_grpo",
    "kuhn_styles_mage",
    "kuhn_styles_grpo",
    "rps_types_smollm2_mage",
    "rps_types_smollm2_grpo",
]


@pytest.mark.parametrize("name", CONFIGS)
def test_config_loads_with_known_opponents(name: str) -> None:
    from arena.core.host import catalog

    config = load_config(TrainConfig, name)
    opponents = catalog.opponents()
    for spec in [o.spec for o in config.opponents] + list(config.unseen):
        entry = opponents.get(spec.partition(":")[0])
        assert entry.meta["arenas"] is None or config.arena in entry.meta["arenas"], (name, spec)
    for learner in config.learners:
        assert learner.unused_options == []
        if "mage" in learner.plugins:
            mage.settings(learner.options)  # validates every key
    assert config.trial.episodes == 3 and config.trial.early_stop_on_win is False


def test_rps_types_triplet_differs_only_in_credit_and_memory() -> None:
    m, g_mem, g = (load_config(TrainConfig, n) for n in CONFIGS[:3])
    for other in (g_mem, g):
        assert other.arena == m.arena and other.arena_kwargs == m.arena_kwargs == {"rounds": 1}
        assert [o.spec for o in other.opponents] == [o.spec for o in m.opponents] == ["rps-rock", "rps-paper"]
        assert other.unseen == m.unseen == ["rps-scissors"]
        assert (other.iterations, other.groups, other.group_size) == (m.iterations, m.groups, m.group_size)
    assert g.learners[0].plugins == ["grpo"]
    a, b = (attrs.asdict(mage.settings(c.learners[0].options)) for c in (m, g_mem))
    assert {k for k in a if a[k] != b[k]} == {"reward", "gamma_traj", "w"}


def test_the_smollm2_pair_is_the_tiny_testbed_at_one_budget_on_smollm2_rps() -> None:
    """SmolLM2 on hidden types (docs/results.md): the same arena, pool and unseen type as the tiny triplet; the two
    configs share model, budget, update and the balanced draw, and differ in the plugin alone."""
    tiny = load_config(TrainConfig, "rps_types_mage")
    m, g = (load_config(TrainConfig, n) for n in ("rps_types_smollm2_mage", "rps_types_smollm2_grpo"))
    for c in (m, g):
        assert c.arena == tiny.arena and c.arena_kwargs == tiny.arena_kwargs
        assert c.opponents == tiny.opponents and c.unseen == tiny.unseen
        assert c.learners[0].model == "smollm2-rps" and c.population.opponent_draw == "balanced"
    assert (m.iterations, m.groups, m.group_size, m.trial) == (g.iterations, g.groups, g.group_size, g.trial)
    assert m.learners[0].optim == g.learners[0].optim and m.learners[0].loss == g.learners[0].loss
    assert m.learners[0].plugins == ["mage"] and g.learners[0].plugins == ["grpo"]
    assert mage.settings(m.learners[0].options).memory == "history_only"
    assert mage.settings(m.learners[0].options).max_new_tokens == m.trial.prompt.max_new_tokens


def test_kuhn_styles_pair_differs_only_in_memory_and_credit() -> None:
    """The Kuhn chips comparison (docs/results.md): the same pool, unseen opponents, budget and update; MAGE with
    the earlier episodes' transcripts against mean-only GRPO on each episode alone."""
    m, g = (load_config(TrainConfig, n) for n in ("kuhn_styles_mage", "kuhn_styles_grpo"))
    assert [o.spec for o in g.opponents] == [o.spec for o in m.opponents] == ["bluffer", "calling-station", "folder"]
    assert g.unseen == m.unseen and g.arena == m.arena == "kuhn_poker"
    assert (g.iterations, g.groups, g.group_size, g.seed) == (m.iterations, m.groups, m.group_size, m.seed)
    assert g.learners[0].optim == m.learners[0].optim and g.learners[0].loss == m.learners[0].loss
    assert g.trial == m.trial and g.eval == m.eval
    assert g.learners[0].plugins == ["grpo"] and mage.settings(m.learners[0].options).memory == "history_only"


def _group(returns: list[list[float]]) -> list[Sample]:
    out = []
    for t, episodes in enumerate(returns):
        for e, r in enumerate(episodes):
            out.append(
                Sample(
                    learner="agent", trial_id=f"t{t}", episode=e, turn=0, agent="player_0", kind="action",
                    context_ids=(), completion_ids=(), behaviour_logprobs=(), temperatures=(), group_id="g",
                    anchor=f"obs{e % 2}", reward_terms={"env": r}, meta={"episode_return": r},
                )
            )  # fmt: skip
    return out


@pytest.mark.parametrize("std_norm", [False, True])
def test_the_grpo_twins_compute_grpo_advantages_on_per_episode_returns(std_norm: bool) -> None:
    options = load_config(TrainConfig, "doors_grpo").learners[0].options
    opts = attrs.asdict(mage.settings({"mage": {**options["mage"], "std_norm": std_norm}}))
    samples = _group([[0, 1, 1], [1, 1, 1], [0, 0, 1], [0, 0, 0]])
    returns = mage.compute_returns(samples, {"mage": opts})
    assert returns == [s.reward for s in samples]  # G = R(τ_n): no credit from later episodes
    samples = [attrs.evolve(s, ret=g) for s, g in zip(samples, returns, strict=True)]
    got = mage.compute_advantages(samples, {"mage": opts})
    assert got == pytest.approx(grpo_advantages([s.reward for s in samples], ["g"] * len(samples), std_norm=std_norm))
    # MAGE's own settings do not: the scout trial's episode 1 (return 0) gets credit from episode 2
    full = attrs.asdict(mage.settings(load_config(TrainConfig, "doors_mage").learners[0].options))
    assert mage.compute_returns(samples, {"mage": full})[0] == pytest.approx(0.6)


def test_the_doors_configs_size_favours_scouting_under_mage_and_fits_their_model() -> None:
    """The doors count both configs ship: the model answers with one digit (``tiny-doors``: 2..9 doors), MAGE's
    expected episode-1 advantage of scouting is positive there from the uniform start, per-episode GRPO's negative."""
    from arena.arenas.doors_credit import scout_advantage

    mage_config, grpo_config = load_config(TrainConfig, "doors_mage"), load_config(TrainConfig, "doors_grpo")
    doors = int(mage_config.arena_kwargs["doors"])
    assert grpo_config.arena_kwargs == mage_config.arena_kwargs and 2 <= doors <= 9
    assert {mage_config.learners[0].model, grpo_config.learners[0].model} == {"tiny-doors"}
    uniform = 1 / (doors + 1)
    assert scout_advantage(doors, "mage", 0.6, p_scout=uniform) > 0.1
    assert scout_advantage(doors, "grpo", p_scout=uniform) < -0.1
