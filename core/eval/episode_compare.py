"""``arena compare --by-episode``: methods over seeds, episode by episode, from each run's ``arena eval`` report.

The meta-RL testbeds (docs/testbeds.md) are read by episode of a trial: what a method earns in episodes 2..N over
episode 1 is the adaptation it learned, and the ceilings say what a fixed policy and an adaptive one could reach.
This view takes runs that were evaluated (``RUN/eval/report.json``, written by ``arena eval``), groups them by
method (the run directory's name less a trailing seed, ``mage_s0`` → ``mage``, or ``--method NAME=RUN``) and
reports, for each method and each *target*:

- ``pool``: the training pool's weighted value (the eval report's ``ceilings.pool.measured``, exact against the
  pool's ceilings); then every evaluated opponent outside the pool (the unseen ones) on its own;
- per episode, the mean over seeds with a Student-t 95% interval, and with ``--baseline`` the per-seed paired
  difference from the baseline method (the same seed: the same starting model, trials and evaluation deals),
  with its t interval and how many seeds came out ahead;
- the ceilings beside them (fixed, adaptive) from the same reports.

Why the intervals also carry the evaluation's own error: ``arena eval`` plays the same trials (deals, opponents'
draws) for every run unless told ``--seed``, so the seeds of a method share one evaluation sample. Their spread
then shows how training differs between seeds, not how far that one sample is from the policy's expected value, and
the t interval over seeds misses that part. Measured (docs/results.md, Kuhn in chips): three GRPO seeds scored
−0.270 [−0.295, −0.245] chips against ``cfr`` in episode 3 on the shared 100 trials, while 600 other trials gave
their first seed −0.125 [−0.251, +0.001] and no trend by episode. So where every run of a method was evaluated
with the same seed and number of trials, the half-width becomes ``√((t·s/√n)² + (z·se)²)``, ``se²`` the mean of
the runs' own squared standard errors (from their 95% intervals; for ``pool``, the members' combined by the pool's
weights): the bound for evaluations that share every trial. A paired difference on shared trials adds
``se_A² + se_B²`` the same way (no credit for the pairing, which the reports' per-episode means cannot measure).
Runs evaluated on different trials (``--seed`` per run) keep the plain t interval, which then sees both errors.

Nothing is re-played here: the numbers are those ``arena eval`` measured.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from arena.core.api.errors import ArenaError
from arena.core.eval.ceilings import MEASURED
from arena.core.eval.stats import Z95, mean_t_ci

#: A run directory's name ends in its seed: ``mage_s0``, ``grpo-seed2``, ``mage_seed_1``.
SEED_SUFFIX = re.compile(r"[_-](?:s|seed_?)(\d+)$")


def method_of(run_dir: Path) -> str:
    """The method a run directory names: its name less a trailing seed (``runs/rps/mage_s0`` → ``mage``)."""
    return SEED_SUFFIX.sub("", run_dir.name)


def load_report(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "eval" / "report.json"
    if not path.is_file():
        raise ArenaError(f"{run_dir}: no evaluation report ({path}); run `arena eval {run_dir} --opponents all` first")
    report: dict[str, Any] = json.loads(path.read_text())
    return report


def targets(report: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``{target: {"measured": [...], "fixed": [...], "adaptive": [...]}}`` of one evaluation report.

    ``pool`` from the ceilings (when the testbed has them), then every evaluated opponent outside the training pool
    (its ceilings when known, else the measured win rate by episode alone).
    """
    ceilings = report.get("ceilings") or {}
    pool_specs = list(ceilings.get("opponents") or [])
    metric = str(ceilings.get("metric") or "win_rate")
    episodes = int(report.get("episodes_per_trial") or 1)
    rows = {str(row["opponent"]): row for row in report.get("opponents") or []}
    out: dict[str, dict[str, Any]] = {}
    if ceilings.get("pool"):
        pool = ceilings["pool"]
        out["pool"] = {
            "measured": pool["measured"],
            "fixed": pool["fixed"],
            "adaptive": pool["adaptive"],
            "se": _pool_se(rows, pool_specs, list(ceilings.get("weights") or []), metric, episodes),
            "metric": metric,
        }
    for spec, row in rows.items():
        if spec in pool_specs:
            continue
        own = row.get("ceilings")
        if own:
            out[spec] = {
                "measured": own["measured"],
                "fixed": own["fixed"],
                "adaptive": own["adaptive"],
                "se": standard_errors(row, metric, episodes),
                "metric": metric,
            }
        else:
            by_index = {int(e["episode"]): e["win_rate"]["rate"] for e in row.get("by_episode") or []}
            out[spec] = {
                "measured": [by_index.get(k) for k in range(1, episodes + 1)],
                "fixed": None,
                "adaptive": None,
                "se": standard_errors(row, "win_rate", episodes),
                "metric": "win_rate",
            }
    return out


def standard_errors(row: Mapping[str, Any], metric: str, episodes: int) -> list[float | None]:
    """The evaluation's standard error of an opponent row's ``metric`` per episode, from its 95% interval.

    Half the interval's width over z: exact for a mean's normal interval, close for a rate's Wilson interval
    (which is not symmetric near 0 and 1, and still has a width there where ``sqrt(p(1-p)/n)`` has none).
    """
    field = MEASURED[metric][0]
    by_index: dict[int, float] = {}
    for entry in row.get("by_episode") or []:
        interval = entry.get(field) or {}
        if interval.get("low") is not None and interval.get("high") is not None:
            by_index[int(entry["episode"])] = (float(interval["high"]) - float(interval["low"])) / (2 * Z95)
    return [by_index.get(k) for k in range(1, episodes + 1)]


def _pool_se(
    rows: Mapping[str, Mapping[str, Any]], specs: Sequence[str], weights: Sequence[float], metric: str, episodes: int
) -> list[float | None]:
    """The pool's weighted mean's standard error per episode: the members' errors by weight (independent trials)."""
    if not specs or len(weights) != len(specs) or any(spec not in rows for spec in specs):
        return [None] * episodes
    members = [standard_errors(rows[spec], metric, episodes) for spec in specs]
    out: list[float | None] = []
    for k in range(episodes):
        errors = [m[k] for m in members]
        out.append(
            None
            if any(e is None for e in errors)
            else sum((w * e) ** 2 for w, e in zip(weights, errors, strict=True) if e is not None) ** 0.5
        )
    return out


def _summary(
    values: Sequence[float], eval_se: float | None = None, bounds: tuple[float, float] | None = None
) -> dict[str, Any]:
    """Mean over seeds with its t interval; with ``eval_se`` (a shared evaluation's error), the widened one,
    clipped to ``bounds`` (a rate's [0, 1], a difference of rates' [−1, 1])."""
    summary: dict[str, Any] = {**mean_t_ci(values).to_json(), "values": list(values)}
    if eval_se is not None and values:
        mean = summary["mean"]
        seeds_half = 0.0 if summary["low"] is None else mean - summary["low"]
        half = (seeds_half**2 + (Z95 * eval_se) ** 2) ** 0.5
        summary.update(low=mean - half, high=mean + half, seeds_half_width=seeds_half, eval_se=eval_se)
    if bounds is not None and summary["low"] is not None:
        summary.update(low=max(summary["low"], bounds[0]), high=min(summary["high"], bounds[1]))
    return summary


def _bounds(target: Mapping[str, Any], difference: bool) -> tuple[float, float] | None:
    """A rate lies in [0, 1] and a difference of rates in [−1, 1]; returns have no bound here."""
    if target.get("metric", "win_rate") != "win_rate":
        return None
    return (-1.0, 1.0) if difference else (0.0, 1.0)


def _shared_se(errors: Sequence[float | None]) -> float | None:
    """``sqrt(mean(se²))`` of runs evaluated on one shared sample; None when any run's error is unknown."""
    if not errors or any(e is None for e in errors):
        return None
    return (sum(float(e) ** 2 for e in errors if e is not None) / len(errors)) ** 0.5


def compare_by_episode(
    run_dirs: Sequence[Path], baseline: str | None = None, names: Mapping[Path, str] | None = None
) -> dict[str, Any]:
    """Methods × targets × episodes over seeds, paired against ``baseline`` (a method name) when given."""
    runs: dict[str, dict[int, dict[str, Any]]] = {}
    for run_dir in run_dirs:
        report = load_report(run_dir)
        method = (names or {}).get(run_dir) or method_of(run_dir)
        config_path = run_dir / "config.yaml"
        seed = _seed(config_path)
        if seed in runs.setdefault(method, {}):
            raise ArenaError(
                f"two runs of method {method!r} with seed {seed}: {runs[method][seed]['run']} and {run_dir}"
            )
        evaluation = (report.get("seed"), report.get("games"))
        runs[method][seed] = {"run": str(run_dir), "targets": targets(report), "evaluation": evaluation}
    if baseline is not None and baseline not in runs:
        raise ArenaError(f"baseline {baseline!r} is none of the compared methods: {', '.join(sorted(runs))}")
    methods = []
    for method, by_seed in runs.items():
        seeds = sorted(by_seed)
        shared = _shares_evaluation(by_seed.values())
        names_seen = [t for t in by_seed[seeds[0]]["targets"]]
        rows = {}
        for target in names_seen:
            per_seed = [by_seed[s]["targets"].get(target) for s in seeds]
            if any(t is None for t in per_seed):
                continue
            episodes = len(per_seed[0]["measured"])
            row: dict[str, Any] = {
                "fixed": per_seed[0]["fixed"],
                "adaptive": per_seed[0]["adaptive"],
                "episodes": [],
            }
            for k in range(episodes):
                values = [t["measured"][k] for t in per_seed]
                errors = [t["se"][k] for t, v in zip(per_seed, values, strict=True) if v is not None]
                shared_se = _shared_se(errors) if shared else None
                entry: dict[str, Any] = {
                    "episode": k + 1,
                    "value": _summary(
                        [float(v) for v in values if v is not None], shared_se, _bounds(per_seed[0], difference=False)
                    ),
                }
                if baseline is not None and method != baseline:
                    entry["vs_baseline"] = _paired(by_seed, runs[baseline], target, k)
                row["episodes"].append(entry)
            rows[target] = row
        methods.append(
            {
                "method": method,
                "seeds": seeds,
                "runs": [by_seed[s]["run"] for s in seeds],
                "shared_evaluation": shared,
                "targets": rows,
            }
        )
    return {"baseline": baseline, "methods": methods}


def _shares_evaluation(runs: Iterable[Mapping[str, Any]]) -> bool:
    """Whether two or more runs were evaluated on the same trials (the same seed and number of trials)."""
    keys = [run["evaluation"] for run in runs]
    return len(keys) > 1 and len(set(keys)) == 1 and keys[0][0] is not None


def _seed(config_path: Path) -> int:
    import yaml

    if not config_path.is_file():
        raise ArenaError(f"{config_path.parent}: not a run directory (no config.yaml)")
    return int((yaml.safe_load(config_path.read_text()) or {}).get("seed", 0))


def _paired(
    runs: Mapping[int, Mapping[str, Any]], baseline: Mapping[int, Mapping[str, Any]], target: str, k: int
) -> dict[str, Any] | None:
    diffs = []
    seeds = []
    errors: list[float | None] = []
    for seed in sorted(runs):
        if seed not in baseline:
            continue
        mine, theirs = runs[seed]["targets"].get(target), baseline[seed]["targets"].get(target)
        if mine is None or theirs is None or mine["measured"][k] is None or theirs["measured"][k] is None:
            continue
        diffs.append(float(mine["measured"][k]) - float(theirs["measured"][k]))
        seeds.append(seed)
        a, b = mine["se"][k], theirs["se"][k]
        errors.append(None if a is None or b is None else (a**2 + b**2) ** 0.5)
    if not diffs:
        return None
    # On one shared sample (every pair of this comparison evaluated on the same trials) the seeds' spread of the
    # differences misses that sample's error, as for the means; evaluated apart, the t interval sees it.
    pairs = [runs[s] for s in seeds] + [baseline[s] for s in seeds]
    shared = len(seeds) > 1 and _shares_evaluation(pairs)
    return {
        "seeds": seeds,
        "diff": _summary(
            diffs, _shared_se(errors) if shared else None, _bounds(runs[seeds[0]]["targets"][target], difference=True)
        ),
        "ahead": sum(d > 1e-9 for d in diffs),
        "behind": sum(d < -1e-9 for d in diffs),
    }


def _fmt(summary: Mapping[str, Any] | None, signed: bool = False) -> str:
    if summary is None:
        return "-"
    sign = "+" if signed else ""
    text = f"{summary['mean']:{sign}.3f}"
    if summary.get("low") is not None:
        text += f" [{summary['low']:{sign}.3f}, {summary['high']:{sign}.3f}]"
    return text


def format_episode_table(result: Mapping[str, Any]) -> str:
    """One Markdown table per target: a row per method and episode, with the ceilings and the paired difference."""
    baseline = result["baseline"]
    target_names: list[str] = []
    for method in result["methods"]:
        target_names += [t for t in method["targets"] if t not in target_names]
    lines: list[str] = []
    for target in target_names:
        lines.append(f"### {target}")
        header = ["method", "seeds", "episode", "mean [95%]", "fixed", "adaptive"]
        if baseline is not None:
            header += [f"− {baseline}, paired [95%]", "ahead / behind"]
        lines += [" | ".join(header), " | ".join("---" for _ in header)]
        for method in result["methods"]:
            row = method["targets"].get(target)
            if row is None:
                continue
            for entry in row["episodes"]:
                k = entry["episode"] - 1
                cells = [
                    method["method"],
                    str(len(method["seeds"])),
                    str(entry["episode"]),
                    _fmt(entry["value"]),
                    "-" if row["fixed"] is None else f"{row['fixed'][k]:.3f}",
                    "-" if row["adaptive"] is None else f"{row['adaptive'][k]:.3f}",
                ]
                if baseline is not None:
                    paired = entry.get("vs_baseline")
                    if method["method"] == baseline:
                        cells += ["(baseline)", ""]
                    elif paired is None:
                        cells += ["no baseline run with its seeds", ""]
                    else:
                        cells += [_fmt(paired["diff"], signed=True), f"{paired['ahead']} / {paired['behind']}"]
                lines.append(" | ".join(cells))
        lines.append("")
    lines.append("Means over seeds with Student-t 95% intervals; differences are paired by seed.")
    shared = [m["method"] for m in result["methods"] if m.get("shared_evaluation")]
    if shared:
        lines.append(
            f"The runs of {', '.join(shared)} were evaluated on the same trials (one seed and number of trials), so "
            "their intervals also carry that evaluation sample's error: √((t·s/√n)² + (z·se)²), se from the runs' "
            "own intervals (docs/results.md, Kuhn in chips). Evaluate each seed with its own `arena eval --seed` "
            "for intervals from the seeds alone."
        )
    return "\n".join(lines)


def plot_by_episode(result: Mapping[str, Any], out: Path) -> Path:
    """One panel per target: each method's mean by episode with its interval, and the fixed / adaptive ceilings."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    target_names: list[str] = []
    for method in result["methods"]:
        target_names += [t for t in method["targets"] if t not in target_names]
    panels = max(1, len(target_names))
    fig, axes = plt.subplots(1, panels, figsize=(4.2 * panels, 3.6), squeeze=False)
    for ax, target in zip(axes[0], target_names, strict=False):
        rows = [(m, m["targets"][target]) for m in result["methods"] if target in m["targets"]]
        # The ceilings first, so that a method's line at a ceiling is drawn over it.
        with_ceilings = next((row for _, row in rows if row["fixed"] is not None), None)
        if with_ceilings is not None:
            x = [e["episode"] for e in with_ceilings["episodes"]]
            ax.plot(x, with_ceilings["fixed"], color="grey", linestyle="--", label="fixed-policy ceiling")
            ax.plot(x, with_ceilings["adaptive"], color="black", linestyle=":", label="adaptive ceiling")
        for method, row in rows:
            x = [e["episode"] for e in row["episodes"]]
            values = [e["value"] for e in row["episodes"]]
            mean = [v["mean"] for v in values]
            # One seed has no interval: the band is the line itself.
            low = [v["mean"] if v["low"] is None else v["low"] for v in values]
            high = [v["mean"] if v["high"] is None else v["high"] for v in values]
            (line,) = ax.plot(x, mean, marker="o", label=f"{method['method']} ({len(method['seeds'])} seeds)")
            ax.fill_between(x, low, high, color=line.get_color(), alpha=0.15)
        ax.set_title(target)
        ax.set_xlabel("episode of the trial")
        episodes = max(len(m["targets"][target]["episodes"]) for m in result["methods"] if target in m["targets"])
        ax.set_xticks(range(1, episodes + 1))
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("win rate (or return) by episode")
    axes[0][-1].legend(fontsize=7, loc="best")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


__all__ = ["compare_by_episode", "format_episode_table", "method_of", "plot_by_episode", "targets"]
