"""Group arithmetic shared by the advantage-estimator plugins (plugins never import each other).

``group_normalized`` is GRPO's group-relative advantage; Dr.GRPO (no std), GiGPO (episode and anchor groups)
and RLOO build on it or on ``group_members``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence


def group_members(keys: Sequence[Hashable]) -> dict[Hashable, list[int]]:
    """Indices of the samples of each group, groups in first-seen order."""
    members: dict[Hashable, list[int]] = defaultdict(list)
    for i, key in enumerate(keys):
        members[key].append(i)
    return dict(members)


def group_normalized(
    returns: Sequence[float],
    groups: Sequence[Hashable],
    std_norm: bool = True,
    eps: float = 1e-6,
    unbiased_std: bool = True,
) -> list[float]:
    """Group-relative advantages, one per return; singleton groups get 0 (std-normalised when ``std_norm``)."""
    if len(returns) != len(groups):
        raise ValueError(f"{len(returns)} returns for {len(groups)} group ids")
    out = [0.0] * len(returns)
    for idx in group_members(groups).values():
        n = len(idx)
        if n < 2:
            continue
        values = [float(returns[i]) for i in idx]
        mean = sum(values) / n
        scale = 1.0
        if std_norm:
            var = sum((v - mean) ** 2 for v in values) / (n - 1 if unbiased_std else n)
            scale = math.sqrt(var) + eps
        for i, v in zip(idx, values, strict=True):
            out[i] = (v - mean) / scale
    return out
