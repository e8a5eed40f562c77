"""Token-level losses of the learner, as pure functions on padded tensors.

Conventions shared by every function here:

* Tensors are ``[batch, tokens]``, right-padded; ``mask`` is 1 on completion tokens that take part in the loss and 0
  on padding (and on tokens a method chose to drop). Any float or bool dtype works for ``mask``.
* ``logp`` is the log-prob of each sampled token under the policy being trained (with its autograd graph),
  ``old_logp`` the log-prob under the policy that produced the sample (behaviour or ``π_old``, detached),
  ``adv`` the advantage of each token (see :func:`advantages_to_tokens`).
* Losses are returned **per token, to be minimised**, with exact zeros where ``mask`` is 0, so padding never carries
  gradient (padded positions are neutralised *before* ``exp`` so that garbage there cannot produce ``inf · 0 = nan``).
  Reduce them with :func:`aggregate`, whose mode is a method choice (token mean for GRPO/DAPO/MAGE, sequence sum for
  Dr.GRPO).
* Statistics are returned as a dict of detached 0-dim tensors (no host sync; call ``.item()`` when logging).

Sample kinds (``arena.core.api.samples.LossKind``) map to these functions: ``ppo`` → :func:`ppo_clip`,
``shaped_ratio`` /
``shaped_prob`` → :func:`shaped_off_policy` with ``mode="ratio"`` / ``"prob"``, ``sft`` → :func:`sft_nll`,
``dpo_chosen`` / ``dpo_rejected`` → :func:`dpo` on :func:`sequence_logp` sums.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Literal, cast

import torch
import torch.nn.functional as F

Stats = dict[str, torch.Tensor]
Aggregation = Literal["token_mean", "seq_mean_token_mean", "seq_sum"]
ShapingMode = Literal["ratio", "prob"]
MaskLevel = Literal["token", "sequence"]

AGGREGATIONS: tuple[Aggregation, ...] = ("token_mean", "seq_mean_token_mean", "seq_sum")
#: Paper defaults of γ in :func:`shaped_off_policy`: HeRL (ratio form) γ = 1, GOLF (probability form) γ = 0.1.
SHAPED_DEFAULT_GAMMA: dict[ShapingMode, float] = {"ratio": 1.0, "prob": 0.1}


def _keep(mask: torch.Tensor) -> torch.Tensor:
    return mask.bool() if mask.dtype != torch.bool else mask


def _check_same_shape(**tensors: torch.Tensor | None) -> None:
    shapes = {name: tuple(t.shape) for name, t in tensors.items() if t is not None}
    if len(set(shapes.values())) > 1:
        raise ValueError(f"tensors must share one [batch, tokens] shape, got {shapes}")


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``values`` over the tokens where ``mask`` is set; 0 when nothing is set (not nan)."""
    keep = _keep(mask)
    total = torch.where(keep, values, torch.zeros_like(values)).sum()
    return total / keep.sum().clamp(min=1).to(values.dtype)


def _stat(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return masked_mean(values.detach().to(torch.float32), mask)


# --------------------------------------------------------------------------------------------------------------
# Policy-gradient losses
# --------------------------------------------------------------------------------------------------------------


def ppo_clip(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    adv: torch.Tensor,
    mask: torch.Tensor,
    clip_low: float = 0.2,
    clip_high: float = 0.2,
    dual_clip: float | None = None,
) -> tuple[torch.Tensor, Stats]:
    """PPO clipped surrogate (Schulman et al. 2017), with asymmetric clip range (DAPO) and dual clip (Ye et al. 2020).

    With ``r = exp(logp − old_logp)``, the per-token **objective** (to maximise) is::

        J = min(r·A, clip(r, 1 − clip_low, 1 + clip_high)·A)
        J = max(J, c·A)            only where A < 0, when dual_clip = c is given (c > 1)

    and the returned **loss** is ``L = −J``, i.e. ``L = max(−r·A, −clip(r)·A)``, and for ``A < 0`` additionally
    ``L = min(L, c·|A|)``. The dual clip exists because for a negative advantage the plain PPO loss grows without
    bound as ``r`` grows (a token the old policy found unlikely and the new one likes): capping the loss at
    ``c·|A|`` stops that token's gradient (its loss is then a constant).

    Stats: ``clip_fraction`` (share of tokens where the clipped branch is selected, i.e. the gradient was cut by
    the trust region), ``dual_clip_fraction`` (share where the dual-clip cap binds; 0 without it), ``ratio_mean`` and
    ``approx_kl`` (the k3 estimate of KL(π_old‖πθ), ``(r − 1) − log r``).
    """
    _check_same_shape(logp=logp, old_logp=old_logp, mask=mask)
    if clip_low < 0 or clip_high < 0:
        raise ValueError(f"clip ranges must be non-negative, got clip_low={clip_low}, clip_high={clip_high}")
    if dual_clip is not None and dual_clip <= 1.0:
        raise ValueError(f"dual_clip must be > 1 (it caps the loss at dual_clip·|A|), got {dual_clip}")
    keep = _keep(mask)
    log_ratio = torch.where(keep, logp - old_logp, torch.zeros_like(logp))
    ratio = torch.exp(log_ratio)
    unclipped = -adv * ratio
    clipped = -adv * torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high)
    loss = torch.maximum(unclipped, clipped)
    clip_active = clipped > unclipped
    dual_active = torch.zeros_like(clip_active)
    if dual_clip is not None:
        cap = -adv * dual_clip  # = dual_clip·|A| where A < 0
        negative = adv < 0
        dual_active = negative & (loss > cap)
        loss = torch.where(negative, torch.minimum(loss, cap), loss)
    loss = torch.where(keep, loss, torch.zeros_like(loss))
    stats = {
        "clip_fraction": _stat(clip_active.float(), keep),
        "dual_clip_fraction": _stat(dual_active.float(), keep),
        "ratio_mean": _stat(ratio, keep),
        "approx_kl": _stat(ratio - 1.0 - log_ratio, keep),
    }
    return loss, stats


def truncated_is_weights(
    old_logp: torch.Tensor, behaviour_logp: torch.Tensor, cap: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Truncated importance sampling (TIS; Yao et al. 2025, "Your efficient RL framework secretly brings you
    off-policy RL training"): per-token weights ``min(exp(old_logp − behaviour_logp), cap)``, detached.

    ``behaviour_logp`` is what the sampler (vLLM, a bf16 kernel) reported for the token it drew; ``old_logp`` is
    the trained policy's log-prob of the same token before the update. Their ratio corrects the policy gradient
    for sampling from the wrong distribution; the cap bounds the variance that a token the sampler found far
    less likely than the policy would bring. Returns ``(weights, capped)``, ``capped`` true where the cap binds.
    """
    _check_same_shape(old_logp=old_logp, behaviour_logp=behaviour_logp)
    if cap <= 0:
        raise ValueError(f"the TIS cap must be positive, got {cap}")
    ratio = torch.exp((old_logp - behaviour_logp).detach())
    return torch.clamp(ratio, max=cap), ratio > cap


def shaped_off_policy(
    logp: torch.Tensor,
    old_logp: torch.Tensor | None,
    adv: torch.Tensor,
    mask: torch.Tensor,
    gamma: float | torch.Tensor | None = None,
    mode: ShapingMode = "ratio",
) -> tuple[torch.Tensor, Stats]:
    """Shaped off-policy loss for tokens the current policy did not sample in the current context.

    Per token ``L = −A · f`` with no clipping, where

    * ``mode="ratio"`` (HeRL, γ = 1 by default): ``f = r / (r + γ)``, ``r = exp(logp − old_logp)``;
    * ``mode="prob"`` (GOLF, γ = 0.1 by default): ``f = π / (π + γ)``, ``π = exp(logp)``; ``old_logp`` is unused.

    Gradients flow through ``r`` (resp. ``π``): ``∂L/∂logp = −A · γ·x / (x + γ)²`` with ``x`` = r or π. Compared
    with the plain ``−A·x`` this damps tokens the policy already finds likely and keeps a gradient on unlikely
    ones, which is why these papers use it for injected off-policy text where a ratio can be extreme and clipping
    would silence most tokens. ``f`` is computed as ``sigmoid(log x − log γ)``, the same value without overflow.

    ``gamma`` may be a tensor that broadcasts against ``logp`` (``[B, 1]``: one γ per sample, as HeRL uses 0.1 for
    judge-scored tasks and 1 otherwise).

    Stats: ``shaping_mean`` (mean ``f``) and ``ratio_mean`` or ``prob_mean`` (mean ``x``).
    """
    if mode not in SHAPED_DEFAULT_GAMMA:
        raise ValueError(f"mode must be 'ratio' or 'prob', got {mode!r}")
    if isinstance(gamma, torch.Tensor):
        if bool((gamma <= 0).any()):
            raise ValueError(f"gamma must be > 0, got {gamma.flatten().tolist()}")
        log_g: torch.Tensor | float = torch.log(gamma.to(logp.dtype))
    else:
        g = SHAPED_DEFAULT_GAMMA[mode] if gamma is None else float(gamma)
        if g <= 0:
            raise ValueError(f"gamma must be > 0, got {g}")
        log_g = math.log(g)
    _check_same_shape(logp=logp, old_logp=old_logp, mask=mask)
    keep = _keep(mask)
    if mode == "ratio":
        if old_logp is None:
            raise ValueError("mode='ratio' needs old_logp")
        log_x = logp - old_logp
    else:
        log_x = logp
    log_x = torch.where(keep, log_x, torch.zeros_like(log_x))
    f = torch.sigmoid(log_x - log_g)
    loss = torch.where(keep, -adv * f, torch.zeros_like(f))
    stats = {"shaping_mean": _stat(f, keep), f"{mode}_mean": _stat(torch.exp(log_x), keep)}
    return loss, stats


def sft_nll(logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Negative log-likelihood per token, ``L = −logp`` on masked tokens (0 elsewhere): supervised fine-tuning."""
    _check_same_shape(logp=logp, mask=mask)
    keep = _keep(mask)
    return torch.where(keep, -logp, torch.zeros_like(logp))


def sequence_logp(logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Sum of the masked token log-probs of each sequence, ``[batch]``: the sequence log-prob DPO compares."""
    _check_same_shape(logp=logp, mask=mask)
    keep = _keep(mask)
    return torch.where(keep, logp, torch.zeros_like(logp)).sum(dim=-1)


def dpo(
    policy_chosen: torch.Tensor,
    policy_rejected: torch.Tensor,
    ref_chosen: torch.Tensor,
    ref_rejected: torch.Tensor,
    beta: float = 0.1,
) -> tuple[torch.Tensor, Stats]:
    """Direct Preference Optimisation (Rafailov et al. 2023, arXiv 2305.18290) on sequence log-prob sums ``[pairs]``.

    Implicit rewards ``r_c = β·(log π(y_c) − log π_ref(y_c))`` and ``r_r = β·(log π(y_r) − log π_ref(y_r))``;
    the loss of a pair is ``−log σ(r_c − r_r)``; the returned loss is its mean over the pairs (a scalar).

    Stats: ``chosen_reward``, ``rejected_reward``, ``reward_margin`` (means of r_c, r_r, r_c − r_r) and
    ``reward_accuracy`` (share of pairs with r_c > r_r).
    """
    _check_same_shape(
        policy_chosen=policy_chosen, policy_rejected=policy_rejected, ref_chosen=ref_chosen, ref_rejected=ref_rejected
    )
    chosen_reward = beta * (policy_chosen - ref_chosen)
    rejected_reward = beta * (policy_rejected - ref_rejected)
    margin = chosen_reward - rejected_reward
    loss = -F.logsigmoid(margin).mean()
    stats = {
        "chosen_reward": chosen_reward.detach().float().mean(),
        "rejected_reward": rejected_reward.detach().float().mean(),
        "reward_margin": margin.detach().float().mean(),
        "reward_accuracy": (margin.detach() > 0).float().mean(),
    }
    return loss, stats


# --------------------------------------------------------------------------------------------------------------
# Regularisers
# --------------------------------------------------------------------------------------------------------------


def kl_k3(logp: torch.Tensor, ref_logp: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Per-token k3 estimator of KL(πθ‖π_ref) (Schulman 2020): ``exp(d) − d − 1`` with ``d = ref_logp − logp``.

    Unbiased for the KL when tokens are sampled from πθ, and always ≥ 0 (unlike ``−d``). Pass ``mask`` to get exact
    zeros (and no overflow) on padding; reduce with :func:`aggregate`.
    """
    _check_same_shape(logp=logp, ref_logp=ref_logp, mask=mask)
    d = ref_logp - logp
    if mask is not None:
        keep = _keep(mask)
        d = torch.where(keep, d, torch.zeros_like(d))
    return torch.exp(d) - d - 1.0


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of the next-token distribution at each position, ``[..., vocab] → [...]``.

    ``H = −Σ p·log p`` with ``log p = log_softmax(z)``: working with log-probs (small numbers) rather than
    ``logsumexp(z) − Σ p·z`` keeps float32 precise when the logits are large, and ``−inf`` logits (banned tokens)
    contribute 0 with a finite gradient. Divide the logits by the sampling temperature first when the entropy of
    the sampling distribution is wanted.
    """
    logp = torch.log_softmax(logits, dim=-1)
    finite_logp = logp.clamp(min=torch.finfo(logp.dtype).min)  # 0 · (−inf) would be nan
    return -(logp.exp() * finite_logp).sum(dim=-1)


# --------------------------------------------------------------------------------------------------------------
# Reduction and masks
# --------------------------------------------------------------------------------------------------------------


def aggregate(
    per_token: torch.Tensor,
    mask: torch.Tensor,
    mode: Aggregation = "token_mean",
    norm_constant: float | None = None,
) -> torch.Tensor:
    """Reduce a per-token loss ``[batch, tokens]`` to a scalar.

    * ``token_mean``: ``Σ_{b,t} m·L / Σ_{b,t} m``. Every token weighs the same, so long completions weigh more
      (DAPO, MAGE).
    * ``seq_mean_token_mean``: ``mean_b (Σ_t m·L / Σ_t m)`` over the sequences that have at least one masked token
      (fully masked rows, e.g. dropped by :func:`low_prob_mask`, are left out rather than counted as 0). Every
      sequence weighs the same (original GRPO).
    * ``seq_sum`` (Dr.GRPO, arXiv 2503.20783): ``(Σ_b Σ_t m·L) / batch / norm_constant``; ``batch`` counts every row
      and ``norm_constant`` (the maximum completion length; no division when None) is a constant, so no per-sequence
      length enters the gradient and the length bias of the mean forms disappears.

    An all-zero mask gives 0 (keeping the graph), never nan. ``norm_constant`` is only meaningful for ``seq_sum``.
    """
    _check_same_shape(per_token=per_token, mask=mask)
    if norm_constant is not None and mode != "seq_sum":
        raise ValueError(f"norm_constant applies to mode 'seq_sum' only, not {mode!r}")
    keep = _keep(mask)
    values = torch.where(keep, per_token, torch.zeros_like(per_token))
    counts = keep.sum(dim=-1).to(per_token.dtype)
    if mode == "token_mean":
        return values.sum() / counts.sum().clamp(min=1)
    if mode == "seq_mean_token_mean":
        per_seq = values.sum(dim=-1) / counts.clamp(min=1)
        present = counts > 0
        return torch.where(present, per_seq, torch.zeros_like(per_seq)).sum() / present.sum().clamp(min=1)
    if mode == "seq_sum":
        if norm_constant is not None and norm_constant <= 0:
            raise ValueError(f"norm_constant must be > 0, got {norm_constant}")
        total = values.sum(dim=-1).sum() / max(per_token.shape[0], 1)
        return total / norm_constant if norm_constant is not None else total
    raise ValueError(f"unknown aggregation {mode!r}; expected one of {AGGREGATIONS}")


def low_prob_mask(
    logp_behaviour: torch.Tensor,
    mask: torch.Tensor,
    threshold: float = -5.0,
    level: MaskLevel = "token",
) -> torch.Tensor:
    """EMPO² low-probability masking (arXiv 2602.23008): drop tokens sampled with behaviour log-prob < ``threshold``.

    ``level="token"`` (the paper) zeroes those tokens; ``level="sequence"`` (the authors' code) zeroes every token of
    a sequence that has at least one such token. Such tokens have huge importance ratios once the context changes
    (tips stripped), which would dominate the off-policy update. Returns a new mask with ``mask``'s dtype.
    """
    _check_same_shape(logp_behaviour=logp_behaviour, mask=mask)
    keep = _keep(mask)
    low = keep & (logp_behaviour < threshold)
    if level == "token":
        out = keep & ~low
    elif level == "sequence":
        out = keep & ~low.any(dim=-1, keepdim=True)
    else:
        raise ValueError(f"level must be 'token' or 'sequence', got {level!r}")
    return out.to(mask.dtype)


def advantages_to_tokens(
    advantages: Sequence[float | Sequence[float]],
    lengths: Sequence[int],
    width: int | None = None,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """Lay per-sample advantages out as a right-padded ``[batch, width]`` tensor (zeros past each row's length).

    An entry is either a float, broadcast to every completion token (GRPO, RLOO, GiGPO...), or a per-token sequence
    of exactly ``lengths[i]`` values (RAE puts its advantage on the last token and zeros elsewhere). ``width``
    defaults to the longest length; pass the batch's padded width when it is larger.
    """
    if len(advantages) != len(lengths):
        raise ValueError(f"{len(advantages)} advantages for {len(lengths)} samples")
    longest = max(lengths, default=0)
    width = longest if width is None else width
    if width < longest:
        raise ValueError(f"width {width} is shorter than the longest completion ({longest} tokens)")
    out = torch.zeros((len(lengths), width), dtype=dtype, device=device)
    for i, (adv, n) in enumerate(zip(advantages, lengths, strict=True)):
        if isinstance(adv, numbers.Real):
            out[i, :n] = float(adv)
            continue
        values = [float(a) for a in cast(Sequence[float], adv)]
        if len(values) != n:
            raise ValueError(f"sample {i}: {len(values)} per-token advantages for {n} completion tokens")
        if n:
            out[i, :n] = torch.tensor(values, dtype=dtype, device=device)
    return out
