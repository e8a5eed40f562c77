"""``arena report``'s figures give each opponent one colour: the same in the learning curves, the success-by-episode
panels and the ratings, whichever other opponents a figure shows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from matplotlib.colors import to_hex

from arena.core.eval import run_plots
from arena.core.eval.eval_report import write_report
from arena.core.eval.run_data import ALL, load_run
from tests.eval.test_run_report import eval_report, write_run


def drawn_figures(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    figures: list[Any] = []
    monkeypatch.setattr(run_plots, "_save", lambda fig, path: figures.append(fig) or path)
    return figures


def line_colours(ax: Any) -> dict[str, str]:
    """Legend label → colour of the labelled lines and error bars of ``ax``."""
    handles, labels = ax.get_legend_handles_labels()
    out = {}
    for handle, label in zip(handles, labels, strict=True):
        line = handle.lines[0] if hasattr(handle, "lines") else handle  # an errorbar container, or a line
        out[label.split(" (")[0]] = to_hex(line.get_color())
    return out


def test_an_opponent_has_one_colour_in_every_figure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_dir = write_run(tmp_path, ["agent"], with_eval=False)
    # The evaluation met `a-first` and `aggressive`: drawn on its own, the success panel would give them the
    # colour cycle's first two colours, while the learning curves (aggressive, conservative) give `aggressive` the
    # first: one colour for two opponents, two colours for one.
    report = eval_report(run_dir, 6)
    report["opponents"][0]["opponent"] = "a-first"
    report["opponents"][1]["opponent"] = "aggressive"
    write_report(report, run_dir / "eval")
    run = load_run(run_dir)
    figures = drawn_figures(monkeypatch)
    palette = run_plots.run_palette(run)
    assert run_plots.plot_learning_curves(run, tmp_path / "a.png") is not None
    assert run_plots.plot_success_grid(run.evals, tmp_path / "b.png", palette) is not None
    assert run_plots.plot_ratings(run, tmp_path / "c.png") is not None
    curves, success, ratings = (line_colours(fig.axes[0]) for fig in figures)
    assert curves["aggressive"] == success["aggressive"] == ratings["aggressive"] == to_hex(palette["aggressive"])
    assert curves["conservative"] == ratings["conservative"] == to_hex(palette["conservative"])
    assert success["a-first"] == to_hex(palette["a-first"])
    assert to_hex(palette[ALL]) == "#000000"
    # Distinct names, distinct colours.
    named = [to_hex(c) for n, c in palette.items() if n != ALL]
    assert len(set(named)) == len(named)


def test_colours_do_not_depend_on_the_figure() -> None:
    one = run_plots.colors(["zeta", "aggressive", "cfr"])
    other = run_plots.colors(["cfr", "aggressive", "zeta"])
    assert one == other and len({to_hex(c) for c in one.values()}) == 4
