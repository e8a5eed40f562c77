"""What EMPO²'s off-policy update pushes, in expectation, on a one-decision task (the vault, docs/results.md).

A memory group is sampled from the policy *with* tips (μ) and trained in the context *without* them (π), with
ratio π/μ and GRPO's group baseline. At the first step no clip binds (hits have r = π/μ < 1, a positive advantage
is never clipped below; misses have r > 1 with a negative advantage, never clipped above), so the group's gradient
is Σ_i (R_i − R̄)·(π/μ)(a_i)·∇log π(a_i), whose expectation is (G − 1)·∇E_π[R]: the on-policy group's. The update
is an importance-weighted estimate of the *same* gradient as GRPO's on the plain prompt; it can only win through its
variance (a memory group almost always holds a hit; a blind one often none). These tests pin that down with the
trainer's own PPO loss (``arena.core.learn.losses.ppo_clip``) on a softmax over the chests, and show what a ratio
taken against the stripped context instead (r = 1: the bug issue 22 fixed) would do: clone the memory policy,
a different and larger push.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arena.core.learn.losses import ppo_clip

CHESTS, GROUP, TREASURE = 9, 8, 3


def _group_gradient(
    behaviour: np.ndarray, groups: int, *, ratio_against_behaviour: bool, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Per-group gradient of the summed PPO objective (EMPO²'s clips: 0.2 / 0.3, dual 10) on the logits of a
    uniform softmax policy, for ``groups`` groups of ``GROUP`` actions drawn from ``behaviour``; returns the gradients
    on the treasure's logit, one per group, and their mean over groups for every logit.

    One backward pass gives each action's ∂objective/∂log π(a_i); the softmax's ∂log π(a)/∂z = e_a − π does the
    rest, so no per-group graph is walked."""
    rng = np.random.default_rng(seed)
    pi = np.full(CHESTS, 1 / CHESTS)
    actions = rng.choice(CHESTS, size=(groups, GROUP), p=behaviour)
    rewards = torch.as_tensor(actions == TREASURE, dtype=torch.float32)
    adv = rewards - rewards.mean(dim=1, keepdim=True)  # GRPO, std_norm off
    logp = torch.full(actions.shape, float(np.log(1 / CHESTS)), requires_grad=True)
    old = torch.as_tensor(np.log(behaviour[actions]), dtype=torch.float32) if ratio_against_behaviour else logp.detach()
    loss, _ = ppo_clip(logp, old, adv, torch.ones_like(adv), clip_low=0.2, clip_high=0.3, dual_clip=10.0)
    (coef,) = torch.autograd.grad(-loss.sum(), logp)  # ∂objective/∂log π(a_i)
    onehot = np.eye(CHESTS)[actions]  # (groups, G, chests)
    per_group = np.einsum("gi,gic->gc", coef.numpy(), onehot - pi)
    return per_group[:, TREASURE], per_group.mean(axis=0)


def _policy_gradient() -> np.ndarray:
    """(G − 1)·∇E_π[R] on the logits of the uniform softmax: (G − 1)·π_c·(e_c − π)."""
    pi = np.full(CHESTS, 1 / CHESTS)
    return (GROUP - 1) * pi[TREASURE] * (np.eye(CHESTS)[TREASURE] - pi)


def test_the_off_policy_group_pushes_what_the_on_policy_group_pushes_in_expectation() -> None:
    blind = np.full(CHESTS, 1 / CHESTS)
    memory = np.full(CHESTS, 0.5 / (CHESTS - 1))
    memory[TREASURE] = 0.5  # tiny-vault with tips: the tips' chest half the time
    groups = 400_000
    _, on_policy = _group_gradient(blind, groups, ratio_against_behaviour=True, seed=1)
    _, off_policy = _group_gradient(memory, groups, ratio_against_behaviour=True, seed=2)
    expected = _policy_gradient()
    assert on_policy == pytest.approx(expected, abs=0.004)
    assert off_policy == pytest.approx(expected, abs=0.004)
    # A ratio against the stripped context (r = 1) clones the memory policy instead: (G − 1)·Cov_μ(R, ∇log π),
    # on the treasure's logit (G − 1)·μ_c·(1 − μ_c)·... far larger than the policy gradient.
    _, cloned = _group_gradient(memory, groups, ratio_against_behaviour=False, seed=3)
    assert cloned[TREASURE] == pytest.approx((GROUP - 1) * 0.5 * (1 - 0.5), abs=0.01)
    assert cloned[TREASURE] > 2 * expected[TREASURE]


def test_the_off_policy_groups_estimate_is_steadier() -> None:
    """Same mean, less noise: the share of groups with any push on the treasure, and the spread of that push."""
    blind = np.full(CHESTS, 1 / CHESTS)
    memory = np.full(CHESTS, 0.5 / (CHESTS - 1))
    memory[TREASURE] = 0.5
    on_policy, _ = _group_gradient(blind, 20_000, ratio_against_behaviour=True, seed=4)
    off_policy, _ = _group_gradient(memory, 20_000, ratio_against_behaviour=True, seed=5)
    assert np.mean(on_policy != 0) == pytest.approx(1 - (8 / 9) ** 8, abs=0.04)  # 0.61: a group with a hit
    assert np.mean(off_policy != 0) > 0.98
    assert np.std(off_policy) < 0.6 * np.std(on_policy)
