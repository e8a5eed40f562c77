"""entropy_adv: entropy-based advantage shaping, the EntropyAdv baseline of SGE (arXiv 2603.02045).

The method is Cheng et al., "Reasoning with Exploration: An Entropy Perspective" (arXiv 2506.14758): every
completion token's advantage gets a bonus from the policy's own entropy at that position, clipped so that it
never exceeds a fraction of the advantage's magnitude and so never flips its sign::

    A′_t = A_t + min(α · H_t, |A_t| / κ)            H_t detached (no gradient flows through the bonus)

``H_t`` is the entropy of the current policy's distribution at token t, at the temperature the token was
sampled with (the trainer computes it in the same forward pass as the log-probs, see
``arena.core.learn.logprobs.policy_logprobs``). The bonus is added whatever the sign of A: a negative advantage becomes
less negative (at most by |A|/κ, so with κ > 1 it stays negative), a positive one larger; a token with A = 0
gets nothing. Because H_t depends on the policy being trained, the shaping runs inside the loss, once per
micro-batch (hook ``shape_token_advantages``), not with the advantage estimators before the update.

EntropyAdv only reshapes advantages: enable it next to an estimator, ``plugins = ["grpo", "entropy_adv"]``
(SGE's paper compares GRPO with and without it).

Hooks: ``shape_token_advantages``.

| setting | default | meaning |
| --- | --- | --- |
| ``alpha`` | ``0.4`` | α, the weight of the entropy bonus |
| ``kappa`` | ``2.0`` | κ: the bonus is at most \\|A\\|/κ (must be > 0) |
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import torch

from arena.core import Sample, hookimpl, read_settings, setting

NAME = "entropy_adv"


@attrs.frozen
class Settings:
    """entropy_adv's settings: ``options.entropy_adv`` of a learner (checked when the run config loads)."""

    alpha: float = setting(0.4, "α, the weight of the entropy bonus", validator=attrs.validators.ge(0))
    kappa: float = setting(2.0, "κ: the bonus is at most |A|/κ (must be > 0)", validator=attrs.validators.gt(0))


def settings(options: Mapping[str, Mapping[str, Any]] | None) -> Settings:
    """``options["entropy_adv"]`` read into :class:`Settings` (α ≥ 0 and κ > 0, checked by its validators)."""
    return read_settings(options, NAME, Settings)


def entropy_shaped(
    advantages: torch.Tensor, entropy: torch.Tensor, mask: torch.Tensor, alpha: float = 0.4, kappa: float = 2.0
) -> torch.Tensor:
    """``A + min(α·H, |A|/κ)`` on the positions where ``mask`` is non-zero; ``A`` unchanged elsewhere.

    All three are ``[B, T]``; ``entropy`` is detached here as well, so the bonus never carries a gradient.
    """
    if not advantages.shape == entropy.shape == mask.shape:
        raise ValueError(
            f"advantages {tuple(advantages.shape)}, entropy {tuple(entropy.shape)} and mask {tuple(mask.shape)} "
            "must have the same [B, T] shape"
        )
    bonus = torch.minimum(alpha * entropy.detach().to(advantages.dtype), advantages.abs() / kappa)
    return torch.where(mask > 0, advantages + bonus, advantages)


@hookimpl
def shape_token_advantages(
    samples: Sequence[Sample],
    advantages: torch.Tensor,
    entropy: torch.Tensor,
    mask: torch.Tensor,
    options: Mapping[str, Mapping[str, Any]],
) -> torch.Tensor:
    opts = settings(options)
    if advantages.shape[0] != len(samples):
        raise ValueError(f"{advantages.shape[0]} advantage rows for {len(samples)} samples")
    return entropy_shaped(advantages, entropy, mask, alpha=opts.alpha, kappa=opts.kappa)
