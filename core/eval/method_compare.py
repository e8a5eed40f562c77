"""``arena compare --by-method``: runs grouped by method, summarised over seeds, and paired against a baseline.

A method is the learner's plugin list (``grpo``, ``herl,grpo``, ``golf,grpo``); there is one run per method and
seed. A single seed says little at small budgets (docs/results.md: two seeds of the same three methods ranked them
in opposite orders), so this view reports what a handful of seeds supports and no more:

- means carry Student-t 95% intervals (with 3 to 5 seeds the normal interval is far too narrow);
- runs of two methods with the same seed share the starting model, the tasks each iteration draws and the held-out
  tasks, so each method is compared with the baseline *paired by seed*: the per-seed difference of the final
  held-out reward, its mean and t interval, and on how many seeds each side came out ahead;
- rollouts to a reward level are listed per seed (``None``: never reached), since a median of three is no summary.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from arena.core.api.errors import ArenaError
from arena.core.eval.compare import save_curve_plot
from arena.core.eval.stats import Mean, mean_t_ci

#: Differences smaller than this count as ties (rewards are fractions of a few hundred checks at most).
TIE = 1e-9


def method_label(curve: Mapping[str, Any], with_model: bool = False) -> str:
    """The method a run trained with: its learner's plugins, comma-joined, in config order; with ``with_model``
    also its model (``grpo @ tiny``), for comparisons that span several models."""
    plugins = ",".join(curve["plugins"]) or "(no plugins)"
    return f"{plugins} @ {curve['model']}" if with_model else plugins


def spans_models(curves: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the runs trained more than one model (then a method is a plugin list *and* a model)."""
    return len({c["model"] for c in curves}) > 1


def group_by_method(curves: Sequence[Mapping[str, Any]]) -> dict[str, dict[int, Mapping[str, Any]]]:
    """``{method: {seed: curve}}`` in the order methods first appear; two runs of one method and seed are an error."""
    with_model = spans_models(curves)
    grouped: dict[str, dict[int, Mapping[str, Any]]] = {}
    for curve in curves:
        label = method_label(curve, with_model)
        runs = grouped.setdefault(label, {})
        seed = int(curve["seed"])
        if seed in runs:
            raise ArenaError(
                f"two runs of method {label!r} with seed {seed}: {runs[seed]['run']} and {curve['run']}"
                " (compare one run per method and seed)"
            )
        runs[seed] = curve
    return grouped


def _summary(values: Sequence[float]) -> dict[str, Any] | None:
    if not values:
        return None
    summary: Mean = mean_t_ci(values)
    return {**summary.to_json(), "values": list(values)}


def _paired(runs: Mapping[int, Mapping[str, Any]], baseline: Mapping[int, Mapping[str, Any]]) -> dict[str, Any] | None:
    """Per-seed difference of the final held-out reward against the baseline, on the seeds both have."""
    seeds = sorted(s for s in runs if s in baseline)
    diffs = {
        s: runs[s]["eval_last"] - baseline[s]["eval_last"]
        for s in seeds
        if runs[s]["eval_last"] is not None and baseline[s]["eval_last"] is not None
    }
    if not diffs:
        return None
    values = list(diffs.values())
    return {
        "seeds": list(diffs),
        "eval_end_diff": _summary(values),
        "ahead": sum(d > TIE for d in values),
        "behind": sum(d < -TIE for d in values),
        "tied": sum(abs(d) <= TIE for d in values),
    }


def summarise_methods(
    curves: Sequence[Mapping[str, Any]], baseline: str | None = None, levels: Sequence[float] = ()
) -> dict[str, Any]:
    """The by-method view of ``curves`` (``arena.core.eval.compare.run_curve`` results with ``to_level`` filled in)."""
    grouped = group_by_method(curves)
    with_model = spans_models(curves)
    # The baseline names a plugin list; with several models each method is paired with the baseline of its model.
    baselines: dict[str, str] = {}
    if baseline is not None:
        for label, runs in grouped.items():
            first = next(iter(runs.values()))
            baselines[label] = method_label({**first, "plugins": baseline.split(",")}, with_model)
        if not any(b in grouped for b in baselines.values()):
            known = sorted({method_label(c) for c in curves})
            raise ArenaError(f"baseline {baseline!r} is none of the compared methods: {', '.join(known)}")
    methods = []
    for method, runs in grouped.items():
        seeds = sorted(runs)
        ordered = [runs[s] for s in seeds]
        evaluated = [c for c in ordered if c["eval_first"] is not None and c["eval_last"] is not None]
        row: dict[str, Any] = {
            "method": method,
            "seeds": seeds,
            "runs": [c["run"] for c in ordered],
            "eval_start": _summary([c["eval_first"] for c in evaluated]),
            "eval_end": _summary([c["eval_last"] for c in evaluated]),
            "eval_gain": _summary([c["eval_last"] - c["eval_first"] for c in evaluated]),
            "train_last": _summary([c["values"][-1] for c in ordered if c["values"]]),
            "train_mean": _summary([statistics.fmean(c["values"]) for c in ordered if c["values"]]),
            "generations": _summary([float(c["generations"][-1]) for c in ordered if c["generations"]]),
            "to_level": {str(level): {str(s): runs[s]["to_level"][str(level)][0] for s in seeds} for level in levels},
        }
        if baseline is not None:
            row["baseline"] = baselines[method]
            if method != baselines[method]:
                paired_with = grouped.get(baselines[method])
                row["vs_baseline"] = None if paired_with is None else _paired(runs, paired_with)
        methods.append(row)
    return {"baseline": baseline, "levels": list(levels), "methods": methods}


def _fmt(summary: Mapping[str, Any] | None, signed: bool = False) -> str:
    if summary is None:
        return "-"
    sign = "+" if signed else ""
    text = f"{summary['mean']:{sign}.3f}"
    if summary["low"] is not None:
        text += f" [{summary['low']:{sign}.3f}, {summary['high']:{sign}.3f}]"
    return text


def format_method_table(result: Mapping[str, Any]) -> str:
    """A Markdown table: one row per method, means over seeds with their t intervals in brackets."""
    baseline = result["baseline"]
    header = ["method", "seeds", "held-out start", "held-out end", "gain", "training reward, last", "generations"]
    if baseline is not None:
        header += [f"end − {baseline}", "ahead / behind / tied"]
    header += [f"rollouts to {level:g}, by seed" for level in result["levels"]]
    lines = [" | ".join(header), " | ".join("---" for _ in header)]
    for row in result["methods"]:
        cells = [
            row["method"],
            ",".join(map(str, row["seeds"])),
            _fmt(row["eval_start"]),
            _fmt(row["eval_end"]),
            _fmt(row["eval_gain"], signed=True),
            _fmt(row["train_last"]),
            "-" if row["generations"] is None else f"{row['generations']['mean']:.0f}",
        ]
        if baseline is not None:
            paired = row.get("vs_baseline")
            if row["method"] == row["baseline"]:
                cells += ["(baseline)", ""]
            elif paired is None:
                cells += ["no baseline run with its seeds", ""]
            else:
                cells += [
                    _fmt(paired["eval_end_diff"], signed=True),
                    f"{paired['ahead']} / {paired['behind']} / {paired['tied']}",
                ]
        for level in result["levels"]:
            by_seed = row["to_level"][str(level)]
            cells.append(", ".join("—" if v is None else str(v) for v in by_seed.values()))
        lines.append(" | ".join(cells))
    lines.append("")
    lines.append(
        "Means over seeds with Student-t 95% intervals; differences are paired by seed (same start and tasks)."
    )
    return "\n".join(lines)


def plot_methods(
    result: Mapping[str, Any],
    curves: Sequence[Mapping[str, Any]],
    out: Path,
    metric: str = "training reward",
    window: int = 1,
) -> Path:
    """Each method's curve of ``metric`` against rollouts: the mean over seeds, the band from lowest to highest."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grouped = group_by_method(curves)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for row in result["methods"]:
        runs = list(grouped[row["method"]].values())
        length = min(len(c["smoothed"]) for c in runs)
        if length == 0:
            continue
        x = runs[0]["rollouts"][:length]
        columns = [[c["smoothed"][i] for c in runs] for i in range(length)]
        mean = [math.fsum(col) / len(col) for col in columns]
        (line,) = ax.plot(x, mean, marker="o", label=f"{row['method']} ({len(runs)} seeds)")
        band_low, band_high = [min(col) for col in columns], [max(col) for col in columns]
        ax.fill_between(x, band_low, band_high, alpha=0.15, color=line.get_color())
    ax.set_title("mean over seeds; band: lowest to highest seed", fontsize=9)
    ylabel = metric + (f" (mean of last {window})" if window > 1 else "")
    return save_curve_plot(fig, ax, result["levels"], ylabel, out)
