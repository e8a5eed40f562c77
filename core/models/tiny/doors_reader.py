"""``tiny-doors``: ``tiny`` whose memory circuit marks the door a `doors` episode revealed, taught to open it.

Why (issue 24, items 2 and 5): the `doors` testbed asks whether a learner spends episode 1 scouting, which only
pays if a later episode opens the scouted door. That needs a model that copies a number from an earlier episode's
transcript into its answer, as a pretrained LLM would; the decision under test (scout or guess in episode 1) must
stay untrained. `tiny` cannot: its memory circuit marks only tokens after an opponent's step prefix, and SFT on
doors prompts alone did not teach it to read (tiny v8 + 564 SFT steps on 3000 doors prompts, 60% of them with a
revealed door: the revealed door opened 0.24 of the time, chance 0.10; docs/results.md).

What this build does, from the cached `tiny` (nothing else is touched, `tiny` stays as it is):

1. **Mark the reveal.** The doors' summaries write the prize's door as ``door #k`` and nothing else in a doors
   prompt has a ``#`` (``arena.arenas.doors``). The ``#`` token's embedding gets the opponent-prefix marker
   (``IS_OPP``, at the value the opponent-prefix tokens carry), so the circuit's layer-0 marker head writes
   ``PREV_OPP`` at the digit after it and the recall head copies that digit's identity code into ``MEM`` at
   ``<action>`` (docs/models.md, "the memory circuit"). The entry is held, as the circuit's other marker entries are.
2. **Answer with the door's id.** The doors' move ids are their numbers (``7: open door 7``; ``0: scout``) and the
   parser takes a bare id, so ``<action>7</action>`` opens door 7: the decision is the one token after
   ``<action>``, where ``MEM`` is. With ``doors <= 9`` every id is one digit.
3. **SFT on doors prompts from the real engine** (MAGE's ``history_only`` memory, 3 episodes, a scripted player that
   scouts ``scout_rate`` of the time so that reveals are common): where an earlier episode revealed the door, the
   one answer is its id; everywhere else every id ``0..doors`` is a branch (a prefix tree), so the choice between
   scouting and guessing, and among the doors, is uniform, as `tiny`'s own choices are. The readout of ``MEM`` is
   free here (as in RL), so SFT learns "digit seen after ``#`` → that digit"; the circuit's weights stay held.
4. **Measure on held-out trials** (``build_report.json``): the probability of the revealed door where one was
   revealed (``reading``), of scouting in episode 1 (``scout_first``; uniform is 1/(doors+1)), and the total
   probability of the legal ids (``legal_mass``).

Cached as ``tiny-doors-v<BUILD_VERSION>-tiny-v<tiny's BUILD_VERSION>-seed<seed>``: a new `tiny` builds a new reader.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import attrs
import structlog

from arena.core.models.tiny import reader
from arena.core.models.tiny.recipe import SFTConfig

log = structlog.get_logger("arena.models.tiny_doors")

NAME = "tiny-doors"
# 1: the first reader (marker on "#", id answers, SFT on 9-door trials).
BUILD_VERSION = 1
#: The character the doors' summaries put before the prize's door number, and nothing else in a doors prompt has.
REVEAL_MARKER = "#"
#: Where an earlier episode revealed the prize's door, in a doors prompt.
REVEALED = re.compile(r"door #(\d+)")

__all__ = ["BUILD_VERSION", "NAME", "ReaderRecipe", "build_tiny_doors", "reader_dir", "resolve_tiny_doors"]


@attrs.frozen
class ReaderRecipe:
    """What decides the reader's bytes besides `tiny` and the seed."""

    doors: int = 9
    #: Scripted trials collected for SFT (3 episodes each) and for the held-out measurement.
    trials: int = 600
    eval_trials: int = 150
    #: How often the scripted collector scouts: reveals must be common enough to learn from.
    scout_rate: float = 0.35
    sft: SFTConfig = attrs.field(factory=reader.reader_sft)
    threads: int = 2


def reader_dir(seed: int = 0) -> Path:
    return reader.reader_dir(NAME, BUILD_VERSION, seed)


def resolve_tiny_doors() -> str:
    """The registry resolver: the cached directory, built first (and `tiny` before it) when missing."""
    return str(build_tiny_doors())


def reader_info(seed: int = 0) -> dict[str, Any]:
    return reader.reader_info(reader_dir(seed), ("reading", "scout_first", "legal_mass"))


def build_tiny_doors(
    out_dir: Path | str | None = None,
    seed: int = 0,
    *,
    recipe: ReaderRecipe | None = None,
    base: Path | str | None = None,
    force: bool = False,
) -> Path:
    """Build the reader into ``out_dir`` (default: its cache directory) from ``base`` (default: the cached `tiny`
    of ``seed``, built first when missing). Only the default recipe on the default base fills the cache."""
    recipe = recipe or ReaderRecipe()
    if not 2 <= recipe.doors <= 9:
        raise ValueError(f"the reader answers with one digit: doors must be 2..9, got {recipe.doors}")
    return reader.build_reader(reader_dir(seed), out_dir, seed, recipe, ReaderRecipe(), base, force, _build_into)


def collect_doors_prompts(seed: int, trials: int, doors: int, scout_rate: float) -> list[tuple[Any, int]]:
    """Every action prompt of ``trials`` scripted 3-episode doors trials with MAGE's history memory, with its
    episode index (0-based)."""
    import numpy as np

    from arena.core.api.backend import GenerationRequest
    from arena.core.api.records import TrialSpec
    from arena.core.api.seeding import derive_seed
    from arena.core.backends.scripted import ScriptedBackend
    from arena.core.config.trial import PromptConfig, TrialConfig
    from arena.core.host.plugins import PluginSet
    from arena.core.rollout.engine import RolloutEngine
    from arena.core.rollout.seats import BackendPool

    captured: list[tuple[Any, int]] = []

    def responder(request: GenerationRequest, rng: np.random.Generator) -> str:
        if request.purpose != "action":
            return ""
        text = request.messages[-1].content
        episode = int(m.group(1)) - 1 if (m := re.search(r"This is episode (\d+) of", text)) else 0
        captured.append((request.messages, episode))
        if rng.random() < scout_rate:
            return "<action>scout</action>"
        return f"<action>open door {int(rng.integers(1, doors + 1))}</action>"

    pool = BackendPool()
    pool.add("scripted", "scripted", ScriptedBackend(responder=responder))
    specs = [
        TrialSpec(
            trial_id=f"doors-reader-{i}",
            arena_id="doors",
            seats=("model:scripted",),
            seed=derive_seed(seed, "doors-reader", i) % (2**31),
            episodes=3,
            arena_kwargs={"doors": doors},
            options={"mage": {"memory": "history_only"}},
            training=False,
        )
        for i in range(trials)
    ]
    config = TrialConfig(prompt=PromptConfig(max_new_tokens=64))
    RolloutEngine(PluginSet(["mage"]), config, backends=pool).run(specs)
    return captured


def answers_for(prompt: str, doors: int) -> tuple[str, ...]:
    """The SFT answers of a doors prompt: the revealed door's id, or every id (uniform) when none was revealed."""
    revealed = REVEALED.search(prompt)
    if revealed is not None:
        return (f"<action>{int(revealed.group(1))}</action>",)
    return tuple(f"<action>{k}</action>" for k in range(doors + 1))


def _examples(tokenizer: Any, prompts: list[tuple[Any, int]], doors: int) -> list[Any]:
    from arena.core.models.tiny.quality import prompt_ids
    from arena.core.models.tiny.sft import TreeExample

    eos = int(tokenizer.eos_token_id)
    out = []
    for messages, _ in prompts:
        answers = answers_for(messages[-1].content, doors)
        branches = tuple((*tokenizer.encode(a, add_special_tokens=False), eos) for a in answers)
        out.append(TreeExample(prefix=tuple(prompt_ids(tokenizer, messages)), branches=branches))
    return out


def mark_reveal(model: Any, tokenizer: Any, *, query: bool = False) -> int:
    """Give the ``#`` token the opponent-prefix marker (``IS_OPP``) that the prefix tokens carry; its id.

    With ``query`` the token also gets ``<action>``'s ``ACT`` entry, so the recall head reads ``MEM`` at a ``#`` as
    it does at ``<action>``: a model that writes ``#`` can then write the marked number after it (``tiny-vault``'s
    tips copy the treasure's chest that way)."""
    import torch

    from arena.core.models.tiny.circuit import ACT, IS_OPP, marker_token_ids, opponent_prefix_ids

    ids = tokenizer.encode(REVEAL_MARKER, add_special_tokens=False)
    if len(ids) != 1:
        raise ValueError(f"{REVEAL_MARKER!r} must be one token of tiny's vocabulary, got {ids}")
    embed = model.model.embed_tokens.weight
    hidden = model.config.hidden_size
    prefixes = opponent_prefix_ids(tokenizer)
    with torch.no_grad():
        embed[ids[0], hidden - IS_OPP] = embed[prefixes, hidden - IS_OPP].mean()
        if query:
            _, action = marker_token_ids(tokenizer)
            embed[ids[0], hidden - ACT] = embed[action, hidden - ACT]
    return int(ids[0])


def measure(model: Any, tokenizer: Any, prompts: list[tuple[Any, int]], doors: int) -> dict[str, Any]:
    """Probabilities of the id answers on held-out prompts: reading, episode-1 scouting, legal mass."""
    import math

    import torch

    from arena.core.models.tiny.quality import prompt_ids
    from arena.core.models.tiny.sft import TreeExample, answer_logprobs, collate

    eos = int(tokenizer.eos_token_id)
    every = tuple(f"<action>{k}</action>" for k in range(doors + 1))
    branches = tuple((*tokenizer.encode(a, add_special_tokens=False), eos) for a in every)
    reading: list[float] = []
    scout_first: list[float] = []
    legal: list[float] = []
    with torch.no_grad():
        for messages, episode in prompts:
            batch = collate([TreeExample(prefix=tuple(prompt_ids(tokenizer, messages)), branches=branches)], eos)
            totals = torch.zeros(len(branches)).index_add_(0, batch.branch_of, answer_logprobs(model, batch))
            probs = [math.exp(float(v)) for v in totals]
            legal.append(sum(probs))
            revealed = REVEALED.search(messages[-1].content)
            if revealed is not None:
                reading.append(probs[int(revealed.group(1))])
            elif episode == 0:
                scout_first.append(probs[0])

    def mean(values: list[float]) -> float | None:
        return round(sum(values) / len(values), 4) if values else None

    return {
        "reading": mean(reading),
        "reading_prompts": len(reading),
        "scout_first": mean(scout_first),
        "scout_first_uniform": round(1 / (doors + 1), 4),
        "first_episode_prompts": len(scout_first),
        "legal_mass": mean(legal),
    }


def recall_on_reveal(model: Any, tokenizer: Any, prompts: list[tuple[Any, int]], circuit: dict[str, Any]) -> float:
    """The recall head's attention at ``<action>`` on the digits after ``#``, mean over prompts with a reveal.

    The mechanism check: 1.0 means the circuit copies the revealed door into ``MEM`` and nothing else; the SFT
    only has to learn the readout. Measured with eager attention (sdpa returns no weights).
    """
    import torch

    from arena.core.models.tiny.circuit import ACTION_TAG
    from arena.core.models.tiny.quality import prompt_ids

    marker = tokenizer.encode(REVEAL_MARKER, add_special_tokens=False)[0]
    tag = tokenizer.encode(ACTION_TAG, add_special_tokens=False)
    layer, head = int(circuit["copy_layer"]), int(circuit["recall_head"])
    previous = model.config._attn_implementation
    model.config._attn_implementation = "eager"
    shares: list[float] = []
    try:
        with torch.no_grad():
            for messages, _ in prompts:
                if REVEALED.search(messages[-1].content) is None:
                    continue
                ids = prompt_ids(tokenizer, messages) + tag
                attention = model(torch.tensor([ids]), output_attentions=True).attentions[layer][0, head, -1]
                shares.append(float(attention[[i + 1 for i, t in enumerate(ids) if t == marker]].sum()))
    finally:
        model.config._attn_implementation = previous
    return round(sum(shares) / len(shares), 4) if shares else float("nan")


def _build_into(out: Path, base: Path, seed: int, recipe: ReaderRecipe) -> None:
    from transformers import AutoTokenizer, LlamaForCausalLM

    from arena.core.models.held import load_held
    from arena.core.models.tiny.sft import deterministic_torch, progress, train

    started = time.perf_counter()
    with deterministic_torch(recipe.threads):
        tokenizer = AutoTokenizer.from_pretrained(base)
        model = LlamaForCausalLM.from_pretrained(base)
        model.config._attn_implementation = "sdpa"
        held = load_held(base) or {}
        marker = mark_reveal(model, tokenizer)
        log.info("tiny-doors: marked the reveal", token=REVEAL_MARKER, id=marker)
        prompts = collect_doors_prompts(seed, recipe.trials, recipe.doors, recipe.scout_rate)
        held_out = collect_doors_prompts(seed + 1_000_003, recipe.eval_trials, recipe.doors, recipe.scout_rate)
        examples = _examples(tokenizer, prompts, recipe.doors)
        before = measure(model, tokenizer, held_out, recipe.doors)
        circuit = json.loads((base / "build_report.json").read_text())["circuit"]
        before["recall_on_reveal"] = recall_on_reveal(model, tokenizer, held_out, circuit)
        log.info("tiny-doors: collected", prompts=len(prompts), held_out=len(held_out), before=before)
        with progress("tiny-doors sft", log, "tiny-doors: sft progress") as on_step:
            losses = train(
                model, examples, recipe.sft, seed=seed, pad_id=int(tokenizer.eos_token_id), on_step=on_step, held=held
            )
        quality = measure(model, tokenizer, held_out, recipe.doors)
        quality["recall_on_reveal"] = recall_on_reveal(model, tokenizer, held_out, circuit)
        log.info("tiny-doors: measured", **quality)
        report = {
            "name": NAME,
            "build_version": BUILD_VERSION,
            "seed": seed,
            "recipe": attrs.asdict(recipe),
            "reveal_marker": {"token": REVEAL_MARKER, "id": marker},
            "sft": {"examples": len(examples), "steps": len(losses), "first_loss": losses[0], "last_loss": losses[-1]},
            "before_sft": before,
            "quality": quality,
            "seconds": round(time.perf_counter() - started, 1),
        }
        reader.save_reader(out, base, model, tokenizer, held, report)
        log.info("tiny-doors: built", path=str(out), seconds=report["seconds"])
