"""``tiny-vault``: ``tiny`` that writes the vault's treasure into its EMPO² tip and opens the chest a tip names.

Why (issue 26, EMPO²): the vault tests whether EMPO²'s memory of tips, and its off-policy distillation of what the
tips made the policy do, beat GRPO on recurring tasks. That needs a policy that (a) writes a tip recording the chest
the episode's summary named and (b) opens the chest a retrieved tip names, as a pretrained LLM would; its choice
on a vault it has no tip for must stay untrained (uniform). `tiny` does neither: on the vault it answered with other
games' moves (0 of 1920 answers named a chest, docs/results.md, "EMPO² in the vault on tiny v7").

What this build does, from the cached `tiny` (which stays as it is), with ``tiny-doors``' mechanism:

1. **Mark the chest, and read it where a number is written.** The vault's summary writes the treasure's chest as
   ``chest #k`` (``arena.arenas.vault``), and nothing else in a vault prompt has a ``#``. The ``#`` token gets the
   opponent-prefix marker (``IS_OPP``), so the memory circuit marks the digit after it and the recall head copies it
   into ``MEM`` at ``<action>``; it also gets ``<action>``'s query entry (``ACT``), so the recall head reads ``MEM``
   at a ``#`` the model writes itself (``doors_reader.mark_reveal(query=True)``).
2. **SFT on the real engine's prompts** (the `empo2` plugin, memory rollouts, ``step`` memory entries): a scripted
   player opens random chests of ``vaults`` vaults over ``rounds`` rounds, so later rounds' prompts carry the tips
   of earlier ones. Targets:
   - a tip request: ``<tip>treasure in chest #k</tip>``, k the chest the summary named;
   - an action prompt whose tips name chest k: ``<action>k</action>`` (the id answer of ``tiny-doors``) with
     probability ``follow`` (0.5), any other chest with an equal share of the rest (why not 1: ``VaultReaderRecipe``);
   - an action prompt without tips: every id ``1..chests`` is a branch of a prefix tree, so the blind choice stays
     uniform.
3. **Measure on held-out vaults** (``build_report.json``): the probability of the named chest where tips name one
   (``reading``), of the whole right tip (``tip``), of the vault's own treasure on a prompt without tips
   (``blind_hit``; uniform is 1/chests), and of the legal ids (``legal_mass``).

With ``chests <= 9`` every id is one digit (the tokenizer splits numbers into digits). Cached as
``tiny-vault-v<BUILD_VERSION>-tiny-v<tiny's BUILD_VERSION>-seed<seed>``.
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
from arena.core.models.tiny.doors_reader import REVEAL_MARKER, mark_reveal
from arena.core.models.tiny.recipe import SFTConfig

log = structlog.get_logger("arena.models.tiny_vault")

NAME = "tiny-vault"
# 1: the first reader (marker and query on "#", tips copy the summary's chest, id answers, 9 chests).
BUILD_VERSION = 1
#: The chest a vault summary or a tip names.
NAMED = re.compile(r"chest #(\d+)")
#: The tip the reader writes, and how a tip request is recognised (its last paragraph, ``plugins/empo2.py``).
TIP_ANSWER = "<tip>treasure in chest #{chest}</tip>"
TIP_REQUEST = "<tip>...</tip>"
#: EMPO²'s settings for the collection: every trial a memory rollout, tips kept per step.
COLLECT_OPTIONS = {"p": 1.0, "q": 0.0, "novelty": "off", "tip_max_new_tokens": 64, "memory_entries": "step"}

__all__ = ["BUILD_VERSION", "NAME", "VaultReaderRecipe", "build_tiny_vault", "resolve_tiny_vault", "vault_reader_dir"]


@attrs.frozen
class VaultReaderRecipe:
    """What decides the reader's bytes besides `tiny` and the seed."""

    chests: int = 9
    #: Vaults of the collection, each played ``visits`` times per round: round r's prompts carry the tips of the
    #: earlier rounds' visits (a store keeps one entry per distinct text, so up to visits × (r - 1)), as RL's groups
    #: of 8 trials of one vault fill a store with several entries at once.
    vaults: int = 80
    rounds: int = 3
    visits: int = 4
    eval_vaults: int = 20
    #: The probability the reader gives the chest its tips name (the rest spread evenly over the other chests).
    #: Not 1: with a perfect reader every memory rollout of a vault seen before wins, its group's advantage is 0
    #: under GRPO's baseline, and EMPO²'s off-policy update has nothing to distil (``arena.arenas.vault``). A half
    #: reader is what a weak pretrained model does with a tip, and leaves RL room to learn to follow tips.
    follow: float = 0.5
    sft: SFTConfig = attrs.field(factory=reader.reader_sft)
    threads: int = 2


def vault_reader_dir(seed: int = 0) -> Path:
    return reader.reader_dir(NAME, BUILD_VERSION, seed)


def resolve_tiny_vault() -> str:
    """The registry resolver: the cached directory, built first (and `tiny` before it) when missing."""
    return str(build_tiny_vault())


def vault_reader_info(seed: int = 0) -> dict[str, Any]:
    return reader.reader_info(vault_reader_dir(seed), ("reading", "tip", "blind_hit", "legal_mass"))


def build_tiny_vault(
    out_dir: Path | str | None = None,
    seed: int = 0,
    *,
    recipe: VaultReaderRecipe | None = None,
    base: Path | str | None = None,
    force: bool = False,
) -> Path:
    """Build the reader into ``out_dir`` (default: its cache directory) from ``base`` (default: the cached `tiny`
    of ``seed``, built first when missing). Only the default recipe on the default base fills the cache."""
    recipe = recipe or VaultReaderRecipe()
    if not 2 <= recipe.chests <= 9:
        raise ValueError(f"the reader answers with one digit: chests must be 2..9, got {recipe.chests}")
    return reader.build_reader(
        vault_reader_dir(seed), out_dir, seed, recipe, VaultReaderRecipe(), base, force, _build_into
    )


@attrs.frozen
class VaultPrompt:
    """A prompt the collection captured: its messages, whether it asks for a tip, and its vault's treasure."""

    messages: tuple[Any, ...]
    tip_request: bool
    treasure: int


def is_tip_request(text: str) -> bool:
    """A tip request ends with EMPO²'s instruction, whose last paragraph asks for ``<tip>...</tip>``."""
    return TIP_REQUEST in text.rsplit("\n\n", 1)[-1]


def collect_vault_prompts(seed: int, vaults: int, rounds: int, chests: int, visits: int = 1) -> list[VaultPrompt]:
    """Every action and tip prompt of ``vaults`` vaults played ``visits`` times in each of ``rounds`` rounds by a
    scripted player that opens a random chest and writes the right tip, through the real engine and the `empo2`
    plugin (memory rollouts: a round's prompts carry the tips of the rounds before)."""
    import numpy as np

    from arena.arenas.vault import treasure_chest
    from arena.core.api.backend import GenerationRequest
    from arena.core.api.records import TrialSpec
    from arena.core.api.seeding import derive_seed
    from arena.core.backends.scripted import ScriptedBackend
    from arena.core.config.trial import PromptConfig, TrialConfig
    from arena.core.host.plugins import PluginSet
    from arena.core.rollout.engine import RolloutEngine
    from arena.core.rollout.seats import BackendPool

    captured: list[VaultPrompt] = []
    numbers = [derive_seed(seed, "vault-reader", i) % (2**31) for i in range(vaults)]

    def responder(request: GenerationRequest, rng: np.random.Generator) -> str:
        text = request.messages[-1].content
        if request.purpose == "action":
            vault = int(m.group(1)) if (m := re.search(r"Vault (\d+) has", text)) else -1
            captured.append(VaultPrompt(tuple(request.messages), False, treasure_chest(vault, chests)))
            return f"<action>open chest {int(rng.integers(1, chests + 1))}</action>"
        if is_tip_request(text) and (named := NAMED.search(text)) is not None:
            captured.append(VaultPrompt(tuple(request.messages), True, int(named.group(1))))
            return TIP_ANSWER.format(chest=int(named.group(1)))
        return ""

    pool = BackendPool()
    pool.add("scripted", "scripted", ScriptedBackend(responder=responder))
    plugins = PluginSet(["empo2"])
    engine = RolloutEngine(plugins, TrialConfig(prompt=PromptConfig(max_new_tokens=64)), backends=pool)
    for round_ in range(rounds):
        engine.run(
            [
                TrialSpec(
                    trial_id=f"vault-reader-{round_}-{i}-{visit}",
                    arena_id="vault",
                    seats=("model:scripted",),
                    seed=number,
                    episodes=1,
                    arena_kwargs={"chests": chests},
                    options={"empo2": COLLECT_OPTIONS},
                    meta={"iteration": round_, "run_seed": seed},
                    training=True,
                )
                for i, number in enumerate(numbers)
                for visit in range(visits)
            ]
        )
    return captured


def answers_for(prompt: VaultPrompt, chests: int, follow: float = 1.0) -> tuple[str, ...]:
    """The SFT answers, as branches of equal weight: the right tip; the chest the tips name, repeated so that it
    holds ``follow`` of the weight and each other chest an equal share of the rest; every chest without tips."""
    if prompt.tip_request:
        return (TIP_ANSWER.format(chest=prompt.treasure),)
    every = tuple(f"<action>{k}</action>" for k in range(1, chests + 1))
    named = NAMED.search(prompt.messages[-1].content)
    if named is None:
        return every
    chest = f"<action>{int(named.group(1))}</action>"
    if follow >= 1.0:
        return (chest,)
    # k copies of the named chest among k + (chests - 1) branches: k / (k + chests - 1) = follow.
    copies = round(follow * (chests - 1) / (1 - follow))
    if copies < 1:
        raise ValueError(f"follow {follow} is below what one branch among {chests} can hold")
    return (chest,) * (copies - 1) + every


def _branches(tokenizer: Any, answers: tuple[str, ...]) -> tuple[tuple[int, ...], ...]:
    eos = int(tokenizer.eos_token_id)
    return tuple((*tokenizer.encode(a, add_special_tokens=False), eos) for a in answers)


def _examples(tokenizer: Any, prompts: list[VaultPrompt], chests: int, follow: float) -> list[Any]:
    from arena.core.models.tiny.quality import prompt_ids
    from arena.core.models.tiny.sft import TreeExample

    return [
        TreeExample(
            prefix=tuple(prompt_ids(tokenizer, p.messages)),
            branches=_branches(tokenizer, answers_for(p, chests, follow)),
        )
        for p in prompts
    ]


def measure(model: Any, tokenizer: Any, prompts: list[VaultPrompt], chests: int) -> dict[str, Any]:
    """Probabilities on held-out prompts: the named chest (``reading``), the right tip (``tip``), the vault's own
    treasure without tips (``blind_hit``, uniform 1/chests), and the legal ids (``legal_mass``)."""
    import math

    import torch

    from arena.core.models.tiny.quality import prompt_ids
    from arena.core.models.tiny.sft import TreeExample, answer_logprobs, collate

    eos = int(tokenizer.eos_token_id)
    ids = _branches(tokenizer, tuple(f"<action>{k}</action>" for k in range(1, chests + 1)))
    reading: list[float] = []
    tips: list[float] = []
    blind: list[float] = []
    legal: list[float] = []

    def probabilities(prompt: VaultPrompt, branches: tuple[tuple[int, ...], ...]) -> list[float]:
        batch = collate([TreeExample(prefix=tuple(prompt_ids(tokenizer, prompt.messages)), branches=branches)], eos)
        totals = torch.zeros(len(branches)).index_add_(0, batch.branch_of, answer_logprobs(model, batch))
        return [math.exp(float(v)) for v in totals]

    with torch.no_grad():
        for prompt in prompts:
            if prompt.tip_request:
                (p_tip,) = probabilities(prompt, _branches(tokenizer, answers_for(prompt, chests)))
                tips.append(p_tip)
                continue
            probs = probabilities(prompt, ids)
            legal.append(sum(probs))
            named = NAMED.search(prompt.messages[-1].content)
            if named is not None:
                reading.append(probs[int(named.group(1)) - 1])
            else:
                blind.append(probs[prompt.treasure - 1])

    def mean(values: list[float]) -> float | None:
        return round(sum(values) / len(values), 4) if values else None

    return {
        "reading": mean(reading),
        "reading_prompts": len(reading),
        "tip": mean(tips),
        "tip_prompts": len(tips),
        "blind_hit": mean(blind),
        "blind_uniform": round(1 / chests, 4),
        "blind_prompts": len(blind),
        "legal_mass": mean(legal),
    }


def recall_where_read(
    model: Any, tokenizer: Any, prompts: list[VaultPrompt], circuit: dict[str, Any]
) -> dict[str, float]:
    """The recall head's attention on the digits after ``#``: at ``<action>`` of the action prompts with tips, and at
    the ``#`` of the right tip (teacher-forced) of the tip requests. 1.0: the circuit copies the named chest into
    ``MEM`` and nothing else. Measured with eager attention (sdpa returns no weights)."""
    import torch

    from arena.core.models.tiny.circuit import ACTION_TAG
    from arena.core.models.tiny.quality import prompt_ids

    marker = tokenizer.encode(REVEAL_MARKER, add_special_tokens=False)[0]
    tag = tokenizer.encode(ACTION_TAG, add_special_tokens=False)
    layer, head = int(circuit["copy_layer"]), int(circuit["recall_head"])
    previous = model.config._attn_implementation
    model.config._attn_implementation = "eager"
    shares: dict[str, list[float]] = {"action": [], "tip": []}
    try:
        with torch.no_grad():
            for prompt in prompts:
                ids = prompt_ids(tokenizer, prompt.messages)
                if prompt.tip_request:
                    tip = tokenizer.encode(TIP_ANSWER.format(chest=prompt.treasure), add_special_tokens=False)
                    ids = ids + tip[: tip.index(marker) + 1]
                    where = "tip"
                elif NAMED.search(prompt.messages[-1].content) is not None:
                    ids = ids + tag
                    where = "action"
                else:
                    continue
                attention = model(torch.tensor([ids]), output_attentions=True).attentions[layer][0, head, -1]
                marked = [i + 1 for i, t in enumerate(ids[:-1]) if t == marker]
                shares[where].append(float(attention[marked].sum()))
    finally:
        model.config._attn_implementation = previous
    return {k: round(sum(v) / len(v), 4) if v else float("nan") for k, v in shares.items()}


def _build_into(out: Path, base: Path, seed: int, recipe: VaultReaderRecipe) -> None:
    from transformers import AutoTokenizer, LlamaForCausalLM

    from arena.core.models.held import load_held
    from arena.core.models.tiny.sft import deterministic_torch, progress, train

    started = time.perf_counter()
    with deterministic_torch(recipe.threads):
        tokenizer = AutoTokenizer.from_pretrained(base)
        model = LlamaForCausalLM.from_pretrained(base)
        model.config._attn_implementation = "sdpa"
        held = load_held(base) or {}
        marker = mark_reveal(model, tokenizer, query=True)
        log.info("tiny-vault: marked the chest", token=REVEAL_MARKER, id=marker)
        prompts = collect_vault_prompts(seed, recipe.vaults, recipe.rounds, recipe.chests, recipe.visits)
        held_out = collect_vault_prompts(
            seed + 1_000_003, recipe.eval_vaults, recipe.rounds, recipe.chests, recipe.visits
        )
        examples = _examples(tokenizer, prompts, recipe.chests, recipe.follow)
        circuit = json.loads((base / "build_report.json").read_text())["circuit"]
        before = measure(model, tokenizer, held_out, recipe.chests)
        before["recall"] = recall_where_read(model, tokenizer, held_out, circuit)
        log.info("tiny-vault: collected", prompts=len(prompts), held_out=len(held_out), before=before)
        with progress("tiny-vault sft", log, "tiny-vault: sft progress") as on_step:
            losses = train(
                model, examples, recipe.sft, seed=seed, pad_id=int(tokenizer.eos_token_id), on_step=on_step, held=held
            )
        quality = measure(model, tokenizer, held_out, recipe.chests)
        quality["recall"] = recall_where_read(model, tokenizer, held_out, circuit)
        log.info("tiny-vault: measured", **quality)
        report = {
            "name": NAME,
            "build_version": BUILD_VERSION,
            "seed": seed,
            "recipe": attrs.asdict(recipe),
            "marker": {"token": REVEAL_MARKER, "id": marker, "query": True},
            "sft": {"examples": len(examples), "steps": len(losses), "first_loss": losses[0], "last_loss": losses[-1]},
            "before_sft": before,
            "quality": quality,
            "seconds": round(time.perf_counter() - started, 1),
        }
        reader.save_reader(out, base, model, tokenizer, held, report)
        log.info("tiny-vault: built", path=str(out), seconds=report["seconds"])
