"""gigpo: Group-in-Group Policy Optimization (Feng et al., arXiv 2505.10978; code langfengQ/verl-agent), in the
mean-only form MAGE trains with (arXiv 2603.03680; code Lu-Yang666/MAGE).

Multi-turn agents get one return per episode, so plain GRPO gives every turn of an episode the same advantage.
GiGPO adds a step-level term: turns of different rollouts of the group that start from the same state (the same
*anchor*: observation text and opponent, ``sample.anchor``) form a step group, and each turn is compared with the
other turns taken from that state::

    A = A_episode + w · A_step
    A_episode = E_i − mean_g E            E_i: the return of the sample's episode, ``sample.meta["episode_return"]``
                                          (MAGE: the episode's differential reward minus penalties), else ``ret``
    A_step    = G_t − mean_{g,anchor} G   G_t: the sample's discounted return ``ret``

With ``std_norm`` each bracket is divided by its group's std + ``eps``. The means run over the *samples* of the
group (verl-agent's default ``compute_mean_std_cross_steps``). A group of one sample gets 0 for the episode term;
a step group of one sample (an anchor no other rollout of the group visited), or a sample without anchor
(``anchor is None``), gets 0 for the step term. Step groups never cross ``group_id``.

Hooks: ``compute_advantages``.

| setting | default | meaning |
| --- | --- | --- |
| ``w`` | ``1.0`` | weight of the step-level term |
| ``std_norm`` | ``false`` | divide each bracket by its group's std + eps (MAGE and its code: mean only) |
| ``eps`` | ``1e-6`` | added to the std |
| ``unbiased_std`` | ``true`` | Bessel-corrected std when ``std_norm`` |
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import attrs

from arena.core import Sample, hookimpl, read_settings, setting
from arena.core import group_normalized as grpo_advantages

NAME = "gigpo"


@attrs.frozen
class Settings:
    """gigpo's settings: ``options.gigpo`` of a learner (checked when the run config loads)."""

    w: float = setting(1.0, "weight of the step-level term")
    std_norm: bool = setting(False, "divide each bracket by its group's std + eps (MAGE and its code: mean only)")
    eps: float = setting(1e-6, "added to the std")
    unbiased_std: bool = setting(True, "Bessel-corrected std when std_norm")


def step_groups(groups: Sequence[Hashable], anchors: Sequence[Hashable | None]) -> list[Hashable]:
    """The step-group key of each sample: ``(group, anchor)``, or a key of its own when it has no anchor."""
    return [
        (g, a) if a is not None else ("<no anchor>", i) for i, (g, a) in enumerate(zip(groups, anchors, strict=True))
    ]


def gigpo_advantages(
    episode_returns: Sequence[float],
    step_returns: Sequence[float],
    groups: Sequence[Hashable],
    anchors: Sequence[Hashable | None],
    w: float = 1.0,
    std_norm: bool = False,
    eps: float = 1e-6,
    unbiased_std: bool = True,
) -> list[float]:
    """``A_episode + w · A_step`` for each sample (see the module docstring)."""
    n = len(groups)
    if not len(episode_returns) == len(step_returns) == len(anchors) == n:
        raise ValueError("episode_returns, step_returns, groups and anchors must have one entry per sample")
    episode = grpo_advantages(episode_returns, groups, std_norm=std_norm, eps=eps, unbiased_std=unbiased_std)
    step = grpo_advantages(
        step_returns, step_groups(groups, anchors), std_norm=std_norm, eps=eps, unbiased_std=unbiased_std
    )
    return [e + w * s for e, s in zip(episode, step, strict=True)]


def episode_return(sample: Sample) -> float:
    """The return of the sample's episode: ``meta["episode_return"]`` when the sample builder set it, else ``ret``."""
    value = sample.meta.get("episode_return")
    return float(sample.ret if value is None else value)


@hookimpl
def compute_advantages(samples: list[Sample], options: Mapping[str, Mapping[str, Any]]) -> list[float]:
    opts = read_settings(options, NAME, Settings)
    return gigpo_advantages(
        [episode_return(s) for s in samples],
        [s.ret for s in samples],
        [s.group_id for s in samples],
        [s.anchor for s in samples],
        w=opts.w,
        std_norm=opts.std_norm,
        eps=opts.eps,
        unbiased_std=opts.unbiased_std,
    )
