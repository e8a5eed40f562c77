"""HeRL's testbed in numbers (issue 26): HeRL against GRPO on ``instruct_revise`` with ``smollm2-revise``.

    python -m tests.arenas.revise_proof runs/revise_proof     # ROOT/{herl,grpo,herl_naive}_s*: arena train

(every run with ``--dump-rollouts``; ``herl_naive`` is the ablation, ``learners.0.options.herl.naive_prompt=true``:
revisions asked for without naming the missed constraint).

Per run, from its rollout dumps: the policy's own answers that met their constraint (the injected samples left out),
by iteration; the groups with a learning signal (a non-zero advantage on some sample); the injected samples that
are revisions (not copies of a draft) and met the constraint. From its metrics: held-out success (``eval/mean_return``,
the 70 held-out tasks once each: a score is 0 or 1) before and after. Per method: mean over seeds with a Student-t
95% interval; HeRL − GRPO and HeRL − ablation paired by seed (the same tasks and sampling seeds).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from tests.arenas.doors_proof import fmt

METHODS = ("herl", "grpo", "herl_naive")
#: The opening of HeRL's revision prompt (the injected revisions are trained in it: ``train_context: revision``).
REVISION = "Here is an instruction and a draft answer to it."


def rollout_rates(run: Path) -> dict[str, Any]:
    own: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    groups: dict[str, bool] = defaultdict(bool)
    injected = [0, 0, 0]  # revisions, revisions that met the constraint, copies of a draft (fallbacks)
    for dump in sorted((run / "rollouts").glob("iter_*.jsonl")):
        iteration = int(dump.stem.split("_")[1])
        for sample in map(json.loads, dump.read_text().splitlines()):
            if sample["kind"] != "action":
                continue
            groups[f"{iteration}/{sample['group_id']}"] |= abs(sample["advantage"]) > 1e-9
            if sample.get("injected") != "herl":
                own[iteration][0] += sample["reward_terms"].get("env", 0.0) >= 1.0
                own[iteration][1] += 1
            elif REVISION not in sample["context_text"]:
                injected[2] += 1  # a copy of the best draft, in the original prompt
            else:
                injected[0] += 1
                injected[1] += sample["reward_terms"].get("env", 0.0) >= 1.0
    iterations = sorted(own)
    return {
        "own answers met, by iteration": [round(own[i][0] / own[i][1], 3) for i in iterations],
        "own answers met": sum(own[i][0] for i in iterations) / sum(own[i][1] for i in iterations),
        "own answers met, last 2 iterations": sum(own[i][0] for i in iterations[-2:])
        / sum(own[i][1] for i in iterations[-2:]),
        "groups with a signal": sum(groups.values()) / len(groups),
        "injected revisions (met) / fallbacks": f"{injected[0]} ({injected[1]}) / {injected[2]}",
    }


def held_out(run: Path) -> tuple[float, float]:
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    evals = [r for r in rows if "eval/mean_return" in r]
    return float(evals[0]["eval/mean_return"]), float(evals[-1]["eval/mean_return"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    args = parser.parse_args()
    runs = {
        m: {
            int(p.name.rsplit("_s", 1)[1]): p
            for p in sorted(args.root.glob(f"{m}_s[0-9]*"))
            if (p / "metrics.jsonl").exists()
        }
        for m in METHODS
    }
    seeds = sorted(set(runs["herl"]) & set(runs["grpo"]))
    print(f"seeds (paired): {seeds}")
    rows: dict[str, dict[str, list[float]]] = {m: defaultdict(list) for m in METHODS}
    for method in METHODS:
        for seed in seeds:
            run = runs[method].get(seed)
            if run is None:
                continue
            rates = rollout_rates(run)
            start, end = held_out(run)
            print(f"{method} s{seed}: {json.dumps(rates)}; held-out {start:.3f} -> {end:.3f}")
            for key, value in rates.items():
                if isinstance(value, float):
                    rows[method][key].append(value)
            rows[method]["held-out success, end"].append(end)
            rows[method]["held-out success, end - start"].append(end - start)
    print()
    for key in rows["herl"]:
        herl = rows["herl"][key]
        line = f"{key}: HeRL {fmt(herl)}"
        for other, label in (("grpo", "GRPO"), ("herl_naive", "HeRL, naive prompt")):
            values = rows[other].get(key, [])
            line += f"; {label} {fmt(values)}" if values else ""
            if len(values) == len(herl):
                diff = [a - b for a, b in zip(herl, values, strict=True)]
                line += f"; HeRL − {label} {fmt(diff, signed=True)}"
        print(line)


if __name__ == "__main__":
    main()
