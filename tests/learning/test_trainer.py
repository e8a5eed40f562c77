"""The trainer: micro-batching does not change the update, losses move the policy the right way, NaN is skipped."""

from __future__ import annotations

import math

import pytest
import torch

from arena.core.api.backend import ChatMessage, GenerationRequest, Segment
from arena.core.api.samples import Sample
from arena.core.backends.hf import HFBackend
from arena.core.learn.logprobs import policy_logprobs
from arena.core.learn.trainer import LossConfig, OptimConfig, Trainer, token_weights
from tests.toy_model import build_model, build_tokenizer


@pytest.fixture(scope="module")
def toy():
    tokenizer = build_tokenizer()
    return tokenizer, lambda seed=0: build_model(len(tokenizer), tokenizer.eos_token_id, tokenizer.pad_token_id, seed)


def sampled(toy, n: int = 6, advantage: float = 1.0, loss: str = "ppo") -> list[Sample]:
    tokenizer, make = toy
    backend = HFBackend(make(), tokenizer)
    prompts = ["the card is high", "fold when low and bluff", "tic tac toe", "poker"]
    requests = [
        GenerationRequest(
            messages=(ChatMessage("user", prompts[i % len(prompts)]),),
            segments=(Segment(temperature=1.2, stop=("</strategy>",), max_new_tokens=4), Segment(temperature=0.7)),
            max_new_tokens=12,
            seed=i,
        )
        for i in range(n)
    ]
    out = []
    for i, (completion,) in enumerate(backend.generate(requests)):
        out.append(
            Sample(
                learner="a",
                trial_id=f"t{i}",
                episode=0,
                turn=0,
                agent="player_0",
                kind="action",
                context_ids=completion.prompt_token_ids,
                completion_ids=completion.token_ids,
                behaviour_logprobs=completion.logprobs,
                temperatures=completion.temperatures,
                loss=loss,  # type: ignore[arg-type]
                advantage=advantage if i % 2 == 0 else -advantage,
                group_id="g",
            )
        )
    return out


def params(model: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().flatten().clone() for p in model.parameters()])


def test_token_weights_sum_to_the_aggregation() -> None:
    assert token_weights([2, 4], "token_mean", None) == [1 / 6, 1 / 6]
    assert token_weights([2, 4], "seq_mean_token_mean", None) == [1 / 4, 1 / 8]
    assert token_weights([2, 4], "seq_sum", 10) == [1 / 20, 1 / 20]


def test_recompute_matches_behaviour_logprobs(toy) -> None:
    tokenizer, make = toy
    samples = sampled(toy)
    model = HFBackend(make(), tokenizer).model
    logp, _, mask = policy_logprobs(
        model, [s.context_ids for s in samples], [s.completion_ids for s in samples], [s.temperatures for s in samples]
    )
    for row, s in enumerate(samples):
        n = len(s.completion_ids)
        assert torch.allclose(logp[row, :n], torch.tensor(s.behaviour_logprobs), atol=1e-4)
        assert mask[row, :n].sum() == n


def test_micro_batches_keep_long_answers_apart_from_short_ones() -> None:
    def sample(context: int, completion: int, i: int) -> Sample:
        return Sample(
            learner="L", trial_id=f"t{i}", episode=0, turn=0, agent="a", kind="action",
            context_ids=(1,) * context, completion_ids=(2,) * completion,
            behaviour_logprobs=(0.0,) * completion, temperatures=(1.0,) * completion,
        )  # fmt: skip

    # Moves: long context, 4 tokens; reflections: short context, 100 tokens; both 200 tokens in all, interleaved.
    samples = [sample(196, 4, i) if i % 2 else sample(100, 100, i) for i in range(12)]
    trainer = Trainer(torch.nn.Linear(1, 1), OptimConfig(micro_batch_tokens=1600), LossConfig())
    batches = list(trainer.micro_batches(samples))
    assert sorted(i for b in batches for i in b) == list(range(12))
    for batch in batches:
        kinds = {len(samples[i].completion_ids) for i in batch}
        assert len(kinds) == 1  # never a move padded to a reflection's length
        layout = max(len(samples[i].context_ids) for i in batch) + max(len(samples[i].completion_ids) for i in batch)
        assert layout * len(batch) <= 1600


def test_micro_batching_does_not_change_the_update(toy) -> None:
    samples = sampled(toy, n=8)
    _, make = toy
    gradients = []
    for budget in (100_000, 40):
        model = make()
        trainer = Trainer(model, OptimConfig(lr=1e-3, micro_batch_tokens=budget, grad_clip=1e9), LossConfig())
        assert len(list(trainer.micro_batches(samples))) == (1 if budget > 1000 else 8)
        seen: list[torch.Tensor] = []
        step = trainer.optimizer.step

        def capture(*args, _seen=seen, _step=step, _model=model, **kwargs):
            _seen.append(torch.cat([p.grad.flatten().clone() for p in _model.parameters() if p.grad is not None]))
            return _step(*args, **kwargs)

        trainer.optimizer.step = capture  # type: ignore[method-assign]
        trainer.update(samples)
        gradients.append(seen[0])
    # Weights are computed per minibatch, so the accumulated gradient is the same up to float summation order.
    # (Padding differs between the two cuts, so float32 noise of ~1e-6 remains.)
    assert torch.allclose(gradients[0], gradients[1], rtol=1e-3, atol=2e-5)


def test_positive_advantage_raises_the_logprob(toy) -> None:
    _, make = toy
    samples = [s for s in sampled(toy, n=6, advantage=1.0) if s.advantage > 0]
    model = make()
    trainer = Trainer(model, OptimConfig(lr=1e-2), LossConfig())

    def seq_logp() -> float:
        with torch.no_grad():
            logp, _, mask = policy_logprobs(
                model,
                [s.context_ids for s in samples],
                [s.completion_ids for s in samples],
                [s.temperatures for s in samples],
            )
        return float((logp * mask).sum())

    before = seq_logp()
    metrics = trainer.update(samples)
    assert seq_logp() > before
    assert metrics["train/clip_fraction"] == 0.0  # first step: ratio 1 everywhere
    assert metrics["train/skipped_steps"] == 0


@pytest.mark.parametrize("loss", ["shaped_ratio", "shaped_prob", "sft"])
def test_other_losses_run_and_move_weights(toy, loss: str) -> None:
    _, make = toy
    model = make()
    before = params(model)
    metrics = Trainer(model, OptimConfig(lr=1e-3), LossConfig()).update(sampled(toy, loss=loss))
    assert math.isfinite(metrics["train/loss"]) and not torch.equal(before, params(model))


def test_kl_to_the_reference_starts_at_zero(toy) -> None:
    _, make = toy
    metrics = Trainer(make(), OptimConfig(lr=1e-3), LossConfig(kl_coef=0.1)).update(sampled(toy))
    assert abs(metrics["train/kl"]) < 1e-6


def test_dpo_pairs_start_at_log_two(toy) -> None:
    _, make = toy
    raw = sampled(toy, n=4)
    pairs = []
    for i in range(0, 4, 2):
        pairs.append(attrs_evolve(raw[i], loss="dpo_chosen", meta={"pair": i}))
        pairs.append(attrs_evolve(raw[i + 1], loss="dpo_rejected", meta={"pair": i}))
    trainer = Trainer(make(), OptimConfig(lr=1e-3, micro_batch_tokens=10), LossConfig(dpo_beta=0.1))
    metrics = trainer.update(pairs)
    assert metrics["train/loss"] == pytest.approx(math.log(2), abs=1e-5)


def test_dpo_and_sft_in_one_minibatch_are_each_weighted_by_their_own_kind(toy) -> None:
    """DPO is the mean over the minibatch's pairs; SFT is a token mean over the SFT samples only (not the pairs')."""
    _, make = toy
    raw = sampled(toy, n=6)
    batch = []
    for i in range(0, 4, 2):
        batch.append(attrs_evolve(raw[i], loss="dpo_chosen", meta={"pair": i}))
        batch.append(attrs_evolve(raw[i + 1], loss="dpo_rejected", meta={"pair": i}))
    sft = [attrs_evolve(raw[4], loss="sft"), attrs_evolve(raw[5], loss="sft")]
    model = make()
    logp, _, mask = policy_logprobs(
        model, [s.context_ids for s in sft], [s.completion_ids for s in sft], [s.temperatures for s in sft], pad_id=0
    )
    nll = float(-(logp * mask).sum() / mask.sum())
    trainer = Trainer(model, OptimConfig(lr=1e-3, micro_batch_tokens=10), LossConfig(dpo_beta=0.1, sft_coef=0.5))
    metrics = trainer.update(batch + sft)
    assert metrics["train/loss"] == pytest.approx(math.log(2) + 0.5 * nll, abs=1e-4)


def test_non_finite_loss_skips_the_step(toy) -> None:
    _, make = toy
    model = make()
    before = params(model)
    metrics = Trainer(model, OptimConfig(lr=1e-3), LossConfig()).update(sampled(toy, advantage=float("nan")))
    assert metrics["train/skipped_steps"] == 1 and torch.equal(before, params(model))


def attrs_evolve(sample: Sample, **changes) -> Sample:
    import attrs

    return attrs.evolve(sample, **changes)


def test_entropy_without_grad_keeps_values_and_frees_the_graph(toy) -> None:
    model = toy[1]()
    args = ([[1, 2, 3]], [[4, 5, 6, 7]], [[1.2, 1.2, 0.7, 0.7]])
    logp, with_grad, _ = policy_logprobs(model, *args, with_entropy=True)
    _, without, _ = policy_logprobs(model, *args, with_entropy=True, entropy_grad=False)
    assert with_grad is not None and without is not None
    assert with_grad.requires_grad and not without.requires_grad and logp.requires_grad
    assert torch.allclose(with_grad.detach(), without)


def test_overlong_filter_leaves_truncated_answers_out_of_the_loss(toy) -> None:
    samples = sampled(toy)
    cut = [attrs_evolve(s, meta={"finish_reason": "length" if i < 2 else "stop"}) for i, s in enumerate(samples)]
    kept_tokens = sum(len(s.completion_ids) for s in cut[2:])
    plain = Trainer(toy[1](), OptimConfig(lr=1e-3), LossConfig()).update(cut)
    filtered = Trainer(toy[1](), OptimConfig(lr=1e-3), LossConfig(overlong_filter=True)).update(cut)
    assert plain["train/samples"] == 6 and filtered["train/samples"] == 4
    assert filtered["train/tokens"] == kept_tokens


def _held_masks(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Half of every matrix's rows held (its first half), everything else free."""
    masks = {}
    for name, parameter in model.named_parameters():
        if parameter.ndim == 2:
            mask = torch.zeros_like(parameter, dtype=torch.bool)
            mask[: parameter.shape[0] // 2] = True
            masks[name] = mask
    return masks


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])  # bf16: held on the float32 master copies
@pytest.mark.parametrize("hold", [True, False])
def test_held_entries_keep_their_values_and_the_rest_trains(toy, hold: bool, dtype: torch.dtype) -> None:
    samples = sampled(toy, n=6)
    _, make = toy
    model = make().to(dtype)
    masks = _held_masks(model)
    start = {n: p.detach().clone() for n, p in model.named_parameters()}
    optim = OptimConfig(lr=1e-2, weight_decay=0.1, minibatches=2, hold_marked_weights=hold)
    trainer = Trainer(model, optim, LossConfig(), held=masks)
    assert (trainer.hold is not None) == hold
    trainer.update(samples)
    for name, parameter in model.named_parameters():
        moved = parameter.detach() != start[name]
        if name in masks:
            assert bool(moved[masks[name]].any()) != hold, name  # weight decay alone would move them
            assert bool(moved[~masks[name]].any()), name
    assert any(bool((p.detach() != start[n]).any()) for n, p in model.named_parameters() if n not in masks)


def test_held_gradients_do_not_count_in_the_clipping_norm(toy) -> None:
    samples = sampled(toy, n=4)
    _, make = toy
    model = make()
    everything = {n: torch.ones_like(p, dtype=torch.bool) for n, p in model.named_parameters()}
    start = params(model)
    metrics = Trainer(model, OptimConfig(lr=1e-2, weight_decay=0.1), LossConfig(), held=everything).update(samples)
    assert metrics["train/grad_norm"] == 0.0
    assert torch.equal(params(model), start)


def test_held_masks_travel_with_the_model_directory(toy, tmp_path) -> None:
    from arena.core.api.errors import ArenaError
    from arena.core.models.held import WeightHold, load_held, save_held

    tokenizer, make = toy
    model = make()
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    assert HFBackend(str(tmp_path)).held_weights is None
    masks = _held_masks(model)
    save_held(tmp_path, masks)
    loaded = HFBackend(str(tmp_path)).held_weights
    assert loaded is not None and set(loaded) == set(masks)
    assert all(torch.equal(loaded[n], masks[n]) for n in masks)
    assert load_held(tmp_path / "missing") is None
    with pytest.raises(ArenaError, match="does not have"):
        WeightHold(model, {"no.such.weight": torch.zeros(2, dtype=torch.bool)})
    name = next(iter(masks))
    with pytest.raises(ArenaError, match="shape"):
        WeightHold(model, {name: torch.zeros(3, dtype=torch.bool)})


def test_a_plugin_registered_loss_kind_is_used_by_the_trainer(toy, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plugin adds a loss kind with ``register_loss`` (from ``arena.core``, as at a plugin module's top level);
    the trainer gives it its samples' rows, keeps its statistics, and aggregates it with the built-in kinds."""
    from arena.core import LossInputs, register_loss
    from arena.core.api.errors import ArenaError
    from arena.core.learn import losses
    from arena.core.learn import trainer as trainer_module

    monkeypatch.setattr(trainer_module, "LOSSES", dict(trainer_module.LOSSES))  # the registry as it was, after
    calls: list[list[str]] = []

    def double_sft(x: LossInputs) -> tuple[torch.Tensor, dict[str, float]]:
        calls.append([s.loss for s, row in zip(x.batch, x.rows[:, 0].tolist(), strict=True) if row])
        return 2.0 * losses.sft_nll(x.logp, x.mask), {"train/double_sft_rows": float(x.rows.sum())}

    register_loss("double_sft", double_sft)
    with pytest.raises(ArenaError, match="registered already"):
        register_loss("double_sft", lambda x: double_sft(x))
    with pytest.raises(ArenaError, match="dpo"):
        register_loss("dpo_mine", double_sft)

    _, make = toy
    raw = sampled(toy, n=4)
    batch = [attrs_evolve(s, loss="sft" if i < 2 else "double_sft") for i, s in enumerate(raw)]
    model = make()
    with torch.no_grad():
        logp, _, mask = policy_logprobs(
            model, [s.context_ids for s in batch], [s.completion_ids for s in batch], [s.temperatures for s in batch]
        )
    scale = torch.tensor([[1.0], [1.0], [2.0], [2.0]])
    expected = float((-logp * mask * scale).sum() / mask.sum())  # token mean over both kinds' tokens
    metrics = Trainer(model, OptimConfig(lr=1e-3), LossConfig()).update(batch)
    assert calls == [["double_sft", "double_sft"]]
    assert metrics["train/double_sft_rows"] == 2.0
    assert metrics["train/loss"] == pytest.approx(expected, rel=1e-5)

    with pytest.raises(ArenaError, match="no loss for sample kind 'unheard_of'"):
        Trainer(make(), OptimConfig(lr=1e-3), LossConfig()).update([attrs_evolve(raw[0], loss="unheard_of")])


def test_the_readout_steps_scale_under_whole_network_training(toy) -> None:
    """``optim.readout_lr_scale``: the readout's step is that share of the step it would take at 1 (0 holds it, and
    its gradient leaves the clipping norm), every other entry trains; ``train: readout`` ignores it."""
    samples = sampled(toy, n=4)
    _, make = toy
    base = make()
    readout = _held_masks(base)  # half of every matrix's rows, as tiny's MEM columns of every token
    start = {n: p.detach().clone() for n, p in base.named_parameters()}

    def step(scale: float) -> dict[str, torch.Tensor]:
        model = make()
        model.load_state_dict(base.state_dict())
        # eps far below every gradient: Adam's step is then the same whatever the gradient's scale, so the scaled
        # gradient (kept out of the clipping norm's way) changes nothing and the step scaling is the whole effect.
        optim = OptimConfig(lr=1e-2, eps=1e-30, readout_lr_scale=scale)
        trainer = Trainer(model, optim, LossConfig(), readout=readout)
        assert (trainer.readout_step is not None) == (scale != 1.0)
        trainer.update(samples)
        return {n: p.detach() - start[n] for n, p in model.named_parameters()}

    full, half, none = step(1.0), step(0.5), step(0.0)
    for name, mask in readout.items():
        assert bool(full[name][mask].abs().gt(0).any()), name
        torch.testing.assert_close(half[name][mask], 0.5 * full[name][mask], rtol=1e-3, atol=1e-7)
        assert torch.equal(none[name][mask], torch.zeros_like(none[name][mask])), name
        assert bool(none[name][~mask].abs().gt(0).any()), name  # the rest trains
    everything = {n: torch.ones_like(p, dtype=torch.bool) for n, p in base.named_parameters()}
    model = make()
    metrics = Trainer(model, OptimConfig(lr=1e-2, readout_lr_scale=0.0), LossConfig(), readout=everything).update(
        samples
    )
    assert metrics["train/grad_norm"] == 0.0
    readout_only = OptimConfig(train="readout", readout_lr_scale=0.0)
    assert Trainer(make(), readout_only, LossConfig(), readout=readout).readout_step is None
    with pytest.raises(ValueError, match="readout_lr_scale"):
        OptimConfig(readout_lr_scale=2.0)
