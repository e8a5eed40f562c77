"""The mage plugin: returns, penalties and advantages against numbers computed by hand (the comments show the
arithmetic), and whole 3-episode trials through the engine with the scripted backend."""

from __future__ import annotations

import math
from typing import Any

import attrs
import pytest

from arena.core.api.errors import ConfigError, PluginError
from arena.core.api.records import TrialRecord, TrialSpec
from arena.core.api.samples import Sample
from arena.core.host.plugins import PluginSet
from arena.core.learn.experience import trial_samples
from arena.plugins import mage

from ..core.helpers import play, specs

EPS = 1e-6


def make(
    episode_return: float | None = None,
    *,
    trial: str = "t0",
    episode: int = 0,
    turn: int = 0,
    agent: str = "player_0",
    group: str = "g",
    anchor: str | None = None,
    kind: str = "action",
    tokens: int = 3,
    terms: dict[str, float] | None = None,
    invalid: bool = False,
    ret: float = 0.0,
) -> Sample:
    meta: dict[str, Any] = {"invalid": invalid}
    if episode_return is not None:
        meta["episode_return"] = episode_return
    return Sample(
        learner="L",
        trial_id=trial,
        episode=episode,
        turn=turn,
        agent=agent,
        kind=kind,
        context_ids=(1, 2),
        completion_ids=tuple(range(tokens)),
        behaviour_logprobs=(0.0,) * tokens,
        temperatures=(1.0,) * tokens,
        group_id=group,
        anchor=anchor,
        reward_terms={"env": episode_return or 0.0, **(terms or {})},
        ret=ret,
        meta=meta,
    )


def with_returns(samples: list[Sample], options: dict[str, Any] | None = None) -> list[Sample]:
    returns = mage.compute_returns(samples=samples, options=options or {})
    return [attrs.evolve(s, ret=r) for s, r in zip(samples, returns, strict=True)]


# --------------------------------------------------------------------------------------------------------------
# Returns
# --------------------------------------------------------------------------------------------------------------


def two_episode_trial() -> list[Sample]:
    """Trial t0: episode 0 (turns 0, 2) returns −1, episode 1 (turns 0, 2) returns +2, a reflection after episode
    0; trial t1 (one episode, +1) interleaved, and the samples out of turn order, to check the bookkeeping."""
    return [
        make(2.0, episode=1, turn=2),
        make(-1.0, episode=0, turn=2),
        make(1.0, trial="t1", episode=0, turn=0),
        make(2.0, episode=1, turn=0),
        make(-1.0, episode=0, turn=0),
        make(None, episode=0, turn=-1, kind="reflection:mage", terms={}),
    ]


def test_differential_returns_by_hand() -> None:
    # Δ_1 = −1 − 0 = −1, Δ_2 = 2 − (−1) = 3.
    # episode 2: last G = 3, first G = 0.95·3 = 2.85
    # episode 1: last G = −1 + 0.6·2.85 = 0.71, first G = 0.95·0.71 = 0.6745
    # reflection after episode 1: G of episode 2's first step = 2.85; t1 alone: Δ = 1, G = 1.
    got = mage.compute_returns(samples=two_episode_trial(), options={})
    assert got == pytest.approx([3.0, 0.71, 1.0, 2.85, 0.6745, 2.85])


def test_three_episode_trial_by_hand() -> None:
    # Returns −1, +1, +2 (one turn each, plus a second turn in episode 3); reflections after episodes 1 and 2.
    # Δ = −1, 2, 1. Episode 3: last G = 1, first G = 0.95. Episode 2: G = 2 + 0.6·0.95 = 2.57.
    # Episode 1: G = −1 + 0.6·2.57 = 0.542. Reflection after episode 1: 2.57; after episode 2: 0.95.
    samples = [
        make(-1.0, episode=0, turn=0),
        make(None, episode=0, turn=-1, kind="reflection:mage", terms={}),
        make(1.0, episode=1, turn=0),
        make(None, episode=1, turn=-1, kind="reflection:mage", terms={}),
        make(2.0, episode=2, turn=0),
        make(2.0, episode=2, turn=2),
    ]
    got = mage.compute_returns(samples=samples, options={})
    assert got == pytest.approx([0.542, 2.57, 2.57, 0.95, 0.95, 1.0])


def test_cumulative_returns_by_hand() -> None:
    # reward R(τ_n): episode 2: last 2, first 1.9; episode 1: last −1 + 0.6·1.9 = 0.14, first 0.133.
    got = mage.compute_returns(samples=two_episode_trial(), options={"mage": {"reward": "cumulative"}})
    assert got == pytest.approx([2.0, 0.14, 1.0, 1.9, 0.133, 1.9])


def test_discounts_are_settings() -> None:
    # γ_step = 1, γ_traj = 0: each episode's turns all get their own Δ, nothing flows back.
    options = {"mage": {"gamma_step": 1.0, "gamma_traj": 0.0}}
    got = mage.compute_returns(samples=two_episode_trial(), options=options)
    assert got == pytest.approx([3.0, -1.0, 1.0, 3.0, -1.0, 3.0])


def test_differential_rewards_add_up_to_the_last_episode() -> None:
    returns = [0.5, -1.0, 2.0]
    samples = [make(r, episode=e) for e, r in enumerate(returns)]
    rewards = mage.episode_rewards(samples)
    assert [rewards[("t0", "player_0", e)] for e in range(3)] == pytest.approx([0.5, -1.5, 3.0])
    assert sum(rewards.values()) == pytest.approx(returns[-1])


def test_other_sample_kinds_keep_the_sum_of_their_terms() -> None:
    revision = make(None, kind="revision", terms={"bonus": 0.25})
    assert mage.compute_returns(samples=[revision], options={}) == [0.25]


# --------------------------------------------------------------------------------------------------------------
# Penalties
# --------------------------------------------------------------------------------------------------------------


def test_length_penalty_formula() -> None:
    # L_max = 256, c = 2: nothing up to 128 tokens, 2·(192 − 128)/128 = 1 at 192, capped at 2.
    assert mage.length_penalty(128, 256, 2.0) == 0.0
    assert mage.length_penalty(192, 256, 2.0) == pytest.approx(1.0)
    assert mage.length_penalty(256, 256, 2.0) == pytest.approx(2.0)
    assert mage.length_penalty(1000, 256, 2.0) == pytest.approx(2.0)


def trial_with(options: dict[str, Any] | None = None) -> TrialRecord:
    spec = TrialSpec(trial_id="t0", arena_id="kuhn_poker", seats=("model:x", "random"), seed=0, options=options or {})
    return TrialRecord(spec=spec, episodes=(), reflections=())


def test_penalty_terms_through_the_hook() -> None:
    samples = [
        make(1.0, tokens=10, invalid=True),  # invalid, short
        make(1.0, tokens=192),  # valid, long: −1
        make(1.0, tokens=300, invalid=True),  # both, length capped: −0.5 and −2
        make(None, kind="reflection:mage", tokens=200, invalid=True),  # length only: −2·72/128 = −1.125
        make(1.0, tokens=128),  # nothing
    ]
    (terms,) = PluginSet(["mage"]).call("compute_rewards", trial=trial_with(), samples=samples)
    assert terms == {
        0: {"invalid": -0.5},
        1: {"length": pytest.approx(-1.0)},
        2: {"invalid": -0.5, "length": pytest.approx(-2.0)},
        3: {"length": pytest.approx(-1.125)},
    }


def test_penalty_settings_come_from_the_trial_options() -> None:
    # L_max = 100, c = 1: 80 tokens → (80 − 50)/50 = 0.6; invalid 0.25.
    options = {"mage": {"max_new_tokens": 100, "length_coef": 1.0, "invalid_penalty": 0.25}}
    terms = mage.compute_rewards(trial=trial_with(options), samples=[make(1.0, tokens=80, invalid=True)])
    assert terms == {0: {"invalid": -0.25, "length": pytest.approx(-0.6)}}


def test_core_invalid_term_is_refused() -> None:
    with pytest.raises(ConfigError, match="invalid_penalty to 0"):
        mage.compute_rewards(trial=trial_with(), samples=[make(1.0, terms={"invalid": -1.0})])


# --------------------------------------------------------------------------------------------------------------
# Advantages
# --------------------------------------------------------------------------------------------------------------


def anchored_group() -> list[Sample]:
    """Group g, one turn per episode. t0: ep1 −1 at A, ep2 +1 at A. t1: ep1 +1 at A, ep2 +1 at B.
    Group h (another opponent): t2 +3 and t3 +1, one episode each, both at C."""
    return [
        make(-1.0, trial="t0", episode=0, anchor="A"),
        make(1.0, trial="t0", episode=1, anchor="A"),
        make(1.0, trial="t1", episode=0, anchor="A"),
        make(1.0, trial="t1", episode=1, anchor="B"),
        make(3.0, trial="t2", group="h", anchor="C"),
        make(1.0, trial="t3", group="h", anchor="C"),
    ]


# Δ: t0 (−1, 2), t1 (1, 0), t2 3, t3 1.  G: t0 (−1 + 0.6·2 = 0.2, 2), t1 (1 + 0.6·0 = 1, 0), t2 3, t3 1.
EPISODE_G = [-1.5, 1.5, 0.5, -0.5, 1.0, -1.0]  # g: E − mean(−1, 2, 1, 0) = E − 0.5; h: E − mean(3, 1) = E − 2
MEAN_A = (0.2 + 2.0 + 1.0) / 3  # anchor A is shared by both episodes of t0 and episode 1 of t1
ANCHOR = [0.2 - MEAN_A, 2.0 - MEAN_A, 1.0 - MEAN_A, 0.0, 1.0, -1.0]  # B alone → 0; C: G − mean(3, 1)


def advantages(samples: list[Sample], **settings: Any) -> list[float]:
    options = {"mage": settings}
    return mage.compute_advantages(samples=with_returns(samples, options), options=options)


def test_returns_of_the_anchored_group() -> None:
    assert [s.ret for s in with_returns(anchored_group())] == pytest.approx([0.2, 2.0, 1.0, 0.0, 3.0, 1.0])


def test_advantages_share_anchors_across_episodes() -> None:
    expected = [e + a for e, a in zip(EPISODE_G, ANCHOR, strict=True)]
    assert advantages(anchored_group()) == pytest.approx(expected)
    # t0 episode 1: −1.5 + (0.2 − 16/15) = −2.3667; t1 episode 2 (singleton anchor B): −0.5 + 0
    assert expected[0] == pytest.approx(-1.5 - 13 / 15)
    assert expected[3] == -0.5


def test_w_weights_the_anchor_bracket() -> None:
    expected = [e + 0.5 * a for e, a in zip(EPISODE_G, ANCHOR, strict=True)]
    assert advantages(anchored_group(), w=0.5) == pytest.approx(expected)


def test_per_episode_anchors_split_only_the_step_groups() -> None:
    # Trial 1/A: t0 (0.2) and t1 (1) → ∓0.4; Trial 2/A (t0) and Trial 2/B (t1) are singletons → 0. Group h
    # (one episode) and the episode bracket are unchanged.
    anchor = [-0.4, 0.0, 0.4, 0.0, 1.0, -1.0]
    expected = [e + a for e, a in zip(EPISODE_G, anchor, strict=True)]
    assert advantages(anchored_group(), per_episode_anchors=True) == pytest.approx(expected)


def test_mixed_groups_change_only_the_episode_baseline() -> None:
    # One baseline over the batch: mean(−1, 2, 1, 0, 3, 1) = 1; anchor brackets stay per group.
    episode = [-2.0, 1.0, 0.0, -1.0, 2.0, 0.0]
    expected = [e + a for e, a in zip(episode, ANCHOR, strict=True)]
    assert advantages(anchored_group(), mixed_groups=True) == pytest.approx(expected)


def test_std_norm_divides_each_bracket() -> None:
    def std(values: list[float]) -> float:
        mean = sum(values) / len(values)
        return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) + EPS

    e_g, e_h, a_a, a_c = std([-1, 2, 1, 0]), std([3, 1]), std([0.2, 2, 1]), std([3, 1])
    expected = [
        EPISODE_G[0] / e_g + ANCHOR[0] / a_a,
        EPISODE_G[1] / e_g + ANCHOR[1] / a_a,
        EPISODE_G[2] / e_g + ANCHOR[2] / a_a,
        EPISODE_G[3] / e_g,
        EPISODE_G[4] / e_h + ANCHOR[4] / a_c,
        EPISODE_G[5] / e_h + ANCHOR[5] / a_c,
    ]
    assert advantages(anchored_group(), std_norm=True) == pytest.approx(expected)


def test_penalties_enter_the_episode_bracket_not_the_return() -> None:
    # t1 episode 2 also carries an invalid penalty: E = 0 − 0.5; G stays 0.
    samples = anchored_group()[:4]
    samples[3] = attrs.evolve(samples[3], reward_terms={"env": 1.0, "invalid": -0.5})
    with_g = with_returns(samples)
    assert with_g[3].ret == 0.0
    # E = (−1, 2, 1, −0.5), mean 0.375
    episode = [-1.375, 1.625, 0.625, -0.875]
    expected = [e + a for e, a in zip(episode, ANCHOR[:4], strict=True)]
    assert mage.compute_advantages(samples=with_g, options={}) == pytest.approx(expected)


def test_reflections_share_the_reflection_anchor_of_their_group() -> None:
    # Issue 22, defect 7: MAGE's code anchors every reflection at "reflection" + opponent, so the reflections of a
    # group form one step group (this plugin gave each a bracket of 0). Two trials, a reflection after episode 1:
    # t0 returns 0 then +1, t1 returns −1 then −1 (one turn per episode, all at observation X).
    samples = [
        make(0.0, trial="t0", episode=0, anchor="X"),
        make(1.0, trial="t0", episode=1, anchor="X"),
        make(None, trial="t0", episode=0, turn=-1, kind="reflection:mage", terms={}),
        make(-1.0, trial="t1", episode=0, anchor="X"),
        make(-1.0, trial="t1", episode=1, anchor="X"),
        make(None, trial="t1", episode=0, turn=-1, kind="reflection:mage", terms={}),
    ]
    with_g = with_returns(samples)
    # Δ: t0 (0, 1), t1 (−1, 0). G: t0 (0.6, 1), t1 (−1, 0); each reflection the G of its trial's episode 2.
    assert [s.ret for s in with_g] == pytest.approx([0.6, 1.0, 1.0, -1.0, 0.0, 0.0])
    # E = (0, 1, 1, −1, 0, 0), mean 1/6. Anchor X over (0.6, 1, −1, 0), mean 0.15; the reflections (1, 0), mean 0.5.
    episode = [e - 1 / 6 for e in (0.0, 1.0, 1.0, -1.0, 0.0, 0.0)]
    anchor = [0.45, 0.85, 0.5, -1.15, -0.15, -0.5]
    expected = [e + a for e, a in zip(episode, anchor, strict=True)]
    assert mage.compute_advantages(samples=with_g, options={}) == pytest.approx(expected)
    # The ablation: each reflection alone in its step group, anchor bracket 0 (the behaviour before the fix).
    alone = [e + (0.0 if s.kind != "action" else a) for e, a, s in zip(episode, anchor, with_g, strict=True)]
    off = mage.compute_advantages(samples=with_g, options={"mage": {"reflection_anchor": False}})
    assert off == pytest.approx(alone)


def test_reflection_anchors_stay_within_group_and_opponent_and_follow_per_episode_anchors() -> None:
    reflections = [
        make(None, trial="t0", group="g", episode=0, turn=-1, kind="reflection:mage", terms={}),
        make(None, trial="t1", group="g", episode=1, turn=-1, kind="reflection:mage", terms={}),
        make(None, trial="t2", group="h", episode=0, turn=-1, kind="reflection:mage", terms={}),
    ]
    keys = mage.anchor_keys(reflections)
    assert keys[0] == keys[1] != keys[2]
    per_episode = mage.anchor_keys(reflections, per_episode_anchors=True)
    assert per_episode[0] == ("g", "Trial 2", "reflection", "") and per_episode[1] == ("g", "Trial 3", "reflection", "")
    assert len(set(mage.anchor_keys(reflections, reflection_anchor=False))) == 3


def test_unknown_settings_and_modes_are_errors() -> None:
    with pytest.raises(ConfigError, match="std_nrom"):
        mage.compute_advantages(samples=[], options={"mage": {"std_nrom": True}})
    with pytest.raises(ConfigError, match=r"unknown key 'options\.mage\.memry' \(did you mean 'memory'\?\)"):
        mage.settings({"mage": {"memry": "history_only"}})
    with pytest.raises(ConfigError, match=r"key 'options\.mage\.memory' expects one of 'reflection_only', "):
        mage.settings({"mage": {"memory": "everything"}})
    with pytest.raises(ConfigError, match=r"key 'options\.mage\.reward' expects one of 'differential', 'cumulative'"):
        mage.settings({"mage": {"reward": "sparse"}})
    with pytest.raises(ConfigError, match="'max_new_tokens' must be >= 2: 1"):
        mage.settings({"mage": {"max_new_tokens": 1}})


def test_mage_and_another_estimator_cannot_share_a_learner() -> None:
    with pytest.raises(PluginError, match="'mage' and 'gigpo'"):
        PluginSet(["mage", "gigpo"])


# --------------------------------------------------------------------------------------------------------------
# Whole trials through the engine (scripted backend)
# --------------------------------------------------------------------------------------------------------------


def llm_prompts(trial: TrialRecord, episode: int) -> list[str]:
    return [s.prompt[-1].content for s in trial.episodes[episode].steps if s.completion is not None]


def test_three_episode_trials_show_earlier_reflections() -> None:
    records, _, _ = play(specs(4, seats=("model:scripted", "aggressive"), episodes=3), plugins=["mage"])
    for trial in records:
        assert len(trial.episodes) == 3
        assert [(r.name, r.episode) for r in trial.reflections] == [("mage", 0), ("mage", 1)]
        request = trial.reflections[1].prompt[-1].content
        assert "<remark>" in request and "Moves of episode 2" in request
        assert trial.reflections[0].content in request  # the earlier reflection is carried into the next one
        assert all(mage.REFLECTION_SECTION not in p for p in llm_prompts(trial, 0))
        for episode in (1, 2):
            for prompt in llm_prompts(trial, episode):
                shown = [r for r in trial.reflections if r.episode < episode]
                assert mage.REFLECTION_SECTION in prompt
                assert all(f"After episode {r.episode + 1}: {r.content}" in prompt for r in shown)
                assert "Scripted reflection" in prompt


def test_history_only_requests_no_reflection_and_shows_transcripts() -> None:
    options = {"mage": {"memory": "history_only"}}
    (trial,), _, _ = play(specs(1, episodes=3, options=options), plugins=["mage"])
    assert trial.reflections == ()
    prompt = llm_prompts(trial, 2)[0]
    assert mage.HISTORY_SECTION in prompt and "Episode 1:" in prompt and "Episode 2:" in prompt
    assert "Outcome:" in prompt and mage.REFLECTION_SECTION not in prompt


def test_history_and_reflection_shows_both() -> None:
    options = {"mage": {"memory": "history_and_reflection"}}
    (trial,), _, _ = play(specs(1, episodes=2, options=options), plugins=["mage"])
    prompt = llm_prompts(trial, 1)[0]
    assert "Episode 1:" in prompt and f"Your reflection: {trial.reflections[0].content}" in prompt


def test_early_stop_on_win_still_stops() -> None:
    records, _, _ = play(specs(30, episodes=3, early_stop_on_win=True), plugins=["mage"])
    stopped = 0
    for trial in records:
        won_at = [e.index for e in trial.episodes if e.outcomes["player_0"] == "win"]
        assert len(trial.episodes) == (won_at[0] + 1 if won_at else 3)
        assert len(trial.reflections) == len(trial.episodes) - 1
        stopped += len(trial.episodes) < 3
    assert stopped  # some trial did stop early, so the check above meant something


def test_plain_reflection_plugin_is_refused() -> None:
    with pytest.raises(PluginError, match="'mage' and 'reflection' are both enabled"):
        play(specs(1, episodes=2), plugins=["reflection", "mage"])


def credit(plugins: PluginSet, trials: list[TrialRecord], samples: list[Sample], options: Any) -> list[Sample]:
    """The learner's credit order (``Run.credit`` in ``arena.core.learn.run``), through the hooks: reward terms per
    trial, returns, advantages."""
    out = []
    for trial in trials:
        local = [s for s in samples if s.trial_id == trial.spec.trial_id]
        for extra in plugins.call("compute_rewards", trial=trial, samples=local):
            local = [attrs.evolve(s, reward_terms={**s.reward_terms, **extra.get(j, {})}) for j, s in enumerate(local)]
        out.extend(local)
    returns = plugins.first("compute_returns", samples=out, options=options)
    out = [attrs.evolve(s, ret=r) for s, r in zip(out, returns, strict=True)]
    advantages = plugins.first("compute_advantages", samples=out, options=options)
    return [attrs.evolve(s, advantage=a) for s, a in zip(out, advantages, strict=True)]


def test_credit_of_played_trials() -> None:
    """Credit over played trials: reflections get the next episode's first return, the last turn of the final
    episode gets Δ_N, and the Δs add up to the final return."""
    records, _, _ = play(specs(6, seats=("model:scripted", "aggressive"), episodes=3, group_id="g"), plugins=["mage"])
    samples = [s for t in records for s in trial_samples(t, "L", ["model:scripted"])]
    credited = credit(PluginSet(["mage"]), records, samples, {})
    assert len(credited) == len(samples)
    for trial in records:
        mine = [s for s in credited if s.trial_id == trial.spec.trial_id]
        actions = {
            e: sorted((s for s in mine if s.kind == "action" and s.episode == e), key=lambda s: s.turn)
            for e in range(3)
        }
        returns = [trial.episodes[e].returns["player_0"] for e in range(3)]
        assert actions[2][-1].ret == pytest.approx(returns[2] - returns[1])
        assert sum(mage.episode_rewards(mine).values()) == pytest.approx(returns[2])
        reflections = [s for s in mine if s.kind == "reflection:mage"]
        assert len(reflections) == 2
        for reflection in reflections:
            assert reflection.ret == pytest.approx(actions[reflection.episode + 1][0].ret)
            assert reflection.reward_terms["env"] == returns[reflection.episode + 1]
        for s in mine:  # the scripted answers are short and legal: no penalty terms
            assert set(s.reward_terms) == {"env"}
    assert all(isinstance(s.advantage, float) for s in credited)
    assert any(s.advantage != 0.0 for s in credited if s.kind == "action")


def test_reflection_request_follows_the_settings() -> None:
    (trial,), _, _ = play(specs(1, episodes=2), plugins=["mage"])
    spec = attrs.evolve(trial.spec, options={"mage": {"reflection_max_chars": 50, "max_new_tokens": 64}})
    request = mage.reflect(trial=spec, episode=trial.episodes[0], agent="player_0", reflections=(), last=False)
    assert request is not None
    assert (request.name, request.extract_tag, request.max_chars, request.max_new_tokens) == ("mage", "remark", 50, 64)
    default = mage.reflect(trial=trial.spec, episode=trial.episodes[0], agent="player_0", reflections=(), last=False)
    assert default is not None and default.max_chars == 2000
