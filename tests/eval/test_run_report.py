"""``arena report`` on run directories built by hand: page and plots, the win-rate matrix, learner prefixes,
``arena eval`` results found under the run, and one-line errors.

The files have the layout ``arena train`` writes (``config.yaml`` from ``to_dict(TrainConfig)``,
``metrics.jsonl`` keys as ``Run.step`` names them, ``population.json`` as ``Run.write_population``), and the eval
result is written by ``report.write_report`` from summaries built with ``eval_stats``: no model, no training.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from arena.core.cli.main import main
from arena.core.config.loader import to_dict
from arena.core.eval.eval_report import write_report
from arena.core.eval.run_data import ALL, load_run, outcome_series, rating_series
from arena.core.eval.stats import mean_ci, wilson
from arena.core.learn.run_config import LearnerConfig, OpponentEntry, TrainConfig

PNG = b"\x89PNG\r\n\x1a\n"
POOL = ["conservative", "aggressive"]


def write_config(run: Path, learners: list[str]) -> None:
    config = TrainConfig(
        arena="kuhn_poker",
        opponents=[OpponentEntry(name, 0.5) for name in POOL],
        unseen=["cfr"],
        learners=[LearnerConfig(name=name, plugins=["grpo", "reflection"]) for name in learners],
        iterations=8,
    )
    run.mkdir(parents=True)
    (run / "config.yaml").write_text(yaml.safe_dump(to_dict(config), sort_keys=False))


def metrics_line(iteration: int, learners: list[str], opponents: dict[str, list[str]]) -> dict[str, Any]:
    """One ``metrics.jsonl`` line; keys prefixed by the learner's name when there are several learners."""
    line: dict[str, Any] = {"iteration": iteration}
    for n, learner in enumerate(learners):
        pre = "" if len(learners) == 1 else f"{learner}/"
        if iteration >= 0:
            line[f"{pre}rollout/mean_return"] = -0.3 + 0.05 * iteration
            line[f"{pre}rollout/win_rate"] = 0.3 + 0.05 * iteration
            for k, opponent in enumerate(opponents[learner]):
                line[f"{pre}rollout/{opponent}/mean_return"] = -0.5 + 0.1 * k + 0.05 * iteration
                line[f"{pre}rollout/{opponent}/win_rate"] = 0.2 + 0.1 * k + 0.05 * iteration
            line[f"{pre}train/loss"] = 0.1
            line[f"{pre}time/rollout"] = 2.0
            line[f"{pre}time/update"] = 1.0
            line[f"{pre}time/update_tokens_per_s"] = 5000.0  # a rate: not wall time
        if iteration in (-1, 2, 4):
            line[f"{pre}eval/mean_return"] = -0.25 + 0.05 * iteration + 0.01 * n
            line[f"{pre}eval/win_rate"] = 0.35 + 0.05 * iteration
            for opponent in POOL:
                line[f"{pre}eval/{opponent}/win_rate"] = 0.4 + 0.05 * iteration
                line[f"{pre}eval/{opponent}/mean_return"] = -0.2 + 0.05 * iteration
    if iteration >= 0:
        for member in [*learners, *POOL]:
            line[f"rating/{member}/elo"] = 1000.0 + 5 * iteration * (1 if member in learners else -1)
            line[f"rating/{member}/trueskill"] = 1.0 + 0.5 * iteration
        line["population/members"] = len(POOL)
        if iteration in (2, 4):
            line["time/eval"] = 3.0
    return line


def population(learners: list[str], members: list[str]) -> dict[str, Any]:
    records = {}
    for i, learner in enumerate(learners):
        rows = []
        for j, member in enumerate(m for m in members if m != learner):
            games, wins = 10 * (j + 1), 3 * (j + 1) + i
            rows.append(
                {
                    "member": member,
                    "probability": 0.5,
                    "games": games,
                    "wins": wins,
                    "draws": 0,
                    "losses": games - wins,
                    "win_rate": wins / games,
                    "score": wins / games,
                }
            )
        records[learner] = rows
    ratings = [
        {"name": name, "elo": 1000.0 + k, "mu": 25.0, "sigma": 8.0 - k * 0.1, "conservative": 1.0 + k}
        | {"games": 10, "wins": 5, "draws": 0, "losses": 5}
        for k, name in enumerate([*learners, *members])
    ]
    return {
        "iteration": 5,
        "members": [{"name": m, "spec": m, "weight": 0.5, "kind": "scripted"} for m in members],
        "learners": records,
        "ratings": sorted(ratings, key=lambda r: -r["conservative"]),
    }


def eval_report(run: Path, step: int, episodes: int = 3) -> dict[str, Any]:
    """An ``arena eval`` result with the keys ``evaluation.evaluate_run`` returns."""
    opponents = []
    for k, opponent in enumerate(["cfr", "intermediate"]):
        by_episode = [
            {
                "episode": e + 1,
                "trials": 20,
                "win_rate": wilson(4 + 2 * e + k, 20).to_json(),
                "mean_return": mean_ci([0.1 * e, -0.1, 0.2]).to_json(),
            }
            for e in range(episodes)
        ]
        opponents.append(
            {
                "opponent": opponent,
                "group": "unseen" if k == 0 else "named",
                "trials": 20,
                "wins": 8,
                "draws": 0,
                "losses": 12,
                "win_rate": wilson(8, 20).to_json(),
                "draw_rate": wilson(0, 20).to_json(),
                "loss_rate": wilson(12, 20).to_json(),
                "mean_return": mean_ci([0.1, -0.2, 0.3]).to_json(),
                "invalid_per_trial": mean_ci([0.0, 1.0]).to_json(),
                "by_episode": by_episode,
                "by_seat": {"first": wilson(4, 10).to_json(), "second": wilson(4, 10).to_json()},
            }
        )
    return {
        "run": str(run),
        "checkpoint": str(run / "checkpoints" / f"step-{step:08d}"),
        "step": step,
        "learner": "agent",
        "seat": "model:x@hf",
        "plugins": ["grpo", "reflection"],
        "arena": "kuhn_poker",
        "games": 20,
        "seed": 7,
        "episodes_per_trial": episodes,
        "invalid_action_policy": "random",
        "opponents": opponents,
        "exploitability": None,
        "ratings": None,
    }


def write_run(root: Path, learners: list[str], with_eval: bool = True, iterations: int = 6) -> Path:
    run = root / "run"
    write_config(run, learners)
    extra = {name: [o for o in learners if o != name] for name in learners}  # learners as each other's opponents
    opponents = {name: [*POOL, *extra[name]] for name in learners}
    lines = [metrics_line(it, learners, opponents) for it in range(-1, iterations)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    members = [*POOL, *(learners if len(learners) > 1 else [])]
    (run / "population.json").write_text(json.dumps(population(learners, members)))
    if with_eval:
        write_report(eval_report(run, 6), run / "eval")
        write_report(eval_report(run, 3), run / "eval-step3")
    return run


def run_json(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["report", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)  # stdout holds exactly one JSON object


def test_one_learner_page_plots_and_numbers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path, ["agent"])
    result = run_json([str(run)], capsys)
    page = Path(result["page"])
    assert page == run / "report" / "report.md" and result["format"] == "markdown"
    assert set(result["plots"]) == {"learning_curves", "success_by_episode", "win_rate_matrix", "ratings"}
    for path in result["plots"].values():
        assert Path(path).read_bytes().startswith(PNG)
    assert json.loads((run / "report" / "run_report.json").read_text()) == result

    summary = result["summary"]
    assert summary["iterations_done"] == 6 and summary["iterations_configured"] == 8
    # 6 iterations × (rollout 2 s + update 1 s) + two evaluations of 3 s; the tokens/s rate is not time.
    assert summary["wall_time_s"]["total"] == pytest.approx(24.0)
    assert summary["wall_time_s"]["by_phase"] == {"rollout": 12.0, "update": 6.0, "eval": 6.0}
    matrix = summary["win_rate_matrix"]
    assert matrix["learners"] == ["agent"] and matrix["members"] == POOL
    assert matrix["win_rate"] == [[pytest.approx(0.3), pytest.approx(0.3)]]
    assert matrix["games"] == [[10, 20]]
    rollout = summary["learners"]["agent"]["rollout"]
    assert set(rollout) == {ALL, *POOL}
    assert rollout["conservative"]["first"]["win_rate"] == pytest.approx(0.2 + 0.05 * 2)  # iterations 0..4
    assert rollout["conservative"]["last"]["win_rate"] == pytest.approx(0.2 + 0.05 * 3)  # iterations 1..5
    last_eval = summary["learners"]["agent"]["last_eval"]
    assert last_eval["iteration"] == 4 and last_eval["x"] == 5
    assert [e["step"] for e in summary["evaluations"]] == [3, 6]  # sorted by checkpoint step
    assert summary["ratings"][0]["name"] == "aggressive"  # population.json's order: best conservative first

    text = page.read_text()
    for heading in ("## Run facts", "## Learning curves", "## Population win-rate matrix", "## Ratings"):
        assert heading in text
    assert "![learning curves](learning_curves.png)" in text
    assert "| agent | 0.300 (10 games), p 0.50 | 0.300 (20 games), p 0.50 |" in text
    assert "agent step 3 (eval-step3/)" in text and "agent step 6 (eval/)" in text
    assert "| agent | cfr | unseen | 6 | 20 |" in text  # the newest checkpoint per opponent
    assert "grpo, reflection" in text


def test_two_learners_use_their_prefixes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path, ["alice", "bob"], with_eval=False)
    out = tmp_path / "elsewhere"
    result = run_json([str(run), "--out", str(out), "--html"], capsys)
    page = Path(result["page"])
    assert page == out / "report.html" and not (out / "report.md").exists()
    html = page.read_text()
    assert html.count("data:image/png;base64,") == 3  # self-contained: curves, matrix, ratings
    assert "success_by_episode" not in result["plots"]
    assert "<code>arena eval" in html  # no eval: the page says how to run one

    summary = result["summary"]
    learners = summary["learners"]
    assert set(learners) == {"alice", "bob"}
    assert set(learners["alice"]["rollout"]) == {ALL, *POOL, "bob"}
    assert set(learners["bob"]["rollout"]) == {ALL, *POOL, "alice"}
    assert learners["bob"]["last_eval"]["opponents"][ALL]["mean_return"] == pytest.approx(-0.25 + 0.2 + 0.01)
    # Prefixed times of both learners add up, plus the unprefixed eval time.
    assert summary["wall_time_s"]["total"] == pytest.approx(2 * 18.0 + 6.0)
    matrix = summary["win_rate_matrix"]
    assert matrix["learners"] == ["alice", "bob"]
    assert matrix["members"] == [*POOL, "alice", "bob"]
    # A learner does not draw itself: no games, no rate.
    assert matrix["win_rate"][0][2] is None and matrix["games"][0][2] == 0
    assert matrix["win_rate"][1][:2] == [pytest.approx(0.4), pytest.approx(0.35)]
    assert matrix["games"][1] == [10, 20, 30, 0]


def test_series_positions_and_slashed_names(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, ["agent"], with_eval=False)
    snapshot = "model:runs/x/snapshots/agent-it4"
    with open(run_dir / "metrics.jsonl", "a") as f:
        f.write(json.dumps({"iteration": 6, f"rollout/{snapshot}/win_rate": 0.5, "rating/agent@it4/elo": 990.0}))
        f.write("\n" + '{"iteration": 7, "rollout/win')  # cut off: arena train is writing it
    run = load_run(run_dir)
    rollout = outcome_series(run, "agent", "rollout")
    assert rollout[snapshot]["win_rate"] == [(6.0, 0.5)]
    assert rollout["conservative"]["win_rate"][0][0] == 0.0  # rollouts of iteration i: after i updates
    evals = outcome_series(run, "agent", "eval")
    assert [x for x, _ in evals[ALL]["win_rate"]] == [0.0, 3.0, 5.0]  # before training, after updates 3 and 5
    assert rating_series(run)["agent@it4"]["elo"] == [(7.0, 990.0)]


def test_text_output_ends_with_the_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path, ["agent"])
    assert main(["report", str(run)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1] == f"report: {run / 'report' / 'report.md'}"
    assert sum(line.startswith("plot: ") for line in lines) == 4
    # A second report does not take its own output, or anything but eval results, for an eval result.
    assert main(["report", str(run), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["summary"]["evaluations"]) == 2


@pytest.mark.parametrize("missing", ["metrics.jsonl", "config.yaml"])
def test_not_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str], missing: str) -> None:
    run = write_run(tmp_path, ["agent"], with_eval=False)
    (run / missing).unlink()
    assert main(["report", str(run)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: {run} is not a run directory (no {missing}); give a directory written by arena train"
    assert main(["report", str(tmp_path / "nothing")]) == 2
    assert "is not a directory" in capsys.readouterr().err
