"""The guard on every update: non-finite losses and gradients skip the step and are counted; a run that keeps
producing them, or whose parameters turn non-finite, stops with one clear error before a checkpoint holds NaNs."""

from __future__ import annotations

import math
from pathlib import Path

import attrs
import pytest
import torch

from arena.core.api.errors import ArenaError
from arena.core.learn import checkpoint as ck
from arena.core.learn.run import Run
from arena.core.learn.trainer import LossConfig, NonFiniteError, OptimConfig, Trainer
from tests.faults.conftest import train_config
from tests.learning.test_trainer import sampled
from tests.toy_model import build_model, build_tokenizer


@pytest.fixture(scope="module")
def toy():
    tokenizer = build_tokenizer()
    return tokenizer, lambda seed=0: build_model(len(tokenizer), tokenizer.eos_token_id, tokenizer.pad_token_id, seed)


def test_nonfinite_losses_skip_and_count_then_stop(toy) -> None:
    tokenizer, make = toy
    model = make()
    trainer = Trainer(model, OptimConfig(lr=1e-3, max_nonfinite_steps=3), LossConfig(), pad_id=tokenizer.pad_token_id)
    good = sampled(toy, n=4)
    bad = [attrs.evolve(s, advantage=math.nan) for s in good]
    before = [p.detach().clone() for p in model.parameters()]
    metrics = trainer.update(bad)
    assert metrics["train/skipped_steps"] == 1 and metrics["train/nonfinite_steps"] == 1
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))  # nothing moved
    metrics = trainer.update(good)  # a good step resets the run of bad ones, not the total
    assert metrics["train/skipped_steps"] == 0 and metrics["train/nonfinite_steps"] == 1
    assert all(bool(torch.isfinite(p).all()) for p in model.parameters())
    trainer.update(bad)
    trainer.update(bad)
    with pytest.raises(NonFiniteError, match="3 optimizer steps in a row had a non-finite loss or gradient"):
        trainer.update(bad)
    # The counters are part of the trainer's state: a resumed run counts on.
    assert trainer.state_dict()["nonfinite"] == [4, 3]


def test_parameters_that_turn_nonfinite_stop_the_run(toy) -> None:
    tokenizer, make = toy
    trainer = Trainer(make(), OptimConfig(lr=1e-3), LossConfig(), pad_id=tokenizer.pad_token_id)
    samples = sampled(toy, n=4)
    trainer.update(samples)
    for state in trainer.optimizer.state.values():  # bytes flipped in the moments, as a damaged resume would
        state["exp_avg"].view(-1)[0] = math.nan
        break
    with pytest.raises(NonFiniteError, match="made 1 parameter tensor\\(s\\) non-finite"):
        trainer.update(samples)


def test_a_run_stops_before_writing_nans_into_a_checkpoint(
    toy_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = Trainer.update
    calls = []

    def poisoned(self: Trainer, samples):  # from the second update on, the optimizer's moments are NaN
        calls.append(1)
        if len(calls) == 2:
            for state in self.optimizer.state.values():
                state["exp_avg"].fill_(math.nan)
        return original(self, samples)

    monkeypatch.setattr(Trainer, "update", poisoned)
    with pytest.raises(ArenaError, match=r"non-finite .*before writing them into a checkpoint"):
        Run(train_config(toy_dir, iterations=3), tmp_path / "run", progress=False).run()
    assert [ck.step_of(p) for p in ck.checkpoint_dirs(tmp_path / "run")] == [1]
    models, _ = ck.load_checkpoint(ck.latest_checkpoint(tmp_path / "run"))  # verifies: all finite
    assert all(bool(torch.isfinite(t).all()) for t in models["agent"].values())
