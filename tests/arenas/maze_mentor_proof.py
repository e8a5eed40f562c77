"""MENTOR's testbed in numbers (issue 26): MENTOR with the oracle expert against GRPO on `text_maze` medium.

    python -m tests.arenas.maze_mentor_proof runs/maze_proof     # ROOT/{mentor,grpo,mentor_self}_s*: arena train

(every run with ``--dump-rollouts``; ``mentor_self`` is the ablation, ``learners.0.options.mentor.expert=model:tiny``:
the guided half sampled from a mixture with the starting model itself, so everything but the expert's knowledge).

Per run, from its rollout dumps: the success of on-policy and of guided rollouts by iteration, and the share of
groups with a learning signal (a non-zero advantage on some sample). From its final checkpoint: pass@k on
``--tasks`` held-out layouts × ``--samples`` rollouts (``arena passk``'s measure, the run's trial settings; cached
as RUN/passk.json), and from the first run the starting model the same way (``--initial``). Per method: mean over
seeds with a Student-t 95% interval; MENTOR − GRPO and MENTOR − ablation paired by seed (the same held-out layouts
and sampling seeds).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from arena.core.eval.passk import evaluate_run_tasks
from arena.core.learn.metrics import read_rollouts
from tests.arenas.doors_proof import fmt


def rollout_rates(run: Path) -> dict[str, Any]:
    """Trials by kind (on-policy or guided) and iteration: how many, how many won; groups with a signal."""
    trials: dict[tuple[int, str], dict[str, Any]] = {}
    groups: dict[str, bool] = defaultdict(bool)
    for iteration, sample in read_rollouts(run):
        if sample["kind"] != "action":
            continue
        plan = (sample.get("plans") or {}).get("mentor") or {}
        kind = "guided" if plan.get("guided") else "on-policy"
        trials[(iteration, sample["trial_id"])] = {"kind": kind, "won": sample["return"] > 0}
        groups[sample["group_id"]] |= abs(sample["advantage"]) > 1e-9
    by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    last: list[int] = [0, 0]
    iterations = max((i for i, _ in trials), default=-1) + 1
    for (iteration, _), trial in trials.items():
        by_kind[trial["kind"]][0] += trial["won"]
        by_kind[trial["kind"]][1] += 1
        if trial["kind"] == "on-policy" and iteration >= iterations - 2:
            last[0] += trial["won"]
            last[1] += 1
    return {
        **{f"{kind} won": f"{won} of {n}" for kind, (won, n) in sorted(by_kind.items())},
        "guided success": by_kind["guided"][0] / by_kind["guided"][1] if by_kind["guided"][1] else float("nan"),
        "on-policy success": by_kind["on-policy"][0] / by_kind["on-policy"][1],
        "on-policy success, last 2 iterations": last[0] / last[1] if last[1] else float("nan"),
        "groups with a signal": sum(groups.values()) / len(groups),
    }


def passk(run: Path, tasks: int, samples: int, initial: bool = False) -> dict[str, Any]:
    cache = run / ("passk_initial.json" if initial else "passk.json")
    if cache.exists():
        return dict(json.loads(cache.read_text()))
    report = evaluate_run_tasks(run, tasks, samples, initial=initial, progress=False)
    report.pop("per_task", None)
    cache.write_text(json.dumps(report, indent=2) + "\n")
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--samples", type=int, default=8)
    args = parser.parse_args()
    # mentor_self: the ablation, MENTOR whose expert is the starting model itself (guidance without knowledge)
    methods = ("mentor", "grpo", "mentor_self")
    runs = {
        m: {int(p.name.rsplit("_s", 1)[1]): p for p in sorted(args.root.glob(f"{m}_s[0-9]*")) if p.is_dir()}
        for m in methods
    }
    seeds = sorted(set(runs["mentor"]) & set(runs["grpo"]))
    print(f"seeds (paired): {seeds}")
    start = passk(runs["grpo"][seeds[0]], args.tasks, args.samples, initial=True)
    print(f"starting model, held-out: pass@k {start['pass_at_k']}, success {start['success_rate']:.3f}")
    rows: dict[str, dict[str, list[float]]] = {m: defaultdict(list) for m in methods}
    for method in methods:
        for seed in seeds:
            run = runs[method].get(seed)
            if run is None:
                continue
            rates = rollout_rates(run)
            report = passk(run, args.tasks, args.samples)
            print(f"{method} s{seed}: {json.dumps(rates)}; held-out pass@k {report['pass_at_k']}")
            for key, value in rates.items():
                if isinstance(value, float):
                    rows[method][key].append(value)
            for k, value in report["pass_at_k"].items():
                rows[method][f"held-out pass@{k}"].append(float(value))
    print()
    for key in rows["mentor"]:
        mentor = rows["mentor"][key]
        line = f"{key}: MENTOR {fmt(mentor)}"
        for other, label in (("grpo", "GRPO"), ("mentor_self", "MENTOR, expert = itself")):
            values = rows[other].get(key, [])
            if len(values) == len(mentor) and not any(v != v for v in values + mentor):
                diff = [a - b for a, b in zip(mentor, values, strict=True)]
                line += f"; {label} {fmt(values)}; MENTOR − {label} {fmt(diff, signed=True)}"
        print(line)


if __name__ == "__main__":
    main()
