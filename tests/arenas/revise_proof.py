"""HeRL's testbed in numbers (issue 26): HeRL and GOLF against GRPO on ``instruct_revise`` with ``smollm2-revise``.

    python -m tests.arenas.revise_proof runs/revise_proof     # ROOT/<method>_s<seed>: arena train --dump-rollouts

The methods (``O`` = ``learners.0.options.herl``): ``grpo`` (instruct_revise_grpo); ``herl`` (instruct_revise_herl:
the injected revision trained in the revision prompt); ``herl_original`` (``O.train_context=original``: trained as
the instruction's answer); ``herl_naive`` and ``herl_naive_original``, the ablations of each with
``O.naive_prompt=true`` (revisions asked for without naming the missed constraint); ``<method>_8it``: the same with
``iterations=8``, twice the budget. GOLF's arms: ``golf`` (instruct_revise_golf); ``golf_grpo`` (its GRPO twin
instruct_revise_golf_grpo, mean-centred advantages as GOLF's); ``golf_noinject``, the ablation
``learners.0.options.golf.inject=false`` (the refiner group trains, nothing is injected into the answers' groups).

The lowercase pairs (instruct_lowercase_herl and its twin, two constraints a task) use the same names under a root
of their own: ``grpo``, ``herl_original`` (the config) and ``herl_naive_original`` (its naive ablation).

Per run, from its rollout dumps: the policy's own answers that met every constraint (the injected samples left
out), by iteration, and their mean score (the fraction met); the groups with a learning signal (a non-zero
advantage on some sample) and those holding an answer that met every constraint (injected or not); the injected
samples that are revisions (not copies of a draft) and met every constraint; GOLF's refinements that met it and its
injections. From its metrics: the share of all of HeRL's revisions that beat their draft, and their mean score;
held-out success (``eval/win_rate``: an answer that met every constraint; the 70 held-out tasks
once each on ``instruct_revise``, the 37 of the lowercase pairs 4 times each) before and after, and on the pairs
the mean score too (``eval/mean_return``). With ``--logprob``, a measure without the
sampling noise of 70 answers: the mean token log-probability of the held-out tasks' reference answers (short answers
that meet the constraint, ``instruct.reference_answer``) under the run's final policy, less under smollm2-revise.
With ``--passk DIR``, the final policies' held-out success over more samples: ``DIR/<run>.json`` is ``arena passk
ROOT/<run> --split test --arena-kwarg "kinds=[lowercase,uppercase,quotes,end_with]" --tasks 70 --samples 4 --json``
(the same tasks and sampling seeds for every run), read overall and by constraint kind.
Per method: mean over seeds with a Student-t 95% interval; the ``COMPARISONS`` paired by seed (the same tasks and
sampling seeds).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from arena.arenas.instruct import InstructAdapter, reference_answer, tasks_for
from arena.core.learn.metrics import read_rollouts
from tests.arenas.doors_proof import fmt

METHODS = (
    "herl",
    "herl_original",
    "grpo",
    "herl_naive",
    "herl_naive_original",
    "herl_original_8it",
    "grpo_8it",
    "golf",
    "golf_grpo",
    "golf_noinject",
)
#: (method, baseline) pairs compared seed by seed.
COMPARISONS = (
    ("herl", "grpo"),
    ("herl_original", "grpo"),
    ("herl_original", "herl"),
    ("herl", "herl_naive"),
    ("herl_original", "herl_naive_original"),
    ("herl_naive_original", "grpo"),
    ("herl_original_8it", "grpo_8it"),
    ("golf", "golf_grpo"),
    ("golf", "golf_noinject"),
    ("golf_noinject", "golf_grpo"),
    ("golf", "herl_original"),
)
#: The opening of HeRL's revision prompt: an injected revision was sampled in it (``rollout_context_text``) and,
#: with ``train_context: revision``, is trained in it too (``context_text``).
REVISION = "Here is an instruction and a draft answer to it."


def is_revision(sample: dict[str, Any]) -> bool:
    """An injected sample that is a revision, not a copy of a draft (those were sampled in the original prompt)."""
    return sample.get("injected") == "herl" and REVISION in sample["rollout_context_text"]


def rollout_rates(run: Path) -> dict[str, Any]:
    own: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    own_score = [0.0, 0]  # the policy's own answers: summed score (the fraction of constraints met), count
    groups: dict[str, bool] = defaultdict(bool)
    passing: dict[str, bool] = defaultdict(bool)  # the group holds an answer that met every constraint
    injected = [0, 0, 0]  # revisions, revisions that met the constraint, copies of a draft (fallbacks)
    refinements = [0, 0, 0]  # GOLF: refinements, refinements that met the constraint, injections
    for iteration, sample in read_rollouts(run):
        met = sample["reward_terms"].get("env", 0.0) >= 1.0
        if sample["kind"] == "refinement":
            refinements[0] += 1
            refinements[1] += met
        if sample["kind"] != "action":
            continue
        groups[f"{iteration}/{sample['group_id']}"] |= abs(sample["advantage"]) > 1e-9
        passing[f"{iteration}/{sample['group_id']}"] |= met
        if sample.get("injected") == "golf":
            refinements[2] += 1  # a refinement that met the constraint, trained as the instruction's answer
        elif not sample.get("injected"):
            own[iteration][0] += met
            own[iteration][1] += 1
            own_score[0] += sample["reward_terms"].get("env", 0.0)
            own_score[1] += 1
        elif not is_revision(sample):
            injected[2] += 1  # a copy of the best draft, in the original prompt
        else:
            injected[0] += 1
            injected[1] += met
    iterations = sorted(own)
    golf = {}
    if refinements[0]:
        golf = {
            "refinements met": refinements[1] / refinements[0],
            "GOLF injections (of groups)": f"{refinements[2]} ({len(groups)})",
        }
    return {
        "own answers met, by iteration": [round(own[i][0] / own[i][1], 3) for i in iterations],
        "own answers met": sum(own[i][0] for i in iterations) / sum(own[i][1] for i in iterations),
        "own answers met, last 2 iterations": sum(own[i][0] for i in iterations[-2:])
        / sum(own[i][1] for i in iterations[-2:]),
        "own answers' mean score": own_score[0] / own_score[1],
        "groups with a signal": sum(groups.values()) / len(groups),
        "groups holding an answer that met every constraint": sum(passing.values()) / len(passing),
        "injected revisions (met) / fallbacks": f"{injected[0]} ({injected[1]}) / {injected[2]}",
        **golf,
    }


def revision_rates(run: Path) -> dict[str, float]:
    """HeRL's revisions of the iteration, all of them (the dumps hold only the injected one a group): the share that
    scored above their draft and their mean score, from the summed ``augment/herl/*`` metrics. Empty for GRPO."""
    totals: dict[str, float] = defaultdict(float)
    for row in map(json.loads, (run / "metrics.jsonl").read_text().splitlines()):
        for key in ("candidates", "revisions_improved", "revision_reward_sum"):
            totals[key] += row.get(f"augment/herl/{key}", 0.0)
    if not totals["candidates"]:
        return {}
    return {
        "HeRL revisions that beat their draft": totals["revisions_improved"] / totals["candidates"],
        "HeRL revisions' mean score": totals["revision_reward_sum"] / totals["candidates"],
    }


def injected_passes(run: Path) -> list[tuple[str, str]]:
    """(training context, answer) of every injected revision that met its constraint, in dump order."""
    pairs = []
    for _, sample in read_rollouts(run):
        if is_revision(sample) and sample["reward_terms"].get("env", 0.0) >= 1.0:
            pairs.append((sample["context_text"], sample["completion_text"]))
    return pairs


def mean_logprob(model_dir: Path | str, pairs: list[tuple[str, str]]) -> float:
    """The mean over ``pairs`` of the answer's mean token log-probability after its context, sent as the one user
    message through the chat template (how the rollouts prompt ``instruct``: no system message configured)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from arena.core.api.backend import ChatMessage
    from arena.core.models.tiny.quality import prompt_ids

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    means = []
    with torch.no_grad():
        for context, answer in pairs:
            head = prompt_ids(tokenizer, [ChatMessage("user", context)])
            body = tokenizer(answer, add_special_tokens=False)["input_ids"]
            logits = model(torch.tensor([head + body])).logits[0, len(head) - 1 : -1]
            picked = torch.log_softmax(logits.float(), -1).gather(1, torch.tensor(body)[:, None])
            means.append(float(picked.mean()))
    return sum(means) / len(means)


def instruction_prompt(observation: str) -> str:
    """The first (only) turn's user message of an ``instruct`` trial with the configs' prompt settings
    (core/rollout/prompts.py's layout; ``check_prompt_layout`` compares it with a dumped rollout)."""
    rules = InstructAdapter().rules(None)  # type: ignore[arg-type]  # the rules ignore the view
    parts = [
        rules,
        "No moves yet in this episode.",
        f"Current observation:\n{observation}",
        "Reply with the response only.",
    ]
    return "\n\n".join(parts)


def check_prompt_layout(run: Path) -> None:
    sample = next(row for _, row in read_rollouts(run) if not row.get("injected"))
    if instruction_prompt(sample["anchor"].split("\x1f")[0]) != sample["context_text"]:
        raise SystemExit(f"the rollouts' prompt layout changed: update instruction_prompt ({run})")


def held_out_references() -> list[tuple[str, str]]:
    """(prompt, reference answer) of the 70 held-out tasks: a short answer that meets the task's constraint."""
    from arena.core.models.smol.revise import KINDS

    return [(instruction_prompt(t.prompt()), reference_answer(t)) for t in tasks_for("test", kinds=KINDS)]


def final_policy(run: Path) -> Path:
    return sorted((run / "checkpoints").glob("step-*"))[-1] / "learners" / "writer"


def held_out(run: Path, key: str = "eval/win_rate") -> tuple[float, float]:
    """``key`` on the held-out tasks before and after training: ``eval/win_rate`` is the share of answers that met
    every constraint (``instruct`` scores a win only then), ``eval/mean_return`` the mean fraction met; the two are
    one number on one-constraint tasks."""
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    evals = [r for r in rows if "eval/mean_return" in r]
    first, last = evals[0], evals[-1]
    return float(first.get(key, first["eval/mean_return"])), float(last.get(key, last["eval/mean_return"]))


def passk_success(report: Path) -> dict[str, float]:
    """Success rate of an ``arena passk --json`` report over all its tasks and by constraint kind (the task id's
    prefix, ``uppercase.012``)."""
    tasks = json.loads(report.read_text())["per_task"]
    by_kind: dict[str, list[float]] = defaultdict(list)
    for task in tasks:
        by_kind[task["task_id"].rsplit(".", 1)[0]].append(task["successes"] / task["samples"])
    rates = {"held-out success, passk": sum(sum(v) for v in by_kind.values()) / len(tasks)}
    rates.update({f"held-out success, passk, {kind}": sum(v) / len(v) for kind, v in sorted(by_kind.items())})
    return rates


def finished(run: Path) -> bool:
    """The run evaluated after training (its metrics hold the held-out success before and after)."""
    metrics = run / "metrics.jsonl"
    return metrics.exists() and metrics.read_text().count('"eval/mean_return"') >= 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument(
        "--logprob",
        action="store_true",
        help="also score the held-out reference answers under each run's final policy (about 30 s a run)",
    )
    parser.add_argument(
        "--passk",
        type=Path,
        help="a folder of `arena passk --json` reports, one per run (<run>.json): held-out success over more samples",
    )
    args = parser.parse_args()
    runs = {
        m: {int(p.name.rsplit("_s", 1)[1]): p for p in sorted(args.root.glob(f"{m}_s[0-9]*")) if finished(p)}
        for m in METHODS
    }
    rows: dict[str, dict[str, dict[int, float]]] = {m: defaultdict(dict) for m in METHODS}
    if args.logprob:
        from arena.core.models.smol.revise import revise_model_dir

        references = held_out_references()
        base = mean_logprob(revise_model_dir(), references)
        print(f"held-out reference answers, mean token log-prob under smollm2-revise: {base:.4f}")
    for method in METHODS:
        for seed, run in runs[method].items():
            rates = {**rollout_rates(run), **revision_rates(run)}
            start, end = held_out(run)
            print(f"{method} s{seed}: {json.dumps(rates)}; held-out {start:.3f} -> {end:.3f}")
            for key, value in rates.items():
                if isinstance(value, float):
                    rows[method][key][seed] = value
            rows[method]["held-out success, end"][seed] = end
            rows[method]["held-out success, end - start"][seed] = end - start
            score_start, score_end = held_out(run, "eval/mean_return")
            if (score_start, score_end) != (start, end):  # several constraints a task: the mean fraction met too
                rows[method]["held-out mean score, end"][seed] = score_end
                rows[method]["held-out mean score, end - start"][seed] = score_end - score_start
            if args.passk and (args.passk / f"{run.name}.json").exists():
                for key, value in passk_success(args.passk / f"{run.name}.json").items():
                    rows[method][key][seed] = value
            if args.logprob:
                check_prompt_layout(run)
                gain = mean_logprob(final_policy(run), references) - base
                rows[method]["held-out reference log-prob, end - start"][seed] = gain
    print()
    for key in dict.fromkeys(k for m in METHODS for k in rows[m]):
        print(f"### {key}")
        for method in METHODS:
            if rows[method][key]:
                values = rows[method][key]
                by_seed = ", ".join(f"s{seed} {values[seed]:.3f}" for seed in sorted(values))
                print(f"{method}: {fmt(list(values.values()))} ({by_seed})")
        for method, baseline in COMPARISONS:
            a, b = rows[method][key], rows[baseline][key]
            seeds = sorted(set(a) & set(b))
            if seeds:
                diff = [a[s] - b[s] for s in seeds]
                print(f"{method} − {baseline}, paired over seeds {seeds}: {fmt(diff, signed=True)}")
        print()


if __name__ == "__main__":
    main()
