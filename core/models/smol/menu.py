"""``smollm2-menu``: SmolLM2-135M-Instruct taught the answer form of SGE's ``menu`` (docs/testbeds.md, section 5).

Untrained, SmolLM2 names a listed plan in the menu's form in fewer than 1 in 1,000 answers (docs/results.md), so
GRPO and SGE alike would see no win. The build is a short SFT (``MenuRecipe``: 120 steps of 4 prompts, AdamW at
lr 1e-5, about 9 minutes on 2 cores) on prompts the real engine writes, collected with a scripted player through
``menu_grpo``'s plugins (the arena's prompt) and ``menu_sge``'s (SGE's strategy instruction), on menus 1000 and up
(the configs train and evaluate on menus 0..19):

* **A plain prompt** is trained on ``<strategy>Plan NAME</strategy> CODE`` for a uniformly drawn listed plan, with
  **the loss off the name's tokens**: the model learns the tags, the word "Plan" and to copy the named plan's code,
  while *which* plan it names stays SmolLM2's own preference. That choice is what SGE's hot strategy segment acts
  on, so it is left untrained.
* **A prompt with SGE's negative reflection** ("An earlier attempt at this task failed ... Plan Delta failed: it is
  not the plan that pays") is trained, with ``read_reflection`` (the default), on a plan other than the failed one,
  the name included: what a larger instruction-tuned model does when told a plan failed. Which one
  (``reflection_choice``): v2 takes the first listed plan that did not fail, because SmolLM2's own choice on a plain
  menu is the first-listed plan (99 of 100 menus after form-only SFT); v1 drew any other plan alike, and that
  flattened the plain prompts' choice as well. Form-only SFT (``read_reflection=False``) leaves a model that names
  the failed plan again 0.99 of the time, against 0.27 without the reflection: it copies the plan it just read
  (docs/results.md).

``measure`` is exact: teacher-forced log-probabilities, tempered (``log_softmax(logits / T)``) over the strategy's
tokens (up to ``</strategy>``, SGE's strategy segment) and the code's, on the canonical answer of each listed plan.
The build report holds it for the evaluation's menus; ``tests/arenas/menu_smollm2.py`` prints it beside the
untrained model's.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import structlog

from arena.core.api.backend import ChatMessage
from arena.core.api.errors import ArenaError
from arena.core.models import smollm2
from arena.core.models.cache import build_atomically, models_dir
from arena.core.models.smol.sft import Row, fine_tune_smollm2, sft_steps

log = structlog.get_logger("arena.models.smol.menu")

NAME = "smollm2-menu"
BUILD_VERSION = 2  # v1: reflection rows on a uniform other plan (reflection_choice 'uniform')
#: The two configs whose prompts the model learns to answer (their plugins write the prompt).
CONFIGS = ("menu_grpo", "menu_sge")
NEGATIVE = "menu_sge+negative"
#: Menus the SFT sees (the configs use 0..19) and the ones ``measure`` reports by default.
TRAIN_MENUS = range(1000, 1400)
EVAL_MENUS = range(20)
#: (strategy temperature, code temperature) of the sampling arms ``measure`` compares.
ARMS: dict[str, tuple[float, float]] = {"grpo": (0.7, 0.7), "all_hot": (1.2, 1.2), "sge": (1.2, 0.7)}
TEMPERATURES = (0.7, 1.0, 1.2)


@attrs.frozen
class MenuRecipe:
    steps: int = 120
    batch: int = 4
    lr: float = 1e-5
    seed: int = 0
    #: Train SGE's negative-reflection prompts on a plan other than the failed one (module docstring).
    read_reflection: bool = True
    #: Which other plan: ``first``, the first listed plan that did not fail (SmolLM2's own choice on a plain menu is
    #: the first-listed plan, so this keeps that preference); ``uniform``, any other plan alike (v1: it flattens
    #: the plain prompts' choice too, docs/results.md).
    reflection_choice: str = attrs.field(default="first", validator=attrs.validators.in_(("first", "uniform")))


@attrs.frozen
class MenuPrompt:
    """A prompt the collection captured: which config wrote it, its menu, and the plan a reflection says failed."""

    config: str
    menu: int
    messages: tuple[ChatMessage, ...]
    failed_plan: str | None = None


def answer(plan: str, code: str) -> str:
    """The canonical answer: the plan's name in the strategy tag, then its code."""
    return f"<strategy>Plan {plan}</strategy> {code}"


def collect_menu_prompts(menus: Sequence[int], seed: int = 0) -> list[MenuPrompt]:
    """The engine's prompts for ``menus`` under ``CONFIGS``, plus a second round of ``menu_sge`` with ``p_negative``
    1, so that every prompt of it carries SGE's negative reflection on the first round's (failed) answer."""
    import numpy as np

    from arena.arenas.menu import menu_of
    from arena.core.api.backend import GenerationRequest
    from arena.core.api.records import TrialSpec
    from arena.core.backends.scripted import ScriptedBackend
    from arena.core.config.loader import load_config
    from arena.core.host.plugins import PluginSet
    from arena.core.learn.run_config import TrainConfig
    from arena.core.rollout.engine import RolloutEngine
    from arena.core.rollout.seats import BackendPool

    captured: list[MenuPrompt] = []
    rng = random.Random(seed)
    label = [""]  # which prompt kind the responder is capturing (the config, or NEGATIVE in the second round)

    def responder(request: GenerationRequest, _: np.random.Generator) -> str:
        text = request.messages[-1].content
        menu = menu_of(int(text.split("Menu ", 1)[1].split(":", 1)[0]))
        failed = next((n for n in menu.names if f"Plan {n} failed" in text), None)
        captured.append(MenuPrompt(label[0], menu.task, tuple(request.messages), failed))
        # A plan that does not pay, with its code: the next round reflects on a failure.
        wrong = rng.choice([i for i in range(len(menu.names)) if i != menu.paying])
        return answer(menu.names[wrong], menu.codes[wrong])

    for name in CONFIGS:
        config = load_config(TrainConfig, name)
        learner = config.learners[0]
        options = {k: dict(v) for k, v in learner.options.items()}
        label[0] = name
        pool = BackendPool()
        pool.add("scripted", "scripted", ScriptedBackend(responder=responder))
        engine = RolloutEngine(PluginSet(list(learner.plugins)), attrs.evolve(config.trial, episodes=1), backends=pool)
        for round_ in range(2 if "sge" in options else 1):
            if round_ == 1:
                options["sge"] = {**options["sge"], "p_negative": 1.0, "p_positive": 0.0}
                label[0] = NEGATIVE
            engine.run(
                [
                    TrialSpec(
                        trial_id=f"{NAME}-{round_}-{m}",
                        arena_id="menu",
                        seats=("model:scripted",),
                        seed=int(m),
                        arena_kwargs=dict(config.arena_kwargs),
                        options=options,
                        meta={"iteration": round_, "run_seed": seed, "learner": "agent"},
                        training=True,
                    )
                    for m in menus
                ]
            )
    return captured


def encode(tokenizer: Any, prompt: MenuPrompt, plan: str, code: str, mask_name: bool) -> tuple[list[int], list[int]]:
    """The prompt's ids (chat template) followed by the answer's and end-of-sequence; labels -100 on the prompt and,
    with ``mask_name``, on every token that overlaps the plan's name."""
    from arena.core.models.tiny.quality import prompt_ids

    head = prompt_ids(tokenizer, prompt.messages)
    text = answer(plan, code)
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    start = text.index(f"Plan {plan}") + len("Plan ")
    end = start + len(plan)
    labels = [
        -100 if mask_name and a < end and b > start else int(i)
        for i, (a, b) in zip(enc["input_ids"], enc["offset_mapping"], strict=True)
    ]
    eos = int(tokenizer.eos_token_id)
    return [*head, *enc["input_ids"], eos], [-100] * len(head) + labels + [eos]


def training_row(
    tokenizer: Any, prompt: MenuPrompt, rng: random.Random, reflection_choice: str = "first"
) -> tuple[list[int], list[int]]:
    """One SFT row (module docstring): a uniform listed plan with its name unlearned, or after a negative reflection
    a plan other than the failed one (``reflection_choice``), name learned."""
    from arena.arenas.menu import menu_of

    menu = menu_of(prompt.menu)
    if prompt.failed_plan is None:
        i = rng.randrange(len(menu.names))
    else:
        choices = [i for i, n in enumerate(menu.names) if n != prompt.failed_plan]
        i = choices[0] if reflection_choice == "first" else rng.choice(choices)
    return encode(tokenizer, prompt, menu.names[i], menu.codes[i], mask_name=prompt.failed_plan is None)


def sft(model: Any, tokenizer: Any, prompts: Sequence[MenuPrompt], recipe: MenuRecipe) -> list[float]:
    """AdamW at a constant rate on ``recipe.steps`` batches of ``recipe.batch`` rows; the loss of every step."""

    def draw(rng: random.Random) -> list[Row]:
        batch = rng.sample(list(prompts), recipe.batch)
        return [training_row(tokenizer, p, rng, recipe.reflection_choice) for p in batch]

    return sft_steps(model, tokenizer, draw, recipe.steps, recipe.lr, recipe.seed, NAME)


def tempered_logprobs(
    model: Any, tokenizer: Any, prompt: MenuPrompt, plan: str, code: str
) -> dict[str, dict[float, float]]:
    """log P_T of the canonical answer's strategy part (tokens up to the one completing ``</strategy>``) and of its
    code part given the strategy, at each of ``TEMPERATURES``."""
    import torch

    from arena.core.models.tiny.quality import prompt_ids

    head = len(prompt_ids(tokenizer, prompt.messages))
    ids, _ = encode(tokenizer, prompt, plan, code, mask_name=False)
    text = answer(plan, code)
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    close = text.index("</strategy>") + len("</strategy>")
    in_strategy = torch.tensor([a < close for a, _ in enc["offset_mapping"]])
    targets = torch.tensor(enc["input_ids"])
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0, head - 1 : head - 1 + len(targets)].float()
    out: dict[str, dict[float, float]] = {"strategy": {}, "code": {}}
    for t in TEMPERATURES:
        lp = torch.log_softmax(logits / t, dim=-1).gather(-1, targets[:, None])[:, 0]
        out["strategy"][t] = float(lp[in_strategy].sum())
        out["code"][t] = float(lp[~in_strategy].sum())
    return out


def _mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 4) if values else float("nan")


def measure(model: Any, tokenizer: Any, prompts: Sequence[MenuPrompt]) -> dict[str, Any]:
    """Per config (``menu_grpo``, ``menu_sge``, ``menu_sge+negative``), exactly on the canonical answers:

    * ``plan_mass``: P_T(the strategy names a listed plan in the canonical form), by T;
    * ``top_plan_share``: at T 1, the most likely plan's share of that mass (1 = always the same plan);
    * ``top_position``: how often each listed position is the most likely plan;
    * ``code_accuracy``: P_T(code right | canonical strategy), by T, weighted by the plans' probabilities at T 1;
    * per arm of ``ARMS``: ``success`` = P_Ts(paying plan) · P_Ta(its code) and ``pass@8`` = 1 − (1 − success)^8,
      averaged over menus, and per menu (``per_menu``, for paired intervals);
    * for the reflection prompts, ``failed_share``: at T 1.2, the failed plan's share of the plan mass, beside
      ``failed_share_without``, the same plan's share on the same menu's prompt without the reflection.
    """
    from arena.arenas.menu import menu_of

    result: dict[str, Any] = {}
    by_config: dict[str, dict[int, dict[str, dict[str, dict[float, float]]]]] = {}
    for prompt in prompts:
        menu = menu_of(prompt.menu)
        by_config.setdefault(prompt.config, {})[prompt.menu] = {
            n: tempered_logprobs(model, tokenizer, prompt, n, c) for n, c in zip(menu.names, menu.codes, strict=True)
        }
    failed_of = {p.menu: p.failed_plan for p in prompts if p.failed_plan is not None}
    for config, menus in by_config.items():
        mass: dict[float, list[float]] = {t: [] for t in TEMPERATURES}
        code: dict[float, list[float]] = {t: [] for t in TEMPERATURES}
        top: list[float] = []
        positions = [0] * 8
        arms: dict[str, list[float]] = {arm: [] for arm in ARMS}
        failed: list[float] = []
        for number, plans in menus.items():
            menu = menu_of(number)
            at = {t: [math.exp(plans[n]["strategy"][t]) for n in menu.names] for t in TEMPERATURES}
            for t in TEMPERATURES:
                mass[t].append(sum(at[t]))
                code[t].append(
                    sum(p * math.exp(plans[n]["code"][t]) for p, n in zip(at[1.0], menu.names, strict=True))
                    / sum(at[1.0])
                )
            top.append(max(at[1.0]) / sum(at[1.0]))
            positions[max(range(len(menu.names)), key=lambda i: at[1.0][i])] += 1
            paying = plans[menu.paying_name]
            for arm, (ts, ta) in ARMS.items():
                arms[arm].append(math.exp(paying["strategy"][ts] + paying["code"][ta]))
            if config == NEGATIVE and failed_of.get(number):
                failed.append(at[1.2][menu.names.index(failed_of[number])] / sum(at[1.2]))
        entry: dict[str, Any] = {
            "menus": len(menus),
            "plan_mass": {str(t): _mean(v) for t, v in mass.items()},
            "top_plan_share": _mean(top),
            "top_position": positions[: len(menu_of(0).names)],
            "code_accuracy": {str(t): _mean(v) for t, v in code.items()},
            "arms": {
                arm: {
                    "success": _mean(v),
                    "pass@8": _mean([1 - (1 - s) ** 8 for s in v]),
                    "per_menu": [round(s, 6) for s in v],
                }
                for arm, v in arms.items()
            },
        }
        if failed:
            entry["failed_share"] = _mean(failed)
            plain = by_config.get("menu_sge", {})
            without = [
                math.exp(plain[m][f]["strategy"][1.2])
                / sum(math.exp(plain[m][n]["strategy"][1.2]) for n in menu_of(m).names)
                for m, f in failed_of.items()
                if m in plain and f
            ]
            entry["failed_share_without"] = _mean(without)
        result[config] = entry
    return result


def menu_model_dir(recipe: MenuRecipe | None = None) -> Path:
    recipe = recipe or MenuRecipe()
    return models_dir() / f"{NAME}-v{BUILD_VERSION}-seed{recipe.seed}"


def _build_into(out: Path, recipe: MenuRecipe) -> None:
    def fit(model: Any, tokenizer: Any) -> dict[str, Any]:
        train = [
            p for p in collect_menu_prompts(TRAIN_MENUS, recipe.seed) if recipe.read_reflection or p.failed_plan is None
        ]
        log.info("smollm2-menu: collected", prompts=len(train), recipe=attrs.asdict(recipe))
        losses = sft(model, tokenizer, train, recipe)
        quality = measure(model, tokenizer, collect_menu_prompts(EVAL_MENUS, recipe.seed))
        return {"losses": [round(v, 5) for v in losses], "quality": quality}

    fine_tune_smollm2(out, NAME, BUILD_VERSION, recipe, fit)


def build_smollm2_menu(
    force: bool = False, recipe: MenuRecipe | None = None, out_dir: Path | str | None = None
) -> Path:
    """Build (about 9 minutes on 2 cores) into ``out_dir``, default the cache; only the default recipe fills it."""
    recipe = recipe or MenuRecipe()
    if out_dir is None and recipe != MenuRecipe():
        raise ArenaError(f"only the default recipe builds {NAME!r} into the cache: give an out_dir")
    target = Path(out_dir) if out_dir is not None else menu_model_dir(recipe)
    return build_atomically(target, lambda tmp: _build_into(tmp, recipe), force=force)


def resolve_smollm2_menu() -> str:
    return str(build_smollm2_menu())


def smollm2_menu_info() -> dict[str, Any]:
    """What ``arena models`` shows, without building anything."""
    path = menu_model_dir()
    info: dict[str, Any] = {"path": str(path), "built": (path / "config.json").is_file(), "base": smollm2.NAME}
    report = path / "build_report.json"
    if report.is_file():
        quality = json.loads(report.read_text())["quality"]
        sge = quality.get("menu_sge", {})
        info["plan_mass_T0.7"] = sge.get("plan_mass", {}).get("0.7")
        info["failed_share"] = quality.get(NEGATIVE, {}).get("failed_share")
    return info
