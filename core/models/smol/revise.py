"""``smollm2-revise``: SmolLM2-135M-Instruct taught to act on HeRL's hindsight prompt for its own failed drafts,
its first answers anchored to its own (HeRL's testbed, docs/testbeds.md section 8).

HeRL learns from revisions: a draft that missed a constraint is shown back to the policy with the constraints it
met and the ones it missed, and the policy's revision is scored and injected into the group. That only helps when
the policy's revisions succeed where its first answers fail. Untrained SmolLM2 revises no better than it answers:
on every one-constraint instruction, 4 drafts each, its hindsight revisions of failed drafts passed 0.111 and the
naive ones ("revise it to follow the instruction better") 0.153; no constraint kind had a first try ≤ 0.1 and a
revision ≥ 0.4 (``tests/arenas/instruct_revision_probe.py``, docs/results.md).

The build (``ReviseRecipe``: about 15 minutes on 2 cores) plays SmolLM2 itself on the training tasks of ``KINDS``
(the instruct arena's kind sets, ``kind_tasks``: kinds it never met on the first try, 0 of 56, and whose fix is a
rewrite of the draft rather than new writing), turns every failed draft into HeRL's own revision prompt (through
the ``herl`` plugin's ``augment_group``, so the prompt is the plugin's, to the character) and trains two rows per
failed draft:

* a **revision row**: the revision prompt trained on ``fix(task, draft)``, the draft's opening sentences rewritten
  to meet the constraint;
* an **anchor row**: the instruction's own prompt trained on the draft itself, SmolLM2's own sample, so that the
  first answer stays the base model's.

Without the anchor rows the first answers learn the constraints too (v1: 0.50 on the held-out first try, from 0).
With them (v3) the first answer meets 0 of 70 held-out tasks and the hindsight revision 0.64 of them: the premise
of HeRL's testbed. What a larger instruction-tuned model brings to HeRL (it revises when told what it missed) is
what this build gives; what HeRL exists to do (turn those revisions into better first answers) is left to the run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import structlog

from arena.core.api.backend import ChatMessage
from arena.core.api.errors import ArenaError
from arena.core.models import smollm2
from arena.core.models.cache import build_atomically, models_dir
from arena.core.models.smol.sft import Row, save_model, sft_steps

if TYPE_CHECKING:
    from arena.arenas.instruct import InstructTask
    from arena.core.rollout.seats import BackendPool

log = structlog.get_logger("arena.models.smol.revise")

NAME = "smollm2-revise"
#: v1: revision rows, 100 steps. v2: the same rows for 160 steps (it was meant to add the anchor rows, but a bug left
#: every prompt without its ``original``, so none was built). v3: revision and anchor rows, 160 steps.
BUILD_VERSION = 3
#: The constraint kinds the model learns to revise for (module docstring; first try 0 of 56 untrained).
KINDS = ("lowercase", "uppercase", "quotes", "end_with")
#: The config whose trial settings (T 1.0, 128 tokens) and HeRL options write the drafts and the prompts.
CONFIG = "instruct_revise_herl"
#: Words of the draft a fix keeps (whole sentences up to this many, else the first this many words): an
#: uppercased draft takes about twice the tokens, and the revision shares the answer's 128-token budget.
KEEP_WORDS = 40
#: The answer's token budget in ``CONFIG`` (``trial.prompt.max_new_tokens``): a revision row longer than this would
#: teach an answer the arena cuts off (``tests/models/test_smollm2_revise_pairs.py`` pins it to the config).
ANSWER_TOKENS = 128
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@attrs.frozen
class ReviseRecipe:
    steps: int = 160
    batch: int = 4
    lr: float = 2e-5
    seed: int = 0
    #: Also train each instruction's own prompt on SmolLM2's failed draft, to keep the first answers SmolLM2's own
    #: (module docstring).
    anchor: bool = True


@attrs.frozen
class ReviseModel:
    """One model this recipe builds: its name and build version (the cache folder), the instruct kind sets whose
    training tasks it drafts on, and the revision it learns for a failed draft (``fix(task, draft)``, which must
    pass the arena's checker). ``REVISE`` is ``smollm2-revise``; ``revise_pairs.PAIRS`` the two-constraint one."""

    name: str
    build_version: int
    kinds: tuple[str, ...]
    fix: Callable[[InstructTask, str], str]
    #: The token budget ``encode`` holds the revision rows to; None trains them whole (v3 was built so: its
    #: openings of at most 40 words fit but for a rare uppercased one).
    budget: int | None = None


@attrs.frozen
class RevisionPrompt:
    """HeRL's revision prompt for one failed draft, with the task it answers, the draft and the draft's own prompt
    (``original``; ``finished``: the draft ended with end-of-sequence rather than at the token budget)."""

    task_id: str
    draft: str
    messages: tuple[ChatMessage, ...]
    original: tuple[ChatMessage, ...] = ()
    finished: bool = True


def opening(draft: str, words: int = KEEP_WORDS) -> str:
    """The draft's first whole sentences up to ``words`` words (the first ``words`` words when the first sentence
    is longer), on one line."""
    flat = " ".join(draft.split())
    kept: list[str] = []
    for sentence in SENTENCE_END.split(flat):
        if kept and len(" ".join([*kept, sentence]).split()) > words:
            break
        kept.append(sentence)
    text = " ".join(kept)
    return " ".join(text.split()[:words]) if len(text.split()) > words else text


def rewrite(kind: str, phrase: str, body: str) -> str:
    if kind == "lowercase":
        return body.lower()
    if kind == "uppercase":
        return body.upper()
    if kind == "quotes":
        return f'"{body}"'
    if kind == "end_with":
        return f"{body.rstrip()} {phrase}"
    raise ValueError(f"smollm2-revise has no fix for constraint kind {kind!r}")


def fix(task: InstructTask, draft: str) -> str:
    """The revision the model learns: the draft's opening rewritten to meet the task's one constraint, or the
    task's request rewritten when the draft's cannot pass (no letter to case, no ASCII word to quote). Raises
    ``ValueError`` for a kind outside ``KINDS``; the result passes the arena's checker (``encode`` checks it)."""
    from arena.arenas.instruct import evaluate

    constraint = task.constraints[0]
    revised = rewrite(constraint.kind, constraint.phrase, opening(draft).strip().strip('"').strip())
    if all(evaluate(task, revised)):
        return revised
    return rewrite(constraint.kind, constraint.phrase, task.request)


REVISE = ReviseModel(NAME, BUILD_VERSION, KINDS, fix)


def collect_revision_prompts(
    split: str,
    seed: int = 0,
    model: str = "model:smollm2-135m-instruct",
    pool: BackendPool | None = None,
    limit: int | None = None,
    kinds: Sequence[str] = KINDS,
) -> list[RevisionPrompt]:
    """``model``'s drafts for every ``split`` task of ``kinds`` (the first ``limit``; the config's sampling), and
    HeRL's revision prompt for each draft that failed, written by the ``herl`` plugin's ``augment_group``. ``pool``
    (a ``BackendPool``) may hold the model's backend (tests use a scripted one)."""
    from tqdm import tqdm

    from arena.arenas.instruct import tasks_for
    from arena.core.api.augment import GroupTask
    from arena.core.api.records import TrialSpec
    from arena.core.config.loader import load_config
    from arena.core.host.plugins import PluginSet
    from arena.core.learn.experience import trial_samples
    from arena.core.learn.run_config import TrainConfig
    from arena.core.rollout.engine import RolloutEngine
    from arena.core.rollout.seats import BackendPool

    config = load_config(TrainConfig, CONFIG)
    learner = config.learners[0]
    kwargs = {"split": split, "kinds": list(kinds)}
    tasks = tasks_for(split, kinds=kinds)[:limit]
    # The drafts are most of the build's first half (about 6 minutes on 2 cores): show them going.
    drafting = tqdm(total=len(tasks), desc="SmolLM2 drafts", unit="task", disable=None, leave=False)
    engine = RolloutEngine(
        PluginSet([]),
        attrs.evolve(config.trial, episodes=1),
        backends=pool or BackendPool(),
        on_trial_end=lambda _record: drafting.update(),
    )
    specs = [
        TrialSpec(
            trial_id=f"{NAME}-{split}-{seed}-{i}",
            arena_id="instruct",
            seats=(model,),
            seed=i,
            arena_kwargs=kwargs,
            training=False,
        )
        for i in range(len(tasks))
    ]
    herl = PluginSet(["herl"])
    options = {"herl": dict(learner.options["herl"])}
    prompts: list[RevisionPrompt] = []
    trials = engine.run(specs)
    drafting.close()
    for trial in trials:
        for sample in trial_samples(trial, learner.name, (model,)):
            details = sample.meta["details"]
            if details["score"] >= 1.0:
                continue
            task = GroupTask(
                "instruct",
                kwargs,
                trial.spec.seed,
                sample.group_id,
                episode=0,
                iteration=0,
                max_new_tokens=config.trial.prompt.max_new_tokens,
            )
            (augmentation,) = herl.call("augment_group", group=(sample,), task=task, options=options)
            prompts.append(
                RevisionPrompt(
                    task_id=details["task_id"],
                    draft=sample.completion_text,
                    messages=augmentation.requests[0].messages,
                    original=sample.context_messages,
                    finished=sample.meta.get("finish_reason") == "stop",
                )
            )
    return prompts


def encode(
    tokenizer: Any,
    prompt: RevisionPrompt,
    fixer: Callable[[InstructTask, str], str] = fix,
    budget: int | None = None,
) -> Row:
    """The prompt's ids (chat template) followed by ``fixer``'s revision and end-of-sequence; labels -100 on the
    prompt. With a ``budget``, a revision longer than ``budget`` tokens with its end (the arena would cut it off)
    is replaced by the arena's reference answer for the task (``over_budget`` counts them)."""
    from arena.arenas.instruct import evaluate, reference_answer, task_by_id
    from arena.core.models.tiny.quality import prompt_ids

    task = task_by_id(prompt.task_id)
    target = fixer(task, prompt.draft)
    if not all(evaluate(task, target)):
        raise AssertionError(f"the fix missed {prompt.task_id}: {target!r}")
    body = tokenizer(target, add_special_tokens=False)["input_ids"]
    if budget is not None and len(body) + 1 > budget:
        body = tokenizer(reference_answer(task), add_special_tokens=False)["input_ids"]
    head = prompt_ids(tokenizer, prompt.messages)
    eos = int(tokenizer.eos_token_id)
    return [*head, *body, eos], [-100] * len(head) + [*body, eos]


def over_budget(
    tokenizer: Any,
    prompts: Sequence[RevisionPrompt],
    fixer: Callable[[InstructTask, str], str] = fix,
    budget: int = ANSWER_TOKENS,
) -> int:
    """How many of ``prompts``' revisions ``encode`` replaces with the reference answer at ``budget``."""
    from arena.arenas.instruct import task_by_id

    return sum(
        len(tokenizer(fixer(task_by_id(p.task_id), p.draft), add_special_tokens=False)["input_ids"]) + 1 > budget
        for p in prompts
    )


def encode_anchor(tokenizer: Any, prompt: RevisionPrompt) -> Row:
    """The draft's own prompt followed by the draft (end-of-sequence only if the draft ended with one)."""
    from arena.core.models.tiny.quality import prompt_ids

    head = prompt_ids(tokenizer, prompt.original)
    body = tokenizer(prompt.draft, add_special_tokens=False)["input_ids"]
    tail = [int(tokenizer.eos_token_id)] if prompt.finished else []
    return [*head, *body, *tail], [-100] * len(head) + [*body, *tail]


def training_rows(
    tokenizer: Any, prompts: Sequence[RevisionPrompt], recipe: ReviseRecipe, spec: ReviseModel = REVISE
) -> list[Row]:
    """A revision row per prompt (``spec.fix``'s revision), then (``recipe.anchor``) an anchor row per prompt."""
    rows = [encode(tokenizer, p, spec.fix, spec.budget) for p in prompts]
    if recipe.anchor:
        if not all(p.original for p in prompts):
            raise ValueError("anchor rows need each draft's own prompt (RevisionPrompt.original)")
        rows += [encode_anchor(tokenizer, p) for p in prompts]
    return rows


def sft(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[RevisionPrompt],
    recipe: ReviseRecipe,
    spec: ReviseModel = REVISE,
) -> list[float]:
    """AdamW at a constant rate on ``recipe.steps`` batches of ``recipe.batch`` rows drawn from ``training_rows``
    alike; the loss of every step."""
    rows = training_rows(tokenizer, prompts, recipe, spec)
    return sft_steps(
        model, tokenizer, lambda rng: rng.sample(rows, recipe.batch), recipe.steps, recipe.lr, recipe.seed, spec.name
    )


def revise_model_dir(recipe: ReviseRecipe | None = None, spec: ReviseModel = REVISE) -> Path:
    recipe = recipe or ReviseRecipe()
    return models_dir() / f"{spec.name}-v{spec.build_version}-seed{recipe.seed}"


def _build_into(out: Path, recipe: ReviseRecipe, spec: ReviseModel) -> None:
    import torch
    from transformers import AutoTokenizer, LlamaForCausalLM

    from arena.core.models.tiny.sft import deterministic_torch

    base = Path(smollm2.build_smollm2())
    with deterministic_torch(2):
        torch.manual_seed(recipe.seed)
        prompts = collect_revision_prompts("train", recipe.seed, kinds=spec.kinds)
        log.info(f"{spec.name}: collected", prompts=len(prompts), recipe=attrs.asdict(recipe))
        tokenizer = AutoTokenizer.from_pretrained(base)
        model = LlamaForCausalLM.from_pretrained(base, dtype=torch.float32).eval()
        losses = sft(model, tokenizer, prompts, recipe, spec)
    save_model(model, tokenizer, base, out)
    report = {
        "name": spec.name,
        "build_version": spec.build_version,
        "base": str(base),
        "kinds": list(spec.kinds),
        "recipe": attrs.asdict(recipe),
        "prompts": len(prompts),
        "budget": spec.budget,
        "over_budget": over_budget(tokenizer, prompts, spec.fix, spec.budget or ANSWER_TOKENS),
        "losses": [round(v, 5) for v in losses],
    }
    (out / "build_report.json").write_text(json.dumps(report, indent=2) + "\n")


def build_smollm2_revise(
    force: bool = False,
    recipe: ReviseRecipe | None = None,
    out_dir: Path | str | None = None,
    spec: ReviseModel = REVISE,
) -> Path:
    """Build (about 15 minutes on 2 cores for ``REVISE``) into ``out_dir``, default the cache; only the default
    recipe fills it."""
    recipe = recipe or ReviseRecipe()
    if out_dir is None and recipe != ReviseRecipe():
        raise ArenaError(f"only the default recipe builds {spec.name!r} into the cache: give an out_dir")
    target = Path(out_dir) if out_dir is not None else revise_model_dir(recipe, spec)
    return build_atomically(target, lambda tmp: _build_into(tmp, recipe, spec), force=force)


def resolve_smollm2_revise(spec: ReviseModel = REVISE) -> str:
    return str(build_smollm2_revise(spec=spec))


def smollm2_revise_info(spec: ReviseModel = REVISE) -> dict[str, Any]:
    """What ``arena models`` shows, without building anything."""
    path = revise_model_dir(spec=spec)
    info: dict[str, Any] = {"path": str(path), "built": (path / "config.json").is_file(), "base": smollm2.NAME}
    report = path / "build_report.json"
    if report.is_file():
        data = json.loads(report.read_text())
        info["prompts"] = data.get("prompts")
        info["final_loss"] = data["losses"][-1] if data.get("losses") else None
    return info
