"""What a SmolLM2 policy plays on the hidden-types testbed, exactly, by opponent and episode (docs/results.md,
"Hidden types with SmolLM2-135M-Instruct, trained").

    OMP_NUM_THREADS=2 .venv/bin/python tests/arenas/rps_smollm2_probe.py MODEL_DIR [MODEL_DIR ...] [--seeds N]

For each model directory (``smollm2-rps``'s cache directory, or a run's ``checkpoints/step-K/learners/agent``), the
teacher-forced probability of each move's canonical answer (``core/models/smol/rps.py``, ``measure``) on the
prompts of ``rps_types_smollm2_mage`` (MAGE's ``history_only`` memory) on held-out trials (seeds 0..N-1, both seats)
against all three types, by episode. The question it answers is whether a trained policy reads its memory: a policy
that does plays scissors after seeing paper and paper after seeing rock, so its move shares differ between the
opponents from episode 2 on; a fixed policy plays the same in every cell.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from arena.core.models.smol.rps import CONFIGS, EVAL_SEEDS, MOVES, TYPES, collect_rps_prompts, measure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+", type=Path)
    parser.add_argument("--seeds", type=int, default=len(EVAL_SEEDS), help="held-out trial seeds 0..N-1")
    parser.add_argument("--json", type=Path, help="also write the measurement here")
    args = parser.parse_args()

    import torch
    from transformers import AutoTokenizer, LlamaForCausalLM

    torch.set_num_threads(2)
    prompts = collect_rps_prompts(range(args.seeds), TYPES, configs=CONFIGS[:1])
    out = {}
    for path in args.models:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = LlamaForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
        result = measure(model, tokenizer, prompts)[CONFIGS[0]]
        out[str(path)] = result
        print(f"\n{path}  ({len(prompts)} prompts)")
        print("opponent       ep  form   win    " + "  ".join(f"{m:>8}" for m in MOVES))
        for opponent in TYPES:
            for episode, cell in result[opponent].items():
                shares = "  ".join(f"{cell['move_share'][m]:8.3f}" for m in MOVES)
                print(f"{opponent:<14} {episode:>2}  {cell['form']:.3f}  {cell['win']:.3f}  {shares}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
