"""Supervised fine-tuning of a model spec on chat examples (``arena sft DATA.jsonl --model model:tiny --out DIR``).

A data file is JSON lines, one example each: ``{"messages": [{"role": ..., "content": ...}, ...], "answer": str}``
(more keys are kept in the file and ignored here). The prompt is rendered exactly as the ``hf`` backend renders a
rollout's prompt (the model's chat template plus the generation prompt), the answer is tokenised without special
tokens and closed with the end-of-sequence token, so the model learns to stop where the rollout would. Training is
the project's ``Trainer`` with loss kind ``sft`` (token-mean negative log-likelihood over the answer tokens), one
optimizer step per batch of ``batch_size`` examples, ``epochs`` shuffled passes. The result is a model directory
(weights, config, tokenizer) that loads as ``model:DIR``, plus ``sft_summary.json`` (counts, losses, timings).

SAFARI's stage 2 uses it; it is generic (any chat examples, any model spec the ``hf`` backend loads).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from arena.core.api.backend import ChatMessage, GenerationRequest
from arena.core.api.errors import ArenaError
from arena.core.api.samples import LossKind, Sample

__all__ = [
    "ChatExample",
    "SFTSettings",
    "answer_ids",
    "load_backend",
    "read_examples",
    "run_sft",
    "save_model",
    "text_sample",
    "train_batches",
]


@attrs.frozen
class ChatExample:
    """A prompt (chat messages) and the answer to train on."""

    messages: tuple[ChatMessage, ...]
    answer: str


@attrs.frozen
class SFTSettings:
    """``lr`` and ``epochs`` of the fine-tuning; ``batch_size`` examples per optimizer step; ``seed`` the order."""

    epochs: int = 2
    lr: float = 1e-4
    batch_size: int = 16
    seed: int = 0
    micro_batch_tokens: int = 8192
    grad_clip: float = 1.0


def messages_of(raw: Iterable[Mapping[str, Any]]) -> tuple[ChatMessage, ...]:
    return tuple(ChatMessage(str(m["role"]), str(m["content"])) for m in raw)


def messages_json(messages: Sequence[ChatMessage]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in messages]


def read_examples(path: Path) -> list[ChatExample]:
    """The examples of a JSONL file; a line without ``messages`` or ``answer`` is an error naming the line."""
    examples = []
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise ArenaError(f"cannot read SFT data {path}: {exc.strerror}") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            examples.append(ChatExample(messages_of(row["messages"]), str(row["answer"])))
        except (ValueError, KeyError, TypeError) as exc:
            raise ArenaError(f"{path}:{number}: not an SFT example ({exc}); need 'messages' and 'answer'") from None
    if not examples:
        raise ArenaError(f"{path}: no SFT examples")
    return examples


def load_backend(model_spec: str) -> Any:
    """The ``hf`` backend of ``model:NAME`` (or a bare name/path): its ``model`` is what gets trained."""
    from arena.core.rollout.seats import BackendPool, parse_seat

    spec = model_spec if model_spec.startswith("model:") else f"model:{model_spec}"
    seat = parse_seat(spec)
    backend_name, name = BackendPool.resolve(seat)
    if backend_name != "hf":
        raise ArenaError(f"fine-tuning needs the hf backend (a trainable model in process), not {backend_name!r}")
    from arena.core.backends.hf import HFBackend

    return HFBackend(name)


def answer_ids(backend: Any, answer: str) -> tuple[int, ...]:
    """The answer's token ids, closed with the tokenizer's end-of-sequence token (the model learns to stop)."""
    tokenizer = backend.tokenizer
    ids = [int(t) for t in tokenizer(answer, add_special_tokens=False)["input_ids"]]
    eos = tokenizer.eos_token_id
    if eos is None and backend.eos_ids:
        eos = min(backend.eos_ids)
    return tuple([*ids, int(eos)] if eos is not None else ids)


def text_sample(
    backend: Any,
    messages: Sequence[ChatMessage],
    answer: str,
    loss: LossKind = "sft",
    meta: Mapping[str, Any] | None = None,
    sample_id: str = "",
) -> Sample:
    """A training sample: the prompt as the backend renders it, the answer as the target (temperature 1)."""
    context = tuple(int(t) for t in backend.prompt_ids(GenerationRequest(messages=tuple(messages))))
    completion = answer_ids(backend, answer)
    return Sample(
        learner="safari",
        trial_id=sample_id,
        episode=0,
        turn=0,
        agent="",
        kind="action",
        context_ids=context,
        completion_ids=completion,
        behaviour_logprobs=(0.0,) * len(completion),
        temperatures=(1.0,) * len(completion),
        context_text="\n\n".join(m.content for m in messages),
        completion_text=answer,
        context_messages=tuple(messages),
        loss=loss,
        meta=dict(meta or {}),
    )


def make_trainer(backend: Any, lr: float, micro_batch_tokens: int, grad_clip: float, **loss: Any) -> Any:
    """The project's ``Trainer`` on the backend's model: one optimizer step per ``update`` call."""
    from arena.core.learn.trainer import LossConfig, OptimConfig, Trainer

    optim = OptimConfig(lr=lr, epochs=1, minibatches=1, micro_batch_tokens=micro_batch_tokens, grad_clip=grad_clip)
    held = getattr(backend, "held_weights", None)
    return Trainer(backend.model, optim, LossConfig(**loss), pad_id=backend.pad_id, held=held)


def train_batches(
    trainer: Any,
    units: Sequence[Sequence[Sample]],
    epochs: int,
    batch_size: int,
    seed: int,
    on_step: Callable[[dict[str, float]], None] | None = None,
) -> list[dict[str, float]]:
    """``epochs`` shuffled passes over ``units`` (groups kept together: a DPO pair and its SFT sample), one
    ``Trainer.update`` per ``batch_size`` units; returns each update's metrics."""
    rng = np.random.default_rng(seed)
    history = []
    for _ in range(epochs):
        order = rng.permutation(len(units))
        for start in range(0, len(order), batch_size):
            batch = [s for i in order[start : start + batch_size] for s in units[int(i)]]
            metrics = trainer.update(batch)
            history.append(metrics)
            if on_step is not None:
                on_step(metrics)
    return history


def save_model(backend: Any, trainer: Any | None, out: Path) -> None:
    """Weights, config, generation config, tokenizer and held-weight masks: a directory that loads as
    ``model:OUT`` (the backend's own model when there is no ``trainer``)."""
    from arena.core.models.held import save_held

    out.mkdir(parents=True, exist_ok=True)
    model = backend.model if trainer is None else trainer.accelerator.unwrap_model(trainer.model)
    model.save_pretrained(out)
    backend.tokenizer.save_pretrained(out)
    held = getattr(backend, "held_weights", None)
    if held:
        save_held(out, held)


def mean_of(history: Sequence[Mapping[str, float]], key: str) -> float | None:
    values = [m[key] for m in history if key in m and math.isfinite(m[key])]
    return float(np.mean(values)) if values else None


def run_sft(
    data: Path, model_spec: str, out: Path, settings: SFTSettings | None = None, progress: bool | None = None
) -> dict[str, Any]:
    """Fine-tune ``model_spec`` on the examples of ``data``; write the model and ``sft_summary.json`` to ``out``."""
    from tqdm import tqdm

    settings = settings or SFTSettings()
    started = time.perf_counter()
    examples = read_examples(data)
    backend = load_backend(model_spec)
    samples = [
        text_sample(backend, e.messages, e.answer, "sft", {"example": i}, f"sft-{i}") for i, e in enumerate(examples)
    ]
    trainer = make_trainer(backend, settings.lr, settings.micro_batch_tokens, settings.grad_clip)
    steps = settings.epochs * math.ceil(len(samples) / settings.batch_size)
    bar = tqdm(total=steps, desc="sft", unit="step", disable=None if progress is None else not progress)

    def tick(metrics: Mapping[str, float]) -> None:
        bar.update(1)
        bar.set_postfix(loss=f"{metrics.get('train/loss', float('nan')):.3f}")

    try:
        history = train_batches(
            trainer, [[s] for s in samples], settings.epochs, settings.batch_size, settings.seed, tick
        )
    finally:
        bar.close()
    save_model(backend, trainer, out)
    per_epoch = max(1, math.ceil(len(samples) / settings.batch_size))
    losses = [m.get("train/loss", float("nan")) for m in history]
    summary = {
        "stage": "sft",
        "data": str(data),
        "model": model_spec,
        "out": str(out),
        "examples": len(samples),
        "answer_tokens": int(sum(len(s.completion_ids) for s in samples)),
        "settings": attrs.asdict(settings),
        "steps": len(history),
        "skipped_steps": int(sum(m.get("train/skipped_steps", 0.0) > 0 for m in history)),
        "loss_first_epoch": float(np.nanmean(losses[:per_epoch])) if losses else None,
        "loss_last_epoch": float(np.nanmean(losses[-per_epoch:])) if losses else None,
        "seconds": round(time.perf_counter() - started, 3),
    }
    (out / "sft_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary
