"""The advantage estimator plugins against numbers computed by hand (the comments show the arithmetic)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from arena.core.api.errors import ConfigError, PluginError
from arena.core.api.samples import Sample
from arena.core.host.plugins import PluginSet
from arena.core.learn.losses import AGGREGATIONS
from arena.plugins import drgrpo, gigpo, grpo, rae, reinforce, rloo

EPS = 1e-6


def make(
    ret: float,
    group: str = "g",
    *,
    anchor: str | None = None,
    agent: str = "player_0",
    trial: str = "t0",
    episode: int = 0,
    turn: int = 0,
    tokens: int = 3,
    learner: str = "L",
    meta: dict[str, Any] | None = None,
) -> Sample:
    return Sample(
        learner=learner,
        trial_id=trial,
        episode=episode,
        turn=turn,
        agent=agent,
        kind="action",
        context_ids=(1, 2),
        completion_ids=tuple(range(tokens)),
        behaviour_logprobs=(-0.5,) * tokens,
        temperatures=(1.0,) * tokens,
        group_id=group,
        anchor=anchor,
        ret=ret,
        meta=meta or {},
    )


# --------------------------------------------------------------------------------------------------------------
# GRPO, Dr.GRPO
# --------------------------------------------------------------------------------------------------------------

# Interleaved groups: a = (3, 1, 2), b = (5,) alone, c = (2, 2) tied.
GROUPED = [make(3, "a"), make(5, "b"), make(1, "a"), make(2, "c"), make(2, "a"), make(2, "c")]


def test_grpo_std_norm_default() -> None:
    # group a: mean 2, Bessel std sqrt((1 + 1 + 0)/2) = 1 → (±1, 0)/(1 + eps); b alone → 0; c tied → 0/(0 + eps) = 0
    out = grpo.compute_advantages(GROUPED, {})
    assert out == pytest.approx([1 / (1 + EPS), 0.0, -1 / (1 + EPS), 0.0, 0.0, 0.0])


def test_grpo_switches() -> None:
    assert grpo.compute_advantages(GROUPED, {"grpo": {"std_norm": False}}) == pytest.approx([1, 0, -1, 0, 0, 0])
    # population std of (3, 1, 2): sqrt(2/3) = 0.816497 → ±1.224745
    out = grpo.compute_advantages(GROUPED, {"grpo": {"unbiased_std": False}})
    assert out == pytest.approx([1.224745, 0, -1.224745, 0, 0, 0], abs=1e-5)


def test_grpo_rejects_unknown_and_ill_typed_settings() -> None:
    with pytest.raises(ConfigError, match="std_nrom"):
        grpo.compute_advantages(GROUPED, {"grpo": {"std_nrom": False}})
    with pytest.raises(ConfigError, match="eps"):
        grpo.compute_advantages(GROUPED, {"grpo": {"eps": "small"}})


def test_drgrpo_is_mean_centred_and_declares_seq_sum() -> None:
    assert drgrpo.compute_advantages(GROUPED, {}) == [1.0, 0.0, -1.0, 0.0, 0.0, 0.0]
    assert drgrpo.recommended_trainer_settings["loss_aggregation"] == drgrpo.LOSS_AGGREGATION == "seq_sum"
    assert drgrpo.LOSS_AGGREGATION in AGGREGATIONS


# --------------------------------------------------------------------------------------------------------------
# RLOO, REINFORCE
# --------------------------------------------------------------------------------------------------------------


def test_rloo_k3_k2_and_singleton() -> None:
    samples = [make(4, "k3"), make(1, "k3"), make(1, "k3"), make(1, "k2"), make(0, "k2"), make(7, "one")]
    # k = 3: 4 − (1 + 1)/2 = 3; 1 − (4 + 1)/2 = −1.5 (twice); k = 2: 1 − 0 = 1, 0 − 1 = −1; singleton: 0
    assert rloo.compute_advantages(samples, {}) == pytest.approx([3.0, -1.5, -1.5, 1.0, -1.0, 0.0])
    # the k/(k − 1) form: 3/2 · (R − mean) with mean 2
    assert rloo.rloo_advantages([4, 1, 1], ["g"] * 3) == pytest.approx([1.5 * 2, 1.5 * -1, 1.5 * -1])


def test_reinforce_batch_baseline_ignores_groups() -> None:
    samples = [make(1, "a"), make(2, "b"), make(6, "a")]
    assert reinforce.compute_advantages(samples, {}) == pytest.approx([-2.0, -1.0, 3.0])  # mean 3
    assert reinforce.compute_advantages([], {}) == []


# --------------------------------------------------------------------------------------------------------------
# GiGPO
# --------------------------------------------------------------------------------------------------------------


def gigpo_batch() -> list[Sample]:
    return [
        make(0.9, "g", anchor="A", trial="t1", meta={"episode_return": 1.0}),
        make(1.0, "g", anchor="B", trial="t1", turn=1, meta={"episode_return": 1.0}),  # anchor B: singleton
        make(0.5, "g", anchor="A", trial="t2", meta={"episode_return": 0.0}),
        make(0.0, "g", anchor=None, trial="t2", turn=1),  # no anchor; episode return falls back to ret = 0
        make(3.0, "h", anchor="A", trial="t3", meta={"episode_return": 2.0}),  # same anchor, other group: alone
    ]


def test_gigpo_mean_only_default() -> None:
    # episode term, group g: (1, 1, 0, 0) − 0.5 = (0.5, 0.5, −0.5, −0.5); group h alone: 0
    # step term: anchor A in g: (0.9, 0.5) − 0.7 = (+0.2, −0.2); B singleton, None, and h's A: 0
    out = gigpo.compute_advantages(gigpo_batch(), {})
    assert out == pytest.approx([0.7, 0.5, -0.7, -0.5, 0.0])


def test_gigpo_step_weight() -> None:
    out = gigpo.compute_advantages(gigpo_batch(), {"gigpo": {"w": 0.5}})
    assert out == pytest.approx([0.6, 0.5, -0.6, -0.5, 0.0])


def test_gigpo_std_norm() -> None:
    # episode: Bessel std of (1, 1, 0, 0) = sqrt(1/3) → ±0.5/0.57735 = ±0.866025
    # step: Bessel std of (0.9, 0.5) = 0.282843 → ±0.2/0.282843 = ±0.707107
    ep, st = 0.5 / math.sqrt(1 / 3), 0.2 / math.sqrt(0.08)
    out = gigpo.compute_advantages(gigpo_batch(), {"gigpo": {"std_norm": True}})
    assert out == pytest.approx([ep + st, ep, -(ep + st), -ep, 0.0], abs=1e-5)


# --------------------------------------------------------------------------------------------------------------
# RAE
# --------------------------------------------------------------------------------------------------------------


def kuhn(ret: float, trial: str, agent: str = "player_0", turn: int = 0, **kw: Any) -> Sample:
    return make(ret, trial=trial, agent=agent, turn=turn, meta={"arena": "kuhn_poker"}, **kw)


def first_batch() -> list[Sample]:
    return [
        kuhn(1.0, "t1", turn=0),  # trajectory T1 = (t1, player_0), 2 turns
        kuhn(-1.0, "t1", agent="player_1"),  # T3 = (t1, player_1): the other role
        kuhn(1.0, "t1", turn=2),  # T1 again
        kuhn(-1.0, "t2"),  # T2 = (t2, player_0)
        make(1.0, trial="t9", meta={"arena": "tic_tac_toe"}),  # another arena, same role name
    ]


def last_token(values: list[list[float]]) -> list[float]:
    assert all(v[:-1] == [0.0] * (len(v) - 1) for v in values)
    return [v[-1] for v in values]


def test_rae_two_batches_read_before_update() -> None:
    plugin = rae.RAE()
    # (kuhn, p0): T1 reads 0 → A = 1 for both turns; b = 0.05·1 = 0.05.
    #             T2 reads 0.05 → A = −1 − 0.05 = −1.05; b = 0.95·0.05 + 0.05·(−1) = −0.0025
    # (kuhn, p1): reads 0 → A = −1; b = −0.05.   (ttt, p0): reads 0 → A = 1; b = 0.05
    out = plugin.compute_advantages(first_batch(), {})
    assert [len(v) for v in out] == [3] * 5
    assert last_token(out) == pytest.approx([1.0, -1.0, 1.0, -1.05, 1.0])
    assert plugin.baselines == pytest.approx(
        {("L", "kuhn_poker", "player_0"): -0.0025, ("L", "kuhn_poker", "player_1"): -0.05,
         ("L", "tic_tac_toe", "player_0"): 0.05}
    )  # fmt: skip
    # second batch: (kuhn, p0) reads −0.0025 → A = 1.0025, then b = 0.95·(−0.0025) + 0.05 = 0.047625;
    # (kuhn, p1) reads −0.05 → A = 1.05
    out = plugin.compute_advantages([kuhn(1.0, "t5", tokens=2), kuhn(1.0, "t5", agent="player_1", tokens=1)], {})
    assert [len(v) for v in out] == [2, 1]
    assert last_token(out) == pytest.approx([1.0025, 1.05])
    assert plugin.baselines[("L", "kuhn_poker", "player_0")] == pytest.approx(0.047625)
    assert plugin.updates[("L", "kuhn_poker", "player_0")] == 3


def test_rae_update_per_sample_and_decay() -> None:
    plugin = rae.RAE()
    # per sample: turn 0 reads 0 → A = 1, b = 0.5 (decay 0.5); turn 1 reads 0.5 → A = 0.5, b = 0.75
    out = plugin.compute_advantages(
        [kuhn(1.0, "t1"), kuhn(1.0, "t1", turn=1)], {"rae": {"update_per": "sample", "decay": 0.5}}
    )
    assert last_token(out) == pytest.approx([1.0, 0.5])
    assert plugin.baselines[("L", "kuhn_poker", "player_0")] == pytest.approx(0.75)


def test_rae_learns_from_the_game_return_and_credits_the_turn_return() -> None:
    plugin = rae.RAE()
    # discounted turn returns 0.81 and 0.9 of a game worth 1 (episode_return): b_old = 0 for both turns, so
    # A = 0.81 and 0.9; the EMA takes the game's 1.0 once: b = 0.05. Next game: A = 0.9 − 0.05 = 0.85.
    meta = {"arena": "kuhn_poker", "episode_return": 1.0}
    first = [make(0.81, trial="t1", meta=meta), make(0.9, trial="t1", turn=1, meta=meta)]
    assert last_token(plugin.compute_advantages(first, {})) == pytest.approx([0.81, 0.9])
    assert plugin.baselines[("L", "kuhn_poker", "player_0")] == pytest.approx(0.05)
    assert last_token(plugin.compute_advantages([make(0.9, trial="t2", meta=meta)], {})) == pytest.approx([0.85])


def test_rae_learners_do_not_share_baselines() -> None:
    plugin = rae.RAE()
    plugin.compute_advantages([kuhn(1.0, "t1", learner="A")], {})
    out = plugin.compute_advantages([kuhn(1.0, "t1", learner="B")], {})
    assert last_token(out) == [1.0]


def test_rae_state_dict_round_trip() -> None:
    plugin = rae.RAE()
    plugin.compute_advantages(first_batch(), {})
    state = json.loads(json.dumps(plugin.state_dict()))  # JSON-serialisable
    restored = rae.RAE()
    restored.load_state_dict(state)
    assert restored.baselines == plugin.baselines and restored.updates == plugin.updates
    batch = [kuhn(0.0, "t7"), kuhn(0.0, "t7", agent="player_1")]
    assert restored.compute_advantages(batch, {}) == plugin.compute_advantages(batch, {})
    with pytest.raises(ValueError, match="version"):
        restored.load_state_dict({"version": 99, "baselines": []})


def test_rae_empty_completion_and_bad_settings() -> None:
    plugin = rae.RAE()
    assert plugin.compute_advantages([kuhn(1.0, "t1", tokens=0)], {}) == [[]]
    with pytest.raises(ConfigError, match="decay"):
        plugin.compute_advantages([kuhn(1.0, "t1")], {"rae": {"decay": 1.0}})
    with pytest.raises(ConfigError, match="update_per"):
        plugin.compute_advantages([kuhn(1.0, "t1")], {"rae": {"update_per": "game"}})


# --------------------------------------------------------------------------------------------------------------
# Through the plugin manager
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "obj"),
    [("grpo", grpo), ("drgrpo", drgrpo), ("rloo", rloo), ("gigpo", gigpo), ("reinforce", reinforce)],
)
def test_estimators_answer_the_hook(name: str, obj: object) -> None:
    plugins = PluginSet([name], extra={name: obj})
    out = plugins.first("compute_advantages", samples=GROUPED, options={})
    assert len(out) == len(GROUPED)


def test_rae_instance_answers_the_hook_and_errors_name_it() -> None:
    plugins = PluginSet(["rae"], extra={"rae": rae.RAE()})
    out = plugins.first("compute_advantages", samples=first_batch(), options={})
    assert last_token(out) == pytest.approx([1.0, -1.0, 1.0, -1.05, 1.0])
    with pytest.raises(PluginError, match="'rae'"):
        plugins.first("compute_advantages", samples=first_batch(), options={"rae": {"decay": 2.0}})
    assert isinstance(PluginSet(["rae"]).plugin("rae"), rae.RAE)
