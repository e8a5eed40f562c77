"""How far RL-sized optimizer steps can push a model off its answer format, and how far towards a legal move.

Why: a model can answer legally and still lose its format at the first RL update. Adam's first step from a fresh
optimizer is sign-like (every weight with a gradient moves by about the learning rate), so what matters is how much
the network's function depends on weights moving by that much. The copy-circuit ``tiny`` was such a model while
its circuit was free to move (docs/models.md). The probe measures it directly:

- ``off_format``: ``steps`` AdamW steps at ``lr`` (gradient clipped to 1, fresh optimizer) that maximise the
  probability of ``<strategy>`` as the first answer token of plain action prompts (which the model answers with
  ``<action>``); the mean probability before and after every step.
- ``legal_move``: the same steps towards the first listed move right after ``<action>``: RL must still be able to
  change which legal move is played.

Held entries (``arena.core.models.held``) are kept as the trainer keeps them. The model is not modified: the probe
trains a copy.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from arena.core.learn.logprobs import policy_logprobs
from arena.core.models.held import WeightHold
from arena.core.models.tiny.circuit import ACTION_TAG

OFF_FORMAT_TOKEN = "<strategy>"


def _push(
    model: Any,
    prompts: Sequence[list[int]],
    targets: Sequence[int],
    pad_id: int,
    held: Mapping[str, torch.Tensor] | None,
    steps: int,
    lr: float,
) -> list[float]:
    trained = copy.deepcopy(model).train()
    hold = WeightHold(trained, held) if held else None
    completions = [[target] for target in targets]
    temperatures = [[1.0] for _ in targets]
    optimizer = torch.optim.AdamW(trained.parameters(), lr=lr, weight_decay=0.0)

    def logprobs() -> torch.Tensor:
        logp, _, _ = policy_logprobs(trained, prompts, completions, temperatures, pad_id=pad_id)
        return logp[:, 0]

    trace = []
    for step in range(steps + 1):
        with torch.no_grad():
            trace.append(float(logprobs().exp().mean()))
        if step == steps:
            break
        optimizer.zero_grad(set_to_none=True)
        (-logprobs().mean()).backward()
        if hold is not None:
            hold.zero_grads()
        torch.nn.utils.clip_grad_norm_(trained.parameters(), 1.0)
        optimizer.step()
        if hold is not None:
            hold.restore()
    return trace


def format_probe(
    model: Any,
    tokenizer: Any,
    demos: Sequence[Any],
    held: Mapping[str, torch.Tensor] | None = None,
    steps: int = 8,
    lr: float = 1e-4,
) -> dict[str, list[float]]:
    """Both probes on the plain action prompts of ``demos`` (``arena.core.models.tiny.demos.Demo``): ``{"off_format":
    [p_0, …, p_steps], "legal_move": [...]}``, the mean target probability before and after each step."""
    from arena.core.models.tiny.quality import legal_moves, prompt_ids

    actions = [d for d in demos if d.kind == "action" and legal_moves(d.messages)]
    if not actions:
        raise ValueError("format_probe needs action prompts with a Legal moves: block")
    pad = int(tokenizer.eos_token_id)
    prompts = [prompt_ids(tokenizer, d.messages) for d in actions]
    off_format = tokenizer.encode(OFF_FORMAT_TOKEN, add_special_tokens=False)
    tag = tokenizer.encode(ACTION_TAG, add_special_tokens=False)
    first_moves = []
    for demo in actions:
        name = legal_moves(demo.messages)[0].name
        first_moves.append(tokenizer.encode(ACTION_TAG + name, add_special_tokens=False)[len(tag)])
    return {
        "off_format": _push(model, prompts, [off_format[0]] * len(prompts), pad, held, steps, lr),
        "legal_move": _push(model, [p + tag for p in prompts], first_moves, pad, held, steps, lr),
    }
