"""Config records of the population manager (the ``population:`` section of a run config).

Loaded by ``arena.core.config.loader.load_config`` like every other section: an unknown key or a wrong type is a
``ConfigError`` naming the key; the validators below turn an out-of-range value into one too.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import attrs

from arena.core.config.trial import _non_negative as _non_negative_int
from arena.core.config.trial import _positive as _positive_int


def _non_negative(instance: Any, attribute: attrs.Attribute[Any], value: float) -> None:
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{attribute.name} must be a finite number >= 0, got {value}")


def _positive(instance: Any, attribute: attrs.Attribute[Any], value: float) -> None:
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{attribute.name} must be a finite number > 0, got {value}")


def _unit_interval(instance: Any, attribute: attrs.Attribute[Any], value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{attribute.name} must lie in [0, 1], got {value}")


def _open_unit_interval(instance: Any, attribute: attrs.Attribute[Any], value: float) -> None:
    if not 0.0 < value < 1.0:
        raise ValueError(f"{attribute.name} must lie strictly between 0 and 1, got {value}")


@attrs.frozen
class PFSPConfig:
    """Prioritised fictitious self-play (AlphaStar, Vinyals et al. 2019): draw the opponents a learner loses to.

    For a learner L and an eligible member m with configured weight w_m (``PoolMember.weight``):

    - x_m = (wins + draws/2 + 0.5·prior_games) / (games + prior_games), L's estimated win probability
      against m from their recorded games (a draw counts half). The prior 0.5 with ``prior_games`` pseudo-games
      keeps x strictly inside (0, 1), so an unseen member (x = 0.5) is always sampled and a member beaten in
      every game keeps a small, shrinking weight instead of exactly zero.
    - f is ``hard``: (1 − x)^power (focus on the opponents L loses to), ``variance``: x(1 − x) (focus on even
      matches; peaks at x = 0.5), or ``linear``: 1 − x.
    - base_m = w_m / Σ w and pfsp_m = w_m·f(x_m) / Σ w·f(x), both over the members eligible for L;
      the probability of m is (1 − mix)·base_m + mix·pfsp_m (with the default mix = 1: pure PFSP).
      Mixing the two *normalised* distributions makes ``mix`` the share of draws made by PFSP, whatever the
      scale of f (x(1 − x) never exceeds 0.25).

    With ``enabled: false`` the probability is base_m: the configured weights alone.
    """

    #: Weight the draw of opponents by the learner's results against them (off: the configured weights only).
    enabled: bool = False
    #: The priority f(x) of a member the learner beats with probability x: hard (1-x)^power, variance, linear.
    weighting: Literal["hard", "variance", "linear"] = "hard"
    #: Exponent of the ``hard`` weighting; larger focuses harder on the members the learner loses to.
    power: float = attrs.field(default=2.0, validator=_positive)
    #: Share of the sampling distribution given by PFSP; the rest follows the configured weights.
    mix: float = attrs.field(default=1.0, validator=_unit_interval)
    #: Pseudo-games at win probability 0.5 added to every pair's record, so unseen members are still drawn.
    prior_games: float = attrs.field(default=1.0, validator=_positive)


RatingModel = Literal[
    "plackett_luce", "thurstone_mosteller_full", "thurstone_mosteller_part", "bradley_terry_full", "bradley_terry_part"
]


@attrs.frozen
class RatingsConfig:
    """Elo and openskill's Weng-Lin rating over every learner, snapshot and opponent that has played."""

    #: Elo step size: a rating moves by at most k points per game.
    elo_k: float = attrs.field(default=32.0, validator=_non_negative)
    #: Elo rating of a newcomer.
    elo_initial: float = 1000.0
    #: The openskill model: plackett_luce, thurstone_mosteller_full/_part, bradley_terry_full/_part.
    model: RatingModel = "plackett_luce"
    #: Mean skill of a newcomer (openskill, on TrueSkill's scale).
    mu: float = 25.0
    #: Skill uncertainty (standard deviation) of a newcomer.
    sigma: float = attrs.field(default=25 / 3, validator=_positive)
    #: Performance noise: a skill gap of beta gives the better player about a 76% chance to win.
    beta: float = attrs.field(default=25 / 6, validator=_positive)
    #: Dynamics: added (in quadrature) to every sigma before each game so ratings keep moving.
    tau: float = attrs.field(default=25 / 300, validator=_non_negative)
    #: Prior chance that two equal players draw: the draw margin of the thurstone_mosteller models (others: unused).
    draw_probability: float = attrs.field(default=0.10, validator=_open_unit_interval)


@attrs.frozen
class PopulationConfig:
    """Who the learners train against: the scripted pool, frozen snapshots of the learners, the learners."""

    #: Take a frozen snapshot of every learner each this many iterations and add it to the pool (0 = never).
    snapshot_every: int = attrs.field(default=0, validator=_non_negative_int)
    #: Snapshots kept per learner; when a new one would exceed this, the oldest leaves the pool.
    max_snapshots: int = attrs.field(default=4, validator=_positive_int)
    #: Sampling weight of each snapshot (the scripted opponents keep their configured weights).
    snapshot_weight: float = attrs.field(default=1.0, validator=_non_negative)
    #: Let every learner draw the other learners' live policies as opponents (never itself).
    learners_as_opponents: bool = False
    #: Sampling weight of a live learner as an opponent (with ``learners_as_opponents``).
    learner_weight: float = attrs.field(default=1.0, validator=_non_negative)
    #: Prioritised fictitious self-play: reweight the draw by the learner's results against each member.
    pfsp: PFSPConfig = attrs.field(factory=PFSPConfig)
    #: How each iteration's groups get their opponents: ``random``, one independent draw per group from the
    #: sampling weights; ``balanced``, as many groups per member as its weight gives (largest remainders drawn at
    #: random), in a random order. With few groups a random draw can give every group of an iteration the same
    #: opponent, and one such update can push a policy onto that opponent's counter for good (docs/results.md,
    #: "Hidden types with SmolLM2-135M-Instruct, trained").
    opponent_draw: Literal["random", "balanced"] = "random"
    #: Elo and openskill parameters of the population's rating table.
    ratings: RatingsConfig = attrs.field(factory=RatingsConfig)
