"""drgrpo: Dr.GRPO, "GRPO done right" (Liu et al., Understanding R1-Zero-Like Training, arXiv 2503.20783).

Dr.GRPO removes GRPO's two normalisations that bias the update: the division by the group's std (which gives
too-easy and too-hard questions the largest weight) and the division by each completion's own length (which
rewards long wrong answers). The advantage is the return centred on its group (``sample.group_id``)::

    A_i = R_i − mean_g R

(a group of one sample gets 0, since its mean is its return). The second change lives in the loss, not here: the
per-token losses are summed over each sequence and divided by a constant, the maximum completion length, rather
than by each sequence's length. This plugin declares it in ``recommended_trainer_settings`` (the trainer applies
``arena.core.learn.losses.aggregate(..., mode="seq_sum", norm_constant=<max completion tokens>)`` when this estimator is
enabled, unless the learner's config sets an aggregation explicitly).

Hooks: ``compute_advantages``.

| setting | value |
| --- | --- |
| std normalisation | none (not a switch: that is GRPO with ``std_norm: false``) |
| loss aggregation | ``seq_sum``, divided by the max completion length |
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

import attrs

from arena.core import Sample, hookimpl, read_settings
from arena.core import group_normalized as grpo_advantages

NAME = "drgrpo"
#: The loss aggregation Dr.GRPO's objective needs (a mode of ``arena.core.learn.losses.aggregate``).
LOSS_AGGREGATION: Final = "seq_sum"
#: Trainer settings this estimator expects; ``norm_constant`` of ``seq_sum`` is the max completion length.
recommended_trainer_settings: Final[Mapping[str, Any]] = MappingProxyType({"loss_aggregation": LOSS_AGGREGATION})


@attrs.frozen
class Settings:
    """drgrpo's settings: ``options.drgrpo`` of a learner. It has none; a key given there is an error."""


def drgrpo_advantages(returns: Sequence[float], groups: Sequence[Hashable]) -> list[float]:
    """``R_i − mean_g R`` for each sample (0 for a group of one)."""
    return grpo_advantages(returns, groups, std_norm=False)


@hookimpl
def compute_advantages(samples: list[Sample], options: Mapping[str, Mapping[str, Any]]) -> list[float]:
    read_settings(options, NAME, Settings)  # no settings; rejects misspelt ones
    return drgrpo_advantages([s.ret for s in samples], [s.group_id for s in samples])
