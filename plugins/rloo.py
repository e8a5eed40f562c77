"""rloo: REINFORCE leave-one-out (Kool et al. 2019, "Buy 4 REINFORCE samples, get a baseline for free!";
Ahmadian et al. 2024, arXiv 2402.14740).

Each sample's baseline is the mean return of the *other* samples of its group (``sample.group_id``), so the
baseline does not depend on the sample itself and the estimate stays unbiased::

    A_i = R_i − (Σ_{j≠i} R_j) / (k − 1) = k/(k − 1) · (R_i − mean_g R)

for a group of k ≥ 2 samples; a group of one has no other sample and gets 0. The same advantage applies to every
completion token of the sample.

Hooks: ``compute_advantages``.

| setting | value |
| --- | --- |
| baseline | mean of the other k − 1 returns of the group |
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import attrs

from arena.core import Sample, group_members, hookimpl, read_settings

NAME = "rloo"


@attrs.frozen
class Settings:
    """rloo's settings: ``options.rloo`` of a learner. It has none; a key given there is an error."""


def rloo_advantages(returns: Sequence[float], groups: Sequence[Hashable]) -> list[float]:
    """Leave-one-out advantages, one per return (0 for a group of one)."""
    if len(returns) != len(groups):
        raise ValueError(f"{len(returns)} returns for {len(groups)} group ids")
    out = [0.0] * len(returns)
    for idx in group_members(groups).values():
        k = len(idx)
        if k < 2:
            continue
        total = sum(float(returns[i]) for i in idx)
        for i in idx:
            r = float(returns[i])
            out[i] = r - (total - r) / (k - 1)
    return out


@hookimpl
def compute_advantages(samples: list[Sample], options: Mapping[str, Mapping[str, Any]]) -> list[float]:
    read_settings(options, NAME, Settings)  # no settings; rejects misspelt ones
    return rloo_advantages([s.ret for s in samples], [s.group_id for s in samples])
