"""Old log-probs recomputed by the trainer and truncated importance sampling, for samplers that are not the policy.

A sampler that computes differently from the trainer (vLLM's kernels, bf16) reports behaviour log-probs that are
off. Simulated here by shifting the float32 hf backend's exact ones: PPO against them sees a ratio far from 1
before any step; against recomputed old log-probs it starts at 1, and TIS weighs each token by the capped ratio.
"""

from __future__ import annotations

import attrs
import pytest
import torch

from arena.core.api.samples import Sample
from arena.core.learn import losses
from arena.core.learn.trainer import LossConfig, OptimConfig, Trainer
from tests.learning.test_trainer import params, sampled
from tests.toy_model import build_model, build_tokenizer


@pytest.fixture(scope="module")
def toy():
    tokenizer = build_tokenizer()
    return tokenizer, lambda seed=0: build_model(len(tokenizer), tokenizer.eos_token_id, tokenizer.pad_token_id, seed)


def shifted(samples: list[Sample], by: float, every: int = 1) -> list[Sample]:
    """Samples whose reported behaviour log-probs are ``by`` lower (every ``every``-th sample)."""
    return [
        attrs.evolve(s, behaviour_logprobs=tuple(x - by for x in s.behaviour_logprobs)) if i % every == 0 else s
        for i, s in enumerate(samples)
    ]


def train(toy, samples: list[Sample], loss: LossConfig) -> tuple[dict[str, float], torch.Tensor]:
    _, make = toy
    model = make()
    # eps 1e-4: with Adam's default a weight whose gradient is ~1e-12 moves by ~lr whatever its sign, so the
    # last bits of a recomputed log-prob would decide its direction (see tests/learning/test_multiprocess.py).
    metrics = Trainer(model, OptimConfig(lr=1e-3, eps=1e-4), loss).update(samples)
    return metrics, params(model)


def test_recomputed_old_logprobs_equal_exact_behaviour_ones_and_change_nothing(toy) -> None:
    samples = sampled(toy, n=6)
    plain, plain_weights = train(toy, samples, LossConfig())
    again, again_weights = train(toy, samples, LossConfig(old_logprobs="recompute"))
    assert again["train/rollout_logprob_gap"] < 1e-4  # hf float32 samples from the trained model itself
    assert torch.allclose(again_weights, plain_weights, atol=1e-6)
    assert again["train/loss"] == pytest.approx(plain["train/loss"], abs=1e-5)
    assert "train/rollout_logprob_gap" not in plain


def test_recomputed_old_logprobs_start_the_ratio_at_one_when_the_sampler_is_off(toy) -> None:
    samples = shifted(sampled(toy, n=6, advantage=1.0), by=0.5)
    off, _ = train(toy, samples, LossConfig())
    fixed, _ = train(toy, samples, LossConfig(old_logprobs="recompute"))
    # Against the shifted log-probs every ratio starts at e^0.5 = 1.65: half the tokens (A > 0) are clipped
    # before the first step, and get no gradient.
    assert off["train/clip_fraction"] == pytest.approx(0.5, abs=0.05)
    assert fixed["train/clip_fraction"] == 0.0
    assert fixed["train/rollout_logprob_gap"] == pytest.approx(0.5, abs=1e-4)


def test_truncated_importance_sampling_weighs_tokens_by_the_capped_ratio(toy) -> None:
    base = sampled(toy, n=6)
    exact, exact_weights = train(toy, base, LossConfig(old_logprobs="recompute", tis_cap=2.0))
    assert exact["train/tis_weight"] == pytest.approx(1.0, abs=1e-4) and exact["train/tis_capped_fraction"] == 0.0
    _, plain_weights = train(toy, base, LossConfig(old_logprobs="recompute"))
    assert torch.allclose(exact_weights, plain_weights, atol=1e-6)

    samples = shifted(base, by=1.0, every=2)  # the sampler under-reports every other sample: ratio e^1 = 2.72
    metrics, _ = train(toy, samples, LossConfig(old_logprobs="recompute", tis_cap=2.0))
    share = sum(len(s.completion_ids) for s in samples[::2]) / sum(len(s.completion_ids) for s in samples)
    assert metrics["train/tis_capped_fraction"] == pytest.approx(share, abs=1e-6)
    assert metrics["train/tis_weight"] == pytest.approx(2.0 * share + 1.0 * (1 - share), abs=1e-3)


def test_truncated_is_weights() -> None:
    old = torch.tensor([[0.0, -1.0, -2.0]])
    behaviour = torch.tensor([[0.0, -2.0, -0.5]])
    weights, capped = losses.truncated_is_weights(old, behaviour, cap=2.0)
    assert torch.allclose(weights, torch.tensor([[1.0, 2.0, float(torch.exp(torch.tensor(-1.5)))]]))
    assert capped.tolist() == [[False, True, False]]
    with pytest.raises(ValueError, match="positive"):
        losses.truncated_is_weights(old, behaviour, cap=0.0)


def test_off_policy_samples_keep_the_log_probs_of_their_generator(toy) -> None:
    """HeRL's and GOLF's shaped losses compare with whatever generated the text: recompute leaves them alone."""
    samples = shifted(sampled(toy, n=4, loss="shaped_ratio"), by=0.3)
    _, plain_weights = train(toy, samples, LossConfig())
    again, again_weights = train(toy, samples, LossConfig(old_logprobs="recompute"))
    assert "train/rollout_logprob_gap" not in again
    assert torch.equal(again_weights, plain_weights)


def test_tis_needs_recomputed_old_logprobs() -> None:
    with pytest.raises(ValueError, match="recompute"):
        LossConfig(tis_cap=2.0)
    with pytest.raises(ValueError, match="positive"):
        LossConfig(old_logprobs="recompute", tis_cap=-1.0)


def test_recomputed_old_logprobs_of_a_tip_stripped_sample_keep_the_tips(toy) -> None:
    # Issue 22, defect 2: EMPO²'s off-policy ratio is π_θ(a | no tips) / π_old(a | tips). With old log-probs
    # recomputed, π_old was taken in the stripped training context, so the first-step ratio was 1: plain PPO.
    from arena.core.api.backend import ChatMessage, GenerationRequest, Segment
    from arena.core.api.records import TrialSpec
    from arena.core.backends.hf import HFBackend
    from arena.core.learn.logprobs import policy_logprobs
    from arena.plugins.empo2 import EMPO2, MEMORY_SECTION

    tokenizer, make = toy
    model = make()
    backend = HFBackend(model, tokenizer)
    trial = TrialSpec(
        trial_id="t0",
        arena_id="kuhn_poker",
        seats=("model:x",),
        seed=1,
        options={"empo2": {"p": 1.0, "q": 1.0}},
        meta={"iteration": 0, "run_seed": 0},
    )
    plugin = EMPO2(embed=lambda texts: None)  # type: ignore[arg-type]
    plugin.trial_start(trial=trial)
    with_tips = (ChatMessage("user", f"poker\n\n{MEMORY_SECTION}\n<tip>bluff with the jack</tip>\n\nthe card is high"),)
    request = GenerationRequest(messages=with_tips, segments=(Segment(temperature=1.0),), max_new_tokens=8, seed=3)
    ((completion,),) = backend.generate([request])
    sample = Sample(
        learner="a",
        trial_id="t0",
        episode=0,
        turn=0,
        agent="player_0",
        kind="action",
        context_ids=completion.prompt_token_ids,
        completion_ids=completion.token_ids,
        behaviour_logprobs=completion.logprobs,
        temperatures=completion.temperatures,
        context_messages=with_tips,
        advantage=1.0,
        group_id="g",
    )
    view = plugin.training_view(
        sample=sample, encode=lambda m: tuple(backend.prompt_ids(GenerationRequest(messages=tuple(m))))
    )
    assert view is not None and view.context_ids != sample.context_ids

    trainer = Trainer(model, OptimConfig(lr=1e-3), LossConfig(old_logprobs="recompute"))
    (with_old,) = trainer._with_old_logprobs([view], model)
    old = torch.tensor(with_old.meta["old_logprobs"])
    no_tips, _, _ = policy_logprobs(model, [view.context_ids], [view.completion_ids], [view.temperatures])
    with_tips_lp, _, _ = policy_logprobs(model, [sample.context_ids], [view.completion_ids], [view.temperatures])
    n = len(view.completion_ids)
    assert torch.allclose(old, with_tips_lp[0, :n], atol=1e-4)  # π_old with the tips, as sampled
    assert torch.allclose(old, torch.tensor(sample.behaviour_logprobs), atol=1e-4)
    first_ratio = (no_tips[0, :n] - old).exp()
    assert (first_ratio - 1).abs().max() > 1e-2  # π_θ(no tips) / π(tips), not 1
