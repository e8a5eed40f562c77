"""grpo: group-relative advantages (GRPO, DeepSeekMath, arXiv 2402.03300).

Each sample's return is compared with the other samples of its group (``sample.group_id``: the G rollouts that
share a task/seed and, in games, an opponent)::

    A_i = (R_i − mean_g R) / (std_g R + eps)        std_norm = true (default)
    A_i =  R_i − mean_g R                           std_norm = false

A group of one sample has no baseline and gets 0. The standard deviation is the sample (Bessel-corrected) one by
default, as verl and TRL compute it (``torch.std``); ``unbiased_std = false`` switches to the population std. The
same advantage applies to every completion token of the sample.

Hooks: ``compute_advantages``.

| setting | default | meaning |
| --- | --- | --- |
| ``std_norm`` | ``true`` | divide by the group's std (Dr.GRPO and MAGE turn it off) |
| ``eps`` | ``1e-6`` | added to the std |
| ``unbiased_std`` | ``true`` | Bessel-corrected std (n − 1); false: population std (n) |
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from arena.core import Sample, group_normalized, hookimpl, read_settings, setting

NAME = "grpo"


@attrs.frozen
class Settings:
    """grpo's settings: ``options.grpo`` of a learner (checked when the run config loads)."""

    std_norm: bool = setting(True, "divide by the group's std (Dr.GRPO and MAGE turn it off)")
    eps: float = setting(1e-6, "added to the std", validator=attrs.validators.ge(0))
    unbiased_std: bool = setting(True, "Bessel-corrected std (n - 1); false: population std (n)")


grpo_advantages = group_normalized


@hookimpl
def compute_advantages(samples: list[Sample], options: Mapping[str, Mapping[str, Any]]) -> list[float]:
    opts = read_settings(options, NAME, Settings)
    return grpo_advantages(
        [s.ret for s in samples],
        [s.group_id for s in samples],
        std_norm=opts.std_norm,
        eps=opts.eps,
        unbiased_std=opts.unbiased_std,
    )
