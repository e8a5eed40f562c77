"""Rendering an ``arena eval`` result: aligned text for the terminal, Markdown and a PNG plot for the run.

``write_report(report, out_dir)`` writes ``report.json``, ``report.md`` (tables with the plot embedded) and
``success_by_episode.png`` (win rate by episode index within a trial, one line per opponent, 95% Wilson bars, and a
dotted line at the opponent's winnable share where it is known; where the testbed has ceilings, their fixed (dashed)
and adaptive (solid, thin) lines, in the same colour as the opponent, or black for the training pool's, on a
second panel of mean return by episode when the ceilings are in chips).
Everything reads the JSON-ready dict of ``arena.core.eval.evaluation.evaluate_run``, so a saved ``report.json`` can be
re-rendered.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

PLOT = "success_by_episode.png"


def _pct(rate: Mapping[str, Any]) -> str:
    return f"{rate['rate']:.3f} [{rate['low']:.3f}, {rate['high']:.3f}]"


def _mean(mean: Mapping[str, Any], digits: int = 3) -> str:
    if mean["low"] is None:
        return f"{mean['mean']:+.{digits}f}"
    return f"{mean['mean']:+.{digits}f} [{mean['low']:+.{digits}f}, {mean['high']:+.{digits}f}]"


def _num(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _aligned(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    out = [line, "-" * len(line)]
    out.extend("  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)
    return out


def _markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    out.extend("| " + " | ".join(str(c) for c in r) + " |" for r in rows)
    return out


# -- tables shared by the text and Markdown renderings ------------------------------------------------------

OUTCOME_HEADER = (
    "opponent",
    "group",
    "trials",
    "win rate [95% CI]",
    "draw",
    "loss",
    "mean return [95% CI]",
    "invalid/trial",
)
POLICY_HEADER = ("information state", "P(Pass)", "P(Bet)", "invalid rate")


def outcome_rows(report: Mapping[str, Any]) -> list[list[str]]:
    return [
        [
            r["opponent"],
            r["group"],
            str(r["trials"]),
            _pct(r["win_rate"]),
            f"{r['draw_rate']['rate']:.3f}",
            f"{r['loss_rate']['rate']:.3f}",
            _mean(r["mean_return"]),
            f"{r['invalid_per_trial']['mean']:.2f}",
        ]
        for r in report["opponents"]
    ]


def _has_won_by(report: Mapping[str, Any]) -> bool:
    # Reports written before ``won_by`` existed still render, without the column.
    return all("won_by" in e for r in report["opponents"] for e in r["by_episode"])


def _has_winnable(report: Mapping[str, Any]) -> bool:
    return any(r.get("winnable") for r in report["opponents"])


def episode_header(report: Mapping[str, Any]) -> list[str]:
    episodes = int(report["episodes_per_trial"])
    header = ["opponent", *(f"episode {k}" for k in range(1, episodes + 1))]
    if _has_won_by(report):
        header.append(f"won by episode {episodes}")
    if _has_winnable(report):
        header.append("winnable")
    return header


def episode_rows(report: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    width = int(report["episodes_per_trial"])
    won_by, winnable = _has_won_by(report), _has_winnable(report)
    for r in report["opponents"]:
        cells = [_pct(e["win_rate"]) for e in r["by_episode"]]
        row = [r["opponent"], *cells, *[""] * (width - len(cells))]
        if won_by:
            row.append(_pct(r["by_episode"][-1]["won_by"]) if r["by_episode"] else "")
        if winnable:
            row.append(_pct(r["winnable"]) if r.get("winnable") else "")
        rows.append(row)
    return rows


EPISODE_NOTE = (
    "Every episode is played (no early stop). Won by episode N: trials won in at least one episode, MAGE's trial "
    "success when a trial stops once won. Winnable: trials whose deal and seat some line of play wins against this "
    "deterministic opponent, the ceiling of every episode's win rate."
)


CEILING_HEADER = (
    "opponent",
    "ceilings of",
    "measured by episode",
    "fixed",
    "adaptive by episode",
    "headroom captured",
    "pool's best fixed vs it",
    "best response",
)
NO_HEADROOM = "no headroom"


def _value(value: float | None, metric: str) -> str:
    if value is None:
        return "–"
    return f"{value:+.3f}" if metric == "return" else f"{value:.3f}"


def _values(values: Sequence[float | None], metric: str) -> str:
    return " / ".join(_value(v, metric) for v in values)


def _shares(values: Sequence[float | None]) -> str:
    return " / ".join(NO_HEADROOM if v is None else f"{v:.2f}" for v in values)


def ceiling_metric(report: Mapping[str, Any]) -> str | None:
    """The ceilings' metric (``win_rate`` or ``return``), or None when the report has no ceilings."""
    ceilings = report.get("ceilings")
    return str(ceilings["metric"]) if ceilings else None


def ceiling_title(report: Mapping[str, Any]) -> str:
    c = report["ceilings"]
    metric = str(c["metric"])
    unit = "win rate" if metric == "win_rate" else "mean return"
    pool = ", ".join(f"{name} {weight:.2g}" for name, weight in zip(c["opponents"], c["weights"], strict=True))
    extra = f", card-aware {_values(c['card_aware'], metric)}" if "card_aware" in c else ""
    return (
        f"Ceilings by episode, in {unit} (arena.arenas.ceilings; docs/testbeds.md). Training pool ({pool}): "
        f"fixed {_values(c['fixed'], metric)}, adaptive {_values(c['adaptive'], metric)}, "
        f"informed {_values(c['informed'], metric)}{extra}."
    )


def ceiling_rows(report: Mapping[str, Any]) -> list[list[str]]:
    metric = ceiling_metric(report)
    if metric is None:
        return []
    rows = []
    judged = [(r["opponent"], r["ceilings"]) for r in report["opponents"] if r.get("ceilings")]
    pool = report["ceilings"].get("pool")
    if pool:
        judged.append(("pool (weighted mean)", pool))
    for name, c in judged:
        rows.append(
            [
                str(name),
                str(c["against"]),
                _values(c["measured"], metric),
                _value(c["fixed"][0], metric),
                _values(c["adaptive"], metric),
                _shares(c["headroom_share"]),
                f"{_value(c['fixed_low'], metric)}..{_value(c['fixed_high'], metric)}" if "fixed_low" in c else "",
                _value(c["informed"], metric) if "fixed_low" in c else "",
            ]
        )
    return rows


CEILING_NOTE = (
    "Headroom captured = (measured − fixed) / (adaptive − fixed): 0 is the fixed-policy ceiling, 1 the adaptive one; "
    f"'{NO_HEADROOM}' where adaptive − fixed is 0 (always episode 1 of the pool). A pool member is judged against "
    "the pool's ceilings (exact only for the pool's weighted mean), an opponent outside the pool against the most the "
    "pool's best fixed policies get against it and the adaptive ceiling of the pool and it in a uniform mix."
)


def policy_rows(exploit: Mapping[str, Any]) -> list[list[str]]:
    return [
        [name, f"{p['Pass']:.3f}", f"{p['Bet']:.3f}", f"{p['invalid_rate']:.3f}"]
        for name, p in exploit["policy"].items()
    ]


def exploitability_lines(exploit: Mapping[str, Any]) -> list[str]:
    return [
        f"learned policy  {exploit['learned']:.4f}   ({exploit['samples_per_state']} samples per state, "
        f"invalid rate {exploit['invalid_rate']:.3f})",
        f"CFR+ policy     {exploit['cfr']:.4f}",
        f"uniform random  {exploit['uniform']:.4f}",
    ]


def ratings_rows(ratings: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    columns = list(ratings["columns"])
    rows = [[str(r["member"]), *(_num(r.get(c, "")) for c in columns)] for r in ratings["rows"]]
    return ["member", *columns], rows


def _title(report: Mapping[str, Any]) -> str:
    return (
        f"{report['learner']} at step {report['step']} of {report['run']} on {report['arena']}: "
        f"{report['games']} trials per opponent, {report['episodes_per_trial']} episode(s) each, seed {report['seed']}"
    )


# -- renderings ---------------------------------------------------------------------------------------------


def format_text(report: Mapping[str, Any]) -> str:
    """The terminal rendering: plain aligned columns, like the other ``arena`` commands."""
    lines = [_title(report), ""]
    if report.get("unseen"):
        lines += ["Why each unseen opponent is unseen:"]
        lines += [f"  {row['opponent']}: {row['why']}" for row in report["unseen"]]
        lines += [""]
    lines += ["Final episode of each trial:"]
    lines += _aligned(OUTCOME_HEADER, outcome_rows(report))
    if int(report["episodes_per_trial"]) > 1:
        lines += ["", "Win rate by episode of the trial [95% CI]:"]
        lines += _aligned(episode_header(report), episode_rows(report))
        if _has_won_by(report):
            lines += [EPISODE_NOTE]
    if ceiling_metric(report):
        lines += ["", ceiling_title(report)]
        lines += _aligned(CEILING_HEADER, ceiling_rows(report))
        lines += [CEILING_NOTE]
    exploit = report.get("exploitability")
    if exploit:
        lines += ["", "Kuhn poker exploitability (0 = Nash equilibrium):"]
        lines += ["  " + line for line in exploitability_lines(exploit)]
        lines += ["", "Learned policy:"]
        lines += _aligned(POLICY_HEADER, policy_rows(exploit))
    lines += [""]
    ratings = report.get("ratings")
    if ratings:
        lines += ["Population ratings:"]
        lines += _aligned(*ratings_rows(ratings))
    else:
        lines += ["Population ratings: no ratings in this run"]
    return "\n".join(lines)


def format_markdown(report: Mapping[str, Any], plot: str | None = PLOT) -> str:
    lines = [f"# Evaluation of {report['learner']} (step {report['step']})", "", _title(report) + ".", ""]
    lines += [
        f"Checkpoint: `{report['checkpoint']}`; seat `{report['seat']}`; plugins: {', '.join(report['plugins'])}."
    ]
    if report.get("unseen"):
        lines += ["", "Unseen opponents, and why:", ""]
        lines += [f"- `{row['opponent']}`: {row['why']}" for row in report["unseen"]]
    lines += ["", "## Final episode of each trial", ""]
    lines += _markdown_table(OUTCOME_HEADER, outcome_rows(report))
    lines += ["", "## Success by episode of the trial", ""]
    if plot:
        lines += [f"![win rate by episode]({plot})", ""]
    lines += _markdown_table(episode_header(report), episode_rows(report))
    if _has_won_by(report):
        lines += ["", EPISODE_NOTE]
    if ceiling_metric(report):
        lines += ["", "## Ceilings", "", ceiling_title(report), ""]
        lines += _markdown_table(CEILING_HEADER, ceiling_rows(report))
        lines += ["", CEILING_NOTE]
    exploit = report.get("exploitability")
    if exploit:
        lines += ["", "## Kuhn poker exploitability", "", "```"]
        lines += exploitability_lines(exploit)
        lines += ["```", ""]
        lines += _markdown_table(POLICY_HEADER, policy_rows(exploit))
    lines += ["", "## Population ratings", ""]
    ratings = report.get("ratings")
    lines += _markdown_table(*ratings_rows(ratings)) if ratings else ["No ratings in this run."]
    return "\n".join(lines) + "\n"


def _ceiling_lines(ax: Any, xs: Sequence[int], c: Mapping[str, Any], color: Any, who: str) -> None:
    ax.plot(xs, c["fixed"], color=color, linestyle="--", linewidth=1, label=f"{who}: fixed ceiling")
    ax.plot(xs, c["adaptive"], color=color, linestyle="-", linewidth=1, alpha=0.7, label=f"{who}: adaptive ceiling")


def draw_success(
    ax: Any,
    report: Mapping[str, Any],
    title: str | None = None,
    colors: Mapping[str, Any] | None = None,
    metric: str = "win_rate",
) -> None:
    """Draw ``plot_success``'s chart on a matplotlib ``ax`` (``arena report`` puts one panel per checkpoint).

    ``metric`` is ``win_rate`` (Wilson bars, the winnable line) or ``return`` (mean return by episode, normal bars).
    Where the report's ceilings are in ``metric``, their fixed (dashed) and adaptive (solid, thin) lines are drawn:
    the training pool's in black beside the pool's weighted mean, an opponent outside the pool's in its colour.
    ``colors`` maps opponent names to colours (``arena report`` passes its run-wide palette, so an opponent has
    one colour in every figure); without it, or for a name it lacks, matplotlib's colour cycle decides."""
    field, key = ("win_rate", "rate") if metric == "win_rate" else ("mean_return", "mean")
    opponents = report["opponents"]
    episodes = int(report["episodes_per_trial"])
    xs = list(range(1, episodes + 1))
    ceilings = report.get("ceilings") if ceiling_metric(report) == metric else None
    spread = 0.15
    for i, r in enumerate(opponents):
        # Small horizontal offsets keep the error bars of different opponents apart.
        offset = (i - (len(opponents) - 1) / 2) * spread / max(1, len(opponents) - 1) if len(opponents) > 1 else 0
        points = [e[field] for e in r["by_episode"] if field in e]
        ys = [p[key] for p in points]
        low = [0.0 if p["low"] is None else p[key] - p["low"] for p in points]
        high = [0.0 if p["high"] is None else p["high"] - p[key] for p in points]
        color = (colors or {}).get(r["opponent"])
        bars = ax.errorbar(
            [e["episode"] + offset for e in r["by_episode"] if field in e],
            ys,
            yerr=[low, high],
            marker="o",
            capsize=3,
            color=color,
            label=f"{r['opponent']} ({r['group']})",
        )
        drawn = bars.lines[0].get_color()
        if metric == "win_rate" and r.get("winnable"):  # the ceiling no episode can pass, in the opponent's colour
            ax.axhline(r["winnable"]["rate"], color=drawn, linestyle=":", linewidth=1)
        if ceilings and r.get("ceilings") and r["ceilings"]["against"] != "pool":
            _ceiling_lines(ax, xs, r["ceilings"], drawn, str(r["opponent"]))
    if ceilings:
        pool = ceilings.get("pool")
        if pool and all(m is not None for m in pool["measured"]):
            ax.plot(xs, pool["measured"], color="black", marker="x", linewidth=1.5, label="training pool (weighted)")
        _ceiling_lines(ax, xs, ceilings, "black", "training pool")
    ax.set_xticks(xs)
    ax.set_xlim(0.5, episodes + 0.5)
    if metric == "win_rate":
        ax.set_ylim(-0.02, 1.02)
        ax.set_ylabel("win rate (95% Wilson CI)")
    else:
        ax.set_ylabel("mean return (95% CI)")
    ax.set_xlabel("episode of the trial")
    default = f"{report['learner']} step {report['step']} on {report['arena']}"
    ax.set_title(title if title is not None else default + ("" if metric == "win_rate" else ", mean return"))
    ax.grid(alpha=0.3)
    ax.legend(fontsize="x-small" if ceilings else "small")


def success_panels(report: Mapping[str, Any]) -> list[str]:
    """The metrics ``draw_success`` shows for ``report``: win rate, and mean return when the ceilings are in it."""
    return ["win_rate", "return"] if ceiling_metric(report) == "return" else ["win_rate"]


def plot_success(report: Mapping[str, Any], path: Path) -> Path:
    """Win rate by episode index, one line per opponent with asymmetric 95% Wilson error bars (and a second panel
    of mean return by episode when the ceilings are in return)."""
    import matplotlib

    matplotlib.use("Agg")  # no display on servers; also keeps a test run from opening windows
    import matplotlib.pyplot as plt

    panels = success_panels(report)
    fig, axes = plt.subplots(1, len(panels), figsize=(7 * len(panels), 4.5), squeeze=False)
    for ax, metric in zip(axes[0], panels, strict=True):
        draw_success(ax, report, metric=metric)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_report(report: dict[str, Any], out_dir: Path) -> dict[str, str]:
    """Write ``report.json``, ``report.md`` and the plot into ``out_dir``; returns their paths by kind.

    The paths are also stored in ``report["report"]`` before the JSON is written, so the file names itself.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {
        "dir": str(out_dir),
        "json": str(out_dir / "report.json"),
        "markdown": str(out_dir / "report.md"),
        "plot": str(out_dir / PLOT),
    }
    report["report"] = paths
    plot_success(report, out_dir / PLOT)
    (out_dir / "report.md").write_text(format_markdown(report))
    (out_dir / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    return paths
