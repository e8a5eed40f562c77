"""``arena demos``: an arena's real prompts paired with its reference answers, as data for ``arena sft``.

The single-task arenas know a correct answer to every task: ``instruct`` builds one that meets every constraint
(``arena.arenas.instruct.reference_answer``), ``coding`` ships a reference function per task. Fine-tuning on them
is the usual warm start before RL when a model does not yet answer in the task's form at all (``tiny`` writes
neither prose nor Python; docs/models.md).

The prompts are not rebuilt here: every task of the split is played once by the real ``RolloutEngine`` with the
seat driven by a ``ScriptedBackend`` that answers with the task's reference, and the request it received is
recorded. So the data holds exactly the messages the model will be sent in training (rules, task, answer-format
line), with the plugins named by ``plugins`` shaping them as they would in a run. Each JSONL line is
``{"messages": [{"role", "content"}, ...], "answer": str, "task_id": str, "arena": str}``; ``arena sft`` reads
``messages`` and ``answer``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from arena.core.api.backend import GenerationRequest
from arena.core.api.errors import ArenaError
from arena.core.api.records import TrialSpec
from arena.core.backends.scripted import ScriptedBackend
from arena.core.config.trial import PromptConfig, TrialConfig
from arena.core.host.plugins import PluginSet
from arena.core.rollout.engine import RolloutEngine
from arena.core.rollout.seats import BackendPool

MODEL_SEAT = "model:scripted"


@attrs.frozen
class ReferenceTask:
    """What the exporter needs of one task: its id, its prompt (the task text inside the turn prompt, which tells
    which task a request is for) and the answer to train on."""

    task_id: str
    needle: str
    answer: str


def _instruct_tasks(split: str, tiers: Sequence[int] | None) -> list[ReferenceTask]:
    from arena.arenas.instruct import reference_answer, tasks_for

    return [ReferenceTask(t.task_id, t.prompt(), reference_answer(t)) for t in tasks_for(split, tiers)]


def _coding_tasks(split: str, tiers: Sequence[int] | None) -> list[ReferenceTask]:
    from arena.arenas.coding_tasks import tasks_for
    from arena.core.models.tiny.demos import code_answer

    return [ReferenceTask(t.task_id, t.prompt(), code_answer(t.reference)) for t in tasks_for(split, tiers)]


#: The arenas with a reference answer per task, and how to list their tasks (in the order seeds index them).
REFERENCE_ARENAS: dict[str, Callable[[str, Sequence[int] | None], list[ReferenceTask]]] = {
    "instruct": _instruct_tasks,
    "coding": _coding_tasks,
}


def reference_tasks(arena: str, split: str = "train", tiers: Iterable[int] | None = None) -> list[ReferenceTask]:
    """The tasks of ``arena``'s ``split`` with their reference answers; ``ArenaError`` for an arena without any."""
    if arena not in REFERENCE_ARENAS:
        raise ArenaError(f"arena {arena!r} has no reference answers; these do: {', '.join(REFERENCE_ARENAS)}")
    if split not in ("train", "test", "all"):
        raise ArenaError(f"split must be train, test or all, got {split!r}")
    tasks = REFERENCE_ARENAS[arena](split, None if tiers is None else tuple(tiers))
    if not tasks:
        raise ArenaError(f"{arena} has no tasks in split {split!r} with tiers {tiers}")
    return tasks


def collect_reference_demos(
    arena: str,
    split: str = "train",
    tiers: Iterable[int] | None = None,
    limit: int | None = None,
    plugins: Sequence[str] = (),
    max_new_tokens: int = 4096,
) -> list[dict[str, Any]]:
    """One demonstration per task of the split (the first ``limit``): the captured prompt and the reference."""
    tiers = None if tiers is None else tuple(tiers)
    tasks = reference_tasks(arena, split, tiers)[:limit]
    captured: list[dict[str, Any]] = []

    def responder(request: GenerationRequest, rng: np.random.Generator) -> str:
        prompt = request.messages[-1].content if request.messages else ""
        matches = [t for t in tasks if t.needle in prompt]
        # One task's prompt can extend another's (the same request with one more constraint): the longest wins.
        matches = [t for t in matches if not any(t.needle != o.needle and t.needle in o.needle for o in matches)]
        if len(matches) != 1:
            # A plugin's extra request (a reflection) or a prompt that names no task: nothing to learn from it.
            return ""
        task = matches[0]
        captured.append(
            {
                "messages": [{"role": m.role, "content": m.content} for m in request.messages],
                "answer": task.answer,
                "task_id": task.task_id,
                "arena": arena,
            }
        )
        return task.answer

    pool = BackendPool()
    pool.add("scripted", "scripted", ScriptedBackend(responder=responder))
    arena_kwargs: dict[str, Any] = {"split": split}
    if tiers is not None:
        arena_kwargs["tiers"] = list(tiers)
    # A single-task env plays task ``seed % len(tasks)``: seeds 0..n-1 visit each task of the split once, in order.
    specs = [
        TrialSpec(
            trial_id=f"demo-{arena}-{i}",
            arena_id=arena,
            seats=(MODEL_SEAT,),
            seed=i,
            arena_kwargs=arena_kwargs,
            training=False,
        )
        for i in range(len(tasks))
    ]
    config = TrialConfig(prompt=PromptConfig(max_new_tokens=max_new_tokens))
    RolloutEngine(PluginSet(list(plugins)), config, backends=pool).run(specs)
    seen = {d["task_id"] for d in captured}
    missing = [t.task_id for t in tasks if t.task_id not in seen]
    if missing:
        raise ArenaError(f"{len(missing)} {arena} tasks were never asked (first: {missing[0]}); is the split right?")
    order = {t.task_id: i for i, t in enumerate(tasks)}
    return sorted(captured, key=lambda d: order[d["task_id"]])


def write_reference_demos(demos: Sequence[dict[str, Any]], out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in demos))
    return out
