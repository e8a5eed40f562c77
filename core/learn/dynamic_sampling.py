"""DAPO's dynamic sampling (Yu et al. 2025, arXiv 2503.14476, section 3.2): train only on informative groups.

A group of G trials on one task (and one opponent) whose rewards are all equal gets a zero group-relative
advantage everywhere (accuracy 0 or 1 in DAPO's words): no gradient, but it still counts in the batch's token
mean and so shrinks the update. DAPO over-samples and filters such groups out, sampling on until the batch holds
the target number of groups with a reward spread (``0 < |{correct}| < G``), then uses exactly that many.

``Run.step`` (``arena.core.learn.run``) does the playing; this module holds the pure parts:

* ``trial_rewards`` / ``group_rewards``: a trial's reward is the mean reward of its samples (the mean, not the
  sum: in a multi-turn game with γ = 1 every turn carries the episode's return, and a sum would count two lost
  games of different lengths as different outcomes), optionally over some reward terms only;
* ``is_informative``: the rewards are not all equal and their population std exceeds ``min_std``;
* ``keep_groups``: the first ``target`` informative groups in play order;
* ``extra_matchups``: the matchups of an extra round, drawn like round 0's (``default_matchups``: the same pool,
  PFSP and task pool) but from the seed ``round_seed(run seed, iteration, round)``, with ``-rN`` group ids. Round 0
  is the population's ordinary draw, untouched, so a run with the feature off is the run without it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import attrs
import numpy as np

from arena.core.api.samples import Sample
from arena.core.api.seeding import derive_seed
from arena.populations import Matchup, Population, default_matchups
from arena.populations.matchmaking import LearnerSeat


def round_seed(run_seed: int, iteration: int, round_index: int) -> int:
    """The matchmaking seed of extra round ``round_index`` (≥ 1) of ``iteration``."""
    if round_index < 1:
        raise ValueError(f"extra rounds count from 1 (round 0 is the population's own draw), got {round_index}")
    return derive_seed(run_seed, "dynamic_sampling", iteration, round_index)


def extra_matchups(
    population: Population, learner: str, iteration: int, round_index: int, count: int, learner_seat: LearnerSeat
) -> list[Matchup]:
    """``count`` fresh matchups for ``learner`` in extra round ``round_index``: group ids ``...-gNNN-rN``."""
    drawn = default_matchups(
        population.pool,
        [learner],
        iteration,
        count,
        learner_seat,
        round_seed(population.seed, iteration, round_index),
        population.pfsp,
        population.task_pool,
        population.players,
    )
    return [attrs.evolve(m, group_id=f"{m.group_id}-r{round_index}") for m in drawn]


def sample_reward(sample: Sample, terms: Sequence[str] = ()) -> float:
    """The sample's reward: the sum of its reward terms, or of the named ones only (missing ones count 0)."""
    if not terms:
        return sample.reward
    return float(sum(sample.reward_terms.get(t, 0.0) for t in terms))


def trial_rewards(samples: Iterable[Sample], terms: Sequence[str] = ()) -> dict[str, tuple[str, float]]:
    """Per trial id, in first-seen order: (its group id, the mean reward of its samples)."""
    sums: dict[str, list[float]] = {}
    groups: dict[str, str] = {}
    for s in samples:
        sums.setdefault(s.trial_id, []).append(sample_reward(s, terms))
        groups.setdefault(s.trial_id, s.group_id)
    return {trial: (groups[trial], float(np.mean(values))) for trial, values in sums.items()}


def group_rewards(samples: Iterable[Sample], terms: Sequence[str] = ()) -> dict[str, list[float]]:
    """Per group id, in first-seen order: the rewards of its trials (trials without samples are absent)."""
    out: dict[str, list[float]] = {}
    for group, reward in trial_rewards(samples, terms).values():
        out.setdefault(group, []).append(reward)
    return out


def is_informative(rewards: Sequence[float], min_std: float = 0.0) -> bool:
    """At least two rewards, not all equal, population std above ``min_std``.

    The equality test comes first: the std of equal floats can come out as 1e-17 rather than 0.
    """
    if len(rewards) < 2 or max(rewards) == min(rewards):
        return False
    return float(np.std(rewards)) > min_std


def informative_groups(rewards: Mapping[str, Sequence[float]], min_std: float = 0.0) -> list[str]:
    """The informative group ids, in the mapping's order."""
    return [group for group, values in rewards.items() if is_informative(values, min_std)]


def keep_groups(played: Sequence[str], informative: Iterable[str], target: int) -> list[str]:
    """The first ``target`` informative groups in play order (all of them when fewer are informative)."""
    good = set(informative)
    return [g for g in played if g in good][:target]


@attrs.frozen
class RoundsSummary:
    """What dynamic sampling did for one learner in one iteration (the ``dynamic/...`` metrics)."""

    rounds: int
    groups_played: int
    groups_informative: int
    groups_kept: int

    def metrics(self) -> dict[str, float]:
        played = self.groups_played
        return {
            "dynamic/rounds": float(self.rounds),
            "dynamic/groups_played": float(played),
            "dynamic/groups_informative": float(self.groups_informative),
            "dynamic/groups_kept": float(self.groups_kept),
            "dynamic/filtered_fraction": 1.0 - self.groups_kept / played if played else 0.0,
        }
