"""What MAGE's and per-episode GRPO's advantages make of scouting in ``doors``: exact expectations, no sampling.

The question (issue 24, item 2): in a group of G trials of K episodes on one seed (one prize door), what is the
expected advantage of an episode-1 *scout* sample minus that of an episode-1 *guess* sample? Positive means the
policy gradient pushes episode 1 towards scouting.

The group's behaviour (``p_scout``): in every episode whose door is not known yet, a trial scouts with probability
``p_scout``, else opens a door uniformly among those not ruled out; once the door is known (scouted, or found) it is
opened (so is the last door left after misses). So the comparison credits scouting with what a policy that already
uses its memory gets from it; the memory-using part is what MAGE and GRPO-with-memory share.

The advantages are the project's own functions on hand-built ``Sample`` lists, as ``arena train`` builds them: one
action sample per episode, all with the same anchor (the doors' observation text is the same in every episode),
``meta["episode_return"]`` = the episode's score:

* ``mage``: the mage plugin's ``compute_returns`` then ``compute_advantages`` hooks (differential reward,
``gamma_traj``, w = 1,
  mean only: the plugin's defaults);
* ``grpo``: the grpo plugin's ``compute_advantages`` on each sample's own episode return over the group (the core's
  default return), ``std_norm`` as given: per-episode GRPO.

The expectation is exact: the other G - 1 trials are i.i.d. over a handful of trial types (ep-1 action, returns per
episode), so every multiset of their types is enumerated with its multinomial probability.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence

import attrs

from arena.core.api.samples import Sample
from arena.core.host.plugins import PluginSet

__all__ = ["TrialType", "scout_advantage", "trial_types"]


@attrs.frozen
class TrialType:
    """One kind of trial: whether episode 1 scouted, and the score of each episode played."""

    scouted_first: bool
    returns: tuple[float, ...]


def trial_types(
    doors: int, episodes: int = 3, p_scout: float = 0.5, early_stop: bool = False
) -> dict[TrialType, float]:
    """The distribution of trial types under the group's behaviour (module docstring)."""
    out: dict[TrialType, float] = {}

    def walk(known: bool, left: int, first: bool | None, returns: tuple[float, ...], p: float) -> None:
        """``known``: the door is known; ``left``: doors not ruled out; ``first``: episode 1 scouted."""
        if len(returns) == episodes or (early_stop and returns and returns[-1] > 0):
            key = TrialType(bool(first), returns)
            out[key] = out.get(key, 0.0) + p
            return
        if known:
            walk(True, left, first, (*returns, 1.0), p)
            return
        scouting = True if first is None else first
        guessing = False if first is None else first
        walk(True, left, scouting, (*returns, 0.0), p * p_scout)
        q = p * (1 - p_scout)
        walk(True, left, guessing, (*returns, 1.0), q / left)  # the right door
        if left > 1:  # a miss rules one door out; with one door left it is known
            walk(left == 2, left - 1, guessing, (*returns, 0.0), q * (left - 1) / left)

    walk(False, doors, None, (), 1.0)
    return out


def _samples(trials: Sequence[TrialType]) -> list[Sample]:
    samples = []
    for t, trial in enumerate(trials):
        for e, r in enumerate(trial.returns):
            samples.append(
                Sample(
                    learner="agent",
                    trial_id=f"t{t}",
                    episode=e,
                    turn=0,
                    agent="player_0",
                    kind="action",
                    context_ids=(),
                    completion_ids=(),
                    behaviour_logprobs=(),
                    temperatures=(),
                    group_id="g",
                    anchor="doors\x1f",
                    reward_terms={"env": r},
                    meta={"episode_return": r},
                )
            )
    return samples


def _first_advantage(trials: Sequence[TrialType], method: str, gamma_traj: float, std_norm: bool) -> float:
    """The advantage of trial 0's episode-1 sample in the group ``trials``, from the plugin's own hooks."""
    if method not in {"mage", "grpo"}:
        raise ValueError(f"method must be 'mage' or 'grpo', got {method!r}")
    samples = _samples(trials)
    plugins = _plugins(method)
    if method == "mage":
        options = {"mage": {"gamma_traj": gamma_traj, "std_norm": std_norm}}
        returns = plugins.first("compute_returns", samples=samples, options=options)
        samples = [attrs.evolve(s, ret=g) for s, g in zip(samples, returns, strict=True)]
    else:  # per-episode GRPO: each sample's return is its own episode's score (the core's default return)
        options = {"grpo": {"std_norm": std_norm}}
        samples = [attrs.evolve(s, ret=s.reward) for s in samples]
    return float(plugins.first("compute_advantages", samples=samples, options=options)[0])


@functools.cache
def _plugins(method: str) -> PluginSet:
    # Through the hooks, as `arena train` calls them: arenas import no plugin.
    return PluginSet([method])


@functools.cache
def scout_advantage(
    doors: int,
    method: str = "mage",
    gamma_traj: float = 0.6,
    group_size: int = 8,
    episodes: int = 3,
    p_scout: float = 0.5,
    std_norm: bool = False,
    early_stop: bool = False,
) -> float:
    """E[A | episode 1 scouted] − E[A | episode 1 guessed] for an episode-1 sample (module docstring)."""
    if not 0 < p_scout < 1:
        raise ValueError(f"p_scout must be strictly between 0 and 1, got {p_scout}")
    types = trial_types(doors, episodes, p_scout, early_stop)
    kinds = sorted(types, key=lambda t: (t.scouted_first, t.returns))
    probs = [types[k] for k in kinds]
    others = group_size - 1
    by_first = {True: 0.0, False: 0.0}
    mass = {True: 0.0, False: 0.0}
    for counts in _compositions(others, len(kinds)):
        weight = math.factorial(others) * math.prod(
            p**c / math.factorial(c) for p, c in zip(probs, counts, strict=True)
        )
        rest = [k for k, c in zip(kinds, counts, strict=True) for _ in range(c)]
        for own, p_own in zip(kinds, probs, strict=True):
            a = _first_advantage([own, *rest], method, gamma_traj, std_norm)
            by_first[own.scouted_first] += weight * p_own * a
            mass[own.scouted_first] += weight * p_own
    return by_first[True] / mass[True] - by_first[False] / mass[False]


def _compositions(total: int, parts: int) -> list[tuple[int, ...]]:
    """Every way to write ``total`` as an ordered sum of ``parts`` non-negative integers."""
    out = []
    for cuts in itertools.combinations(range(total + parts - 1), parts - 1):
        edges = (-1, *cuts, total + parts - 1)
        out.append(tuple(b - a - 1 for a, b in itertools.pairwise(edges)))
    return out


def table(doors: Sequence[int] = (3, 4, 5, 6, 8, 10, 12, 16), group_size: int = 8) -> str:
    """The markdown table of docs/testbeds.md: the scout-minus-guess episode-1 advantage by door count."""
    lines = [
        "| doors | p_scout | MAGE γ_traj 0.6 | MAGE γ_traj 0 | GRPO mean-only | GRPO mean/std |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for n in doors:
        for label, p in (("1/(N+1)", 1 / (n + 1)), ("1/2", 0.5)):
            values = [
                scout_advantage(n, "mage", 0.6, group_size, p_scout=p),
                scout_advantage(n, "mage", 0.0, group_size, p_scout=p),
                scout_advantage(n, "grpo", group_size=group_size, p_scout=p),
                scout_advantage(n, "grpo", group_size=group_size, p_scout=p, std_norm=True),
            ]
            lines.append(f"| {n} | {label} | " + " | ".join(f"{v:+.3f}" for v in values) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
