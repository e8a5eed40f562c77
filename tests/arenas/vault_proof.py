"""The vault proof's numbers (EMPO² against GRPO, issue 26): memory rollouts, blind rollouts, and success without
memory read exactly from each run's final checkpoint, over seeds.

    python -m tests.arenas.vault_proof runs/vault_proof     # reads RUN/rollouts/*.jsonl and RUN/checkpoints of
                                                            # empo2_s*, empo2_q0_s*, grpo_s*, ...

Per run, from its rollout dumps (``arena train --dump-rollouts``): the action samples whose prompt carried tips (the
memory rollouts), their win rate, how often they opened the chest the tips named, and how often the tips named the
vault's treasure; the win rate of the samples without tips. From its last checkpoint: the probability of opening
the treasure's chest on each of the recurring vaults' plain prompts (no tips), averaged over the vaults: the exact
success without memory, free of sampling noise. The untrained model (``--untrained``, default the cached
`tiny-vault`) is measured the same way. Per method: the mean over seeds with a Student-t 95% interval; against
``--baseline`` (default grpo), the difference paired by seed (the same tasks).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from arena.arenas.vault import treasure_chest
from arena.core.api.backend import ChatMessage
from arena.core.eval.episode_compare import method_of
from arena.core.learn.metrics import read_rollouts
from arena.core.models.tiny.vault_reader import NAMED, VaultPrompt
from tests.arenas.doors_proof import fmt

VAULT = re.compile(r"Vault (\d+) has (\d+) chests")
ANSWER = re.compile(r"<action>\s*(?:open chest )?(\d+)\s*</action>")


def rollout_rates(run: Path) -> dict[str, float]:
    """Memory and blind rollouts of one run: counts, win rates, following and tip accuracy."""
    memory = blind = memory_wins = blind_wins = followed = right_tips = 0
    for _, sample in read_rollouts(run):
        if sample["kind"] != "action":
            continue
        text = sample["rollout_context_text"] or sample["context_text"]
        win = sample["return"] > 0
        named = NAMED.findall(text)
        if not named:
            blind, blind_wins = blind + 1, blind_wins + win
            continue
        vault, chests = (int(g) for g in VAULT.search(text).groups())  # type: ignore[union-attr]
        chest = max(set(named), key=named.count)
        answer = ANSWER.search(sample["completion_text"])
        memory, memory_wins = memory + 1, memory_wins + win
        followed += answer is not None and int(answer.group(1)) == int(chest)
        right_tips += int(chest) == treasure_chest(vault, chests)
    return {
        "memory_rollouts": float(memory),
        "memory_win": memory_wins / memory if memory else float("nan"),
        "followed": followed / memory if memory else float("nan"),
        "tips_right": right_tips / memory if memory else float("nan"),
        "blind_rollouts": float(blind),
        "blind_win": blind_wins / blind if blind else float("nan"),
    }


def plain_prompt(run: Path) -> str:
    """One plain action prompt of the run (every vault's is the same text but for its number)."""
    for _, sample in read_rollouts(run):
        if sample["kind"] == "action" and "<tip>" not in sample["context_text"]:
            return str(sample["context_text"])
    raise ValueError(f"{run}: no plain action prompt in its rollouts")


def success_without_memory(model_dir: Path, prompt: str, vaults: int) -> dict[str, float]:
    """P(the treasure's chest) and P(a legal id) on each recurring vault's plain prompt, averaged over vaults."""
    from transformers import AutoTokenizer, LlamaForCausalLM

    from arena.core.models.tiny.vault_reader import measure

    chests = int(VAULT.search(prompt).group(2))  # type: ignore[union-attr]
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = LlamaForCausalLM.from_pretrained(model_dir).eval()
    prompts = [
        VaultPrompt(
            (ChatMessage("user", VAULT.sub(f"Vault {v} has {chests} chests", prompt)),),
            False,
            treasure_chest(v, chests),
        )
        for v in range(vaults)
    ]
    quality = measure(model, tokenizer, prompts, chests)
    return {"exact_no_memory": float(quality["blind_hit"]), "legal_mass": float(quality["legal_mass"])}


def last_checkpoint(run: Path) -> Path:
    return sorted((run / "checkpoints").glob("step-*"))[-1] / "learners" / "agent"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--baseline", default="grpo")
    parser.add_argument("--vaults", type=int, default=36, help="the recurring vaults 0..N-1 (the configs' task_pool)")
    parser.add_argument("--untrained", default=None, help="model directory (default: the cached tiny-vault)")
    args = parser.parse_args()
    runs: dict[str, dict[int, dict[str, float]]] = {}
    prompt = ""
    for run in sorted(p for p in args.root.iterdir() if (p / "rollouts").is_dir() and (p / "checkpoints").is_dir()):
        seed = int(re.search(r"(\d+)$", run.name).group(1))  # type: ignore[union-attr]
        prompt = prompt or plain_prompt(run)
        rates: dict[str, Any] = rollout_rates(run)
        rates.update(success_without_memory(last_checkpoint(run), prompt, args.vaults))
        runs.setdefault(method_of(run), {})[seed] = rates
        print(run.name, json.dumps({k: round(v, 4) for k, v in rates.items()}), flush=True)
    if args.untrained is None:
        from arena.core.models.tiny.vault_reader import build_tiny_vault

        args.untrained = build_tiny_vault()
    untrained = success_without_memory(Path(args.untrained), prompt, args.vaults)
    print("untrained", json.dumps({k: round(v, 4) for k, v in untrained.items()}))
    print()
    keys = ["exact_no_memory", "memory_win", "followed", "tips_right", "blind_win", "memory_rollouts"]
    print("method | seeds | " + " | ".join(keys))
    print(" | ".join(["---"] * (len(keys) + 2)))
    base = runs.get(args.baseline)
    for method, by_seed in runs.items():
        seeds = sorted(by_seed)
        print(f"{method} | {len(seeds)} | " + " | ".join(fmt([by_seed[s][k] for s in seeds]) for k in keys))
        if base is not None and method != args.baseline:
            paired = [s for s in seeds if s in base]
            diff = fmt([by_seed[s]["exact_no_memory"] - base[s]["exact_no_memory"] for s in paired], signed=True)
            print(
                f"{method} − {args.baseline}, paired | {len(paired)} | {diff} | " + " | ".join([""] * (len(keys) - 1))
            )


if __name__ == "__main__":
    main()
