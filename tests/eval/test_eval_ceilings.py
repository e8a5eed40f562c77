"""``arena eval`` beside the testbed's ceilings (issue 24 item 4): fixed / adaptive / informed by episode, the share
of adaptive headroom captured, the lines on the success-by-episode plot, and nothing for an arena without a model.

The runs are written as in ``test_cli_eval.py`` (the dumped config and a checkpoint of the offline toy model), so
these tests play a few real trials through the engine in seconds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import matplotlib
import pytest
import yaml
from matplotlib.colors import to_hex

from arena.core.cli.main import main
from arena.core.config.loader import to_dict
from arena.core.config.trial import InvalidActionConfig, PromptConfig, TrialConfig
from arena.core.eval import run_plots
from arena.core.eval.ceilings import attach_ceilings, headroom_share
from arena.core.eval.eval_report import draw_success, format_text, plot_success
from arena.core.eval.run_data import EvalResult
from arena.core.learn import checkpoint as ck
from arena.core.learn.run_config import LearnerConfig, OpponentEntry, TrainConfig
from tests.eval.test_run_report import eval_report
from tests.toy_model import build_model, build_tokenizer

matplotlib.use("Agg")


def write_run(
    root: Path, arena: str, kwargs: dict[str, Any], pool: list[str], unseen: list[str], episodes: int
) -> Path:
    tokenizer = build_tokenizer()
    model = build_model(len(tokenizer), tokenizer.eos_token_id, tokenizer.pad_token_id)
    base = root / "base-model"
    model.save_pretrained(base)
    tokenizer.save_pretrained(base)
    config = TrainConfig(
        arena=arena,
        arena_kwargs=kwargs,
        opponents=[OpponentEntry(spec, 1.0 / len(pool)) for spec in pool],
        unseen=unseen,
        learners=[LearnerConfig(name="agent", model=str(base), backend="hf", plugins=["grpo"])],
        trial=TrialConfig(
            episodes=episodes,
            invalid_action=InvalidActionConfig(policy="random"),
            prompt=PromptConfig(max_new_tokens=4),
        ),
        torch_threads=1,
    )
    run = root / "run"
    run.mkdir()
    (run / "config.yaml").write_text(yaml.safe_dump(to_dict(config), sort_keys=False))

    def model_files(folder: Path) -> None:
        model.config.save_pretrained(folder)
        tokenizer.save_pretrained(folder)

    state = {"iteration": 1, "learners": {"agent": {"plugins": {}}}}
    ck.save_checkpoint(run, 1, {"agent": model.state_dict()}, state, model_files={"agent": model_files})
    return run


@pytest.fixture(scope="module")
def rps_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """issue 24's hidden-types testbed: 3 one-round RPS episodes, pool rock/paper 50/50, unseen scissors."""
    root = tmp_path_factory.mktemp("rps")
    run = write_run(root, "rock_paper_scissors", {"rounds": 1}, ["rps-rock", "rps-paper"], ["rps-scissors"], 3)
    args = ["eval", str(run), "--opponents", "all", "--games", "8", "--out", str(root / "out"), "--json"]
    assert main(args) == 0
    report: dict[str, Any] = json.loads((root / "out" / "report.json").read_text())
    return report


def rates(row: dict[str, Any]) -> list[float]:
    return [e["win_rate"]["k"] / e["win_rate"]["n"] for e in row["by_episode"]]


def test_rps_eval_carries_the_ceilings_and_the_headroom_captured(rps_report: dict[str, Any]) -> None:
    c = rps_report["ceilings"]
    assert c["metric"] == "win_rate" and c["measured"] == "win_rate.rate"
    assert c["fixed"] == pytest.approx([0.5, 0.5, 0.5]) and c["adaptive"] == pytest.approx([0.5, 1.0, 1.0])
    assert c["informed"] == pytest.approx([1.0, 1.0, 1.0]) and c["opponents"] == ["rps-rock", "rps-paper"]
    rows = {r["opponent"]: r for r in rps_report["opponents"]}
    # A pool member against the pool's ceilings: (m - 0.5) / (1 - 0.5) from episode 2; episode 1 has no headroom.
    for spec in ("rps-rock", "rps-paper"):
        mine = rows[spec]["ceilings"]
        m = rates(rows[spec])
        assert mine["against"] == "pool" and mine["measured"] == pytest.approx(m)
        assert (mine["fixed_low"], mine["fixed_high"], mine["informed"]) == pytest.approx((0.0, 1.0, 1.0))
        assert mine["headroom_share"][0] is None
        assert mine["headroom_share"][1:] == pytest.approx([(m[1] - 0.5) / 0.5, (m[2] - 0.5) / 0.5])
    # The unseen one: the pool's best fixed policies win nothing against always-scissors (paper loses, scissors
    # ties); adaptive against rock, paper and scissors uniform is 1/3, 1, 1.
    scissors = rows["rps-scissors"]["ceilings"]
    m = rates(rows["rps-scissors"])
    assert scissors["fixed"] == pytest.approx([0.0] * 3) and scissors["adaptive"] == pytest.approx([1 / 3, 1, 1])
    assert scissors["headroom_share"] == pytest.approx([m[0] * 3, m[1], m[2]])
    # The pool's weighted mean, the exact comparison.
    pool = [0.5 * a + 0.5 * b for a, b in zip(rates(rows["rps-rock"]), rates(rows["rps-paper"]), strict=True)]
    assert c["pool"]["measured"] == pytest.approx(pool)
    assert c["pool"]["headroom_share"][0] is None
    assert c["pool"]["headroom_share"][1:] == pytest.approx([(pool[1] - 0.5) / 0.5, (pool[2] - 0.5) / 0.5])
    text = format_text(rps_report)
    assert "Ceilings by episode, in win rate" in text and "fixed 0.500 / 0.500 / 0.500" in text
    assert "pool (weighted mean)" in text and "pool + this opponent" in text and "no headroom / " in text


def test_headroom_share_by_hand() -> None:
    assert headroom_share(0.75, 0.5, 1.0) == pytest.approx(0.5)
    assert headroom_share(0.25, 0.5, 1.0) == pytest.approx(-0.5)
    assert headroom_share(0.9, 0.5, 0.5) is None  # no headroom
    assert headroom_share(0.9, 0.125 + 1e-16, 0.125) is None  # the solver's float noise is no headroom
    assert headroom_share(None, 0.0, 1.0) is None


def test_an_arena_without_a_model_has_no_ceilings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path, "tic_tac_toe", {}, ["random"], [], 1)
    assert main(["eval", str(run), "--opponents", "train", "--games", "2", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ceilings"] is None and [r["ceilings"] for r in report["opponents"]] == [None]
    assert "Ceilings" not in format_text(report)
    assert "## Ceilings" not in (run / "eval" / "report.md").read_text()


def labelled(ax: Any) -> dict[str, Any]:
    return {line.get_label(): line for line in ax.get_lines() if not line.get_label().startswith("_")}


def test_the_plot_draws_the_ceilings_in_each_opponents_colour(rps_report: dict[str, Any]) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    colours = {"rps-rock": "#ff0000", "rps-paper": "#00ff00", "rps-scissors": "#0000ff"}
    draw_success(ax, rps_report, colors=colours)
    lines = labelled(ax)
    assert list(lines["training pool: fixed ceiling"].get_ydata()) == pytest.approx([0.5, 0.5, 0.5])
    assert list(lines["training pool: adaptive ceiling"].get_ydata()) == pytest.approx([0.5, 1.0, 1.0])
    assert to_hex(lines["training pool: adaptive ceiling"].get_color()) == "#000000"
    assert list(lines["rps-scissors: adaptive ceiling"].get_ydata()) == pytest.approx([1 / 3, 1.0, 1.0])
    assert to_hex(lines["rps-scissors: fixed ceiling"].get_color()) == "#0000ff"
    assert "rps-rock: fixed ceiling" not in lines  # pool members share the pool's lines
    measured = rps_report["ceilings"]["pool"]["measured"]
    assert list(lines["training pool (weighted)"].get_ydata()) == pytest.approx(measured)
    plt.close(fig)


def kuhn_report(tmp_path: Path) -> dict[str, Any]:
    """A Kuhn report (cfr unseen, intermediate named) with the ceilings of MAGE's pool attached, and a winnable."""
    report = eval_report(tmp_path, 6)
    pool = [("conservative", 0.3), ("aggressive", 0.3), ("intermediate", 0.4)]
    report["ceilings"] = attach_ceilings("kuhn_poker", {}, pool, report["opponents"], 3)
    report["opponents"][1]["winnable"] = {"k": 16, "n": 20, "rate": 0.8, "low": 0.6, "high": 0.9}
    return report


def test_kuhn_is_judged_in_chips_with_the_winnable_line_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = kuhn_report(tmp_path)
    c = report["ceilings"]
    assert c["metric"] == "return" and c["fixed"] == pytest.approx([0.125] * 3)
    assert c["adaptive"] == pytest.approx([0.125, 0.38333, 0.38333], abs=1e-4)
    assert c["card_aware"] == pytest.approx([0.38333] * 3, abs=1e-4) and c["pool"] is None  # members not all met
    intermediate = report["opponents"][1]["ceilings"]
    means = [e["mean_return"]["mean"] for e in report["opponents"][1]["by_episode"]]  # return, not win rate
    assert intermediate["measured"] == pytest.approx(means)
    share = [(m - 0.125) / (0.38333333333 - 0.125) for m in means[1:]]
    assert intermediate["headroom_share"][0] is None and intermediate["headroom_share"][1:] == pytest.approx(share)

    drawn: list[Any] = []
    import matplotlib.pyplot as plt

    monkeypatch.setattr(plt.Figure, "savefig", lambda fig, *a, **k: drawn.append(fig))
    plot_success(report, tmp_path / "plot.png")
    win, chips = drawn[0].axes
    assert any(list(line.get_ydata()) == [0.8, 0.8] for line in win.get_lines())  # the winnable line
    assert "training pool: fixed ceiling" not in labelled(win)  # chips are not drawn on the win-rate axis
    assert list(labelled(chips)["training pool: fixed ceiling"].get_ydata()) == pytest.approx([0.125] * 3)
    assert "cfr: adaptive ceiling" in labelled(chips)

    figures: list[Any] = []

    def keep(fig: Any, path: Path) -> Path:
        figures.append(fig)
        return path

    monkeypatch.setattr(run_plots, "_save", keep)
    result = EvalResult(path=tmp_path / "eval" / "report.json", report=report)
    assert run_plots.plot_success_grid([result], tmp_path / "grid.png") is not None
    assert [ax.get_title() for ax in figures[0].axes if ax.get_visible()] == [
        "agent step 6 (eval/)",
        "agent step 6 (eval/), mean return",
    ]


def test_the_run_page_shows_the_ceilings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from arena.core.eval.eval_report import write_report
    from tests.eval.test_run_report import run_json
    from tests.eval.test_run_report import write_run as write_page_run

    run = write_page_run(tmp_path, ["agent"], with_eval=False)
    write_report(kuhn_report(tmp_path), run / "eval")
    text = Path(run_json([str(run)], capsys)["page"]).read_text()
    assert "Ceilings by episode, in mean return" in text and "card-aware +0.383 / +0.383 / +0.383" in text
    assert "| intermediate | pool | " in text and "Headroom captured = (measured − fixed)" in text
