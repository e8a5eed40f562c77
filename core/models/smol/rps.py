"""``smollm2-rps``: SmolLM2-135M-Instruct taught the answer form of the hidden-types testbed, its choice of move left
without any adaptation (issue 24, item 5; docs/testbeds.md, section 1).

Untrained, SmolLM2 writes a legal ``<action>MOVE</action>`` in about 4 of 10 answers on one-round RPS and forfeits the
rest (docs/results.md), so an RL run would first spend its budget on the answer's form. The build is a short SFT
(``RpsRecipe``: 60 steps of 4 prompts, AdamW at lr 1e-5, a few minutes on 2 cores) on prompts the real engine
writes, collected with a scripted player that moves at random, through the plugins of the two configs it serves
(``rps_types_smollm2_mage``: MAGE's ``history_only`` memory, so episodes 2 and 3 show the earlier episodes' moves;
``rps_types_smollm2_grpo``: no memory), on trial seeds 1000 and up, against the *training* pool only (always-rock and
always-paper; always-scissors stays unseen, even as a prompt).

Every row is trained on ``<action>MOVE</action>`` for a move drawn uniformly, whatever the memory shows: the model
learns the tags and that a move goes inside, and its choice becomes uniform and blind to the earlier episodes. So
the untrained policy wins 1/3 in every episode against every type (``measure`` checks it exactly), and whatever a
run makes of the memory is the run's own. Leaving the loss off the move (as ``smollm2-menu`` does with the plan's
name) would keep SmolLM2's own choice, which copies a move it has just read; that would confound what the memory
teaches with what the base model brings.

``measure`` is exact: teacher-forced probabilities of the three canonical answers at T 1 on held-out trials (seeds
below 1000) against all three types, by episode; the expected win rate against an always-one-move type is the
probability of the move that beats it.
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

log = structlog.get_logger("arena.models.smol.rps")

NAME = "smollm2-rps"
BUILD_VERSION = 1
#: The configs whose prompts the model learns to answer (their plugins write the prompt).
CONFIGS = ("rps_types_smollm2_mage", "rps_types_smollm2_grpo")
MOVES = ("rock", "paper", "scissors")
#: The always-one-move types: the first two are the training pool, the third is held out.
TYPES = ("rps-rock", "rps-paper", "rps-scissors")
TRAIN_TYPES = TYPES[:2]
TRAIN_SEEDS = range(1000, 1100)
EVAL_SEEDS = range(8)
EPISODES = 3


@attrs.frozen
class RpsRecipe:
    steps: int = 60
    batch: int = 4
    lr: float = 1e-5
    seed: int = 0


@attrs.frozen
class RpsPrompt:
    """A prompt the collection captured: its config, the opponent's type, the episode (1-based) and the seat."""

    config: str
    opponent: str
    episode: int
    seat: int
    messages: tuple[ChatMessage, ...]

    @property
    def winning_move(self) -> str:
        """The move that beats this opponent's one move."""
        return winning_move(self.opponent)


def winning_move(opponent: str) -> str:
    """The move that beats an always-one-move type (``rps-rock`` → paper; scissors beats paper, rock scissors)."""
    return MOVES[(MOVES.index(opponent.removeprefix("rps-")) + 1) % 3]


def answer(move: str) -> str:
    return f"<action>{move}</action>"


def collect_rps_prompts(
    seeds: Sequence[int], opponents: Sequence[str] = TRAIN_TYPES, configs: Sequence[str] = CONFIGS
) -> list[RpsPrompt]:
    """The engine's prompts of 3-episode trials under ``configs`` against each of ``opponents``, in both seats, with
    a scripted player that answers a uniformly drawn move (seeded by the trial seed)."""
    import numpy as np

    from arena.core.api.backend import GenerationRequest
    from arena.core.api.records import TrialSpec
    from arena.core.backends.scripted import ScriptedBackend
    from arena.core.config.loader import load_config
    from arena.core.host.plugins import PluginSet
    from arena.core.learn.run_config import TrainConfig
    from arena.core.rollout.engine import RolloutEngine
    from arena.core.rollout.seats import BackendPool

    captured: list[RpsPrompt] = []
    where: dict[str, Any] = {}

    def responder(request: GenerationRequest, rng: np.random.Generator) -> str:
        text = request.messages[-1].content
        episode = int(text.split("This is episode ", 1)[1].split(" ", 1)[0]) if "This is episode " in text else 1
        seat = 0 if "You are Player 0" in text else 1
        captured.append(RpsPrompt(where["config"], where["opponent"], episode, seat, tuple(request.messages)))
        return answer(MOVES[int(rng.integers(3))])

    for name in configs:
        config = load_config(TrainConfig, name)
        learner = config.learners[0]
        where["config"] = name
        pool = BackendPool()
        pool.add("scripted", "scripted", ScriptedBackend(responder=responder))
        engine = RolloutEngine(PluginSet(list(learner.plugins)), config.trial, backends=pool)
        for opponent in opponents:
            where["opponent"] = opponent
            engine.run(
                [
                    TrialSpec(
                        trial_id=f"{NAME}-{opponent}-{s}-{seat}",
                        arena_id=config.arena,
                        seats=("model:scripted", opponent) if seat == 0 else (opponent, "model:scripted"),
                        seed=int(s),
                        episodes=EPISODES,
                        early_stop_on_win=False,
                        arena_kwargs=dict(config.arena_kwargs),
                        options={k: dict(v) for k, v in learner.options.items()},
                        meta={"iteration": 0, "run_seed": int(s), "learner": "agent"},
                        training=True,
                    )
                    for s in seeds
                    for seat in (0, 1)
                ]
            )
    return captured


def encode(tokenizer: Any, prompt: RpsPrompt, move: str) -> Row:
    """The prompt's ids (chat template) followed by the answer's and end-of-sequence; labels -100 on the prompt."""
    from arena.core.models.tiny.quality import prompt_ids

    head = prompt_ids(tokenizer, prompt.messages)
    tail = [*tokenizer(answer(move), add_special_tokens=False)["input_ids"], int(tokenizer.eos_token_id)]
    return [*head, *tail], [-100] * len(head) + tail


def sft(model: Any, tokenizer: Any, prompts: Sequence[RpsPrompt], recipe: RpsRecipe) -> list[float]:
    """``recipe.steps`` AdamW steps on ``recipe.batch`` prompts each, every one answered with a uniform move."""

    def draw(rng: random.Random) -> list[Row]:
        return [encode(tokenizer, p, rng.choice(MOVES)) for p in rng.sample(list(prompts), recipe.batch)]

    return sft_steps(model, tokenizer, draw, recipe.steps, recipe.lr, recipe.seed, NAME)


def move_probabilities(model: Any, tokenizer: Any, prompt: RpsPrompt) -> dict[str, float]:
    """P(``<action>MOVE</action>`` then end-of-sequence) at T 1 for each move, by teacher forcing."""
    import torch

    out: dict[str, float] = {}
    for move in MOVES:
        ids, labels = encode(tokenizer, prompt, move)
        start = next(i for i, label in enumerate(labels) if label != -100)
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids])).logits[0, start - 1 : len(ids) - 1].float()
        lp = torch.log_softmax(logits, dim=-1).gather(-1, torch.tensor(ids[start:])[:, None])
        out[move] = math.exp(float(lp.sum()))
    return out


def measure(model: Any, tokenizer: Any, prompts: Sequence[RpsPrompt]) -> dict[str, Any]:
    """Per config, opponent and episode, averaged over the prompts: ``form`` (the three canonical answers' total
    probability), ``win`` (the winning move's, i.e. the expected win rate of a sampled answer that keeps the form)
    and ``move_share`` (each move's share of the form mass)."""
    cells: dict[tuple[str, str, int], list[dict[str, float]]] = {}
    for prompt in prompts:
        p = move_probabilities(model, tokenizer, prompt)
        p["win"] = p[prompt.winning_move]
        cells.setdefault((prompt.config, prompt.opponent, prompt.episode), []).append(p)
    result: dict[str, Any] = {}
    for (config, opponent, episode), rows in sorted(cells.items()):
        form = [sum(r[m] for m in MOVES) for r in rows]
        share = {m: sum(r[m] / f for r, f in zip(rows, form, strict=True)) / len(rows) for m in MOVES}
        result.setdefault(config, {}).setdefault(opponent, {})[str(episode)] = {
            "prompts": len(rows),
            "form": round(sum(form) / len(rows), 4),
            "win": round(sum(r["win"] for r in rows) / len(rows), 4),
            "move_share": {m: round(v, 4) for m, v in share.items()},
        }
    return result


def rps_model_dir(recipe: RpsRecipe | None = None) -> Path:
    recipe = recipe or RpsRecipe()
    return models_dir() / f"{NAME}-v{BUILD_VERSION}-seed{recipe.seed}"


def _build_into(out: Path, recipe: RpsRecipe) -> None:
    def fit(model: Any, tokenizer: Any) -> dict[str, Any]:
        train = collect_rps_prompts(TRAIN_SEEDS)
        log.info("smollm2-rps: collected", prompts=len(train), recipe=attrs.asdict(recipe))
        losses = sft(model, tokenizer, train, recipe)
        quality = measure(model, tokenizer, collect_rps_prompts(EVAL_SEEDS, TYPES))
        return {"losses": [round(v, 5) for v in losses], "quality": quality}

    fine_tune_smollm2(out, NAME, BUILD_VERSION, recipe, fit)


def build_smollm2_rps(force: bool = False, recipe: RpsRecipe | None = None, out_dir: Path | str | None = None) -> Path:
    """Build (a few minutes on 2 cores) into ``out_dir``, default the cache; only the default recipe fills it."""
    recipe = recipe or RpsRecipe()
    if out_dir is None and recipe != RpsRecipe():
        raise ArenaError(f"only the default recipe builds {NAME!r} into the cache: give an out_dir")
    target = Path(out_dir) if out_dir is not None else rps_model_dir(recipe)
    return build_atomically(target, lambda tmp: _build_into(tmp, recipe), force=force)


def resolve_smollm2_rps() -> str:
    return str(build_smollm2_rps())


def smollm2_rps_info() -> dict[str, Any]:
    """What ``arena models`` shows, without building anything."""
    path = rps_model_dir()
    info: dict[str, Any] = {"path": str(path), "built": (path / "config.json").is_file(), "base": smollm2.NAME}
    report = path / "build_report.json"
    if report.is_file():
        mage = json.loads(report.read_text())["quality"].get(CONFIGS[0], {})
        info["form_episode_2"] = mage.get(TYPES[0], {}).get("2", {}).get("form")
    return info
