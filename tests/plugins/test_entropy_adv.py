"""The entropy_adv plugin against advantages shaped by hand: A + min(α·H, |A|/κ) on unmasked tokens only."""

from __future__ import annotations

import pytest
import torch

from arena.core.api.errors import ConfigError, PluginError
from arena.core.api.samples import Sample
from arena.core.host.plugins import PluginSet
from arena.plugins import entropy_adv


def sample(tokens: int) -> Sample:
    return Sample(
        learner="L",
        trial_id="t0",
        episode=0,
        turn=0,
        agent="player_0",
        kind="action",
        context_ids=(1, 2),
        completion_ids=tuple(range(tokens)),
        behaviour_logprobs=(0.0,) * tokens,
        temperatures=(1.0,) * tokens,
    )


# Three rows, T = 4. Row 0: A = +1 on three tokens, then a padded position (mask 0) holding junk that must stay.
# Row 1: A = -1 on all four. Row 2: A = 0 (a group where everyone scored the same) with high entropy.
ADV = torch.tensor([[1.0, 1.0, 1.0, 7.0], [-1.0, -1.0, -1.0, -1.0], [0.0, 0.0, 0.0, 0.0]])
ENT = torch.tensor([[0.5, 2.0, 3.0, 5.0], [0.5, 2.0, 0.0, 0.0], [3.0, 3.0, 3.0, 3.0]])
MASK = torch.tensor([[1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]])
# α = 0.4, κ = 2, so the cap |A|/κ is 0.5 on rows 0 and 1:
EXPECTED = torch.tensor(
    [
        # 1 + min(0.2, 0.5)  1 + min(0.8, 0.5)  1 + min(1.2, 0.5)  masked: untouched
        [1.2, 1.5, 1.5, 7.0],
        # -1 + min(0.2, 0.5)  -1 + min(0.8, 0.5)  -1 + min(0, 0.5)  -1 + min(0, 0.5)
        [-0.8, -0.5, -1.0, -1.0],
        # the cap |0|/κ = 0 binds: no bonus where there is no advantage
        [0.0, 0.0, 0.0, 0.0],
    ]
)


def test_hand_computed_shaping() -> None:
    out = entropy_adv.entropy_shaped(ADV, ENT, MASK, alpha=0.4, kappa=2.0)
    assert torch.allclose(out, EXPECTED, atol=1e-6)
    # The inputs are not modified in place.
    assert ADV[0, 0].item() == 1.0


def test_other_alpha_and_kappa() -> None:
    # α = 0.1, κ = 4: cap 0.25. Row 0: 1 + min(0.05, .25), 1 + min(0.2, .25), 1 + min(0.3, .25).
    out = entropy_adv.entropy_shaped(ADV, ENT, MASK, alpha=0.1, kappa=4.0)
    assert torch.allclose(out[0], torch.tensor([1.05, 1.2, 1.25, 7.0]), atol=1e-6)
    assert torch.allclose(out[1], torch.tensor([-0.95, -0.8, -1.0, -1.0]), atol=1e-6)


def test_sign_is_kept_for_kappa_above_one() -> None:
    adv = torch.tensor([[-0.3, 0.3, -2.0]])
    out = entropy_adv.entropy_shaped(adv, torch.full((1, 3), 100.0), torch.ones(1, 3), alpha=0.4, kappa=2.0)
    # The cap binds everywhere: A + |A|/2.
    assert torch.allclose(out, torch.tensor([[-0.15, 0.45, -1.0]]), atol=1e-6)


def test_entropy_carries_no_gradient() -> None:
    entropy = ENT.clone().requires_grad_(True)
    out = entropy_adv.entropy_shaped(ADV, entropy, MASK)
    assert not out.requires_grad


def test_hook_through_a_plugin_set_reads_its_options() -> None:
    plugins = PluginSet(["grpo", "entropy_adv"])
    assert plugins.implements("shape_token_advantages") == ["entropy_adv"]
    samples = [sample(3), sample(4), sample(4)]
    out = plugins.first("shape_token_advantages", samples=samples, advantages=ADV, entropy=ENT, mask=MASK, options={})
    assert torch.allclose(out, EXPECTED, atol=1e-6)
    out = plugins.first(
        "shape_token_advantages",
        samples=samples,
        advantages=ADV,
        entropy=ENT,
        mask=MASK,
        options={"entropy_adv": {"alpha": 0.1, "kappa": 4}},
    )
    assert torch.allclose(out[0], torch.tensor([1.05, 1.2, 1.25, 7.0]), atol=1e-6)


@pytest.mark.parametrize(
    "options",
    [{"entropy_adv": {"kappa": 0.0}}, {"entropy_adv": {"alpha": -0.1}}, {"entropy_adv": {"alfa": 0.4}}],
)
def test_bad_settings_are_errors(options: dict) -> None:
    with pytest.raises(ConfigError):
        entropy_adv.settings(options)
    with pytest.raises(PluginError, match="entropy_adv"):
        PluginSet(["entropy_adv"]).first(
            "shape_token_advantages", samples=[sample(4)] * 3, advantages=ADV, entropy=ENT, mask=MASK, options=options
        )


def test_shapes_must_agree() -> None:
    with pytest.raises(ValueError, match="same"):
        entropy_adv.entropy_shaped(ADV, ENT[:, :3], MASK)


def test_inside_the_trainer_the_hook_gets_the_policy_entropy_and_changes_the_update() -> None:
    from arena.core.api.backend import ChatMessage, GenerationRequest
    from arena.core.backends.hf import HFBackend
    from arena.core.learn.logprobs import policy_logprobs
    from arena.core.learn.trainer import LossConfig, OptimConfig, Trainer

    from ..toy_model import build_model, build_tokenizer

    tokenizer = build_tokenizer()

    def make() -> torch.nn.Module:
        return build_model(len(tokenizer), tokenizer.eos_token_id, tokenizer.pad_token_id)

    backend = HFBackend(make(), tokenizer)
    requests = [
        GenerationRequest(messages=(ChatMessage("user", f"prompt {i}"),), max_new_tokens=6, seed=i) for i in range(4)
    ]
    samples = [
        Sample(
            learner="L",
            trial_id=f"t{i}",
            episode=0,
            turn=0,
            agent="player_0",
            kind="action",
            context_ids=c.prompt_token_ids,
            completion_ids=c.token_ids,
            behaviour_logprobs=c.logprobs,
            temperatures=c.temperatures,
            advantage=1.0 if i % 2 == 0 else -1.0,
        )
        for i, (c,) in enumerate(backend.generate(requests))
    ]
    plugins = PluginSet(["grpo", "entropy_adv"])
    calls: list[tuple[list[Sample], torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]] = []

    def shape(batch: list[Sample], advantages: torch.Tensor, entropy: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        out = plugins.first(
            "shape_token_advantages", samples=batch, advantages=advantages, entropy=entropy, mask=mask, options={}
        )
        calls.append((list(batch), advantages, entropy, mask, out))
        return out

    after = []
    for shaped in (False, True):
        model = make()
        trainer = Trainer(model, OptimConfig(lr=1e-3, micro_batch_tokens=100_000, grad_clip=1e9), LossConfig())
        if shaped:
            trainer.shape_token_advantages = shape
        trainer.update(samples)
        after.append(torch.cat([p.detach().flatten() for p in model.parameters()]))
    assert len(calls) == 1
    batch, advantages, entropy, mask, out = calls[0]  # the trainer's micro-batch, in its own order
    assert sorted(s.trial_id for s in batch) == [s.trial_id for s in samples]
    assert advantages[:, 0].tolist() == [s.advantage for s in batch]
    assert not entropy.requires_grad
    # The entropy is the untrained policy's at each sampled position, at the token's temperature.
    with torch.no_grad():
        _, expected, _ = policy_logprobs(
            make(),
            [s.context_ids for s in batch],
            [s.completion_ids for s in batch],
            [s.temperatures for s in batch],
            pad_id=backend.pad_id,
            with_entropy=True,
        )
    assert expected is not None
    assert torch.allclose(entropy, expected, atol=1e-5)
    assert torch.allclose(out, advantages + torch.minimum(0.4 * entropy, advantages.abs() / 2.0) * mask, atol=1e-6)
    assert not torch.equal(out, advantages)
    # The shaped advantages are the ones the loss used: the update differs from the unshaped one.
    assert (after[0] - after[1]).abs().max().item() > 1e-6
