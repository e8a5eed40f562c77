"""Confidence intervals and per-opponent outcome summaries for ``arena eval``.

Rates get 95% Wilson score intervals (honest near 0 and 1 and for small samples, unlike the normal
approximation); means get a 95% normal interval from the sample standard deviation. Everything here is a pure
function of finished ``TrialRecord``s, so it can be tested without playing a game.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import attrs

from arena.core.api.records import TrialRecord

#: The two-sided 95% normal quantile.
Z95 = 1.959963984540054


@attrs.frozen
class Rate:
    """``k`` successes out of ``n`` with its Wilson interval ``[low, high]``; ``rate`` is 0 when ``n`` is 0."""

    k: int
    n: int
    rate: float
    low: float
    high: float

    def to_json(self) -> dict[str, Any]:
        return {"k": self.k, "n": self.n, "rate": self.rate, "low": self.low, "high": self.high}


@attrs.frozen
class Mean:
    """A sample mean and its normal 95% interval; the interval is ``None`` with fewer than two values."""

    mean: float
    n: int
    low: float | None
    high: float | None

    def to_json(self) -> dict[str, Any]:
        return {"mean": self.mean, "n": self.n, "low": self.low, "high": self.high}


def wilson(k: int, n: int, z: float = Z95) -> Rate:
    """The Wilson score interval of ``k`` successes in ``n`` trials (``[0, 1]`` when ``n`` is 0)."""
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return Rate(k=0, n=0, rate=0.0, low=0.0, high=1.0)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    # At k = 0 the lower bound is exactly 0 and at k = n the upper exactly 1; floating point misses by an ulp.
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return Rate(k=k, n=n, rate=p, low=low, high=high)


def mean_ci(values: Sequence[float], z: float = Z95) -> Mean:
    """Mean ± z·s/√n with the sample (n−1) standard deviation; no interval below two values."""
    n = len(values)
    if n == 0:
        return Mean(mean=0.0, n=0, low=None, high=None)
    mean = math.fsum(values) / n
    if n < 2:
        return Mean(mean=mean, n=n, low=None, high=None)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = z * sd / math.sqrt(n)
    return Mean(mean=mean, n=n, low=mean - half, high=mean + half)


#: Two-sided 95% quantiles of Student's t for 1 to 30 degrees of freedom (beyond 30, a Cornish-Fisher expansion
#: around the normal quantile is within 1e-3).
T95 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t95(df: int) -> float:
    """The two-sided 95% quantile of Student's t with ``df`` degrees of freedom."""
    if df < 1:
        raise ValueError(f"need at least one degree of freedom, got {df}")
    if df <= len(T95):
        return T95[df - 1]
    z = Z95
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def mean_t_ci(values: Sequence[float]) -> Mean:
    """Mean ± t·s/√n: the interval for a handful of values (seeds), where the normal one is far too narrow."""
    return mean_ci(values) if len(values) < 2 else mean_ci(values, z=t95(len(values) - 1))


def learner_agent(trial: TrialRecord, seat_spec: str) -> str:
    """The agent name of the learner's seat in ``trial`` (the first seat whose spec is ``seat_spec``)."""
    agents = list(trial.final.returns)
    for index, text in enumerate(trial.spec.seats):
        if text == seat_spec:
            return agents[index]
    raise ValueError(f"trial {trial.spec.trial_id} has no seat {seat_spec!r}")


def summarize_opponent(trials: Sequence[TrialRecord], seat_spec: str) -> dict[str, Any]:
    """The learner's results against one opponent, as JSON-ready data.

    Outcome and return are those of each trial's final episode; invalid answers are counted over every episode of
    a trial. ``by_episode[k-1]`` is episode ``k`` of the trials that reached it (all of them: ``arena eval`` plays
    every episode): its ``win_rate`` is that episode's, its ``won_by`` the share of trials won in some episode up
    to ``k``. ``won_by`` of the last episode is MAGE's "final-episode success": a trial that stops once won plays
    the same episodes up to its first win. ``by_seat`` splits the final-episode results by whether the learner
    moved first.
    """
    finals: list[tuple[str, float]] = []
    invalid: list[int] = []
    episodes: dict[int, list[tuple[str, float]]] = {}
    seats: dict[str, list[str]] = {"first": [], "second": []}
    first_win: list[int | None] = []  # index of each trial's first won episode
    for trial in trials:
        agent = learner_agent(trial, seat_spec)
        finals.append((trial.final.outcomes[agent], trial.final.returns[agent]))
        invalid.append(sum(e.invalid_actions.get(agent, 0) for e in trial.episodes))
        for episode in trial.episodes:
            episodes.setdefault(episode.index, []).append((episode.outcomes[agent], episode.returns[agent]))
        won = [e.index for e in trial.episodes if e.outcomes[agent] == "win"]
        first_win.append(min(won) if won else None)
        seats["first" if trial.spec.seats[0] == seat_spec else "second"].append(trial.final.outcomes[agent])
    n = len(finals)
    outcomes = [o for o, _ in finals]
    by_episode = []
    for index in sorted(episodes):
        rows = episodes[index]
        by_episode.append(
            {
                "episode": index + 1,
                "trials": len(rows),
                "win_rate": wilson(sum(o == "win" for o, _ in rows), len(rows)).to_json(),
                "mean_return": mean_ci([r for _, r in rows]).to_json(),
                "won_by": wilson(sum(w is not None and w <= index for w in first_win), n).to_json(),
            }
        )
    return {
        "trials": n,
        "wins": outcomes.count("win"),
        "draws": outcomes.count("draw"),
        "losses": outcomes.count("loss"),
        "win_rate": wilson(outcomes.count("win"), n).to_json(),
        "draw_rate": wilson(outcomes.count("draw"), n).to_json(),
        "loss_rate": wilson(outcomes.count("loss"), n).to_json(),
        "mean_return": mean_ci([r for _, r in finals]).to_json(),
        "invalid_per_trial": mean_ci([float(v) for v in invalid]).to_json(),
        "by_episode": by_episode,
        "by_seat": {
            seat: wilson(sum(o == "win" for o in outs), len(outs)).to_json() for seat, outs in seats.items() if outs
        },
    }
