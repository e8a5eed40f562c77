"""Training a bfloat16 model (the hf backend's default on GPU) through float32 master weights, checked on CPU.

Without master copies AdamW's small steps round away in bfloat16: at lr 1e-6, five updates moved under 1% of the
toy model's entries, and the direction they moved in had cosine 0.06 with float32 training's. With them, every
entry's float32 copy moves, and the direction agrees with float32 training (cosine 0.93 at lr 1e-6 and 1e-5).
"""

from __future__ import annotations

import copy
import json

import pytest
import torch

from arena.core.learn.master_weights import MasterWeights, wants_master_weights
from arena.core.learn.trainer import LossConfig, OptimConfig, Trainer
from tests.learning.test_trainer import params, sampled
from tests.toy_model import build_model, build_tokenizer


@pytest.fixture(scope="module")
def toy():
    tokenizer = build_tokenizer()
    return tokenizer, lambda seed=0: build_model(len(tokenizer), tokenizer.eos_token_id, tokenizer.pad_token_id, seed)


@pytest.fixture(scope="module")
def samples(toy):
    return sampled(toy, n=8)


def _train(toy, samples, dtype: torch.dtype, master: bool, lr: float, updates: int = 5) -> tuple[torch.Tensor, Trainer]:
    """(how far the weights the optimizer steps moved, flattened in float32; the trainer)."""
    _, make = toy
    model = make().to(dtype)
    start = params(model).float()
    trainer = Trainer(model, OptimConfig(lr=lr, master_weights=master), LossConfig())
    for _ in range(updates):
        trainer.update(samples)
    stepped = torch.cat([p.detach().flatten() for p in trainer._stepped_parameters()]).float()
    return stepped - start, trainer


def _cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.nn.functional.cosine_similarity(a, b, dim=0))


@pytest.mark.parametrize("lr", [1e-6, 1e-5])
def test_bf16_with_master_weights_trains_like_float32_and_without_them_barely_moves(toy, samples, lr: float) -> None:
    reference, fp32 = _train(toy, samples, torch.float32, True, lr)
    assert fp32.master is None  # float32 models are stepped directly
    lost, plain = _train(toy, samples, torch.bfloat16, False, lr)
    kept, mixed = _train(toy, samples, torch.bfloat16, True, lr)
    assert plain.master is None and mixed.master is not None
    moved = {"direct": float((lost != 0).float().mean()), "master": float((kept != 0).float().mean())}
    cosine = {"direct": _cosine(lost, reference), "master": _cosine(kept, reference)}
    print(json.dumps({"lr": lr, "moved": moved, "cosine_with_float32": cosine}))  # docs/training.md, "Precision"
    assert float((lost != 0).float().mean()) < 0.05  # the bug master weights exist for
    assert _cosine(lost, reference) < 0.3
    assert float((kept != 0).float().mean()) > 0.99
    assert _cosine(kept, reference) > 0.85
    assert 0.8 < float(kept.norm() / reference.norm()) < 1.25


def test_model_holds_its_master_copies_rounded_and_gets_no_stale_gradients(toy, samples) -> None:
    _, trainer = _train(toy, samples, torch.bfloat16, True, 1e-3, updates=2)
    assert trainer.master is not None
    for (name, param), master in zip(trainer.model.named_parameters(), trainer.master.parameters(), strict=True):
        assert param.dtype == torch.bfloat16 and master.dtype == torch.float32, name
        assert torch.equal(param.detach(), master.detach().to(torch.bfloat16)), name
        assert param.grad is None and master.grad is None, name


def test_micro_batches_accumulate_in_float32(toy, samples) -> None:
    """Cutting a minibatch into micro-batches sums their gradients in float32: the step matches one big batch."""
    _, make = toy
    moved = []
    for budget in (10**6, 64):  # one micro-batch; many
        model = make().to(torch.bfloat16)
        trainer = Trainer(model, OptimConfig(lr=1e-3, micro_batch_tokens=budget), LossConfig())
        assert (len(list(trainer.micro_batches(samples))) > 1) == (budget < 1000)
        trainer.update(samples)
        assert trainer.master is not None
        moved.append(torch.cat([p.detach().flatten() for p in trainer.master.parameters()]))
    # bf16 forward passes of different batch shapes differ a little; the update direction is the same.
    start = params(make()).float()
    assert _cosine(moved[0] - start, moved[1] - start) > 0.99


def test_checkpoint_state_restores_the_master_copies_bit_for_bit(toy, samples) -> None:
    _, make = toy
    _, trainer = _train(toy, samples, torch.bfloat16, True, 1e-4, updates=2)
    state = copy.deepcopy(trainer.state_dict())  # a checkpoint holds copies; the live state shares its tensors
    assert set(state["master_weights"]) == {n for n, p in trainer.model.named_parameters() if p.requires_grad}
    model = make().to(torch.bfloat16)
    model.load_state_dict(trainer.model.state_dict())  # what a resume loads first: the rounded weights
    resumed = Trainer(model, OptimConfig(lr=1e-4), LossConfig())
    resumed.load_state_dict(state)
    assert resumed.master is not None and trainer.master is not None
    for a, b in zip(resumed.master.parameters(), trainer.master.parameters(), strict=True):
        assert torch.equal(a, b)
    trainer.update(samples)
    resumed.update(samples)
    assert torch.equal(params(resumed.model), params(trainer.model))


def test_state_without_master_copies_starts_them_from_the_model(toy, samples) -> None:
    _, make = toy
    _, fp32 = _train(toy, samples, torch.float32, True, 1e-4, updates=1)
    state = fp32.state_dict()
    assert "master_weights" not in state
    model = make().to(torch.bfloat16)
    model.load_state_dict({k: v.to(torch.bfloat16) for k, v in fp32.model.state_dict().items()})
    resumed = Trainer(model, OptimConfig(lr=1e-4), LossConfig())
    resumed.load_state_dict(state)
    assert resumed.master is not None
    for param, master in zip(model.parameters(), resumed.master.parameters(), strict=True):
        assert torch.equal(master, param.detach().float())


def test_master_weights_skip_frozen_parameters(toy) -> None:
    _, make = toy
    model = make().to(torch.bfloat16)
    frozen = next(model.parameters())
    frozen.requires_grad_(False)
    assert wants_master_weights(model)
    master = MasterWeights(model)
    assert len(master.parameters()) == sum(1 for p in model.parameters() if p.requires_grad)
    with pytest.raises(KeyError, match="missing"):
        master.load_state_dict({})
    for p in model.parameters():
        p.requires_grad_(False)
    assert not wants_master_weights(model)
