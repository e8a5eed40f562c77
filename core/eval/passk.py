"""pass@k on single-agent arenas (coding, text_maze): how often a policy solves a task within k samples.

``evaluate_tasks`` plays ``samples`` independent trials of each task (a task is an arena seed, in the split the
arena kwargs choose) through the real ``RolloutEngine`` and scores every task with the unbiased estimator of
Chen et al. (2021, "Evaluating Large Language Models Trained on Code"):

    pass@k = 1 − C(n − c, k) / C(n, k)        n samples of the task, c of them successes

averaged over tasks. A success is the outcome "win" (the coding arena: every hidden test passed; text_maze: the
treasure found). Alongside: the mean score (the episode return), and the number of distinct outcomes
(``episode_details["outcome_key"]``, such as the set of tests passed) per task, SGE's exploration measure.

It evaluates a model spec (the starting model, ``model:tiny``) or a run's checkpoint (the learner's weights
and plugins, restored), on the same tasks and the same sampling seeds, so the two can be compared directly.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np
from tqdm import tqdm

from arena.core.api.errors import ArenaError
from arena.core.api.records import TrialRecord, TrialSpec
from arena.core.config.trial import TrialConfig
from arena.core.host import catalog
from arena.core.host.plugins import PluginSet
from arena.core.rollout.engine import RolloutEngine
from arena.core.rollout.seats import BackendPool


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k of one task with ``c`` successes among ``n`` samples (needs ``k <= n``)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def ks_for(samples: int) -> list[int]:
    """The k reported for ``samples`` samples per task: 1, 2, 4, ... up to ``samples`` (which is always in)."""
    ks = [k for k in (1, 2, 4, 8, 16, 32, 64, 128) if k < samples]
    return [*ks, samples]


def task_specs(
    seat_spec: str,
    arena_id: str,
    arena_kwargs: Mapping[str, Any],
    seeds: Sequence[int],
    samples: int,
    options: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[TrialSpec]:
    """``samples`` single-seat trials per task seed; trial ids (and so sampling seeds) depend only on the task and
    the sample index, so two policies evaluated with the same arguments see the same tasks and random streams."""
    return [
        TrialSpec(
            trial_id=f"passk-{seed}-{j:03d}",
            arena_id=arena_id,
            seats=(seat_spec,),
            seed=int(seed),
            episodes=1,
            arena_kwargs=dict(arena_kwargs),
            training=False,
            meta={"task_seed": int(seed)},
            options={k: dict(v) for k, v in (options or {}).items()},
        )
        for seed in seeds
        for j in range(samples)
    ]


def summarize_tasks(trials: Sequence[TrialRecord], samples: int) -> dict[str, Any]:
    """pass@k over tasks, mean score, success rate and distinct outcomes, from the trials of ``task_specs``."""
    by_task: dict[int, list[TrialRecord]] = {}
    for trial in trials:
        by_task.setdefault(int(trial.spec.meta["task_seed"]), []).append(trial)
    rows: list[dict[str, Any]] = []
    played: list[tuple[Mapping[str, Any], bool]] = []  # (details, won) of every trial, for the flags
    for seed, group in sorted(by_task.items()):
        agent = next(iter(group[0].final.returns))
        wins = sum(t.final.outcomes[agent] == "win" for t in group)
        details = [t.final.details.get(agent, {}) for t in group]
        played += [(d, t.final.outcomes[agent] == "win") for d, t in zip(details, group, strict=True)]
        rows.append(
            {
                "seed": seed,
                "task_id": str(details[0].get("task_id", seed)) if details else str(seed),
                "samples": len(group),
                "successes": wins,
                "mean_score": float(np.mean([t.final.returns[agent] for t in group])),
                "distinct_outcomes": len({str(d["outcome_key"]) for d in details if "outcome_key" in d}),
            }
        )
    if not rows:
        raise ArenaError("no task was played")
    ks = ks_for(samples)
    return {
        "tasks": len(rows),
        "samples": samples,
        "pass_at_k": {str(k): float(np.mean([pass_at_k(r["samples"], r["successes"], k) for r in rows])) for k in ks},
        "success_rate": float(np.mean([r["successes"] / r["samples"] for r in rows])),
        "mean_score": float(np.mean([r["mean_score"] for r in rows])),
        "distinct_outcomes_per_task": float(np.mean([r["distinct_outcomes"] for r in rows])),
        "flags": detail_flags(played),
        "per_task": rows,
    }


def detail_flags(details: Iterable[tuple[Mapping[str, Any], bool]]) -> dict[str, dict[str, float | int]]:
    """Every yes/no fact an arena reports in ``episode_details`` (a bool value; ``None`` where it does not apply),
    over (details, won) pairs: ``{key: {"rate": share true, "true": n, "of": trials where it applied,
    "win_if_true": win rate where true, "win_if_false": where false}}`` (a win rate over no trial is NaN); a key
    never true or false in any trial (always ``None``) is left out.

    Generic on purpose: an arena states what its testbed measures (text_maze's ``note_before_chest``, SAFARI's
    measure) and every pass@k report counts it, and whether it goes with winning, without the evaluation knowing
    the arena."""
    counts: dict[str, list[int]] = {}  # true, of, wins when true, wins when false
    for detail, won in details:
        for key, value in detail.items():
            if isinstance(value, bool):
                row = counts.setdefault(key, [0, 0, 0, 0])
                row[0] += int(value)
                row[1] += 1
                row[2 if value else 3] += int(won)

    def rate(wins: int, n: int) -> float:
        return wins / n if n else float("nan")

    return {
        key: {
            "rate": true / total,
            "true": true,
            "of": total,
            "win_if_true": rate(wins_true, true),
            "win_if_false": rate(wins_false, total - true),
        }
        for key, (true, total, wins_true, wins_false) in sorted(counts.items())
    }


def evaluate_tasks(
    seat_spec: str,
    arena_id: str,
    arena_kwargs: Mapping[str, Any],
    tasks: int,
    samples: int,
    trial_config: TrialConfig | None = None,
    plugins: PluginSet | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    first_seed: int = 0,
    pool: BackendPool | None = None,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Play ``samples`` trials on each of ``tasks`` tasks (seeds ``first_seed …``) and summarise them."""
    if tasks < 1 or samples < 1:
        raise ArenaError(f"--tasks and --samples must be at least 1, got {tasks} and {samples}")
    env = catalog.make_arena(arena_id, **dict(arena_kwargs))
    players = len(env.possible_agents)
    env.close()
    if players != 1:
        raise ArenaError(f"pass@k is for single-agent arenas; {arena_id!r} has {players} seats (use arena eval)")
    specs = task_specs(seat_spec, arena_id, arena_kwargs, range(first_seed, first_seed + tasks), samples, options)
    bar = tqdm(total=len(specs), desc="pass@k", unit="trial", disable=None if progress is None else not progress)
    engine = RolloutEngine(
        plugins or PluginSet([]),
        attrs.evolve(trial_config or TrialConfig(), early_stop_on_win=False, episodes=1),
        backends=pool or BackendPool(),
        on_trial_end=lambda _: bar.update(1),
    )
    try:
        trials = engine.run(specs)
    finally:
        bar.close()
    return {
        "seat": seat_spec,
        "arena": arena_id,
        "arena_kwargs": dict(arena_kwargs),
        "first_seed": first_seed,
        **summarize_tasks(trials, samples),
    }


def format_flag(key: str, flag: Mapping[str, Any]) -> str:
    """One ``detail_flags`` entry as text: "note_before_chest 0.895 (247 of 276; won 0.498 where true, …)"."""
    return (
        f"{key} {flag['rate']:.3f} ({flag['true']} of {flag['of']}; won {flag.get('win_if_true', math.nan):.3f} "
        f"where true, {flag.get('win_if_false', math.nan):.3f} where false)"
    )


def format_passk(report: Mapping[str, Any]) -> str:
    """A few readable lines: who, where, pass@k, mean score, distinct outcomes."""
    passk = "  ".join(f"pass@{k} {v:.3f}" for k, v in report["pass_at_k"].items())
    flags = "".join(f"\n  {format_flag(key, flag)}" for key, flag in (report.get("flags") or {}).items())
    return (
        f"{report['seat']} on {report['arena']} {report['arena_kwargs'] or ''}: {report['tasks']} tasks × "
        f"{report['samples']} samples\n  {passk}\n  mean score {report['mean_score']:.3f}, "
        f"success rate {report['success_rate']:.3f}, distinct outcomes per task "
        f"{report['distinct_outcomes_per_task']:.2f}{flags}"
    )


def evaluate_run_tasks(
    run_dir: Any,
    tasks: int,
    samples: int,
    learner: str | None = None,
    checkpoint: Any = None,
    initial: bool = False,
    first_seed: int | None = None,
    arena_kwargs: Mapping[str, Any] | None = None,
    progress: bool | None = None,
    model: str | None = None,
    model_plugins: Sequence[str] = (),
) -> dict[str, Any]:
    """pass@k of a run's learner: its checkpoint (plugins and their state restored), or with ``initial`` the
    model it started from with the same plugins, on the run's evaluation tasks (``eval.arena_kwargs``, such as
    the held-out split, over the run's ``arena_kwargs``; ``arena_kwargs`` overrides both).

    ``model`` evaluates another model spec (with ``model_plugins``) under exactly the run's conditions: its arena,
    tasks, seeds and trial settings (answer budget, temperature, invalid-answer policy). That is how a model
    trained elsewhere (SAFARI's SFT/DPO models) is compared with the run's."""
    from arena.core.eval.evaluation import learner_plugins, open_run
    from arena.core.learn.threads import torch_threads

    info = open_run(run_dir, learner, checkpoint)
    config = info.config
    kwargs = {**config.arena_kwargs, **config.eval.arena_kwargs, **dict(arena_kwargs or {})}
    if model is not None:
        seat, plugins = model, PluginSet(list(model_plugins))
    elif initial:
        seat, plugins = info.learner.seat_spec, PluginSet(list(info.learner.plugins))
    else:
        seat, plugins = info.seat_spec, learner_plugins(info)
    with torch_threads(config.torch_threads):
        report = evaluate_tasks(
            seat,
            config.arena,
            kwargs,
            tasks,
            samples,
            trial_config=config.trial,
            plugins=plugins,
            options=info.learner.options,
            first_seed=config.eval.seed if first_seed is None else first_seed,
            progress=progress,
        )
    if model is not None:
        return {"run": str(info.run_dir), "model": model, "plugins": list(model_plugins), **report}
    return {
        "run": str(info.run_dir),
        "checkpoint": None if initial else str(info.checkpoint),
        "step": 0 if initial else info.step,
        "learner": info.learner.name,
        "plugins": list(info.learner.plugins),
        **report,
    }
