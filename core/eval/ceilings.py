"""The ceilings of a run's testbed beside its ``arena eval`` numbers, and the share of adaptive headroom captured.

``arena.arenas.ceilings`` computes, for the run's arena and training pool, per episode of a trial: the best a policy
that ignores earlier episodes can reach (``fixed``), the best one that adapts within the trial can reach
(``adaptive``) and the best one told the opponent's type (``informed``); see docs/testbeds.md. This module reads
them for an evaluation and compares them with what the run measured, episode by episode:

* the measured value is the metric the ceilings are in: ``win_rate`` (``by_episode[k].win_rate.rate``: RPS, doors)
  or ``return`` (``by_episode[k].mean_return.mean``, chips in Kuhn poker);
* ``headroom_share[k] = (measured − fixed) / (adaptive − fixed)``: 0 is what a fixed policy reaches, 1 the adaptive
  ceiling. Where ``adaptive − fixed`` is at most ``NO_HEADROOM`` (episode 1 always, and any episode of a testbed
  where adapting cannot help) the share is ``None``: "no headroom".

Which ceilings an opponent is judged against: a member of the training pool, the pool's (``fixed``, ``adaptive``;
the pool-weighted mean of the members' measured values is the exact comparison, reported as ``pool``); an opponent
outside the pool (unseen or named), ``fixed`` = ``fixed_high``, the most the pool's best fixed policies get against
it, and ``adaptive`` = ``adaptive_all`` of the pool and that opponent in a uniform mix (the adaptive policy cannot
know in advance that it meets the new one). Only the pool's mean is exact: a member's own share compares it with the
pool's averages, so it can exceed 1 or fall below 0. A run whose arena or opponents have no ceiling model gets none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import structlog

log = structlog.get_logger("arena.eval")

#: An ``adaptive − fixed`` at or below this is no headroom (the solver's float noise is ~1e-16).
NO_HEADROOM = 1e-9

#: Where the measured value of each ceiling metric sits in an ``arena eval`` ``by_episode`` entry.
MEASURED = {"win_rate": ("win_rate", "rate"), "return": ("mean_return", "mean")}


def headroom_share(measured: float | None, fixed: float, adaptive: float) -> float | None:
    """``(measured − fixed) / (adaptive − fixed)``, or None when there is no headroom (or nothing measured)."""
    room = adaptive - fixed
    if measured is None or room <= NO_HEADROOM:
        return None
    return (measured - fixed) / room


def measured_by_episode(row: Mapping[str, Any], metric: str, episodes: int) -> list[float | None]:
    """The opponent row's measured ``metric`` per episode (None for an episode no trial reached)."""
    field, key = MEASURED[metric]
    by_index = {int(e["episode"]): float(e[field][key]) for e in row.get("by_episode") or [] if field in e}
    return [by_index.get(k) for k in range(1, episodes + 1)]


def _judged(
    measured: list[float | None], fixed: Sequence[float], adaptive: Sequence[float], against: str
) -> dict[str, Any]:
    return {
        "against": against,
        "fixed": list(fixed),
        "adaptive": list(adaptive),
        "measured": measured,
        "headroom_share": [headroom_share(m, f, a) for m, f, a in zip(measured, fixed, adaptive, strict=True)],
    }


def attach_ceilings(
    arena_id: str,
    arena_kwargs: Mapping[str, Any],
    pool: Sequence[tuple[str, float]],
    rows: Sequence[dict[str, Any]],
    episodes: int,
) -> dict[str, Any] | None:
    """The report's ``ceilings`` for these evaluated ``rows`` (each gains its own ``ceilings``), or None.

    ``pool`` is the run's training pool as ``(spec, weight)``. None (and every row's ``ceilings`` None) when the
    arena or the pool has no ceiling model; a row whose opponent alone has none (``model:...``) gets None.
    """
    from arena.arenas.ceilings import NoCeiling, ceilings, supported

    for row in rows:
        row["ceilings"] = None
    specs = [spec for spec, _ in pool]
    if not specs or not supported(arena_id, specs, arena_kwargs):
        return None
    weights = [weight for _, weight in pool]
    try:
        base = ceilings(arena_id, arena_kwargs, specs, weights, episodes)
    except (NoCeiling, ValueError) as exc:
        log.info(f"no ceilings for this run: {exc}")
        return None
    metric = str(base["metric"])
    per_opponent = dict(base["per_opponent"])
    for row in rows:
        spec = str(row["opponent"])
        measured = measured_by_episode(row, metric, episodes)
        if spec in specs:
            judged = _judged(measured, base["fixed"], base["adaptive"], "pool")
            row["ceilings"] = {**per_opponent[spec], **judged}
            continue
        if not supported(arena_id, [*specs, spec], arena_kwargs):
            continue
        try:
            mixed = ceilings(arena_id, arena_kwargs, specs, weights, episodes, unseen=[spec])
        except (NoCeiling, ValueError) as exc:
            log.info(f"no ceilings against {spec}: {exc}")
            continue
        alone = mixed["per_opponent"][spec]
        per_opponent[spec] = alone
        judged = _judged(measured, [alone["fixed_high"]] * episodes, mixed["adaptive_all"], "pool + this opponent")
        row["ceilings"] = {**alone, **judged}
    out: dict[str, Any] = {
        key: base[key]
        for key in ("metric", "episodes", "opponents", "weights", "fixed", "adaptive", "informed", "card_aware")
        if key in base
    }
    out["measured"] = ".".join(MEASURED[metric])
    out["per_opponent"] = per_opponent
    out["pool"] = None
    evaluated = {str(row["opponent"]): row for row in rows}
    if all(spec in evaluated for spec in specs):
        by_member = [measured_by_episode(evaluated[spec], metric, episodes) for spec in specs]
        mean: list[float | None] = []
        for k in range(episodes):
            values = [m[k] for m in by_member if m[k] is not None]
            whole = len(values) == len(by_member)
            mean.append(sum(w * v for w, v in zip(base["weights"], values, strict=True)) if whole else None)
        out["pool"] = _judged(mean, base["fixed"], base["adaptive"], "pool")
    return out
