"""The `doors` proof's numbers from each run's evaluation dump: scouting and success by episode, over seeds.

    python tests/arenas/doors_proof.py runs/doors_proof        # reads RUN/play.jsonl of mage_s*, grpo_s*, ...

Each run's checkpoint played 300 trials of 3 episodes (`arena play doors ... --dump RUN/play.jsonl`, the command in
docs/results.md). Per run and episode: the share of trials that scouted, that won, and, where an earlier episode had
revealed the door, that opened it. Per method: the mean over seeds with a Student-t 95% interval; against the
method named by --baseline (default grpo), the difference paired by seed (the same evaluation trials).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from arena.core.eval.episode_compare import method_of
from arena.core.eval.stats import mean_t_ci
from arena.core.models.tiny.doors_reader import REVEALED


def run_rates(dump: Path) -> dict[str, list[float]]:
    """Scout, win and read-the-revealed-door rates by episode of one run's dump."""
    trials = [json.loads(line) for line in dump.read_text().splitlines() if line.strip()]
    episodes = len(trials[0]["episodes"])
    scout, win, known, read = [0] * episodes, [0] * episodes, [0] * episodes, [0] * episodes
    for trial in trials:
        door = None
        for episode in trial["episodes"]:
            k, step = episode["index"], episode["steps"][0]
            scout[k] += step["move"] == "scout"
            win[k] += episode["returns"]["player_0"] > 0
            if door is not None:
                known[k] += 1
                read[k] += step["move"] == f"open door {door}"
            found = REVEALED.search(episode["summaries"]["player_0"])
            door = int(found.group(1)) if found else door
    n = len(trials)
    return {
        "scout": [s / n for s in scout],
        "win": [w / n for w in win],
        "read": [r / k if k else float("nan") for r, k in zip(read, known, strict=True)],
        "trials": [float(n)] * episodes,
    }


def fmt(values: list[float], signed: bool = False) -> str:
    summary = mean_t_ci(values)
    sign = "+" if signed else ""
    if summary.low is None:
        return f"{summary.mean:{sign}.3f}"
    return f"{summary.mean:{sign}.3f} [{summary.low:{sign}.3f}, {summary.high:{sign}.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--baseline", default="grpo")
    args = parser.parse_args()
    runs: dict[str, dict[int, dict[str, list[float]]]] = {}
    for dump in sorted(args.root.glob("*/play.jsonl")):
        seed = int(re.search(r"(\d+)$", dump.parent.name).group(1))  # type: ignore[union-attr]
        runs.setdefault(method_of(dump.parent), {})[seed] = run_rates(dump)
    for key, label in [("scout", "scout rate"), ("win", "win rate"), ("read", "opened the revealed door")]:
        print(f"### {label} by episode")
        print("method | seeds | episode 1 | episode 2 | episode 3")
        print("--- | --- | --- | --- | ---")
        for method, by_seed in runs.items():
            seeds = sorted(by_seed)
            cells = [fmt([by_seed[s][key][k] for s in seeds]) for k in range(3)]
            print(f"{method} | {len(seeds)} | " + " | ".join(cells))
            base = runs.get(args.baseline)
            if base is not None and method != args.baseline:
                paired = [s for s in seeds if s in base]
                diffs = [fmt([by_seed[s][key][k] - base[s][key][k] for s in paired], signed=True) for k in range(3)]
                print(f"{method} − {args.baseline}, paired | {len(paired)} | " + " | ".join(diffs))
        print()


if __name__ == "__main__":
    main()
