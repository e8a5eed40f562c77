"""Confidence intervals against hand-computed values, and the per-opponent summary of finished trials."""

from __future__ import annotations

import math

import pytest

from arena.core.api.records import EpisodeRecord, TrialRecord, TrialSpec
from arena.core.eval.stats import Z95, mean_ci, summarize_opponent, wilson

LEARNER = "model:learner"


def test_wilson_matches_hand_computed_values() -> None:
    # 8 of 10 with z = 1.96: centre 0.99208 / 1.38416 = 0.71674, half-width 1.41602 * sqrt(0.025604) = 0.22658.
    rate = wilson(8, 10)
    assert rate.rate == 0.8
    assert rate.low == pytest.approx(0.4902, abs=2e-4)
    assert rate.high == pytest.approx(0.9433, abs=2e-4)
    # The closed forms at the edges: 0/n has upper bound z²/(n + z²), n/n has lower bound n/(n + z²).
    z2 = Z95**2
    assert wilson(0, 10).low == 0.0
    assert wilson(0, 10).high == pytest.approx(z2 / (10 + z2), rel=1e-12)
    assert wilson(10, 10).low == pytest.approx(10 / (10 + z2), rel=1e-12)
    assert wilson(10, 10).high == 1.0
    # Symmetry: k successes and n - k failures mirror each other.
    assert wilson(3, 7).low == pytest.approx(1 - wilson(4, 7).high, abs=1e-12)


def test_wilson_without_trials_and_bad_counts() -> None:
    empty = wilson(0, 0)
    assert (empty.rate, empty.low, empty.high) == (0.0, 0.0, 1.0)
    with pytest.raises(ValueError):
        wilson(3, 2)


def test_mean_ci_uses_the_sample_standard_deviation() -> None:
    mean = mean_ci([1.0, 2.0, 3.0, 4.0])
    half = Z95 * math.sqrt(5 / 3) / 2  # s² = (2.25 + 0.25 + 0.25 + 2.25) / 3
    assert mean.mean == 2.5
    assert mean.low == pytest.approx(2.5 - half)
    assert mean.high == pytest.approx(2.5 + half)
    assert mean_ci([1.5]).low is None and mean_ci([1.5]).mean == 1.5
    assert mean_ci([]).n == 0


def _trial(k: int, learner_first: bool, results: list[tuple[str, float]], invalid: int = 0) -> TrialRecord:
    seats = (LEARNER, "opp") if learner_first else ("opp", LEARNER)
    me, other = ("player_0", "player_1") if learner_first else ("player_1", "player_0")
    flip = {"win": "loss", "loss": "win", "draw": "draw"}
    episodes = tuple(
        EpisodeRecord(
            trial_id=f"t{k}",
            index=i,
            seed=k,
            steps=(),
            # In seat order, as the engine writes them (the learner's agent is found by its seat index).
            returns=dict(sorted({me: ret, other: -ret}.items())),
            outcomes=dict(sorted({me: outcome, other: flip[outcome]}.items())),
            invalid_actions=dict(sorted({me: invalid, other: 0}.items())),
        )
        for i, (outcome, ret) in enumerate(results)
    )
    spec = TrialSpec(trial_id=f"t{k}", arena_id="kuhn_poker", seats=seats, seed=k, episodes=len(results))
    return TrialRecord(spec=spec, episodes=episodes, reflections=())


def test_summary_reads_the_final_episode_and_every_episode_index() -> None:
    trials = [
        _trial(0, True, [("loss", -1.0), ("win", 1.0)], invalid=1),
        _trial(1, False, [("loss", -2.0), ("win", 2.0)]),
        _trial(2, True, [("win", 1.0), ("draw", 0.0)]),
        _trial(3, False, [("loss", -1.0), ("loss", -1.0)], invalid=2),
    ]
    summary = summarize_opponent(trials, LEARNER)
    assert (summary["trials"], summary["wins"], summary["draws"], summary["losses"]) == (4, 2, 1, 1)
    assert summary["win_rate"]["rate"] == 0.5
    assert summary["mean_return"]["mean"] == pytest.approx(0.5)
    # Invalid answers are summed over the episodes of a trial: (2 + 0 + 0 + 4) / 4.
    assert summary["invalid_per_trial"]["mean"] == pytest.approx(1.5)
    episode_1, episode_2 = summary["by_episode"]
    assert (episode_1["episode"], episode_1["win_rate"]["k"], episode_1["win_rate"]["n"]) == (1, 1, 4)
    assert (episode_2["episode"], episode_2["win_rate"]["k"]) == (2, 2)
    assert episode_2["win_rate"] == wilson(2, 4).to_json()
    assert summary["by_seat"]["first"]["k"] == 1 and summary["by_seat"]["second"]["k"] == 1
    # Won by episode k: trials won at least once up to k (trial 2 won episode 1 and drew episode 2).
    assert (episode_1["won_by"]["k"], episode_2["won_by"]["k"]) == (1, 3)
    assert episode_2["won_by"] == wilson(3, 4).to_json()


def test_won_by_never_falls_and_counts_a_trial_once() -> None:
    trials = [
        _trial(0, True, [("win", 1.0), ("loss", -1.0), ("win", 1.0)]),
        _trial(1, False, [("loss", -1.0), ("loss", -1.0), ("loss", -1.0)]),
        _trial(2, True, [("loss", -1.0), ("loss", -1.0), ("win", 2.0)]),
    ]
    rows = summarize_opponent(trials, LEARNER)["by_episode"]
    assert [r["win_rate"]["k"] for r in rows] == [1, 0, 2]
    assert [r["won_by"]["k"] for r in rows] == [1, 1, 2]
    assert all(r["won_by"]["n"] == 3 for r in rows)
