"""Checks that a warm-started model answers in the expected formats while its choices stay untrained.

Two measurements on held-out prompts (fresh trial seeds, prompts not in the training set):

* sampled answers (temperature 1.0, top-p 1.0, plain PyTorch sampling with a KV cache, so it does not depend on
  any generation backend) parsed with ``arena.core.rollout.text_adapter.parse_action`` against the prompt's legal
  moves, and
  ``<remark>``/``<tip>``/``<strategy>`` answers checked for their tags;
* the exact probability of each legal answer ``<action>NAME</action>`` (teacher-forced, one prefix-tree pass per
  prompt): the mass on legal answers and how evenly it spreads (normalised entropy 1.0 = uniform).
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from arena.core.api.arena import Move
from arena.core.api.backend import ChatMessage
from arena.core.backends.scripted import listed_moves
from arena.core.models.tiny.demos import Demo, action_answer
from arena.core.models.tiny.sft import TreeExample, answer_logprobs, collate
from arena.core.rollout.text_adapter import parse_action

ACTION_KINDS = frozenset({"action", "strategy", "tip_action"})
TAGS = {"reflection": "remark", "tip": "tip", "strategy": "strategy"}


def prompt_ids(tokenizer: Any, messages: Sequence[ChatMessage]) -> list[int]:
    """Token ids of a chat prompt through the tokenizer's chat template, ready for the assistant's answer."""
    chat = [{"role": m.role, "content": m.content} for m in messages]
    encoded = tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=True)
    ids = encoded["input_ids"] if hasattr(encoded, "keys") else encoded
    return [int(i) for i in ids]


def legal_moves(messages: Sequence[ChatMessage]) -> list[Move]:
    """The ``Legal moves:`` block of the last message as ``Move`` objects (ids and names)."""
    return [Move(index, name) for index, name in listed_moves(messages[-1].content)]


def _filter_top_p(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    if top_p >= 1.0:
        return probs
    sorted_probs, order = probs.sort(dim=-1, descending=True)
    cumulative = sorted_probs.cumsum(-1)
    drop = cumulative - sorted_probs > top_p
    sorted_probs = sorted_probs.masked_fill(drop, 0.0)
    filtered = torch.zeros_like(probs).scatter(-1, order, sorted_probs)
    return filtered / filtered.sum(-1, keepdim=True)


@torch.no_grad()
def sample(
    model: Any,
    prompts: Sequence[Sequence[int]],
    eos_id: int,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_p: float = 1.0,
    seed: int = 0,
    batch_size: int = 32,
) -> list[list[int]]:
    """Sampled continuations (without the end token), left-padded batches, KV cache; repeatable by ``seed``."""
    generator = torch.Generator().manual_seed(seed)
    results: list[list[int]] = [[] for _ in prompts]
    order = sorted(range(len(prompts)), key=lambda i: (len(prompts[i]), i))
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        width = max(len(prompts[i]) for i in chunk)
        ids = torch.full((len(chunk), width), eos_id, dtype=torch.long)
        mask = torch.zeros((len(chunk), width), dtype=torch.long)
        for row, index in enumerate(chunk):
            tokens = prompts[index]
            ids[row, width - len(tokens) :] = torch.tensor(list(tokens))
            mask[row, width - len(tokens) :] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        out = model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, logits_to_keep=1)
        done = torch.zeros(len(chunk), dtype=torch.bool)
        for _ in range(max_new_tokens):
            probs = torch.softmax(out.logits[:, -1].float() / temperature, dim=-1)
            token = torch.multinomial(_filter_top_p(probs, top_p), 1, generator=generator)[:, 0]
            token = torch.where(done, torch.full_like(token, eos_id), token)
            for row, index in enumerate(chunk):
                if not done[row] and int(token[row]) != eos_id:
                    results[index].append(int(token[row]))
            done |= token == eos_id
            if bool(done.all()):
                break
            mask = torch.cat([mask, torch.ones((len(chunk), 1), dtype=torch.long)], dim=1)
            positions = positions[:, -1:] + 1
            out = model(
                input_ids=token[:, None],
                attention_mask=mask,
                position_ids=positions,
                past_key_values=out.past_key_values,
                use_cache=True,
            )
    return results


@torch.no_grad()
def move_probabilities(model: Any, tokenizer: Any, messages: Sequence[ChatMessage]) -> list[float]:
    """P(``<action>NAME</action><end>``) for every legal move of the prompt, in listing order."""
    moves = legal_moves(messages)
    eos = int(tokenizer.eos_token_id)
    branches = tuple((*tokenizer.encode(action_answer(m.name), add_special_tokens=False), eos) for m in moves)
    example = TreeExample(prefix=tuple(prompt_ids(tokenizer, messages)), branches=branches)
    batch = collate([example], eos)
    logprobs = answer_logprobs(model, batch)
    totals = torch.zeros(len(branches)).index_add_(0, batch.branch_of, logprobs)
    return [math.exp(float(v)) for v in totals]


#: Free-text arenas whose answer is code: their legal rate is the rate of answers whose code compiles.
CODE_ARENAS = frozenset({"coding"})
CODE_BUDGET = 192


def compiles(answer: str) -> bool:
    """Whether the code in ``answer`` (as the coding arena extracts it) is a syntactically valid ``def``."""
    from arena.arenas.coding import extract_code

    try:
        code = extract_code(answer)
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    return any(isinstance(node, ast.FunctionDef) for node in tree.body)


def _has_tag(text: str, tag: str) -> bool:
    return re.search(rf"<{tag}>.+?</{tag}>", text, flags=re.DOTALL) is not None


def evaluate(model: Any, tokenizer: Any, demos: Sequence[Demo], seed: int) -> dict[str, Any]:
    """Per-arena legal-answer rate, tag rates, choice spread and answer examples for held-out ``demos``."""
    eos = int(tokenizer.eos_token_id)
    prompts = [prompt_ids(tokenizer, d.messages) for d in demos]
    budgets = {"action": 16, "tip_action": 16, "strategy": 64, "tip": 64, "reflection": 192}
    answers: list[str] = [""] * len(demos)
    for kind, budget in budgets.items():
        for code in (False, True):  # a function takes more tokens than a move
            picked = [i for i, d in enumerate(demos) if d.kind == kind and (d.arena in CODE_ARENAS) == code]
            if not picked:
                continue
            limit = CODE_BUDGET if code and kind in ACTION_KINDS else budget
            outs = sample(model, [prompts[i] for i in picked], eos, limit, seed=seed + len(kind))
            for i, tokens in zip(picked, outs, strict=True):
                answers[i] = tokenizer.decode(tokens, skip_special_tokens=True)
    report: dict[str, Any] = {}
    for arena in sorted({d.arena for d in demos}, key=[d.arena for d in demos].index):
        rows = [(d, a) for d, a in zip(demos, answers, strict=True) if d.arena == arena]
        if arena in CODE_ARENAS:  # "legal" for code: the answer holds a function that compiles
            legal = [compiles(a) for d, a in rows if d.kind in ACTION_KINDS]
        else:
            legal = [parse_action(a, legal_moves(d.messages)).valid for d, a in rows if d.kind in ACTION_KINDS]
        tags = {kind: [_has_tag(a, tag) for d, a in rows if d.kind == kind] for kind, tag in TAGS.items()}
        spread = [
            move_probabilities(model, tokenizer, d.messages)
            for d, _ in rows
            if d.kind == "action" and arena not in CODE_ARENAS  # code has no move list to spread over
        ]
        multi = [p for p in spread if len(p) > 1]
        entropies = [_normalised_entropy(p) for p in multi]
        chosen = [parse_action(a, legal_moves(d.messages)) for d, a in rows if d.kind == "action"]
        report[arena] = {
            "legal_rate": float(np.mean(legal)) if legal else None,
            "legal_samples": len(legal),
            "tag_rates": {kind: float(np.mean(v)) if v else None for kind, v in tags.items()},
            "legal_mass": float(np.mean([sum(p) for p in spread])) if spread else None,
            "choice_entropy": float(np.mean(entropies)) if entropies else None,
            "max_choice_prob": float(np.mean([max(p) / sum(p) for p in multi])) if multi else None,
            "distinct_choices": len({c.move for c in chosen if c.valid}),
            "examples": {
                kind: next((a for d, a in rows if d.kind == kind), None) for kind in ("action", "reflection", "tip")
            }
            | {"strategy": next((a for d, a in rows if d.kind == "strategy"), None)},
        }
    return report


def _normalised_entropy(probs: Sequence[float]) -> float:
    total = sum(probs)
    if total <= 0 or len(probs) < 2:
        return 0.0
    q = [p / total for p in probs if p > 0]
    return -sum(p * math.log(p) for p in q) / math.log(len(probs))
