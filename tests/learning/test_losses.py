"""``arena.core.learn.losses`` against numbers computed by hand (the comments show the arithmetic)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from arena.core.learn import losses


def _one(value: float) -> torch.Tensor:
    return torch.tensor([[value]], dtype=torch.float64)


def _leaf(value: float) -> torch.Tensor:
    return torch.tensor([[value]], dtype=torch.float64, requires_grad=True)


# --------------------------------------------------------------------------------------------------------------
# ppo_clip
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ratio", "adv", "clip_high", "loss", "clipped", "grad"),
    [
        # inside the range: L = −r·A, dL/dlogp = −A·r
        (1.1, 2.0, 0.2, -2.2, False, -2.2),
        # A > 0, r above 1 + ε: L = −(1.2)·1, gradient cut
        (1.5, 1.0, 0.2, -1.2, True, 0.0),
        # A > 0, r below 1 − ε: max(−0.5, −0.8) = −0.5, unclipped branch keeps its gradient
        (0.5, 1.0, 0.2, -0.5, False, -0.5),
        # A < 0, r below 1 − ε: max(0.5, 0.8) = 0.8, clipped
        (0.5, -1.0, 0.2, 0.8, True, 0.0),
        # A < 0, r above 1 + ε: max(1.5, 1.2) = 1.5, unclipped (what dual clip caps)
        (1.5, -1.0, 0.2, 1.5, False, 1.5),
        # asymmetric range (clip-higher): 1.25 is inside [0.8, 1.3]
        (1.25, 1.0, 0.3, -1.25, False, -1.25),
        (1.25, 1.0, 0.2, -1.2, True, 0.0),
    ],
)
def test_ppo_clip_branches(ratio: float, adv: float, clip_high: float, loss: float, clipped: bool, grad: float) -> None:
    logp = _leaf(math.log(ratio))
    out, stats = losses.ppo_clip(logp, _one(0.0), _one(adv), _one(1.0), clip_low=0.2, clip_high=clip_high)
    out.sum().backward()
    assert out.item() == pytest.approx(loss)
    assert stats["clip_fraction"].item() == (1.0 if clipped else 0.0)
    assert logp.grad is not None and logp.grad.item() == pytest.approx(grad)


@pytest.mark.parametrize(
    ("ratio", "adv", "loss", "dual_active", "grad"),
    [
        # A < 0, r = 5: PPO gives max(5, 1.2) = 5, dual clip caps it at 3·|A| = 3 (a constant: no gradient)
        (5.0, -1.0, 3.0, True, 0.0),
        # A < 0, r = 2: 2 < 3, the cap does not bind; dL/dlogp = −A·r = 2
        (2.0, -1.0, 2.0, False, 2.0),
        # A > 0: dual clip does not apply; ordinary clip to −1.2
        (5.0, 1.0, -1.2, False, 0.0),
        # A = −0.5, r = 10: cap 3·0.5 = 1.5
        (10.0, -0.5, 1.5, True, 0.0),
    ],
)
def test_ppo_dual_clip(ratio: float, adv: float, loss: float, dual_active: bool, grad: float) -> None:
    logp = _leaf(math.log(ratio))
    out, stats = losses.ppo_clip(logp, _one(0.0), _one(adv), _one(1.0), dual_clip=3.0)
    out.sum().backward()
    assert out.item() == pytest.approx(loss)
    assert stats["dual_clip_fraction"].item() == (1.0 if dual_active else 0.0)
    assert logp.grad is not None and logp.grad.item() == pytest.approx(grad)


def test_ppo_stats_and_padding() -> None:
    # Row 0: r = 1.5 (clipped, A = 1) and r = 1 (inside); row 1: r = 0.5 with A = −1 (clipped), then padding whose
    # log-probs are garbage large enough to overflow exp: it must give exact zeros and finite gradients.
    logp = torch.tensor([[math.log(1.5), 0.0], [math.log(0.5), 500.0]], dtype=torch.float64, requires_grad=True)
    old = torch.tensor([[0.0, 0.0], [0.0, -500.0]], dtype=torch.float64)
    adv = torch.tensor([[1.0, 1.0], [-1.0, 1.0]], dtype=torch.float64)
    mask = torch.tensor([[1, 1], [1, 0]])
    out, stats = losses.ppo_clip(logp, old, adv, mask)
    assert out.flatten().tolist() == pytest.approx([-1.2, -1.0, 0.8, 0.0])
    assert stats["clip_fraction"].item() == pytest.approx(2 / 3)
    assert stats["ratio_mean"].item() == pytest.approx((1.5 + 1.0 + 0.5) / 3)
    # k3 of log r: (r − 1) − log r, averaged over the three real tokens
    kl = [(r - 1) - math.log(r) for r in (1.5, 1.0, 0.5)]
    assert stats["approx_kl"].item() == pytest.approx(sum(kl) / 3)
    losses.aggregate(out, mask).backward()
    assert logp.grad is not None and torch.isfinite(logp.grad).all()
    assert logp.grad[1, 1].item() == 0.0


def test_ppo_rejects_bad_dual_clip() -> None:
    with pytest.raises(ValueError, match="dual_clip"):
        losses.ppo_clip(_one(0.0), _one(0.0), _one(1.0), _one(1.0), dual_clip=1.0)


# --------------------------------------------------------------------------------------------------------------
# shaped_off_policy
# --------------------------------------------------------------------------------------------------------------


def test_shaped_ratio_value_and_gradient() -> None:
    # r = 3, γ = 1: f = 3/4; L = −A·f = −2·0.75 = −1.5; dL/dlogp = −A·γ·r/(r+γ)² = −2·3/16 = −0.375
    logp = _leaf(math.log(3.0) - 1.0)
    out, stats = losses.shaped_off_policy(logp, _one(-1.0), _one(2.0), _one(1.0), gamma=1.0, mode="ratio")
    out.sum().backward()
    assert out.item() == pytest.approx(-1.5)
    assert logp.grad is not None and logp.grad.item() == pytest.approx(-0.375)
    assert stats["shaping_mean"].item() == pytest.approx(0.75)
    assert stats["ratio_mean"].item() == pytest.approx(3.0)


def test_shaped_prob_value_gradient_and_default_gamma() -> None:
    # π = 0.4, γ = 0.1 (GOLF's default): f = 0.4/0.5 = 0.8; A = −1: L = 0.8; dL/dlogp = −A·γπ/(π+γ)² = 0.04/0.25
    logp = _leaf(math.log(0.4))
    out, stats = losses.shaped_off_policy(logp, None, _one(-1.0), _one(1.0), mode="prob")
    out.sum().backward()
    assert out.item() == pytest.approx(0.8)
    assert logp.grad is not None and logp.grad.item() == pytest.approx(0.16)
    assert stats["prob_mean"].item() == pytest.approx(0.4)


@pytest.mark.parametrize(("mode", "gamma"), [("ratio", 1.0), ("ratio", 0.3), ("prob", 0.1)])
def test_shaped_autograd_matches_analytic_derivative(mode: losses.ShapingMode, gamma: float) -> None:
    gen = torch.Generator().manual_seed(0)
    logp = (-3 * torch.rand(4, 6, generator=gen, dtype=torch.float64)).requires_grad_()
    old = -3 * torch.rand(4, 6, generator=gen, dtype=torch.float64)
    adv = torch.randn(4, 6, generator=gen, dtype=torch.float64)
    mask = (torch.rand(4, 6, generator=gen) > 0.3).to(torch.float64)
    out, _ = losses.shaped_off_policy(logp, old, adv, mask, gamma=gamma, mode=mode)
    out.sum().backward()
    x = torch.exp(logp.detach() - old) if mode == "ratio" else torch.exp(logp.detach())
    expected = -adv * gamma * x / (x + gamma) ** 2 * mask
    assert logp.grad is not None and torch.allclose(logp.grad, expected)
    assert torch.allclose(out.detach(), -adv * x / (x + gamma) * mask)


def test_shaped_has_no_clipping_and_checks_arguments() -> None:
    # r = e^3 ≫ 1 + ε: PPO would cut the gradient; the shaped loss keeps −A·γr/(r+γ)²
    logp = _leaf(3.0)
    out, _ = losses.shaped_off_policy(logp, _one(0.0), _one(1.0), _one(1.0))
    out.sum().backward()
    r = math.exp(3.0)
    assert logp.grad is not None and logp.grad.item() == pytest.approx(-r / (r + 1) ** 2)
    with pytest.raises(ValueError, match="old_logp"):
        losses.shaped_off_policy(_one(0.0), None, _one(1.0), _one(1.0), mode="ratio")
    with pytest.raises(ValueError, match="gamma"):
        losses.shaped_off_policy(_one(0.0), _one(0.0), _one(1.0), _one(1.0), gamma=0.0)


# --------------------------------------------------------------------------------------------------------------
# sft_nll, dpo
# --------------------------------------------------------------------------------------------------------------


def test_sft_nll_and_sequence_logp() -> None:
    logp = torch.tensor([[-1.0, -2.0, 9.0], [-0.5, 7.0, 7.0]])
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    assert losses.sft_nll(logp, mask).tolist() == [[1.0, 2.0, 0.0], [0.5, 0.0, 0.0]]
    assert losses.sequence_logp(logp, mask).tolist() == [-3.0, -0.5]


def test_dpo_values_margins_and_accuracy() -> None:
    # pair 0: r_c = 0.1·(−10 + 12) = 0.2, r_r = 0.1·(−11 + 10) = −0.1, margin 0.3, loss = log(1 + e^−0.3)
    # pair 1: r_c = 0, r_r = 0.1·(−4 + 5) = 0.1, margin −0.1, loss = log(1 + e^0.1)
    loss, stats = losses.dpo(
        policy_chosen=torch.tensor([-10.0, -5.0]),
        policy_rejected=torch.tensor([-11.0, -4.0]),
        ref_chosen=torch.tensor([-12.0, -5.0]),
        ref_rejected=torch.tensor([-10.0, -5.0]),
        beta=0.1,
    )
    # log(1 + e^−0.3) = 0.5543552, log(1 + e^0.1) = 0.7443967
    assert loss.item() == pytest.approx((0.5543552 + 0.7443967) / 2, abs=1e-6)
    assert loss.item() == pytest.approx((math.log1p(math.exp(-0.3)) + math.log1p(math.exp(0.1))) / 2)
    assert stats["chosen_reward"].item() == pytest.approx(0.1)
    assert stats["rejected_reward"].item() == pytest.approx(0.0)
    assert stats["reward_margin"].item() == pytest.approx(0.1)
    assert stats["reward_accuracy"].item() == 0.5


def test_dpo_gradient_raises_chosen_and_lowers_rejected() -> None:
    chosen = torch.tensor([-3.0], requires_grad=True)
    rejected = torch.tensor([-3.0], requires_grad=True)
    loss, _ = losses.dpo(chosen, rejected, torch.tensor([-3.0]), torch.tensor([-3.0]), beta=0.1)
    loss.backward()
    # margin 0: dL/dmargin = −σ(−0) = −0.5, times β
    assert chosen.grad is not None and chosen.grad.item() == pytest.approx(-0.05)
    assert rejected.grad is not None and rejected.grad.item() == pytest.approx(0.05)


# --------------------------------------------------------------------------------------------------------------
# kl_k3, entropy
# --------------------------------------------------------------------------------------------------------------


def test_kl_k3() -> None:
    logp = torch.tensor([[-1.0, -2.0, -1.5, 0.0]])
    ref = torch.tensor([[-2.0, -1.0, -1.5, 300.0]])
    # d = −1: e^−1 + 1 − 1 = 0.367879; d = 1: e − 2 = 0.718282; d = 0: 0
    values = losses.kl_k3(logp, ref)
    assert values[0, :3].tolist() == pytest.approx([math.exp(-1), math.e - 2, 0.0], abs=1e-6)
    masked = losses.kl_k3(logp, ref, mask=torch.tensor([[1, 1, 1, 0]]))
    assert masked[0, 3].item() == 0.0  # padding with an overflowing d gives 0, not inf


def test_entropy_from_logits() -> None:
    logits = torch.tensor([[[0.0, 0.0, 0.0, 0.0], [0.0, math.log(3.0), -1e9, -1e9], [1000.0, 1000.0, 0.0, 0.0]]])
    # uniform over 4: ln 4; p = (1/4, 3/4): −(¼ln¼ + ¾ln¾); two huge equal logits: ln 2 without overflow
    expected = [math.log(4), -(0.25 * math.log(0.25) + 0.75 * math.log(0.75)), math.log(2)]
    assert losses.entropy_from_logits(logits)[0].tolist() == pytest.approx(expected, abs=1e-6)


def test_entropy_with_banned_tokens_has_finite_gradient() -> None:
    logits = torch.tensor([0.0, 0.0, -math.inf], requires_grad=True)
    entropy = losses.entropy_from_logits(logits)
    entropy.backward()
    assert entropy.item() == pytest.approx(math.log(2))
    assert logits.grad is not None and torch.isfinite(logits.grad).all()


# --------------------------------------------------------------------------------------------------------------
# aggregate
# --------------------------------------------------------------------------------------------------------------

PER_TOKEN = torch.tensor([[1.0, 2.0, 3.0, 100.0], [4.0, 100.0, 100.0, 100.0], [9.0, 9.0, 9.0, 9.0]])
MASK = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]])


@pytest.mark.parametrize(
    ("mode", "norm_constant", "expected"),
    [
        ("token_mean", None, (1 + 2 + 3 + 4) / 4),  # 2.5
        ("seq_mean_token_mean", None, (2.0 + 4.0) / 2),  # row means 2 and 4; the empty row is left out
        ("seq_sum", None, (6 + 4 + 0) / 3),  # every row counts, the empty one as 0
        ("seq_sum", 4.0, (6 + 4 + 0) / 3 / 4),
    ],
)
def test_aggregate_modes(mode: losses.Aggregation, norm_constant: float | None, expected: float) -> None:
    assert losses.aggregate(PER_TOKEN, MASK, mode, norm_constant).item() == pytest.approx(expected)


def test_aggregate_gradients_weight_tokens_as_documented() -> None:
    x = torch.ones(2, 3, requires_grad=True)
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]])
    losses.aggregate(x, mask, "seq_mean_token_mean").backward()
    # each sequence weighs ½, split over its own tokens
    assert x.grad is not None and x.grad.flatten().tolist() == pytest.approx([1 / 6] * 3 + [0.5, 0.0, 0.0])


def test_aggregate_empty_mask_and_errors() -> None:
    zeros = torch.zeros(2, 3, dtype=torch.long)
    for mode in losses.AGGREGATIONS:
        assert losses.aggregate(PER_TOKEN[:2, :3], zeros, mode).item() == 0.0
    with pytest.raises(ValueError, match="seq_sum"):
        losses.aggregate(PER_TOKEN, MASK, "token_mean", norm_constant=4.0)
    with pytest.raises(ValueError, match="unknown aggregation"):
        losses.aggregate(PER_TOKEN, MASK, "mean")


# --------------------------------------------------------------------------------------------------------------
# low_prob_mask, advantages_to_tokens
# --------------------------------------------------------------------------------------------------------------

BEHAVIOUR = torch.tensor([[-1.0, -6.0, -2.0], [-0.5, -5.0, -7.0]])  # −5.0 is kept (< threshold drops); −7 is padding
BEHAVIOUR_MASK = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])


def test_low_prob_mask_token_level() -> None:
    out = losses.low_prob_mask(BEHAVIOUR, BEHAVIOUR_MASK, threshold=-5.0, level="token")
    assert out.tolist() == [[1.0, 0.0, 1.0], [1.0, 1.0, 0.0]]
    assert out.dtype == BEHAVIOUR_MASK.dtype


def test_low_prob_mask_sequence_level() -> None:
    out = losses.low_prob_mask(BEHAVIOUR, BEHAVIOUR_MASK.bool(), level="sequence")
    # row 0 has a −6 token: dropped whole; row 1's −7 is padding and does not count
    assert out.tolist() == [[False, False, False], [True, True, False]]
    with pytest.raises(ValueError, match="level"):
        losses.low_prob_mask(BEHAVIOUR, BEHAVIOUR_MASK, level="batch")


def test_advantages_to_tokens() -> None:
    out = losses.advantages_to_tokens([0.5, [0.0, 0.0, 2.0], np.float32(-1.0)], [2, 3, 1])
    assert out.tolist() == [[0.5, 0.5, 0.0], [0.0, 0.0, 2.0], [-1.0, 0.0, 0.0]]
    assert out.dtype == torch.float32
    assert losses.advantages_to_tokens([1.0], [2], width=4).tolist() == [[1.0, 1.0, 0.0, 0.0]]
    assert losses.advantages_to_tokens([], []).shape == (0, 0)
    with pytest.raises(ValueError, match="2 per-token advantages for 3"):
        losses.advantages_to_tokens([[1.0, 2.0]], [3])
    with pytest.raises(ValueError, match="width"):
        losses.advantages_to_tokens([1.0], [3], width=2)
    with pytest.raises(ValueError, match="2 advantages for 1"):
        losses.advantages_to_tokens([1.0, 2.0], [3])
