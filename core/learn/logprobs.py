"""Recompute the log-probs of sampled tokens under a model: the trainer's side of the behaviour log-probs.

Backends record, for every sampled token, the log-prob under the distribution it was drawn from (logits divided by
the token's temperature). ``recompute_logprobs`` runs one forward pass over prompt + completion and applies the same
per-token temperatures, so with unchanged weights (and top-p = 1) it reproduces the behaviour log-probs up to float
noise; with updated weights it gives the new policy's log-probs for importance ratios. It keeps the autograd graph
(call it under ``torch.no_grad()`` when no gradient is wanted).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import torch

TokenIds = Sequence[int] | torch.Tensor
Temperatures = float | Sequence[float] | torch.Tensor


def _is_batch(ids: Any) -> bool:
    if isinstance(ids, torch.Tensor):
        return ids.dim() == 2
    return len(ids) > 0 and not isinstance(ids[0], int) and hasattr(ids[0], "__len__")


def _as_list(ids: TokenIds) -> list[int]:
    return [int(i) for i in (ids.tolist() if isinstance(ids, torch.Tensor) else ids)]


def _temps_list(temps: Temperatures, length: int) -> list[float]:
    if isinstance(temps, (int, float)):
        return [float(temps)] * length
    values = [float(t) for t in (temps.tolist() if isinstance(temps, torch.Tensor) else temps)]
    if len(values) != length:
        raise ValueError(f"{len(values)} temperatures for {length} completion tokens")
    return values


def recompute_logprobs(
    model: Any,
    prompt_ids: TokenIds | Sequence[TokenIds],
    completion_ids: TokenIds | Sequence[TokenIds],
    temperatures: Temperatures | Sequence[Temperatures],
) -> torch.Tensor:
    """Log-probs of ``completion_ids`` after ``prompt_ids`` under ``model``, logits divided by each token's temperature.

    One sequence (lists of ints or 1-D tensors) gives a 1-D float32 tensor of ``len(completion_ids)``. A batch (a
    sequence of sequences, or 2-D tensors) gives ``(batch, longest completion)``, zero past each row's end. A
    temperature of 0 (greedy decoding) counts as 1, which is what the ``hf`` backend records for greedy tokens.
    Rows are right-padded, so positions need no adjusting and the padding never influences real tokens (causal).
    Top-p truncation is not applied: the result is the full-vocabulary log-prob at that temperature.
    """
    if _is_batch(completion_ids):
        prompts = [_as_list(p) for p in cast(Sequence[TokenIds], prompt_ids)]
        completions = [_as_list(c) for c in cast(Sequence[TokenIds], completion_ids)]
        if isinstance(temperatures, (int, float)):
            temps = [_temps_list(temperatures, len(c)) for c in completions]
        else:
            per_row = cast(Sequence[Temperatures], temperatures)
            temps = [_temps_list(t, len(c)) for t, c in zip(per_row, completions, strict=True)]
        return _recompute(model, prompts, completions, temps)
    completion = _as_list(cast(TokenIds, completion_ids))
    row_temps = _temps_list(cast(Temperatures, temperatures), len(completion))
    return _recompute(model, [_as_list(cast(TokenIds, prompt_ids))], [completion], [row_temps])[0]


def _recompute(
    model: Any, prompts: list[list[int]], completions: list[list[int]], temps: list[list[float]]
) -> torch.Tensor:
    if len(prompts) != len(completions):
        raise ValueError(f"{len(prompts)} prompts for {len(completions)} completions")
    logp, _, _ = policy_logprobs(model, prompts, completions, temps)
    return logp


def policy_logprobs(
    model: Any,
    contexts: Sequence[Sequence[int]],
    completions: Sequence[Sequence[int]],
    temperatures: Sequence[Sequence[float]],
    pad_id: int = 0,
    with_entropy: bool = False,
    entropy_grad: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """``(logp, entropy, mask)``, each ``(batch, longest completion)``, for a batch of samples.

    Contexts are left-padded and completions right-padded, so every row's completion starts in the same column and
    the model computes logits for the last ``longest completion + 1`` positions only (``logits_to_keep``): a
    trainer never materialises vocabulary-sized logits for prompt tokens. Positions come from the attention mask,
    so left padding does not shift them. Each token's logits are divided by its temperature (0 counts as 1, the
    greedy convention) before ``log_softmax``; ``entropy`` is that distribution's entropy. Gradients flow, except
    through ``entropy`` when ``entropy_grad`` is false: then its vocabulary-sized intermediates are not kept for
    the backward pass (with a 49k vocabulary that is gigabytes per micro-batch).
    """
    device = next(model.parameters()).device
    batch = len(contexts)
    width = max((len(c) for c in completions), default=0)
    mask = torch.zeros((batch, width), dtype=torch.float32)
    if batch == 0 or width == 0:
        empty = torch.zeros((batch, width), dtype=torch.float32, device=device)
        return empty, (empty.clone() if with_entropy else None), mask.to(device)
    if any(not c for c in contexts):
        raise ValueError("every context needs at least one token (the first completion token is predicted from it)")
    left = max(len(c) for c in contexts)
    input_ids = torch.full((batch, left + width), pad_id, dtype=torch.long)
    attention = torch.zeros((batch, left + width), dtype=torch.long)
    targets = torch.zeros((batch, width), dtype=torch.long)
    scale = torch.ones((batch, width), dtype=torch.float32)
    for row, (ctx, comp, temps) in enumerate(zip(contexts, completions, temperatures, strict=True)):
        n = len(comp)
        if len(temps) != n:
            raise ValueError(f"{len(temps)} temperatures for {n} completion tokens")
        input_ids[row, left - len(ctx) : left] = torch.tensor(list(ctx), dtype=torch.long)
        attention[row, left - len(ctx) : left] = 1
        if n:
            input_ids[row, left : left + n] = torch.tensor(list(comp), dtype=torch.long)
            attention[row, left : left + n] = 1
            targets[row, :n] = input_ids[row, left : left + n]
            scale[row, :n] = torch.tensor([t if t > 0 else 1.0 for t in temps], dtype=torch.float32)
            mask[row, :n] = 1.0
    positions = (attention.cumsum(1) - 1).clamp(min=0)
    logits = (
        model(
            input_ids=input_ids.to(device),
            attention_mask=attention.to(device),
            position_ids=positions.to(device),
            use_cache=False,
            logits_to_keep=width + 1,
        )
        .logits[:, :-1]
        .float()
    )
    scale, targets, mask = scale.to(device), targets.to(device), mask.to(device)
    logp_all = torch.log_softmax(logits / scale.unsqueeze(-1), dim=-1)
    logp = logp_all.gather(-1, targets.unsqueeze(-1)).squeeze(-1) * mask
    entropy = None
    if with_entropy:
        with torch.set_grad_enabled(torch.is_grad_enabled() and entropy_grad):
            entropy = -(logp_all.exp() * logp_all).sum(-1) * mask
    return logp, entropy, mask
