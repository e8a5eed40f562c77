"""Supervised warm start of a small causal LM on prefix trees: one prompt, several answers, one forward pass.

A demonstration is a prompt with several answers (distinct legal moves, say). Laying them out as
``prompt, answer 1, answer 2, …`` with a mask in which each answer sees the prompt and itself only (and position
ids that restart after the prompt for every answer) trains all answers for the price of one prompt: the prompt is
most of the tokens, and the loss is on answer tokens only. Rows are bucketed by length, so padding is small.

Everything is deterministic for a fixed seed on one machine: initialisation and data order come from seeded
generators, ``torch.use_deterministic_algorithms(True)`` and a fixed thread count pin the kernels, so two builds
give byte-identical weights.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs
import numpy as np
import torch

from arena.core.models.tiny.recipe import SFTConfig


@attrs.frozen
class TreeExample:
    """Token ids of a prompt (``prefix``) and of its answers (``branches``, each ending with end-of-sequence)."""

    prefix: tuple[int, ...]
    branches: tuple[tuple[int, ...], ...]

    @property
    def length(self) -> int:
        return len(self.prefix) + sum(len(b) for b in self.branches)


@attrs.frozen
class TreeBatch:
    """Padded rows of tree examples and the (row, position) → target pairs the loss is taken on."""

    input_ids: torch.Tensor
    position_ids: torch.Tensor
    attention_mask: torch.Tensor
    rows: torch.Tensor
    cols: torch.Tensor
    targets: torch.Tensor
    branch_of: torch.Tensor
    weights: torch.Tensor


@contextlib.contextmanager
def deterministic_torch(threads: int) -> Iterator[None]:
    """Fixed thread count and deterministic kernels for the duration; the caller's settings come back after."""
    previous_threads = torch.get_num_threads()
    previous_deterministic = torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(previous_deterministic)
        torch.set_num_threads(previous_threads)


@contextlib.contextmanager
def progress(desc: str, log: Any, event: str, every: int = 50) -> Iterator[Callable[[int, int, float], None]]:
    """A ``train`` ``on_step`` that drives a progress bar and logs ``event`` every ``every`` steps (build logs)."""
    from tqdm import tqdm

    bar = tqdm(desc=desc, unit="step", disable=None, leave=False)

    def on_step(step: int, total: int, loss: float) -> None:
        bar.total = total
        bar.update(1)
        bar.set_postfix(loss=f"{loss:.3f}", refresh=False)
        if (step + 1) % every == 0:
            log.info(event, step=step + 1, steps=total, loss=round(loss, 3))

    try:
        yield on_step
    finally:
        bar.close()


def collate(examples: Sequence[TreeExample], pad_id: int) -> TreeBatch:
    """One row per example: prefix then branches; pad tokens see only themselves (no fully masked rows)."""
    width = max(e.length for e in examples)
    count = len(examples)
    input_ids = torch.full((count, width), pad_id, dtype=torch.long)
    position_ids = torch.zeros((count, width), dtype=torch.long)
    segment = torch.full((count, width), -1, dtype=torch.long)
    rows: list[int] = []
    cols: list[int] = []
    targets: list[int] = []
    branch_of: list[int] = []
    weights: list[float] = []
    branch_number = 0
    for row, example in enumerate(examples):
        p = len(example.prefix)
        input_ids[row, :p] = torch.tensor(example.prefix)
        position_ids[row, :p] = torch.arange(p)
        segment[row, :p] = 0
        start = p
        for k, branch in enumerate(example.branches):
            m = len(branch)
            input_ids[row, start : start + m] = torch.tensor(branch)
            position_ids[row, start : start + m] = torch.arange(p, p + m)
            segment[row, start : start + m] = k + 1
            predictors = [p - 1, *range(start, start + m - 1)]
            rows.extend([row] * m)
            cols.extend(predictors)
            targets.extend(branch)
            branch_of.extend([branch_number] * m)
            weights.extend([1.0 / math.sqrt(m)] * m)
            branch_number += 1
            start += m
    causal = torch.tril(torch.ones(width, width, dtype=torch.bool))
    same = segment[:, :, None] == segment[:, None, :]
    sees_prefix = (segment[:, None, :] == 0) & (segment[:, :, None] >= 0)
    mask = causal[None] & (same | sees_prefix)
    return TreeBatch(
        input_ids=input_ids,
        position_ids=position_ids,
        attention_mask=mask[:, None],
        rows=torch.tensor(rows),
        cols=torch.tensor(cols),
        targets=torch.tensor(targets),
        branch_of=torch.tensor(branch_of),
        weights=torch.tensor(weights),
    )


def length_buckets(examples: Sequence[TreeExample], token_budget: int) -> list[list[int]]:
    """Indices grouped into batches of similar length whose padded size stays within ``token_budget``."""
    order = sorted(range(len(examples)), key=lambda i: (examples[i].length, i))
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        width = examples[index].length
        if current and width * (len(current) + 1) > token_budget:
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches


def answer_logprobs(model: Any, batch: TreeBatch) -> torch.Tensor:
    """Log-prob of every answer token of the batch, in ``batch.targets`` order."""
    hidden = model.model(
        input_ids=batch.input_ids, position_ids=batch.position_ids, attention_mask=batch.attention_mask
    ).last_hidden_state
    logits = model.lm_head(hidden[batch.rows, batch.cols]).float()
    return torch.log_softmax(logits, dim=-1).gather(-1, batch.targets[:, None])[:, 0]


def _lr_factor(step: int, total: int, config: SFTConfig) -> float:
    if step < config.warmup_steps:
        return (step + 1) / config.warmup_steps
    progress = (step - config.warmup_steps) / max(1, total - config.warmup_steps)
    cosine = 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))
    return config.min_lr_ratio + (1.0 - config.min_lr_ratio) * cosine


def train(
    model: Any,
    examples: Sequence[TreeExample],
    config: SFTConfig,
    seed: int,
    pad_id: int,
    on_step: Callable[[int, int, float], None] | None = None,
    held: Mapping[str, torch.Tensor] | None = None,
) -> list[float]:
    """AdamW with warm-up and cosine decay; returns the loss of every step.

    The loss averages answer tokens with weight 1/sqrt(answer length): a long remark still counts more than a
    four-token action, but not so much that the few tokens that choose a move get drowned out.

    The batch order of each epoch is a permutation drawn from ``seed``; ``on_step(step, total, loss)`` drives a
    progress bar. ``held`` maps parameter names to boolean masks of entries that keep their starting values
    (restored after every step, so neither updates nor weight decay move them; their gradients still count in the
    clipping norm, as they did in the measured builds).
    """
    buckets = length_buckets(examples, config.token_budget)
    rng = np.random.default_rng(seed)
    plan = [bucket for _ in range(config.epochs) for bucket in (buckets[i] for i in rng.permutation(len(buckets)))]
    if config.max_steps is not None:
        plan = plan[: config.max_steps]
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "embed" not in n]
    keep = [p for n, p in model.named_parameters() if not (p.ndim >= 2 and "embed" not in n)]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": config.weight_decay}, {"params": keep, "weight_decay": 0.0}],
        lr=config.lr,
        betas=config.betas,
        foreach=False,
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: _lr_factor(step, len(plan), config))
    parameters = dict(model.named_parameters())
    kept = {name: (parameters[name], mask, parameters[name].detach().clone()) for name, mask in (held or {}).items()}
    model.train()
    losses: list[float] = []
    for step, bucket in enumerate(plan):
        batch = collate([examples[i] for i in bucket], pad_id)
        loss = -(answer_logprobs(model, batch) * batch.weights).sum() / batch.weights.sum()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        with torch.no_grad():
            for parameter, mask, start in kept.values():
                parameter.copy_(torch.where(mask, start, parameter))
        scheduler.step()
        losses.append(float(loss.detach()))
        if on_step is not None:
            on_step(step, len(plan), losses[-1])
    model.eval()
    return losses
