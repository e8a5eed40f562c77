"""What a SmolLM2 policy plays on the hidden-types testbed, exactly, by opponent and episode (docs/results.md,
"Hidden types with SmolLM2-135M-Instruct, trained").

    OMP_NUM_THREADS=2 .venv/bin/python tests/arenas/rps_smollm2_probe.py MODEL_DIR [MODEL_DIR ...] [--seeds N]
    .venv/bin/python tests/arenas/rps_smollm2_probe.py --rollouts RUN [RUN ...]

For each model directory (``smollm2-rps``'s cache directory, or a run's ``checkpoints/step-K/learners/agent``), the
teacher-forced probability of each move's canonical answer (``core/models/smol/rps.py``, ``measure``) on the
prompts of ``rps_types_smollm2_mage`` (MAGE's ``history_only`` memory) on held-out trials (seeds 0..N-1, both seats)
against all three types, by episode. The question it answers is whether a trained policy reads its memory: a policy
that does plays scissors after seeing paper and paper after seeing rock, so its move shares differ between the
opponents from episode 2 on; a fixed policy plays the same in every cell.

``--rollouts`` reads runs trained with ``--dump-rollouts`` instead: per iteration, the moves played, and the share of
(group, episode) cells whose advantages were not all equal, i.e. that gave the update a direction (a policy that
always plays one move against an always-one-move opponent gets the same reward in every trial of a group).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from arena.core.models.smol.rps import CONFIGS, EVAL_SEEDS, MOVES, TYPES, collect_rps_prompts, measure


def rollout_table(run: Path) -> None:
    """Per iteration of ``run``: moves played (rock / paper / scissors / other) and the cells with a signal."""
    print(f"\n{run}\niteration  rock  paper  scissors  other  cells with a signal")
    for path in sorted((run / "rollouts").glob("iter_*.jsonl")):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        actions = [r for r in rows if r["kind"] == "action"]
        moves = [next((m for m in MOVES if r["completion_text"] == f"<action>{m}</action>"), "other") for r in actions]
        cells: dict[tuple[str, int], set[float]] = {}
        for r in actions:
            cells.setdefault((r["group_id"], r["episode"]), set()).add(round(r["advantage"], 6))
        signal = sum(len(v) > 1 for v in cells.values())
        counts = "  ".join(f"{moves.count(m):>{len(m)}}" for m in (*MOVES, "other"))
        print(f"{int(path.stem.split('_')[1]):>9}  {counts}  {signal} of {len(cells)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+", type=Path)
    parser.add_argument("--rollouts", action="store_true", help="the arguments are runs: read their rollout dumps")
    parser.add_argument("--seeds", type=int, default=len(EVAL_SEEDS), help="held-out trial seeds 0..N-1")
    parser.add_argument("--json", type=Path, help="also write the measurement here")
    args = parser.parse_args()
    if args.rollouts:
        for run in args.models:
            rollout_table(run)
        return

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
