"""SAFARI's testbed in numbers (issue 26): the exploring expert against the hindsight-biased demonstrator.

    python -m tests.arenas.safari_proof runs/safari_proof      # reads ROOT/{explorer,hindsight}_s*/summary.json

Each run is ``arena safari run text_maze_safari`` with ``expert=text_maze-explorer`` (SAFARI: exploratory data,
the note read before a chest is opened) or ``expert=text_maze-explorer:hindsight`` (the ablation: a demonstrator
told the chest, which never reads the note), at one seed: the data tasks, the pair tasks, the SFT and DPO order
(docs/results.md, "SAFARI's testbed", has the loop). Every run evaluates its SFT and DPO models on the same
held-out layouts and sampling seeds, so seed s of the two arms is a pair. Per arm and stage: the share of
episodes that opened a chest in which the note was read first (``note_before_chest``, the testbed's measure),
pass@1, pass@8 and how many episodes opened a chest; mean over seeds with a Student-t 95% interval, and the
paired difference explorer − hindsight, and DPO − SFT within an arm. The starting model (``eval.base``, measured
once) is read from any run that has it. Where an episode opened a chest, the win rates with and without the note
read first say whether the student acts on the note (``--recount`` re-evaluates runs made before those were
counted).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from tests.arenas.doors_proof import fmt

ARMS = ("explorer", "hindsight")
STAGES = ("sft", "dpo")


def measures(report: dict[str, Any]) -> dict[str, float]:
    flag = (report.get("flags") or {}).get("note_before_chest", {"rate": float("nan"), "of": 0})
    return {
        "note read before a chest": float(flag["rate"]),
        "episodes that opened a chest": float(flag["of"]),
        "won, note read first": float(flag.get("win_if_true", float("nan"))),
        "won, chest opened without the note": float(flag.get("win_if_false", float("nan"))),
        "pass@1": float(report["pass_at_k"]["1"]),
        "pass@8": float(report["pass_at_k"][max(report["pass_at_k"], key=int)]),
    }


def recount(run: Path, arm: str, seed: int, summary: dict[str, Any]) -> None:
    """Re-evaluate the SFT model of a run whose reports predate ``win_if_true`` (the same tasks and sampling seeds,
    so the same episodes), to add how often an episode that read the note first was won; written back."""
    from arena.core import load_config
    from arena.plugins.safari import SafariConfig, evaluate_model, game_of

    expert = "text_maze-explorer" + (":hindsight" if arm == "hindsight" else "")
    config = load_config(
        SafariConfig, "text_maze_safari", [f"expert={expert}", "eval.tasks=50", "eval.samples=8", f"seed={seed}"]
    )
    for stage in ("sft",):  # the DPO models' reports keep their old form (it takes as long again)
        if "win_if_true" in summary["eval"][stage]["flags"].get("note_before_chest", {}):
            continue
        spec = f"model:{run / stage}"
        summary["eval"][stage] = evaluate_model(spec, game_of(config), config.eval, config.trial)
    (run / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--recount", action="store_true", help="re-evaluate runs without win_if_true (slow)")
    args = parser.parse_args()
    runs: dict[str, dict[int, dict[str, Any]]] = {arm: {} for arm in ARMS}
    base = None
    for arm in ARMS:
        for path in sorted(args.root.glob(f"{arm}_s*/summary.json")):
            summary = json.loads(path.read_text())
            seed = int(path.parent.name.rsplit("_s", 1)[1])
            if args.recount:
                recount(path.parent, arm, seed, summary)
            runs[arm][seed] = summary
            if "base" in summary.get("eval", {}):
                base = measures(summary["eval"]["base"])
    seeds = sorted(set(runs["explorer"]) & set(runs["hindsight"]))
    print(f"seeds (paired): {seeds}")
    if base is not None:
        print("starting model: " + ", ".join(f"{k} {v:.3f}" for k, v in base.items()))
    keys = list(measures(runs["explorer"][seeds[0]]["eval"]["sft"]))
    for arm in ARMS:
        data = runs[arm][seeds[0]]["data"]
        print(
            f"{arm} data (seed {seeds[0]}): {data['examples']} examples from {data['kept_lines']} kept lines; "
            + ", ".join(
                f"pairs s{s} {runs[arm][s]['pairs']['kept']} kept ({runs[arm][s]['pairs'].get('legal_pairs')} legal)"
                for s in seeds
            )
        )
    for stage in STAGES:
        print(f"\n## after {stage}")
        for key in keys:
            values = {arm: [measures(runs[arm][s]["eval"][stage])[key] for s in seeds] for arm in ARMS}
            diff = [a - b for a, b in zip(values["explorer"], values["hindsight"], strict=True)]
            per_seed = {arm: " / ".join(f"{v:.3f}" for v in values[arm]) for arm in ARMS}
            print(
                f"{key}: explorer {fmt(values['explorer'])} ({per_seed['explorer']}); hindsight "
                f"{fmt(values['hindsight'])} ({per_seed['hindsight']}); explorer − hindsight {fmt(diff, signed=True)}"
            )
    print("\n## DPO − SFT within an arm")
    for arm in ARMS:
        for key in keys:
            diff = [
                measures(runs[arm][s]["eval"]["dpo"])[key] - measures(runs[arm][s]["eval"]["sft"])[key] for s in seeds
            ]
            print(f"{arm} {key}: {fmt(diff, signed=True)}")


if __name__ == "__main__":
    main()
