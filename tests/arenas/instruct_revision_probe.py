"""HeRL's and GOLF's testbed before training (issue 26): per constraint kind, how often a model meets a one-constraint
instruction on the first try, and how often its revision meets it once HeRL's hindsight prompt names what the
draft missed, against the naive revision prompt (HeRL's ablation) that names nothing.

    python -m tests.arenas.instruct_revision_probe runs/instruct_probe/smol --model model:smollm2-135m-instruct \
        --drafts 4
    python -m tests.arenas.instruct_revision_probe runs/instruct_probe/revise --model model:smollm2-revise \
        --kinds lowercase,uppercase,quotes,end_with --split test --drafts 1

Plays every tier-1 instruction (one constraint; ``split: all``, 100 tasks) ``--drafts`` times with the
``instruct_herl`` config's sampling (T 1.0, 128 tokens), turns each draft into the trainer's ``Sample`` and asks
the same policy for one revision of every draft that failed, with HeRL's own prompt (``plugins.herl.hindsight_prompt``)
at HeRL's T 0.3, and once more with the naive prompt. Every answer is scored by the arena's checker. Prints a table
by kind (drafts, first-try pass, failed drafts, pass after the hindsight revision, after the naive one) and writes
``probe.json`` with every draft and revision. ``--kinds`` plays the kinds' own task sets (``kind_tasks``) of
``--split`` instead of tier 1, every task once per draft. ``--golf`` also asks, once per task with a failed
draft, for one refinement in GOLF's aggregated prompt (``plugins.golf.refinement_prompt``: the task's failed drafts
with their critiques) at GOLF's T 1.0, and adds its pass rate per task. ``--show`` prints the table of an earlier
run again.

A kind set may join kinds with ``+`` (``--kinds lowercase+min_words``: tasks with one constraint of each). There a
failed draft often meets some of its constraints, and the table adds what HeRL's "keep them satisfied" list is for:
of the failed drafts that met at least one constraint, the share whose revision still meets every one of them.
On a rewrite kind paired with a length kind (``uppercase+min_words``) a second table splits the failed drafts by
what they met (``by_shape``): per prompt, the share meeting both, the rewrite kind and the length, the median
length relative to the count the task asks, and the paired hindsight − naive difference with a normal 95% interval
over drafts.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
from pathlib import Path
from typing import Any

import attrs

from arena.arenas.instruct import evaluate, task_by_id, tasks_for
from arena.arenas.instruct_constraints import count_sentences, count_words
from arena.core.api.augment import system_messages
from arena.core.api.backend import ChatMessage, GenerationRequest, Segment
from arena.core.api.seeding import derive_seed
from arena.core.config.loader import load_config
from arena.core.eval.passk import task_specs
from arena.core.eval.stats import mean_ci
from arena.core.host.plugins import PluginSet
from arena.core.learn.experience import trial_samples
from arena.core.learn.run_config import TrainConfig
from arena.core.rollout.engine import RolloutEngine
from arena.core.rollout.seats import BackendPool, parse_seat
from arena.plugins.golf import refinement_prompt
from arena.plugins.herl import hindsight_prompt

TASKS = 100  # tier 1 of split "all": every one-constraint instruction of the tiers, train and held out


def measure(
    model: str, drafts: int, tasks: int, kinds: list[str] | None = None, split: str = "all", golf: bool = False
) -> list[dict[str, Any]]:
    config = load_config(TrainConfig, "instruct_herl")
    herl = config.learners[0].options["herl"]
    trial = attrs.evolve(config.trial, early_stop_on_win=False, episodes=1)
    pool = BackendPool()
    engine = RolloutEngine(PluginSet([]), trial, backends=pool)
    if kinds:
        kwargs: dict[str, Any] = {"split": split, "kinds": kinds}
        tasks = len(tasks_for(split, kinds=kinds))
    else:
        kwargs = {"split": split, "tiers": [1]}
    specs = task_specs(model, "instruct", kwargs, range(tasks), drafts)
    print(f"playing {len(specs)} drafts ...", flush=True)
    samples = [s for t in engine.run(specs) for s in trial_samples(t, "writer", (model,))]
    rows: list[dict[str, Any]] = []
    for sample in samples:
        details = sample.meta["details"]
        task = task_by_id(details["task_id"])
        met = evaluate(task, sample.completion_text.strip())
        rows.append(
            {
                "task_id": task.task_id,
                # Which of the task's drafts (``task_specs``' sample index): the same index draws the same draft.
                "draft_index": int(sample.trial_id.rsplit("-", 1)[1]),
                "split": task.split,
                "kind": "+".join(c.kind for c in task.constraints),
                "draft": sample.completion_text,
                "draft_met": list(met),
                "draft_pass": bool(all(met)),
            }
        )
    failed = [i for i, row in enumerate(rows) if not row["draft_pass"]]
    backend = pool.get(parse_seat(model))
    budget = config.trial.prompt.max_new_tokens
    for naive in (False, True):
        name = "naive" if naive else "hindsight"
        print(f"revising {len(failed)} failed drafts with the {name} prompt ...", flush=True)
        requests = [
            GenerationRequest(
                messages=(
                    *system_messages(samples[i]),
                    ChatMessage("user", hindsight_prompt(samples[i], naive=naive)),
                ),
                segments=(Segment(temperature=float(herl["temperature"])),),
                max_new_tokens=budget,
                seed=derive_seed("instruct_revision_probe", samples[i].trial_id, name),
                purpose="herl_revision",
            )
            for i in failed
        ]
        for i, completions in zip(failed, backend.generate(requests), strict=True):
            text = completions[0].text
            rows[i][name] = text
            met = evaluate(task_by_id(rows[i]["task_id"]), text.strip())
            rows[i][f"{name}_met"] = list(met)
            rows[i][f"{name}_pass"] = bool(all(met))
    if golf:
        by_task: dict[str, list[int]] = collections.defaultdict(list)
        for i in failed:
            by_task[rows[i]["task_id"]].append(i)
        print(f"refining {len(by_task)} tasks' failed drafts with GOLF's prompt ...", flush=True)
        requests = [
            GenerationRequest(
                messages=(
                    *system_messages(samples[group[0]]),
                    ChatMessage("user", refinement_prompt(tuple(samples[i] for i in group))[0]),
                ),
                segments=(Segment(temperature=1.0),),
                max_new_tokens=budget,
                seed=derive_seed("instruct_revision_probe", task_id, "golf"),
                purpose="golf_refinement",
            )
            for task_id, group in by_task.items()
        ]
        for (task_id, group), completions in zip(by_task.items(), backend.generate(requests), strict=True):
            text = completions[0].text
            rows[group[0]]["golf"] = text
            rows[group[0]]["golf_pass"] = bool(all(evaluate(task_by_id(task_id), text.strip())))
    return rows


def kept(rows: list[dict[str, Any]], name: str) -> str:
    """Of the failed drafts that met some constraint, the share whose ``name`` revision still meets all of those
    (``-`` where no failed draft met any, as on one-constraint tasks, or the rows predate the measurement)."""
    partial = [r for r in rows if not r["draft_pass"] and any(r.get("draft_met", ()))]
    if not partial:
        return "-"
    held = sum(
        all(after for before, after in zip(r["draft_met"], r[f"{name}_met"], strict=True) if before) for r in partial
    )
    return f"{held / len(partial):.3f} ({len(partial)})"


def table(rows: list[dict[str, Any]]) -> str:
    by_kind: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for row in rows:
        by_kind[row["kind"]].append(row)
    lines = [
        "| kind | drafts | first try passed | failed drafts | revision passed: hindsight | naive"
        " | kept what the draft met: hindsight | naive | GOLF, per task |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]

    def line(name: str, group: list[dict[str, Any]]) -> str:
        failed = [r for r in group if not r["draft_pass"]]
        first = sum(r["draft_pass"] for r in group) / len(group)
        hind = sum(r["hindsight_pass"] for r in failed) / len(failed) if failed else float("nan")
        naive = sum(r["naive_pass"] for r in failed) / len(failed) if failed else float("nan")
        refined = [r["golf_pass"] for r in group if "golf_pass" in r]  # one row per task with a failed draft
        golf = f"{sum(refined) / len(refined):.3f} ({len(refined)})" if refined else "-"
        kept_by = f"{kept(group, 'hindsight')} | {kept(group, 'naive')}"
        return (
            f"| {name} | {len(group)} | {first:.3f} | {len(failed)} | {hind:.3f} | {naive:.3f} | {kept_by} | {golf} |"
        )

    for kind in sorted(by_kind, key=lambda k: sum(r["draft_pass"] for r in by_kind[k]) / len(by_kind[k])):
        lines.append(line(kind, by_kind[kind]))
    lines.append(line("all", rows))
    return "\n".join(lines)


#: The draft shapes ``by_shape`` reports, by ``draft_met`` of a (rewrite kind, length kind) pair.
SHAPES = (
    ((False, True), "met only the length"),
    ((True, False), "met only the rewrite kind"),
    ((False, False), "met neither"),
)


def length_ratio(task_id: str, text: str) -> float:
    """``text``'s words (or sentences) over the count its task's length constraint asks, the arena's counters."""
    constraint = task_by_id(task_id).constraints[1]
    counter = count_words if constraint.kind == "min_words" else count_sentences
    return counter(text) / constraint.n


def paired(diffs: list[float]) -> str:
    """Mean with a normal 95% interval over drafts (``core.eval.stats.mean_ci``; one draft: the mean alone)."""
    m = mean_ci(diffs)
    low, high = (m.mean, m.mean) if m.low is None or m.high is None else (m.low, m.high)
    return f"{m.mean:+.3f} [{low:+.3f}, {high:+.3f}]"


def by_shape(rows: list[dict[str, Any]]) -> str:
    """The failed drafts of (rewrite kind, length kind) tasks by what they met (``SHAPES``), and per prompt what
    their revisions met, with the median length over the count asked (``-`` where no row is such a pair)."""
    pairs = [r for r in rows if not r["draft_pass"] and len(r.get("draft_met", ())) == 2 and "+min_" in r["kind"]]
    if not pairs:
        return "-"
    lines = [
        "| draft met | drafts | prompt | met both | rewrite kind | length | median length / asked (draft's) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for shape, name in SHAPES:
        group = [r for r in pairs if tuple(r["draft_met"]) == shape]
        if not group:
            continue
        draft_ratio = statistics.median(length_ratio(r["task_id"], r["draft"]) for r in group)
        for prompt in ("hindsight", "naive"):
            both = sum(r[f"{prompt}_pass"] for r in group) / len(group)
            rewrite = sum(r[f"{prompt}_met"][0] for r in group) / len(group)
            length = sum(r[f"{prompt}_met"][1] for r in group) / len(group)
            ratio = statistics.median(length_ratio(r["task_id"], r[prompt]) for r in group)
            lines.append(
                f"| {name} | {len(group)} | {prompt} | {both:.3f} | {rewrite:.3f} | {length:.3f}"
                f" | {ratio:.2f} ({draft_ratio:.2f}) |"
            )
        both_diff = paired([float(r["hindsight_pass"]) - float(r["naive_pass"]) for r in group])
        length_diff = paired([float(r["hindsight_met"][1]) - float(r["naive_met"][1]) for r in group])
        lines.append(f"| {name} | | hindsight − naive | {both_diff} | | {length_diff} | |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--model", default="model:smollm2-135m-instruct")
    parser.add_argument("--drafts", type=int, default=4)
    parser.add_argument("--tasks", type=int, default=TASKS, help="tier-1 tasks (without --kinds)")
    parser.add_argument("--kinds", default="", help="comma-separated constraint kinds: their kind sets")
    parser.add_argument("--split", default="all", help="train, test or all")
    parser.add_argument("--golf", action="store_true", help="also refine each task's failed drafts GOLF's way")
    parser.add_argument("--show", action="store_true", help="print the table of an earlier run")
    parser.add_argument(
        "--drafts-from",
        type=int,
        default=0,
        help="tabulate only each task's drafts from this index on (index 0 repeats an earlier probe's one draft)",
    )
    args = parser.parse_args()
    path = args.out / "probe.json"
    if args.show:
        rows = json.loads(path.read_text())["rows"]
    else:
        kinds = [k for k in args.kinds.split(",") if k] or None
        rows = measure(args.model, args.drafts, args.tasks, kinds, args.split, args.golf)
        args.out.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"model": args.model, "drafts": args.drafts, "rows": rows}, indent=1))
    rows = [r for r in rows if r.get("draft_index", 0) >= args.drafts_from]
    print(table(rows))
    shapes = by_shape(rows)
    if shapes != "-":
        print()
        print(shapes)


if __name__ == "__main__":
    main()
