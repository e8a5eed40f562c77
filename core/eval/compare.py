"""``arena compare``: several runs side by side, and how many samples each needed to reach a reward level.

GOLF's claim is sample efficiency (the same reward with fewer rollouts), so the x axis here is *samples*, not
iterations: the environment rollouts played so far (``groups × group_size`` per iteration), and separately every
generation including the extra ones a method made (HeRL revisions, GOLF refinements: ``augment/generations``).
For each run and each requested level, the table gives the rollouts played before the first iteration whose
training reward reached the level. The reward is smoothed with a trailing window so one lucky batch does not count.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arena.core.api.errors import ArenaError
from arena.core.config.loader import load_config
from arena.core.learn.run_config import TrainConfig

DEFAULT_METRIC = "rollout/mean_return"


def _metrics(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        raise ArenaError(f"{run_dir} has no metrics.jsonl: not a training run directory")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_curve(run_dir: Path, metric: str = DEFAULT_METRIC, window: int = 1) -> dict[str, Any]:
    """One run's series: cumulative rollouts and generations at the end of each iteration, and the metric."""
    config = load_config(TrainConfig, run_dir / "config.yaml")
    per_iteration = config.groups * config.group_size
    rows = [m for m in _metrics(run_dir) if m.get("iteration", -1) >= 0]
    rollouts, generations, values = [], [], []
    played = made = 0
    for row in rows:
        played += per_iteration
        made += per_iteration + int(row.get("augment/generations", 0))
        if metric not in row:
            raise ArenaError(f"{run_dir}: iteration {row['iteration']} has no metric {metric!r}")
        rollouts.append(played)
        generations.append(made)
        values.append(float(row[metric]))
    smoothed = [
        sum(values[max(0, i - window + 1) : i + 1]) / len(values[max(0, i - window + 1) : i + 1])
        for i in range(len(values))
    ]
    evals = [m for m in _metrics(run_dir) if "eval/mean_return" in m]
    return {
        "run": str(run_dir),
        "label": run_dir.name,
        "plugins": list(config.learners[0].plugins) if config.learners else [],
        "seed": config.seed,
        "model": config.learners[0].model if config.learners else "",
        "rollouts": rollouts,
        "generations": generations,
        "values": values,
        "smoothed": smoothed,
        "eval_first": evals[0]["eval/mean_return"] if evals else None,
        "eval_last": evals[-1]["eval/mean_return"] if evals else None,
    }


def samples_to_level(curve: dict[str, Any], level: float) -> tuple[int | None, int | None]:
    """(rollouts, generations) played up to the first iteration whose smoothed metric reached ``level``."""
    for i, value in enumerate(curve["smoothed"]):
        if value >= level:
            return curve["rollouts"][i], curve["generations"][i]
    return None, None


def compare_runs(
    run_dirs: Sequence[Path], metric: str = DEFAULT_METRIC, levels: Sequence[float] = (), window: int = 1
) -> dict[str, Any]:
    curves = [run_curve(Path(d), metric, window) for d in run_dirs]
    for curve in curves:
        curve["to_level"] = {str(level): samples_to_level(curve, level) for level in levels}
    return {"metric": metric, "window": window, "levels": list(levels), "runs": curves}


def format_table(result: dict[str, Any]) -> str:
    levels = result["levels"]
    header = ["run", "plugins", "iters", "rollouts", "generations", "first", "last", "eval start", "eval end"]
    header += [f"rollouts to {level:g}" for level in levels]
    lines = [" | ".join(header), " | ".join("---" for _ in header)]
    for c in result["runs"]:
        cells = [
            c["label"],
            ",".join(c["plugins"]),
            str(len(c["values"])),
            str(c["rollouts"][-1] if c["rollouts"] else 0),
            str(c["generations"][-1] if c["generations"] else 0),
            f"{c['values'][0]:.3f}" if c["values"] else "-",
            f"{c['values'][-1]:.3f}" if c["values"] else "-",
            "-" if c["eval_first"] is None else f"{c['eval_first']:.3f}",
            "-" if c["eval_last"] is None else f"{c['eval_last']:.3f}",
        ]
        for level in levels:
            rollouts, generations = c["to_level"][str(level)]
            cells.append("not reached" if rollouts is None else f"{rollouts} ({generations} gen.)")
        lines.append(" | ".join(cells))
    return "\n".join(lines)


def plot(result: dict[str, Any], out: Path) -> Path:
    """The metric against rollouts played, one line per run, the levels as dotted lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for c in result["runs"]:
        ax.plot(c["rollouts"], c["smoothed"], marker="o", label=f"{c['label']} ({','.join(c['plugins'])})")
    ylabel = result["metric"] + (f" (mean of last {result['window']})" if result["window"] > 1 else "")
    return save_curve_plot(fig, ax, result["levels"], ylabel, out)


def save_curve_plot(fig: Any, ax: Any, levels: Sequence[float], ylabel: str, out: Path) -> Path:
    """Finish a curves-against-rollouts plot (the levels as dotted lines, labels, legend) and write it to ``out``."""
    import matplotlib.pyplot as plt

    for level in levels:
        ax.axhline(level, linestyle=":", color="grey")
    ax.set_xlabel("rollouts played")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
