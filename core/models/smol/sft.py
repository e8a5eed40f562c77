"""The short supervised fine-tunes that build the SmolLM2 models (``smollm2-menu``, ``smollm2-revise``,
``smollm2-rps``): padded batches of (ids, labels) rows, AdamW at a constant rate, saving the result beside the base's
tokenizer files, and the load-train-save-report frame the builds share (``fine_tune_smollm2``)."""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import structlog

log = structlog.get_logger("arena.models.smol.sft")

#: One SFT row: token ids and labels (-100 where no loss is taken).
Row = tuple[list[int], list[int]]


def sft_steps(
    model: Any,
    tokenizer: Any,
    draw: Callable[[random.Random], list[Row]],
    steps: int,
    lr: float,
    seed: int,
    name: str,
) -> list[float]:
    """``steps`` AdamW steps at a constant ``lr`` (gradient norm clipped at 1), each on the batch ``draw`` returns
    from one ``random.Random(seed)`` stream; the loss of every step. The model is left in eval mode."""
    import torch
    from tqdm import tqdm

    rng = random.Random(seed)
    pad = int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    model.train()
    losses: list[float] = []
    for step in tqdm(range(steps), desc=f"{name} SFT", unit="step", disable=None, leave=False):
        rows = draw(rng)
        width = max(len(ids) for ids, _ in rows)
        ids = torch.tensor([r[0] + [pad] * (width - len(r[0])) for r in rows])
        labels = torch.tensor([r[1] + [-100] * (width - len(r[1])) for r in rows])
        mask = torch.tensor([[1] * len(r[0]) + [0] * (width - len(r[0])) for r in rows])
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(float(loss.detach()))
        if (step + 1) % 20 == 0:
            log.info(f"{name}: sft", step=step + 1, steps=steps, loss=round(losses[-1], 4))
    model.eval()
    return losses


def save_model(model: Any, tokenizer: Any, base: Path, out: Path) -> None:
    """The weights and tokenizer into ``out``, with the base's tokenizer config and chat template copied as they are
    (``save_pretrained`` rewrites them)."""
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    for name in ("tokenizer_config.json", "chat_template.jinja"):
        if (base / name).is_file():
            shutil.copy(base / name, out / name)


def fine_tune_smollm2(
    out: Path, name: str, build_version: int, recipe: Any, fit: Callable[[Any, Any], dict[str, Any]]
) -> None:
    """Build a model on SmolLM2-135M-Instruct into ``out``: load the base (float32, torch deterministic on 2 threads,
    seeded with ``recipe.seed``), let ``fit(model, tokenizer)`` train it and return its report entries (``losses``,
    ``quality``, ...), then save the model and ``build_report.json`` (name, version, base, recipe, the entries)."""
    import torch
    from transformers import AutoTokenizer, LlamaForCausalLM

    from arena.core.models import smollm2
    from arena.core.models.tiny.sft import deterministic_torch

    base = Path(smollm2.build_smollm2())
    with deterministic_torch(2):
        torch.manual_seed(recipe.seed)
        tokenizer = AutoTokenizer.from_pretrained(base)
        model = LlamaForCausalLM.from_pretrained(base, dtype=torch.float32).eval()
        entries = fit(model, tokenizer)
    save_model(model, tokenizer, base, out)
    report = {
        "name": name,
        "build_version": build_version,
        "base": str(base),
        "recipe": attrs.asdict(recipe),
        **entries,
    }
    (out / "build_report.json").write_text(json.dumps(report, indent=2) + "\n")
