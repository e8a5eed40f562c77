"""``arena report RUN``: one page about a training run, in Markdown (or HTML), with PNG plots.

``write_run_report(run_dir, out_dir, html)`` reads the run (``run_data.load_run``), draws the plots
(``run_plots``), builds the page as a list of blocks and renders it, so Markdown and HTML have the same content.
The output folder (default ``RUN/report/``) receives ``report.md`` or ``report.html``, the PNGs and
``run_report.json`` (the object ``--json`` prints: page and plot paths and the summary numbers). The HTML page is
self-contained: its plots are embedded as data URIs.
"""

from __future__ import annotations

import base64
import html
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from arena.core.eval import run_plots
from arena.core.eval.eval_report import (
    CEILING_HEADER,
    CEILING_NOTE,
    _markdown_table,
    _mean,
    _pct,
    ceiling_metric,
    ceiling_rows,
    ceiling_title,
    episode_header,
    episode_rows,
)
from arena.core.eval.run_data import (
    ALL,
    HEAD,
    RunData,
    json_safe,
    load_run,
    newest_eval_per_opponent,
    summarize,
)

OUT = "report"
SUMMARY = "run_report.json"
#: Plot kinds and their files, in page order.
PLOTS = {
    "learning_curves": "learning_curves.png",
    "success_by_episode": "success_by_episode.png",
    "win_rate_matrix": "win_rate_matrix.png",
    "ratings": "ratings.png",
}


# -- page blocks: one content, two renderings ---------------------------------------------------------------


@attrs.frozen
class Heading:
    level: int
    text: str


@attrs.frozen
class Para:
    """A paragraph; text between backticks is code."""

    text: str


@attrs.frozen
class Table:
    header: Sequence[str]
    rows: Sequence[Sequence[str]]


@attrs.frozen
class Image:
    alt: str
    file: str  # relative to the page


Block = Heading | Para | Table | Image


def render_markdown(blocks: Sequence[Block]) -> str:
    lines: list[str] = []
    for block in blocks:
        if isinstance(block, Heading):
            lines.append("#" * block.level + " " + block.text)
        elif isinstance(block, Para):
            lines.append(block.text)
        elif isinstance(block, Table):
            lines.extend(_markdown_table(block.header, block.rows))
        else:
            lines.append(f"![{block.alt}]({block.file})")
        lines.append("")
    return "\n".join(lines)


_CODE = re.compile(r"`([^`]+)`")
_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}"
    "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}"
    "th{background:#f3f3f3}code{background:#f3f3f3;padding:0 3px}img{max-width:100%}"
)


def _inline(text: str) -> str:
    return _CODE.sub(r"<code>\1</code>", html.escape(text, quote=False))


def render_html(blocks: Sequence[Block], title: str, folder: Path) -> str:
    """A self-contained page: the images in ``folder`` are embedded as base64 data URIs."""
    body: list[str] = []
    for block in blocks:
        if isinstance(block, Heading):
            body.append(f"<h{block.level}>{_inline(block.text)}</h{block.level}>")
        elif isinstance(block, Para):
            body.append(f"<p>{_inline(block.text)}</p>")
        elif isinstance(block, Table):
            head = "".join(f"<th>{_inline(str(c))}</th>" for c in block.header)
            rows = "".join("<tr>" + "".join(f"<td>{_inline(str(c))}</td>" for c in r) + "</tr>" for r in block.rows)
            body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
        else:
            data = base64.b64encode((folder / block.file).read_bytes()).decode("ascii")
            body.append(f'<p><img alt="{html.escape(block.alt)}" src="data:image/png;base64,{data}"></p>')
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{_STYLE}</style></head>\n<body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


# -- formatting ---------------------------------------------------------------------------------------------


def _f(value: Any, digits: int = 3, sign: bool = False) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"
    return str(value)


def duration(seconds: float) -> str:
    """``42.0 s``, ``12 min 05 s``, ``3 h 02 min``."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


# -- sections -----------------------------------------------------------------------------------------------


def facts_section(run: RunData, summary: dict[str, Any]) -> list[Block]:
    config = run.config
    time = summary["wall_time_s"]
    phases = ", ".join(f"{k} {duration(v)}" for k, v in sorted(time["by_phase"].items(), key=lambda kv: -kv[1]))
    rows = [
        ["run", f"`{run.run_dir}`"],
        ["arena", config.arena + (f" {dict(config.arena_kwargs)}" if config.arena_kwargs else "")],
        ["iterations done", f"{summary['iterations_done']} of {summary['iterations_configured']}"],
        ["trials per iteration", f"{config.groups} groups × {config.group_size}, {config.trial.episodes} episode(s)"],
    ]
    for name, learner in summary["learners"].items():
        rows.append([f"learner {name}", f"`{learner['model']}`; plugins: {', '.join(learner['plugins']) or 'none'}"])
    rows += [
        ["training pool", ", ".join(f"{o['spec']} ({o['weight']:g})" for o in summary["opponents"]) or "none"],
        ["unseen opponents", ", ".join(summary["unseen"]) or "none"],
        ["pool members at the end", _f(summary["population_members"])],
        ["timed wall time", f"{duration(time['total'])}" + (f" ({phases})" if phases else "")],
        ["`arena eval` results", str(len(run.evals))],
    ]
    return [Heading(2, "Run facts"), Table(["fact", "value"], rows)]


def curves_section(summary: dict[str, Any], plot: str | None) -> list[Block]:
    blocks: list[Block] = [Heading(2, "Learning curves")]
    if plot is None:
        return [*blocks, Para("No training iteration in `metrics.jsonl` yet.")]
    blocks += [
        Image("learning curves", plot),
        Para(
            "Final-episode win rate and mean return of the training games, per opponent (black: all opponents); "
            f"faint: per iteration, solid: moving average over {run_plots.SMOOTH} iterations; diamonds: the "
            "evaluation `arena train` runs on fixed seeds (`eval.every`, start and end). The x axis counts the "
            "policy updates done before the games."
        ),
    ]
    rows = []
    for learner, data in summary["learners"].items():
        for name, s in sorted(data["rollout"].items(), key=lambda kv: kv[0] != ALL):
            first, last = s["first"], s["last"]
            rows.append(
                [
                    learner,
                    name,
                    str(s["iterations"]),
                    f"{_f(first['win_rate'])} → {_f(last['win_rate'])}",
                    f"{_f(first['mean_return'], sign=True)} → {_f(last['mean_return'], sign=True)}",
                ]
            )
    header = [
        "learner",
        "opponent",
        "iterations",
        f"win rate, first → last {HEAD}",
        f"mean return, first → last {HEAD}",
    ]
    return [*blocks, Table(header, rows)]


def training_eval_section(summary: dict[str, Any]) -> list[Block]:
    rows = []
    for learner, data in summary["learners"].items():
        last = data["last_eval"]
        if last is None:
            continue
        for name, s in sorted(last["opponents"].items(), key=lambda kv: kv[0] != ALL):
            rows.append([learner, name, f"{last['x']:g}", _f(s["win_rate"]), _f(s["mean_return"], sign=True)])
    blocks: list[Block] = [Heading(3, "Last evaluation during training")]
    if not rows:
        return [*blocks, Para("`metrics.jsonl` has no `eval/*` keys.")]
    return [*blocks, Table(["learner", "opponent", "after iteration", "win rate", "mean return"], rows)]


def arena_eval_section(run: RunData, plot: str | None) -> list[Block]:
    blocks: list[Block] = [Heading(3, "`arena eval` results")]
    if not run.evals:
        return [
            *blocks,
            Para(
                f"No `arena eval` result was found under `{run.run_dir}`, so there is no success-by-episode plot. "
                f"Run `arena eval {run.run_dir}` (the held-out opponents; writes `{run.run_dir / 'eval'}`), or "
                f"`arena eval {run.run_dir} --checkpoint step-N --out {run.run_dir}/eval-stepN` for another "
                f"checkpoint, then `arena report {run.run_dir}` again."
            ),
        ]
    rows = [
        [
            str(result.report["learner"]),
            str(row["opponent"]),
            str(row.get("group", "")),
            str(result.report["step"]),
            str(row.get("trials", "")),
            _pct(row["win_rate"]),
            _mean(row["mean_return"]),
            f"`{result.path.parent.relative_to(run.run_dir)}/`",
        ]
        for result, row in newest_eval_per_opponent(run.evals)
    ]
    header = ["learner", "opponent", "group", "step", "trials", "win rate [95% CI]", "mean return [95% CI]", "report"]
    blocks += [
        Para("The newest checkpoint evaluated against each opponent (final episode of each trial)."),
        Table(header, rows),
    ]
    blocks += [Heading(3, "Success by episode of the trial")]
    if plot is not None:
        blocks.append(Image("win rate by episode of the trial", plot))
    for result in run.evals:
        blocks += [Para(f"{result.label}, win rate by episode [95% CI]:")]
        blocks += [Table(episode_header(result.report), episode_rows(result.report))]
        if ceiling_metric(result.report):
            blocks += [Para(ceiling_title(result.report)), Table(list(CEILING_HEADER), ceiling_rows(result.report))]
    if any(ceiling_metric(result.report) for result in run.evals):
        blocks += [Para(CEILING_NOTE)]
    return blocks


def matrix_section(summary: dict[str, Any], plot: str | None) -> list[Block]:
    blocks: list[Block] = [Heading(2, "Population win-rate matrix")]
    matrix = summary["win_rate_matrix"]
    if matrix is None:
        return [*blocks, Para("The run has no `population.json` yet.")]
    if plot is not None:
        blocks.append(Image("win rate of each learner against each member", plot))
    rows = []
    for i, learner in enumerate(matrix["learners"]):
        cells = []
        for rate, games, p in zip(matrix["win_rate"][i], matrix["games"][i], matrix["probability"][i], strict=True):
            cell = "–" if rate is None else f"{rate:.3f} ({games} games)"
            cells.append(cell + (f", p {p:.2f}" if isinstance(p, float) else ""))
        rows.append([learner, *cells])
    note = (
        f"From `population.json` (iteration {matrix['iteration']}): each learner's final-episode win rate against "
        "every pool member over the whole run, and `p`, its current probability of drawing that member."
    )
    return [*blocks, Para(note), Table(["learner", *matrix["members"]], rows)]


def ratings_section(summary: dict[str, Any], plot: str | None) -> list[Block]:
    blocks: list[Block] = [Heading(2, "Ratings")]
    if plot is not None:
        blocks.append(Image("ratings over iterations", plot))
    ratings = summary["ratings"]
    if not ratings:
        return [*blocks, Para("No ratings in this run.")]
    columns = [c for c in ("elo", "mu", "sigma", "conservative", "games", "wins", "draws", "losses") if c in ratings[0]]
    rows = [[str(r["name"]), *(_f(r.get(c), 1 if c == "elo" else 2) for c in columns)] for r in ratings]
    header = ["member", *("openskill μ − 3σ" if c == "conservative" else c for c in columns)]
    return [*blocks, Para("Final ratings, best conservative openskill rating (μ − 3σ) first."), Table(header, rows)]


def build_page(run: RunData, summary: dict[str, Any], plots: dict[str, str]) -> list[Block]:
    """The whole page; ``plots`` maps plot kinds to file names next to the page (absent: not drawn)."""
    title = f"Run report: {run.run_dir.name}"
    intro = (
        f"`arena report` of `{run.run_dir}`: {run.config.arena}, {summary['iterations_done']} of "
        f"{summary['iterations_configured']} iterations, learners {', '.join(run.learners)}."
    )
    return [
        Heading(1, title),
        Para(intro),
        *facts_section(run, summary),
        *curves_section(summary, plots.get("learning_curves")),
        Heading(2, "Evaluation"),
        *training_eval_section(summary),
        *arena_eval_section(run, plots.get("success_by_episode")),
        *matrix_section(summary, plots.get("win_rate_matrix")),
        *ratings_section(summary, plots.get("ratings")),
    ]


# -- files --------------------------------------------------------------------------------------------------


def draw_plots(run: RunData, summary: dict[str, Any], out_dir: Path) -> dict[str, str]:
    """Draw every plot the run has data for; returns ``{kind: file name}``. A plot that has no data this time
    is removed from ``out_dir`` so that an older one does not pass for current."""
    drawers: dict[str, Callable[[Path], Path | None]] = {
        "learning_curves": lambda p: run_plots.plot_learning_curves(run, p),
        "success_by_episode": lambda p: run_plots.plot_success_grid(run.evals, p, run_plots.run_palette(run)),
        "win_rate_matrix": lambda p: run_plots.plot_win_rate_matrix(summary["win_rate_matrix"], p),
        "ratings": lambda p: run_plots.plot_ratings(run, p),
    }
    drawn = {}
    for kind, name in PLOTS.items():
        if drawers[kind](out_dir / name) is not None:
            drawn[kind] = name
        else:
            (out_dir / name).unlink(missing_ok=True)
    return drawn


def write_run_report(run_dir: Path, out_dir: Path | None = None, as_html: bool = False) -> dict[str, Any]:
    """Write the page, its plots and ``run_report.json`` into ``out_dir`` (default ``RUN/report``).

    Returns ``{"page", "format", "plots": {kind: path}, "json", "summary"}`` (paths as strings, JSON-safe).
    """
    run_dir = Path(run_dir)
    out = Path(out_dir) if out_dir is not None else run_dir / OUT
    run = load_run(run_dir, skip=out)
    out.mkdir(parents=True, exist_ok=True)
    summary = json_safe(summarize(run))
    plots = draw_plots(run, summary, out)
    blocks = build_page(run, summary, plots)
    if as_html:
        page = out / "report.html"
        page.write_text(render_html(blocks, f"Run report: {run_dir.name}", out))
    else:
        page = out / "report.md"
        page.write_text(render_markdown(blocks))
    result = {
        "page": str(page),
        "format": "html" if as_html else "markdown",
        "plots": {kind: str(out / name) for kind, name in plots.items()},
        "json": str(out / SUMMARY),
        "summary": summary,
    }
    (out / SUMMARY).write_text(json.dumps(result, indent=2) + "\n")
    return result


def format_text(result: dict[str, Any]) -> str:
    """The terminal lines: a one-line digest, the plots, and the page path last."""
    s = result["summary"]
    lines = [
        f"{s['run']}: {s['arena']}, {s['iterations_done']}/{s['iterations_configured']} iterations, "
        f"{len(s['learners'])} learner(s), {len(s['evaluations'])} arena eval result(s), "
        f"timed {duration(s['wall_time_s']['total'])}"
    ]
    lines += [f"plot: {path}" for path in result["plots"].values()]
    lines.append(f"report: {result['page']}")
    return "\n".join(lines)
