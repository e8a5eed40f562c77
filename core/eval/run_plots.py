"""The PNG plots of ``arena report``: learning curves, success by episode, the win-rate matrix, ratings.

Each ``plot_*`` function draws one figure from ``run_data``'s series into ``path`` and returns the path, or
None when the run has nothing to draw (the page then says why). matplotlib runs with the Agg backend: no
display is needed and a test never opens a window.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from arena.core.eval.eval_report import draw_success, success_panels
from arena.core.eval.run_data import ALL, EvalResult, Point, RunData, outcome_series, rating_series

#: Width of the centred moving average drawn over the raw (faint) learning curves.
SMOOTH = 5
DPI = 120


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: Path) -> Path:
    plt = _pyplot()
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def smooth(values: Sequence[float], window: int = SMOOTH) -> list[float]:
    """Centred moving average; the window shrinks at the ends so the curve spans every point (no lag)."""
    half = window // 2
    out = []
    for i in range(len(values)):
        part = values[max(0, i - half) : i + half + 1]
        out.append(sum(part) / len(part))
    return out


def colors(names: Iterable[str]) -> dict[str, Any]:
    """One colour per name (sorted names take tab10's colours in turn, tab20's past ten); ``ALL`` is black."""
    plt = _pyplot()
    ordered = sorted({n for n in names if n != ALL})
    cmap = plt.get_cmap("tab10" if len(ordered) <= 10 else "tab20")
    out: dict[str, Any] = {n: cmap(i % cmap.N) for i, n in enumerate(ordered)}
    out[ALL] = "black"
    return out


def run_palette(run: RunData) -> dict[str, Any]:
    """The run's one colour per opponent (and per rated member), shared by every figure of ``arena report``: built
    from every name any figure can show (the config's pool and unseen opponents, the rollout and evaluation
    series of every learner, the ``arena eval`` results' opponents, the rated members), so a name's colour does
    not depend on which figure draws it or which other names that figure has."""
    names: set[str] = {entry.spec for entry in run.config.opponents} | set(run.config.unseen)
    for learner in run.learners:
        for section in ("rollout", "eval"):
            names |= set(outcome_series(run, learner, section))
    for result in run.evals:
        names |= {str(r["opponent"]) for r in result.report.get("opponents") or []}
    names |= set(rating_series(run))
    return colors(names)


def short(name: str, width: int = 28) -> str:
    """Long member names (``model:/long/path``) keep their informative end."""
    return name if len(name) <= width else "…" + name[-(width - 1) :]


def _legend(ax: Any, entries: int) -> None:
    if entries > 8:  # many members: outside the axes, or it hides the lines
        ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    elif entries:
        ax.legend(fontsize="small")


# -- (1) learning curves ------------------------------------------------------------------------------------


def _curve(ax: Any, points: Sequence[Point], color: Any, label: str, width: float) -> None:
    xs, ys = [x for x, _ in points], [y for _, y in points]
    ax.plot(xs, ys, color=color, alpha=0.25, linewidth=0.8)
    ax.plot(xs, smooth(ys), color=color, linewidth=width, label=label)


def plot_learning_curves(run: RunData, path: Path, palette: dict[str, Any] | None = None) -> Path | None:
    """Per learner a row of two panels (rollout win rate, mean return); one line per opponent, smoothed over
    ``SMOOTH`` iterations with the raw values faint, the overall line black, evaluation points as markers."""
    rows = [(name, outcome_series(run, name, "rollout"), outcome_series(run, name, "eval")) for name in run.learners]
    if not any(rollout or evals for _, rollout, evals in rows):
        return None
    plt = _pyplot()
    palette = palette if palette is not None else run_palette(run)
    fig, axes = plt.subplots(len(rows), 2, figsize=(13, 4.2 * len(rows)), squeeze=False)
    for (learner, rollout, evals), (ax_win, ax_ret) in zip(rows, axes, strict=True):
        for ax, field, label in ((ax_win, "win_rate", "win rate"), (ax_ret, "mean_return", "mean return")):
            for name, s in sorted(rollout.items(), key=lambda kv: kv[0] != ALL):
                _curve(ax, s[field], palette[name], short(name), 2.2 if name == ALL else 1.5)
            for name, s in evals.items():
                if s[field]:
                    xs, ys = zip(*s[field], strict=True)
                    ax.scatter(xs, ys, color=palette[name], marker="D", s=28, edgecolors="white", zorder=3)
            ax.set_xlabel("iteration (policy updates done)")
            ax.set_ylabel(f"final-episode {label}")
            ax.set_title(f"{learner}: {label} per opponent (rollouts; ◆ evaluation)")
            ax.grid(alpha=0.3)
            if field == "win_rate":
                ax.set_ylim(-0.02, 1.02)
            _legend(ax, len(rollout))
    return _save(fig, path)


# -- (2) success by episode ---------------------------------------------------------------------------------


def plot_success_grid(evals: Sequence[EvalResult], path: Path, palette: dict[str, Any] | None = None) -> Path | None:
    """One panel per ``arena eval`` result (``report.draw_success``): win rate by episode of the trial, each
    opponent in its ``palette`` colour (default: one colour per opponent of these results), with the testbed's
    ceilings as lines; a result whose ceilings are in return (Kuhn's chips) gets a second panel of mean return."""
    if not evals:
        return None
    plt = _pyplot()
    if palette is None:
        palette = colors(str(r["opponent"]) for result in evals for r in result.report.get("opponents") or [])
    panels = [(result, metric) for result in evals for metric in success_panels(result.report)]
    cols = min(3, len(panels))
    nrows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(6 * cols, 4.2 * nrows), squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax, (result, metric) in zip(flat, panels, strict=False):
        title = result.label if metric == "win_rate" else f"{result.label}, mean return"
        draw_success(ax, result.report, title=title, colors=palette, metric=metric)
    for ax in flat[len(panels) :]:
        ax.set_visible(False)
    return _save(fig, path)


# -- (3) the win-rate matrix --------------------------------------------------------------------------------


def plot_win_rate_matrix(matrix: dict[str, Any] | None, path: Path) -> Path | None:
    """Heatmap of learners × members, each cell annotated with the win rate and the number of games."""
    if not matrix or not matrix["members"] or not matrix["learners"]:
        return None
    plt = _pyplot()
    learners, members = matrix["learners"], matrix["members"]
    values = [[math.nan if v is None else v for v in row] for row in matrix["win_rate"]]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(members) + 2.5), max(2.6, 0.9 * len(learners) + 2.0)))
    cmap = plt.get_cmap("RdYlGn").with_extremes(bad="#dddddd")  # no games: grey, not a colour read as a rate
    image = ax.imshow(values, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto")
    for i, row in enumerate(matrix["win_rate"]):
        for j, rate in enumerate(row):
            games = matrix["games"][i][j]
            text = "no games" if rate is None else f"{rate:.2f}\n{games} games"
            ax.text(j, i, text, ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(members)), [short(m, 22) for m in members], rotation=35, ha="right")
    ax.set_yticks(range(len(learners)), learners)
    ax.set_xlabel("pool member (opponent)")
    ax.set_ylabel("learner")
    when = f" at iteration {matrix['iteration']}" if matrix.get("iteration") is not None else ""
    ax.set_title(f"Learner win rate against each member{when} (population.json)")
    fig.colorbar(image, ax=ax, label="win rate (final episode)")
    return _save(fig, path)


# -- (4) ratings --------------------------------------------------------------------------------------------


def plot_ratings(run: RunData, path: Path, palette: dict[str, Any] | None = None) -> Path | None:
    """Elo and openskill's conservative rating (μ − 3σ) over iterations, one line per member, from ``rating/*``."""
    series = rating_series(run)
    if not series:
        return None
    plt = _pyplot()
    palette = palette if palette is not None else run_palette(run)
    fig, (ax_elo, ax_ts) = plt.subplots(1, 2, figsize=(13, 4.5))
    for ax, system, label in ((ax_elo, "elo", "Elo"), (ax_ts, "openskill", "openskill μ − 3σ")):
        for name, s in series.items():
            if s[system]:
                xs, ys = zip(*s[system], strict=True)
                ax.plot(xs, ys, color=palette[name], label=short(name), marker="." if len(xs) < 30 else None)
        ax.set_xlabel("iteration (after its games)")
        ax.set_ylabel(label)
        ax.set_title(f"{label} per member")
        ax.grid(alpha=0.3)
    _legend(ax_ts, len(series))
    return _save(fig, path)
