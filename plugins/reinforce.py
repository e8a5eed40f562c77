"""reinforce: REINFORCE with a batch-mean baseline (Williams 1992).

The simplest baseline: the mean return of the whole batch (every sample the estimator is given, all groups
together)::

    A_i = R_i − mean_batch R

It ignores groups, so it suits batches without repeated tasks; it is the reference point for the group-based
estimators. The same advantage applies to every completion token of the sample.

Hooks: ``compute_advantages``.

| setting | value |
| --- | --- |
| baseline | mean return over the batch |
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from arena.core import Sample, hookimpl, read_settings

NAME = "reinforce"


@attrs.frozen
class Settings:
    """reinforce's settings: ``options.reinforce`` of a learner. It has none; a key given there is an error."""


def reinforce_advantages(returns: Sequence[float]) -> list[float]:
    """``R_i − mean R`` over all returns ([] for an empty batch)."""
    if not returns:
        return []
    mean = sum(float(r) for r in returns) / len(returns)
    return [float(r) - mean for r in returns]


@hookimpl
def compute_advantages(samples: list[Sample], options: Mapping[str, Mapping[str, Any]]) -> list[float]:
    read_settings(options, NAME, Settings)  # no settings; rejects misspelt ones
    return reinforce_advantages([s.ret for s in samples])
