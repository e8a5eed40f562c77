"""``tiny``: a small Llama decoder built by the project, deterministic, cached, no download.

Build phases (each logs one line; training shows a progress bar):

1. demonstrations: real prompts of the six built-in arenas from the real engine, scripted answers
   (``arena.core.models.tiny.demos`` documents every prompt and answer);
2. tokenizer: byte-level BPE trained on that text, chat template (``arena.core.models.tiny.tokenizer``);
3. model: ``LlamaForCausalLM`` with head_dim 64 (vLLM needs ≥ 64), tied embeddings, seeded initialisation
   (Llama rather than Qwen2: transformers 5 forces its Qwen2 tokenizer class onto ``qwen2`` checkpoints, which
   would replace the trained pre-tokenizer), and a hand-set "copy a move from the list" circuit written into its
   first two layers (``arena.core.models.tiny.circuit``; ``TinyRecipe.without_copy_circuit()`` is the v2 recipe);
4. SFT on answer tokens only, prefix trees bucketed by length, the circuit's weights held
   (``arena.core.models.tiny.sft``); the masks of the held entries go into ``held_weights.safetensors``, so RL keeps
   them too (``arena.core.models.held``);
5. quality gate on held-out prompts: the share of sampled answers that parse to a legal move in every arena
   (target ≥ 95 %) and how uniform the choice among legal moves is (``arena.core.models.tiny.quality``); results go
   to ``build_report.json`` (``gate.passed``); ``TinyRecipe.enforce_gate`` turns a miss into a failed build.

The directory ``${ARENA_CACHE:-~/.cache/arena}/models/tiny-v<BUILD_VERSION>-seed<seed>/`` is written atomically.
Two builds with the same seed on the same machine are byte-identical except ``build_timing.json`` (wall-clock
seconds). Change ``BUILD_VERSION`` whenever anything here changes what gets built, so stale caches are not reused.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import structlog

from arena.core.api.errors import ArenaError
from arena.core.models.cache import build_atomically, models_dir
from arena.core.models.tiny.recipe import TinyRecipe

if TYPE_CHECKING:
    from arena.core.models.tiny.demos import Demo
    from arena.core.models.tiny.sft import TreeExample

log = structlog.get_logger("arena.models.tiny")

# 5: v4's recipe with its demonstration opponents fixed (demos.DEMO_OPPONENTS); caches named v4 that were built
# after 4c75957 had collected against three more Kuhn styles and two more RPS opponents, so they are not reused.
# 6: v5 with the memory circuit (recipe.MemoryCircuit): the opponent's earlier moves recalled at ``<action>``.
# 7: v6 with the recall head's query sharpened after the warm start (MemoryCircuit.recall_sharpen; the warm start
# had eroded the recall to 0.11-0.25 of its attention), ``<action>``'s own MEM entries held in RL (no shared bias in
# MEM space), and ``readout_weights.safetensors``, the readout's masks, so a run can train it alone
# (``optim.train: readout``).
# 8: v7 with PREV_OPP written by a previous-token head of its own after the warm start
# (MemoryCircuit.marker_margin, circuit.separate_recall_marker): v7's shared head lost its margin where the warm start
# grew a prefix token's embedding; on one machine that was every seat-0 prompt (docs/models.md, v8).
BUILD_VERSION = 8
NAME = "tiny"
#: Files whose bytes may differ between two otherwise identical builds.
NONDETERMINISTIC_FILES: tuple[str, ...] = ("build_timing.json",)
GATE_LEGAL_RATE = 0.95

__all__ = ["BUILD_VERSION", "TinyRecipe", "build_tiny", "is_built", "resolve_tiny", "tiny_dir", "tiny_info"]


def tiny_dir(seed: int = 0) -> Path:
    return models_dir() / f"{NAME}-v{BUILD_VERSION}-seed{seed}"


def is_built(seed: int = 0) -> bool:
    return (tiny_dir(seed) / "config.json").is_file()


def resolve_tiny() -> str:
    """The registry resolver: the cached directory, built first when missing."""
    return str(build_tiny())


def tiny_info(seed: int = 0) -> dict[str, Any]:
    """What ``arena models`` shows, without building: parameters are computed from the recipe."""
    path = tiny_dir(seed)
    recipe = TinyRecipe()
    info: dict[str, Any] = {
        "parameters": parameter_count(recipe),
        "path": str(path),
        "built": is_built(seed),
        "architecture": "LlamaForCausalLM",
        "build_version": BUILD_VERSION,
    }
    report = path / "build_report.json"
    if report.is_file():
        data = json.loads(report.read_text())
        info["parameters"] = data.get("parameters", info["parameters"])
        info["legal_rate_min"] = data.get("gate", {}).get("min_legal_rate")
    return info


def parameter_count(recipe: TinyRecipe, vocab_size: int | None = None) -> int:
    """Parameters of the recipe's model (tied embeddings counted once); exact once ``vocab_size`` is known."""
    vocab = vocab_size if vocab_size is not None else recipe.vocab_size
    h, i, heads, kv = recipe.hidden_size, recipe.intermediate_size, recipe.num_heads, recipe.num_kv_heads
    head_dim = h // heads
    attention = h * heads * head_dim + 2 * h * kv * head_dim + heads * head_dim * h
    layer = attention + 3 * h * i + 2 * h
    return vocab * h + recipe.num_layers * layer + h


def model_config(recipe: TinyRecipe, tokenizer: Any) -> Any:
    """The ``LlamaConfig`` of the recipe for a trained tokenizer (its end token is also bos and pad)."""
    from transformers import LlamaConfig

    end_id = int(tokenizer.eos_token_id)
    return LlamaConfig(
        vocab_size=-(-len(tokenizer) // 64) * 64,  # a multiple of 64 keeps the embedding matmuls aligned
        hidden_size=recipe.hidden_size,
        intermediate_size=recipe.intermediate_size,
        num_hidden_layers=recipe.num_layers,
        num_attention_heads=recipe.num_heads,
        num_key_value_heads=recipe.num_kv_heads,
        head_dim=recipe.hidden_size // recipe.num_heads,
        max_position_embeddings=recipe.max_position_embeddings,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        tie_word_embeddings=True,
        bos_token_id=end_id,
        eos_token_id=end_id,
        pad_token_id=end_id,
        attention_bias=False,
        mlp_bias=False,
        rms_norm_eps=1e-6,
    )


def build_tiny(
    out_dir: Path | str | None = None,
    seed: int = 0,
    *,
    recipe: TinyRecipe | None = None,
    quick: bool = False,
    steps: int | None = None,
    force: bool = False,
) -> Path:
    """Build ``tiny`` into ``out_dir`` (default: the cache directory for ``seed``) unless it is already there.

    ``quick`` (or ``steps``) builds a small model in seconds through the same code path, for tests.
    """
    if recipe is None:
        recipe = TinyRecipe.quick(steps or 4) if quick else TinyRecipe()
        if steps is not None and not quick:
            recipe = attrs.evolve(recipe, sft=attrs.evolve(recipe.sft, max_steps=steps))
    if out_dir is None and recipe != TinyRecipe():
        # The cache directory is the default tiny's (named by BUILD_VERSION and seed); never fill it with another one.
        raise ArenaError("only the default recipe builds into the tiny cache: give build_tiny an out_dir")
    target = Path(out_dir) if out_dir is not None else tiny_dir(seed)
    return build_atomically(target, lambda tmp: _build_into(tmp, seed, recipe), force=force)


def _encode(tokenizer: Any, demo: Demo) -> TreeExample:
    from arena.core.models.tiny.quality import prompt_ids
    from arena.core.models.tiny.sft import TreeExample

    eos = int(tokenizer.eos_token_id)
    branches = tuple((*tokenizer.encode(a, add_special_tokens=False), eos) for a in demo.answers)
    return TreeExample(prefix=tuple(prompt_ids(tokenizer, demo.messages)), branches=branches)


def _token_stats(examples: list[TreeExample], demos: list[Demo]) -> dict[str, dict[str, float]]:
    stats: dict[str, dict[str, float]] = {}
    for arena in dict.fromkeys(d.arena for d in demos):
        lengths = [
            len(e.prefix)
            for e, d in zip(examples, demos, strict=True)
            if d.arena == arena and d.kind in ("action", "reflection")  # the engine's own prompts, unmodified
        ]
        stats[arena] = {"prompts": len(lengths), "max": max(lengths), "mean": round(sum(lengths) / len(lengths), 1)}
    return stats


def _build_into(out: Path, seed: int, recipe: TinyRecipe) -> None:
    import torch
    from transformers import GenerationConfig, LlamaForCausalLM

    from arena.core.models.held import READOUT_FILE, save_held
    from arena.core.models.tiny.circuit import install_copy_circuit, rl_held, separate_recall_marker, sharpen_recall
    from arena.core.models.tiny.demos import build_demos, demo_texts, describe
    from arena.core.models.tiny.quality import evaluate
    from arena.core.models.tiny.sft import deterministic_torch, progress, train
    from arena.core.models.tiny.tokenizer import save_tokenizer, train_tokenizer

    timing: dict[str, float] = {}
    started = time.perf_counter()
    with deterministic_torch(recipe.threads):
        log.info("tiny: collecting demonstrations", seed=seed, arenas=6)
        demos = build_demos(seed, recipe.demos, per_arena=recipe.per_arena_demos)
        timing["demonstrations"] = time.perf_counter() - started

        phase = time.perf_counter()
        tokenizer = train_tokenizer(
            demo_texts(demos), vocab_size=recipe.vocab_size, listing_ids_at_line_start=recipe.circuit.enabled
        )
        examples = [_encode(tokenizer, d) for d in demos]
        tokens = _token_stats(examples, demos)
        timing["tokenizer"] = time.perf_counter() - phase
        log.info("tiny: trained tokenizer", vocab=len(tokenizer), demos=len(demos), prompt_tokens=tokens)

        phase = time.perf_counter()
        end_id = int(tokenizer.eos_token_id)
        config = model_config(recipe, tokenizer)
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
        model.config._attn_implementation = "sdpa"
        circuit: dict[str, Any] = {}
        held: dict[str, Any] = {}
        held_in_rl: dict[str, Any] = {}
        readout: dict[str, Any] = {}
        if recipe.circuit.enabled:
            seeded = install_copy_circuit(model, tokenizer, recipe.circuit, recipe.memory)
            circuit, held, held_in_rl = seeded.info, seeded.held, rl_held(seeded)
            readout = dict(seeded.rl_released)
            log.info("tiny: seeded the copy circuit", **circuit)
        parameters = sum(p.numel() for p in model.parameters())
        log.info("tiny: supervised warm start", parameters=parameters, examples=len(examples), epochs=recipe.sft.epochs)
        with progress("tiny sft", log, "tiny: sft progress") as on_step:
            losses = train(model, examples, recipe.sft, seed=seed, pad_id=end_id, on_step=on_step, held=held)
        if recipe.memory.enabled and recipe.circuit.enabled and recipe.memory.recall_sharpen != 1.0:
            sharpen_recall(model, circuit, recipe.memory.recall_sharpen)
        if recipe.memory.enabled and recipe.circuit.enabled and recipe.memory.marker_margin > 0:
            memory = recipe.memory
            marker_masks = separate_recall_marker(
                model, circuit, recipe.circuit, memory.marker_margin, memory.marker_far_weight, memory.marker_far_pairs
            )
            added = 0
            for name, mask in marker_masks.items():
                merged = held_in_rl[name] | mask if name in held_in_rl else mask
                added += int(merged.sum()) - (int(held_in_rl[name].sum()) if name in held_in_rl else 0)
                held_in_rl[name] = merged
            # Head 1 of layer 0 writes PREV_OPP from here on; RL keeps its query (the keys were held already).
            circuit.update(recall_marker_head=1, marker_held_weights=added)
        timing["sft"] = time.perf_counter() - phase
        log.info("tiny: trained", steps=len(losses), first_loss=round(losses[0], 3), last_loss=round(losses[-1], 3))

        phase = time.perf_counter()
        quality: dict[str, Any] = {}
        if recipe.eval_demos.action or recipe.eval_demos.reflection:
            seen = {d.messages[-1].content for d in demos}
            held_out = build_demos(
                seed + 1_000_003, recipe.eval_demos, exclude=seen, per_arena=recipe.per_arena_eval_demos
            )
            quality = evaluate(model, tokenizer, held_out, seed=seed)
        timing["quality_gate"] = time.perf_counter() - phase
        rates = {arena: row["legal_rate"] for arena, row in quality.items()}
        min_rate = min((r for r in rates.values() if r is not None), default=None)
        passed = min_rate is not None and min_rate >= GATE_LEGAL_RATE
        log.info(
            "tiny: quality gate",
            passed=passed,
            legal_rates={a: round(r, 3) for a, r in rates.items() if r is not None},
        )
        if quality and not passed:
            log.warning("tiny: below the legal-answer threshold", threshold=GATE_LEGAL_RATE, rates=rates)

        model.generation_config = GenerationConfig(bos_token_id=end_id, eos_token_id=end_id, pad_token_id=end_id)
        model.save_pretrained(out)
        save_tokenizer(tokenizer, out)
        if held_in_rl:
            # Later training keeps the circuit too (``Trainer`` honours the masks; arena.core.models.held), all but
            # the memory circuit's readout, which RL is there to learn.
            save_held(out, held_in_rl)
        if readout:
            # What RL is there to learn, marked so that a run can train it alone (``optim.train: readout``).
            save_held(out, readout, READOUT_FILE)
        report = {
            "name": NAME,
            "build_version": BUILD_VERSION,
            "seed": seed,
            "parameters": parameters,
            "vocab_size": len(tokenizer),
            "recipe": attrs.asdict(recipe),
            "demonstrations": describe(demos),
            "prompt_tokens": tokens,
            "circuit": circuit,
            "sft": {"steps": len(losses), "first_loss": losses[0], "last_loss": losses[-1]},
            "gate": {
                "threshold": GATE_LEGAL_RATE,
                "enforced": recipe.enforce_gate,
                "min_legal_rate": min_rate,
                "passed": passed,
            },
            "quality": quality,
        }
        (out / "build_report.json").write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
        timing["total"] = time.perf_counter() - started
        (out / "build_timing.json").write_text(json.dumps({k: round(v, 2) for k, v in timing.items()}, indent=2))
        log.info("tiny: built", path=str(out), seconds=round(timing["total"], 1))
        if recipe.enforce_gate and not passed:
            raise ArenaError(
                f"the tiny model failed its quality gate: legal-answer rates {rates} (need ≥ {GATE_LEGAL_RATE} in "
                "every arena); the build was discarded"
            )
