"""The learner's update: token-level losses over samples, micro-batched by token budget, with accelerate.

One call of ``Trainer.update(samples)`` is one batch of experience: ``epochs`` passes, each split into
``minibatches`` optimizer steps; every minibatch is cut into micro-batches of at most ``micro_batch_tokens``
tokens whose gradients accumulate. Each sample's loss follows its ``Sample.loss``, a kind in the registry
``LOSSES`` (a plugin adds one with :func:`register_loss`):

* ``ppo``: PPO-clip against the behaviour log-probs (clip low/high, optional dual clip);
* ``shaped_ratio`` / ``shaped_prob``: the shaped off-policy loss −A·f with f = r/(r+γ) or π/(π+γ) (HeRL, GOLF);
* ``sft``: negative log-likelihood (SAFARI, warm starts);
* ``dpo_chosen`` / ``dpo_rejected``: DPO on pairs sharing ``meta["pair"]``, against the frozen reference
  (sequence-level, so not in the registry: the trainer pairs them itself).

plus k3 KL to the frozen reference (``kl_coef``) and an entropy bonus (``entropy_coef``). Log-probs are
recomputed with each token's sampling temperature. Aggregation weights are computed once per minibatch, so the
result does not depend on how it is cut into micro-batches. A non-finite loss or gradient skips the step and
says so in the metrics (``train/skipped_steps``, ``train/nonfinite_steps`` in all); ``optim.max_nonfinite_steps``
of them in a row, or a parameter that is non-finite after a step, stop the run (``NonFiniteError``) before the
NaNs reach a checkpoint. With several processes (``dist.world > 1``) the weights are normalised over the union of
the processes' minibatches and the gradients are summed once per optimizer step (``update``).
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal

import attrs
import torch

from arena.core.api.errors import ArenaError
from arena.core.api.samples import Sample
from arena.core.learn import losses
from arena.core.learn.distributed import Dist, MinibatchShape
from arena.core.learn.logprobs import policy_logprobs
from arena.core.learn.master_weights import MasterWeights, wants_master_weights
from arena.core.models.held import ScaledStep, WeightHold

Aggregation = Literal["token_mean", "seq_mean_token_mean", "seq_sum"]


class NonFiniteError(ArenaError):
    """Training produced NaN or inf where it must not: the run stops rather than checkpoint them."""


@attrs.frozen
class LossConfig:
    clip_low: float = 0.2
    clip_high: float = 0.2
    dual_clip: float | None = None
    shaped_ratio_gamma: float = 1.0
    shaped_prob_gamma: float = 0.1
    kl_coef: float = 0.0
    entropy_coef: float = 0.0
    aggregation: Aggregation = "token_mean"
    seq_sum_constant: int | None = None
    low_prob_mask: Literal["off", "token", "sequence"] = "off"
    low_prob_threshold: float = -5.0
    dpo_beta: float = 0.1
    sft_coef: float = 1.0
    #: DAPO's overlong filtering: samples cut off at the answer budget (``finish_reason`` "length") take no part
    #: in the loss; the soft alternative is the ``overlong`` reward plugin.
    overlong_filter: bool = False
    #: Where PPO's old log-probs come from. ``behaviour``: the generation backend's, exact when the hf backend
    #: samples from the trained model in float32. ``recompute``: one no-grad forward pass of the trained model
    #: over the batch before the update (as verl does), for when generation and training compute differently
    #: (vLLM, bf16): the first step's ratio is then exactly 1. Only ``ppo`` samples; off-policy losses (HeRL,
    #: GOLF) keep the log-probs of whatever generated their text.
    old_logprobs: Literal["behaviour", "recompute"] = "behaviour"
    #: Truncated importance sampling (Yao et al. 2025; TRL's ``vllm_importance_sampling_cap``): each ``ppo``
    #: token's loss is weighted by min(π_old / π_behaviour, tis_cap), correcting for the sampler not being the
    #: trained policy. Needs ``old_logprobs: recompute``.
    tis_cap: float | None = None

    def __attrs_post_init__(self) -> None:
        for name in ("clip_low", "clip_high", "kl_coef", "sft_coef"):
            _require(self, name, lambda v: 0 <= v < math.inf, "a finite number of at least 0")
        _require(self, "entropy_coef", math.isfinite, "a finite number")
        _require(self, "low_prob_threshold", lambda v: v < math.inf and not math.isnan(v), "a number (log-prob)")
        for name in ("shaped_ratio_gamma", "shaped_prob_gamma", "dpo_beta"):
            _require(self, name, lambda v: 0 < v < math.inf, "a finite number above 0")
        _require(self, "dual_clip", lambda v: v is None or 1 < v < math.inf, "null or a finite number above 1")
        _require(self, "seq_sum_constant", lambda v: v is None or v >= 1, "null or at least 1")
        if self.tis_cap is not None and self.old_logprobs != "recompute":
            raise ValueError("loss.tis_cap needs loss.old_logprobs: recompute (the weight compares the two)")
        if self.tis_cap is not None and self.tis_cap <= 0:
            raise ValueError(f"loss.tis_cap must be positive, got {self.tis_cap}")


@attrs.frozen
class OptimConfig:
    lr: float = 1e-6
    weight_decay: float = 0.0
    betas: list[float] = attrs.field(factory=lambda: [0.9, 0.999])
    eps: float = 1e-8
    schedule: Literal["constant", "linear", "cosine"] = "constant"
    warmup_steps: int = 0
    total_steps: int = 0
    grad_clip: float = 1.0
    epochs: int = 1
    minibatches: int = 1
    micro_batch_tokens: int = 8192
    #: Keep the entries a model directory marks as held (``held_weights.safetensors``, written by the copy-circuit
    #: ``tiny`` build) at their values; false trains every weight. No effect on models without the file.
    hold_marked_weights: bool = True
    #: Which entries the run trains: ``all``, or ``readout``, only the entries the model directory marks as its
    #: readout (``readout_weights.safetensors``; tiny v6's memory readout), every other weight held as built, the
    #: way a pretrained model's head alone is fine-tuned. A model that marks no readout is a clear error.
    train: Literal["all", "readout"] = "all"
    #: Under ``train: all``, the step of the entries the model marks as its readout (``readout_weights.safetensors``)
    #: as a multiple of every other entry's: 1 trains them like any weight, 0 holds them, in between scales each
    #: step (``arena.core.models.held.ScaledStep``). tiny's memory readout sits behind a 300-fold gain, so at 1 it
    #: learns 300 times faster than the network that feeds it (docs/results.md). No effect under ``train: readout``
    #: (``lr`` is the readout's own there) or on models that mark no readout.
    readout_lr_scale: float = 1.0
    #: A model held in bf16/fp16 (the hf backend's default on GPU) is stepped through float32 copies of its
    #: weights (``arena.core.learn.master_weights``); false steps the low-precision weights directly, where updates
    #: smaller than their rounding step are lost. No effect on float32 models.
    master_weights: bool = True
    #: Optimizer steps in a row skipped for a non-finite loss or gradient before the run stops (``NonFiniteError``).
    max_nonfinite_steps: int = 5

    def __attrs_post_init__(self) -> None:
        _require(self, "lr", lambda v: 0 <= v < math.inf, "a finite number of at least 0")
        _require(self, "weight_decay", lambda v: 0 <= v < math.inf, "a finite number of at least 0")
        _require(self, "eps", lambda v: 0 < v < math.inf, "a finite number above 0")
        _require(self, "grad_clip", lambda v: 0 < v < math.inf, "a finite number above 0 (the gradient norm's cap)")
        _require(self, "betas", lambda v: len(v) == 2 and all(0 <= b < 1 for b in v), "two numbers in [0, 1)")
        for name in ("epochs", "minibatches", "micro_batch_tokens", "max_nonfinite_steps"):
            _require(self, name, lambda v: v >= 1, "at least 1")
        for name in ("warmup_steps", "total_steps"):
            _require(self, name, lambda v: v >= 0, "at least 0")
        _require(self, "train", lambda v: v in ("all", "readout"), "'all' or 'readout'")
        _require(self, "readout_lr_scale", lambda v: 0 <= v <= 1, "a number in [0, 1]")


def _require(config: Any, name: str, ok: Callable[[Any], bool], what: str) -> None:
    """``ValueError("grad_clip must be ..., got -1.0")`` unless ``ok(value)``; NaN fails every comparison."""
    value = getattr(config, name)
    if not ok(value):
        raise ValueError(f"{name} must be {what}, got {value!r}")


def _schedule(config: OptimConfig) -> Any:
    def factor(step: int) -> float:
        if config.warmup_steps and step < config.warmup_steps:
            return (step + 1) / config.warmup_steps
        if config.schedule == "constant" or config.total_steps <= 0:
            return 1.0
        progress = min(1.0, (step - config.warmup_steps) / max(1, config.total_steps - config.warmup_steps))
        if config.schedule == "linear":
            return 1.0 - progress
        return 0.5 * (1.0 + math.cos(math.pi * progress))

    return factor


def token_weights(
    lengths: Sequence[int], aggregation: Aggregation, constant: int | None, shape: MinibatchShape | None = None
) -> list[float]:
    """The weight of each token of each sample so that Σ weight·ℓ is the minibatch's aggregated loss.

    ``shape`` is the whole minibatch's when ``lengths`` are only one process's part of it (several processes):
    the normalisers (token count, sequence count, longest answer) are then the union's, so the parts' losses add
    up to the loss one process would compute on the union.
    """
    if shape is None:
        shape = MinibatchShape.of(lengths, 0, len(lengths))
    n_seq = max(1, shape.sequences)
    if aggregation == "token_mean":
        total = max(1, shape.tokens)
        return [1.0 / total for _ in lengths]
    if aggregation == "seq_mean_token_mean":
        return [1.0 / (n_seq * max(1, n)) for n in lengths]
    norm = constant or shape.longest or 1
    return [1.0 / (n_seq * norm) for _ in lengths]


@attrs.frozen
class LossInputs:
    """What a loss kind's function gets: one micro-batch as ``[B, T]`` tensors, right-padded (as in ``losses``).

    ``logp``: log-probs of the sampled tokens under the trained policy, with their graph; ``old``: π_old (the
    behaviour log-probs, or the recomputed ones of ``ppo`` samples under ``old_logprobs: recompute``);
    ``behaviour``: the sampler's log-probs; ``adv``: each token's advantage (after ``shape_token_advantages``);
    ``mask``: 1 on completion tokens; ``rows``: ``[B, 1]`` bool, the rows of this kind; ``batch``: the
    micro-batch's samples (all kinds: row ``i`` is ``batch[i]``); ``config``: the trainer's ``LossConfig``.
    """

    logp: torch.Tensor
    old: torch.Tensor
    behaviour: torch.Tensor
    adv: torch.Tensor
    mask: torch.Tensor
    rows: torch.Tensor
    batch: Sequence[Sample]
    config: LossConfig


#: A loss kind: the per-token loss ``[B, T]`` to minimise, exact zeros where ``mask`` is 0, and statistics
#: (``train/...`` names, averaged over the micro-batches into the metrics). It may compute every row: the trainer
#: keeps this kind's rows (``rows``), weights the tokens by the aggregation, and adds KL, entropy and DPO.
LossFn = Callable[[LossInputs], tuple[torch.Tensor, dict[str, float]]]


def _ppo(x: LossInputs) -> tuple[torch.Tensor, dict[str, float]]:
    cfg = x.config
    loss, info = losses.ppo_clip(x.logp, x.old, x.adv, x.mask, cfg.clip_low, cfg.clip_high, cfg.dual_clip)
    stats = {"train/clip_fraction": float(info.get("clip_fraction", 0.0))}
    if cfg.old_logprobs == "recompute":
        ppo_mask = x.mask * x.rows
        stats["train/rollout_logprob_gap"] = float(losses.masked_mean((x.old - x.behaviour).abs(), ppo_mask))
        if cfg.tis_cap is not None:
            weight, capped = losses.truncated_is_weights(x.old, x.behaviour, cfg.tis_cap)
            loss = loss * weight
            stats["train/tis_weight"] = float(losses.masked_mean(weight, ppo_mask))
            stats["train/tis_capped_fraction"] = float(losses.masked_mean(capped.float(), ppo_mask))
    return loss, stats


def _shaped_ratio(x: LossInputs) -> tuple[torch.Tensor, dict[str, float]]:
    gamma = _sample_gammas(x.batch, x.config.shaped_ratio_gamma, x.logp.device)
    return losses.shaped_off_policy(x.logp, x.old, x.adv, x.mask, gamma, "ratio")[0], {}


def _shaped_prob(x: LossInputs) -> tuple[torch.Tensor, dict[str, float]]:
    gamma = _sample_gammas(x.batch, x.config.shaped_prob_gamma, x.logp.device)
    return losses.shaped_off_policy(x.logp, x.old, x.adv, x.mask, gamma, "prob")[0], {}


def _sft(x: LossInputs) -> tuple[torch.Tensor, dict[str, float]]:
    return x.config.sft_coef * losses.sft_nll(x.logp, x.mask), {}


#: Token-level loss kinds by name (``Sample.loss``). Kinds starting with ``dpo`` are sequence-level and stay
#: with the trainer (``Trainer._dpo``).
LOSSES: dict[str, LossFn] = {"ppo": _ppo, "shaped_ratio": _shaped_ratio, "shaped_prob": _shaped_prob, "sft": _sft}


def register_loss(kind: str, fn: LossFn, *, replace: bool = False) -> None:
    """Add the token-level loss kind ``kind``: samples with ``loss=kind`` are trained with ``fn`` (``LossFn``).

    A plugin calls this when it is imported (at its module's top level), so the kind exists before any
    update. A kind that exists already is refused unless ``replace``; ``dpo...`` names are the trainer's own.
    """
    if not kind or kind.startswith("dpo"):
        raise ArenaError(f"loss kind {kind!r}: names starting with 'dpo' are the trainer's sequence-level DPO")
    if kind in LOSSES and not replace and LOSSES[kind] is not fn:
        raise ArenaError(f"loss kind {kind!r} is registered already; pass replace=True to replace it")
    LOSSES[kind] = fn


class Trainer:
    """Updates ``model`` from samples. ``accelerator`` (``accelerate.Accelerator``) places and syncs it."""

    def __init__(
        self,
        model: torch.nn.Module,
        optim: OptimConfig,
        loss: LossConfig,
        accelerator: Any | None = None,
        pad_id: int = 0,
        dist: Dist | None = None,
        held: Mapping[str, torch.Tensor] | None = None,
        readout: Mapping[str, torch.Tensor] | None = None,
    ) -> None:
        from accelerate import Accelerator

        self.accelerator = accelerator or Accelerator(cpu=not torch.cuda.is_available())
        #: The processes that train this model together (``accelerate launch``); ``Dist()`` for one process.
        self.dist = dist or Dist.of(self.accelerator)
        self.optim_config = optim
        self.loss_config = loss
        self.pad_id = pad_id
        # The model is placed first: master weights (below) are made on its device from its placed weights.
        if self.dist.world == 1:
            self.model = self.accelerator.prepare_model(model)
        else:
            self._prepare_distributed(model)
        #: Float32 copies that the optimizer steps when the model is held in bf16/fp16 (``master_weights``);
        #: None when the model trains in float32 or the option is off.
        self.master = MasterWeights(model) if optim.master_weights and wants_master_weights(model) else None
        #: Entries kept at their values (``arena.core.models.held``), on the tensors the optimizer steps; None when
        #: the model marks none or ``optim.hold_marked_weights`` is off.
        stepped = self.master.named_parameters() if self.master else model
        # ``train: readout`` passes masks that hold all but the readout: honoured whatever ``hold_marked_weights`` says.
        keep = optim.hold_marked_weights or optim.train == "readout"
        self.hold = WeightHold(stepped, held) if held and keep else None
        #: The readout's scaled steps under ``train: all`` (``optim.readout_lr_scale`` below 1); None otherwise.
        scaled = readout and optim.train == "all" and optim.readout_lr_scale != 1.0
        self.readout_step = ScaledStep(stepped, readout, optim.readout_lr_scale) if scaled and readout else None
        optimizer = torch.optim.AdamW(
            self._stepped_parameters(),
            lr=optim.lr,
            betas=(optim.betas[0], optim.betas[1]),
            eps=optim.eps,
            weight_decay=optim.weight_decay,
        )
        self.optimizer = self.accelerator.prepare_optimizer(optimizer)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _schedule(optim))
        # Several processes: the scheduler stays unwrapped (accelerate's wrapper steps it once per process).
        self.scheduler = self.accelerator.prepare_scheduler(scheduler) if self.dist.world == 1 else scheduler
        self.reference: torch.nn.Module | None = None  # built lazily: only KL and DPO need it
        self.steps = 0
        #: Steps skipped for a non-finite loss or gradient: in all, and in a row (``optim.max_nonfinite_steps``).
        self.nonfinite_total = 0
        self.nonfinite_in_a_row = 0
        #: ``f(samples, advantages, entropy, mask) -> [B, T] tensor | None``, per micro-batch: advantages that
        #: depend on the current policy (EntropyAdv); the run wires the ``shape_token_advantages`` hook here.
        self.shape_token_advantages: Callable[..., torch.Tensor | None] | None = None

    def _prepare_distributed(self, model: torch.nn.Module) -> None:
        """Several processes: place the model (and bf16 autocast) without DDP, start every rank from rank 0's weights.

        No DDP wrapper: its per-backward all-reduce (and per-forward buffer broadcast) needs the same number of
        backwards on every rank, and ranks hold different samples; ``update`` combines the gradients once per
        optimizer step instead.
        """
        from accelerate.utils import DistributedType

        kind = self.accelerator.distributed_type
        if kind in (DistributedType.FSDP, DistributedType.DEEPSPEED, DistributedType.XLA, DistributedType.MEGATRON_LM):
            raise ArenaError(
                f"the trainer combines gradients itself across processes; {kind} is not supported "
                "(use plain multi-process data parallelism: accelerate launch --multi_gpu)"
            )
        self.model = self.accelerator.prepare_model(model, evaluation_mode=True)
        with torch.no_grad():
            for param in self.model.parameters():
                self.dist.broadcast_(param.data)

    def parameter_digest(self) -> str:
        """A hash of the weights (ranks must agree after every step)."""
        import hashlib

        h = hashlib.sha256()
        for name, tensor in sorted(self.accelerator.unwrap_model(self.model).state_dict().items()):
            h.update(name.encode())
            h.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
        return h.hexdigest()

    # -- reference model ----------------------------------------------------------------------------------

    def reference_model(self) -> torch.nn.Module:
        """A frozen copy of the policy as it was when first needed (the start of training)."""
        if self.reference is None:
            ref = copy.deepcopy(self.accelerator.unwrap_model(self.model))
            ref.eval()
            for p in ref.parameters():
                p.requires_grad_(False)
            self.reference = ref
        return self.reference

    # -- batching -----------------------------------------------------------------------------------------

    def micro_batches(self, samples: Sequence[Sample]) -> Iterator[list[int]]:
        """Indices grouped by token budget; DPO pairs never split.

        A micro-batch is laid out as left-padded contexts followed by right-padded completions (so every row's
        completion starts in the same column), which costs ``rows × (longest context + longest completion)``.
        Units are therefore ordered by completion length, then context length, longest first: reflections
        (long answers) and moves (a few tokens) land in different micro-batches instead of padding each other.
        """
        units: list[list[int]] = []
        pairs: dict[Any, list[int]] = {}
        for i, s in enumerate(samples):
            if s.loss in ("dpo_chosen", "dpo_rejected"):
                pairs.setdefault(s.meta.get("pair"), []).append(i)
            else:
                units.append([i])
        units.extend(pairs.values())

        def lengths(unit: list[int]) -> tuple[int, int]:
            return (
                max(len(samples[i].completion_ids) for i in unit),
                max(len(samples[i].context_ids) for i in unit),
            )

        units.sort(key=lambda u: (-lengths(u)[0], -lengths(u)[1], u[0]))
        batch: list[int] = []
        longest_completion = longest_context = 0
        for unit in units:
            completion, context = lengths(unit)
            width = max(longest_completion, completion) + max(longest_context, context)
            if batch and width * (len(batch) + len(unit)) > self.optim_config.micro_batch_tokens:
                yield batch
                batch, longest_completion, longest_context = [], 0, 0
            batch.extend(unit)
            longest_completion = max(longest_completion, completion)
            longest_context = max(longest_context, context)
        if batch:
            yield batch

    # -- the update ---------------------------------------------------------------------------------------

    def update(self, samples: Sequence[Sample]) -> dict[str, float]:
        """Train on ``samples``; returns averaged metrics (losses, KL, entropy, clip fraction, tokens/s...).

        With several processes every rank calls this with its own samples (possibly none) and the ranks make the
        same optimizer steps: minibatch ``k`` is the union of every rank's minibatch ``k`` (each rank cuts its
        samples into exactly ``minibatches`` parts), aggregation weights are normalised over that union, and the
        gradients are summed once per step (with a flag: a non-finite loss on any rank skips the step on all).
        The returned metrics are of the union (``_reduce_metrics``).
        """
        samples = [s for s in samples if s.completion_ids]
        if self.loss_config.overlong_filter:
            samples = [s for s in samples if s.meta.get("finish_reason") != "length"]
        started = time.perf_counter()
        sums: dict[str, float] = {}
        counts: dict[str, int] = {}
        skipped = 0
        tokens = 0
        distributed = self.dist.world > 1
        parts = self._minibatch_parts(samples)
        shapes = [self._shape(part) for part in parts]
        if distributed:
            from arena.core.learn.distributed import merge_shapes

            shapes = merge_shapes(self.dist.gather(shapes))
        if not any(shape.samples for shape in shapes):
            return {"train/samples": 0.0}
        model = self.accelerator.unwrap_model(self.model) if distributed else self.model
        if self.loss_config.old_logprobs == "recompute" or any(s.recompute_old for part in parts for s in part):
            parts = [self._with_old_logprobs(part, model) for part in parts]
        self.model.train()
        for _ in range(self.optim_config.epochs):
            for minibatch, shape in zip(parts, shapes, strict=True):
                if not shape.samples:  # empty on every rank: no step (a single process never cuts one)
                    continue
                # DPO samples are sequence-level (their own term, below): they neither take part in nor dilute
                # the token aggregation of the other samples.
                token_level = [i for i, s in enumerate(minibatch) if not s.loss.startswith("dpo")]
                weights = [0.0] * len(minibatch)
                for i, w in zip(
                    token_level,
                    token_weights(
                        [len(minibatch[i].completion_ids) for i in token_level],
                        self.loss_config.aggregation,
                        self.loss_config.seq_sum_constant,
                        shape,
                    ),
                    strict=True,
                ):
                    weights[i] = w
                ok = True
                step_loss = 0.0
                for micro in self.micro_batches(minibatch):
                    batch = [minibatch[i] for i in micro]
                    loss, stats = self._micro_loss(batch, [weights[i] for i in micro], shape.pairs, model)
                    if not torch.isfinite(loss):
                        ok = False
                        break
                    self.accelerator.backward(loss)
                    if self.master is not None:
                        self.master.accumulate_grads()
                    step_loss += float(loss.detach())  # micro losses add up to the minibatch's loss
                    tokens += sum(len(s.completion_ids) for s in batch)
                    for key, value in stats.items():
                        sums[key] = sums.get(key, 0.0) + value
                        counts[key] = counts.get(key, 0) + 1
                if distributed:
                    ok, step_loss = self._sum_gradients(ok, step_loss)
                grad_norm = float("nan")
                if ok and self.hold is not None:
                    self.hold.zero_grads()
                if ok and self.readout_step is not None:
                    self.readout_step.scale_grads()
                if ok:
                    grad_norm = float(
                        self.accelerator.clip_grad_norm_(self._stepped_parameters(), self.optim_config.grad_clip)
                    )
                    ok = math.isfinite(grad_norm)
                if ok:
                    if self.readout_step is not None:
                        self.readout_step.remember()
                    self.optimizer.step()
                    if self.readout_step is not None:
                        self.readout_step.scale_step()
                    if self.hold is not None:
                        self.hold.restore()
                    if self.master is not None:
                        self.master.write_to_model()
                    self._check_parameters()
                    self.scheduler.step()
                    self.steps += 1
                    self.nonfinite_in_a_row = 0
                    for key, value in (("train/grad_norm", grad_norm), ("train/loss", step_loss)):
                        sums[key] = sums.get(key, 0.0) + value
                        counts[key] = counts.get(key, 0) + 1
                else:
                    skipped += 1
                    self._count_nonfinite()
                self.optimizer.zero_grad(set_to_none=True)
        seconds = time.perf_counter() - started
        n_samples = len(samples)
        if distributed:
            sums, counts, n_samples, tokens, seconds = self._reduce_metrics(sums, counts, n_samples, tokens, seconds)
        metrics = {k: sums[k] / counts[k] for k in sums}
        metrics.update(
            {
                "train/samples": float(n_samples),
                "train/tokens": float(tokens),
                "train/skipped_steps": float(skipped),
                "train/nonfinite_steps": float(self.nonfinite_total),
                "train/steps": float(self.steps),
                "train/lr": float(self.scheduler.get_last_lr()[0]),
                "train/seconds": seconds,
                "train/tokens_per_s": tokens / seconds if seconds > 0 else 0.0,
            }
        )
        self.model.eval()
        return metrics

    def _logprobs(
        self, model: Any, batch: Sequence[Sample], **options: Any
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
        """``policy_logprobs`` of ``batch``'s completions (each token at its sampling temperature) under ``model``."""
        contexts = [s.context_ids for s in batch]
        completions = [s.completion_ids for s in batch]
        return policy_logprobs(model, contexts, completions, [s.temperatures for s in batch], self.pad_id, **options)

    def _needs_old_logprobs(self, sample: Sample) -> bool:
        return sample.recompute_old or (self.loss_config.old_logprobs == "recompute" and sample.loss == "ppo")

    @torch.no_grad()
    def _with_old_logprobs(self, samples: Sequence[Sample], model: Any) -> list[Sample]:
        """``samples`` with ``meta["old_logprobs"]``: the log-probs under the model as it is now of each ``ppo``
        sample (``loss.old_logprobs: recompute``) and each ``recompute_old`` one, taken in the sample's
        ``old_context`` (its rollout context for EMPO²'s off-policy samples)."""
        out = list(samples)
        chosen = [i for i, s in enumerate(samples) if self._needs_old_logprobs(s)]
        for micro in self.micro_batches([samples[i] for i in chosen]):
            batch = [samples[chosen[j]] for j in micro]
            contexts = [
                s.rollout_context_ids
                if s.old_context == "rollout" and s.rollout_context_ids is not None
                else s.context_ids
                for s in batch
            ]
            logp, _, _ = policy_logprobs(
                model, contexts, [s.completion_ids for s in batch], [s.temperatures for s in batch], self.pad_id
            )
            for row, j in enumerate(micro):
                sample = samples[chosen[j]]
                old = tuple(float(x) for x in logp[row, : len(sample.completion_ids)].tolist())
                out[chosen[j]] = attrs.evolve(sample, meta={**sample.meta, "old_logprobs": old})
        return out

    def _count_nonfinite(self) -> None:
        """A step skipped for a non-finite loss or gradient; too many in a row stop the run."""
        self.nonfinite_total += 1
        self.nonfinite_in_a_row += 1
        limit = self.optim_config.max_nonfinite_steps
        if self.nonfinite_in_a_row >= limit:
            raise NonFiniteError(
                f"{self.nonfinite_in_a_row} optimizer steps in a row had a non-finite loss or gradient (limit "
                f"optim.max_nonfinite_steps={limit}; {self.nonfinite_total} in all); the run stops here, its last "
                "checkpoint holds the weights before them (try a lower optim.lr or a tighter optim.grad_clip)"
            )

    def _check_parameters(self) -> None:
        """After every optimizer step: a non-finite parameter stops the run before it reaches a checkpoint.

        The loss and gradients were finite (checked before the step), so the cause is in the optimizer state or
        an overflow; the weights in memory are lost, the last checkpoint is not.
        """
        bad = sum(1 for p in self._stepped_parameters() if not bool(torch.isfinite(p.detach()).all()))
        if bad:
            raise NonFiniteError(
                f"optimizer step {self.steps + 1} made {bad} parameter tensor(s) non-finite (NaN or inf) from a "
                "finite loss and gradient (corrupt optimizer state or an overflow); the run stops before writing "
                "them into a checkpoint"
            )

    def _stepped_parameters(self) -> list[torch.nn.Parameter]:
        """What the optimizer steps and the gradients live on: the float32 master copies, else the model's own."""
        if self.master is not None:
            return self.master.parameters()
        return [p for p in self.model.parameters() if p.requires_grad]

    def _minibatch_parts(self, samples: Sequence[Sample]) -> list[list[Sample]]:
        """``minibatches`` consecutive parts of ``samples`` of ``ceil(n / minibatches)`` each (trailing ones empty)."""
        count = max(1, self.optim_config.minibatches)
        size = math.ceil(len(samples) / count)
        return [list(samples[k * size : (k + 1) * size]) for k in range(count)]

    def _shape(self, minibatch: Sequence[Sample]) -> MinibatchShape:
        lengths = [len(s.completion_ids) for s in minibatch if not s.loss.startswith("dpo")]
        pairs = len({s.meta.get("pair") for s in minibatch if s.loss == "dpo_chosen"})
        return MinibatchShape.of(lengths, pairs, len(minibatch))

    def _sum_gradients(self, ok: bool, step_loss: float) -> tuple[bool, float]:
        """One all-reduce per optimizer step: gradients, the non-finite flag and the loss, summed over ranks.

        A rank whose loss was not finite (or that had no part in this minibatch) contributes zero gradients.
        Returns whether every rank's loss was finite, and the minibatch's loss (the sum of the ranks' parts).
        """
        params = self._stepped_parameters()
        device = params[0].device
        pieces = []
        for p in params:
            if ok and p.grad is not None:
                pieces.append(p.grad.detach().reshape(-1).to(torch.float32))
            else:
                pieces.append(torch.zeros(p.numel(), dtype=torch.float32, device=device))
        # Which parameters got a gradient anywhere: one that got none on every rank keeps ``grad = None``, as in
        # one process (AdamW then leaves it and its moments alone).
        touched = [1.0 if ok and p.grad is not None else 0.0 for p in params]
        flags = [0.0 if ok else 1.0, step_loss if ok else 0.0]
        extra = torch.tensor([*touched, *flags], dtype=torch.float32, device=device)
        flat = self.dist.all_reduce_(torch.cat([*pieces, extra]))
        bad, loss = float(flat[-2]), float(flat[-1])
        if bad:
            return False, loss
        offset = 0
        for i, p in enumerate(params):
            n = p.numel()
            if float(flat[-2 - len(params) + i]) > 0:
                p.grad = flat[offset : offset + n].view_as(p).to(p.dtype).clone()
            else:
                p.grad = None
            offset += n
        return True, loss

    def _reduce_metrics(
        self, sums: dict[str, float], counts: dict[str, int], samples: int, tokens: int, seconds: float
    ) -> tuple[dict[str, float], dict[str, int], int, int, float]:
        """Metrics of the union: per-micro-batch statistics averaged over every rank's micro-batches, samples and
        tokens summed, seconds the slowest rank's. ``train/loss`` and ``train/grad_norm`` are already global (the
        same on every rank), so they are taken from this rank rather than averaged.
        """
        parts = self.dist.gather((sums, counts, samples, tokens, seconds))
        total_sums: dict[str, float] = {}
        total_counts: dict[str, int] = {}
        for part_sums, part_counts, *_ in parts:
            for key, value in part_sums.items():
                if key in ("train/loss", "train/grad_norm"):
                    continue
                total_sums[key] = total_sums.get(key, 0.0) + value
                total_counts[key] = total_counts.get(key, 0) + part_counts[key]
        for key in ("train/loss", "train/grad_norm"):
            if key in sums:
                total_sums[key], total_counts[key] = sums[key], counts[key]
        return (
            total_sums,
            total_counts,
            sum(p[2] for p in parts),
            sum(p[3] for p in parts),
            max(p[4] for p in parts),
        )

    def _micro_loss(
        self, batch: Sequence[Sample], weights: Sequence[float], minibatch_pairs: int, model: Any = None
    ) -> tuple[torch.Tensor, dict[str, float]]:
        cfg = self.loss_config
        device = self.accelerator.device
        logp, entropy, mask = self._logprobs(
            self.model if model is None else model,
            batch,
            with_entropy=True,
            entropy_grad=cfg.entropy_coef > 0,  # otherwise entropy is only a metric (and EntropyAdv's detached H)
        )
        width = logp.shape[1]
        behaviour = _pad([s.behaviour_logprobs for s in batch], width, device)
        recomputed = [s.meta.get("old_logprobs") for s in batch]  # ``ppo`` samples with old_logprobs: recompute
        old = behaviour
        if any(r is not None for r in recomputed):
            rows_old = [r if r is not None else s.behaviour_logprobs for r, s in zip(recomputed, batch, strict=True)]
            old = _pad(rows_old, width, device)
        adv = losses.advantages_to_tokens([s.advantage for s in batch], [len(s.completion_ids) for s in batch])
        adv = _fit(adv.to(device), width)
        if self.shape_token_advantages is not None:
            assert entropy is not None  # requested above
            shaped = self.shape_token_advantages(batch, adv, entropy.detach(), mask)
            if shaped is not None:
                adv = shaped
        w = torch.tensor(weights, dtype=logp.dtype, device=device).unsqueeze(1) * mask
        if cfg.low_prob_mask != "off":
            w = w * losses.low_prob_mask(old, mask, cfg.low_prob_threshold, cfg.low_prob_mask)
        per_token = torch.zeros_like(logp)
        stats: dict[str, float] = {}
        kinds = [s.loss for s in batch]
        for kind in sorted(set(kinds)):  # sorted: a set's order follows the hash seed; the run must not
            if kind.startswith("dpo"):
                continue  # DPO is sequence-level, below
            loss_fn = LOSSES.get(kind)
            if loss_fn is None:
                raise ArenaError(f"no loss for sample kind {kind!r}; known kinds: {', '.join(sorted(LOSSES))}")
            rows = torch.tensor([k == kind for k in kinds], device=device).unsqueeze(1)
            loss_k, kind_stats = loss_fn(LossInputs(logp, old, behaviour, adv, mask, rows, batch, cfg))
            stats.update(kind_stats)
            per_token = torch.where(rows, loss_k, per_token)
        total = (per_token * w).sum()
        if cfg.kl_coef > 0 or any(k.startswith("dpo") for k in kinds):
            with torch.no_grad():
                ref_logp, _, _ = self._logprobs(self.reference_model(), batch)
            if cfg.kl_coef > 0:
                kl = losses.kl_k3(logp, ref_logp)
                total = total + cfg.kl_coef * (kl * w).sum()
                stats["train/kl"] = float(((kl * mask).sum() / mask.sum().clamp(min=1)).detach())
            dpo_total, dpo_stats = self._dpo(batch, logp, ref_logp, mask, minibatch_pairs)
            total = total + dpo_total
            stats.update(dpo_stats)
        assert entropy is not None  # requested above
        if cfg.entropy_coef > 0:
            total = total - cfg.entropy_coef * (entropy * w).sum()
        stats["train/entropy"] = float(((entropy * mask).sum() / mask.sum().clamp(min=1)).detach())
        return total, stats

    def _dpo(
        self, batch: Sequence[Sample], logp: torch.Tensor, ref: torch.Tensor, mask: torch.Tensor, n: int
    ) -> tuple[torch.Tensor, dict[str, float]]:
        seq = (logp * mask).sum(1)
        ref_seq = (ref * mask).sum(1)
        chosen: dict[Any, int] = {}
        rejected: dict[Any, int] = {}
        for i, s in enumerate(batch):
            if s.loss == "dpo_chosen":
                chosen[s.meta.get("pair")] = i
            elif s.loss == "dpo_rejected":
                rejected[s.meta.get("pair")] = i
        keys = [k for k in chosen if k in rejected]
        if not keys:
            return logp.new_zeros(()), {}
        c = torch.tensor([chosen[k] for k in keys], device=logp.device)
        r = torch.tensor([rejected[k] for k in keys], device=logp.device)
        loss, info = losses.dpo(seq[c], seq[r], ref_seq[c], ref_seq[r], self.loss_config.dpo_beta)
        stats = {f"train/dpo_{k}": float(v) for k, v in info.items()}
        # ``loss`` is the mean over this micro-batch's pairs; the minibatch's DPO term is the mean over all its pairs.
        return loss * len(keys) / max(1, n), stats

    # -- state ----------------------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "steps": self.steps,
            "nonfinite": [self.nonfinite_total, self.nonfinite_in_a_row],
        }
        if self.master is not None:
            state["master_weights"] = self.master.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore optimizer, scheduler and steps; load the model's weights first.

        Master copies come back from the saved state when it has them, else they start again from the model's
        (just loaded) weights: a checkpoint written without them (a float32 run) resumes in bf16 that way.
        """
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.steps = int(state["steps"])
        self.nonfinite_total, self.nonfinite_in_a_row = (int(n) for n in state.get("nonfinite", (0, 0)))
        if self.master is not None:
            if state.get("master_weights"):
                self.master.load_state_dict(state["master_weights"])
            else:
                self.master.read_from_model()


def _sample_gammas(batch: Sequence[Sample], default: float, device: Any) -> torch.Tensor:
    """γ of the shaped loss per row, ``[B, 1]``: a sample's ``meta["shaped_gamma"]`` (HeRL, GOLF) else the config's."""
    values = [float(s.meta.get("shaped_gamma") or default) for s in batch]
    return torch.tensor(values, dtype=torch.float32, device=device).unsqueeze(1)


def _pad(rows: Sequence[Sequence[float]], width: int, device: Any) -> torch.Tensor:
    out = torch.zeros((len(rows), width), dtype=torch.float32, device=device)
    for i, row in enumerate(rows):
        if row:
            out[i, : len(row)] = torch.tensor(row, dtype=torch.float32)
    return out


def _fit(t: torch.Tensor, width: int) -> torch.Tensor:
    if t.shape[1] >= width:
        return t[:, :width]
    return torch.nn.functional.pad(t, (0, width - t.shape[1]))
