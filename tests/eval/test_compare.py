"""``arena compare``: rollouts to a reward level, counted from hand-made metrics."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from arena.core.cli import cli
from arena.core.compare import compare_runs

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def make_run(root: Path, name: str, rewards: list[float], extra: int = 0) -> Path:
    run = root / name
    run.mkdir()
    shutil.copy(CONFIGS / "kuhn_grpo.yaml", run / "config.yaml")  # groups × group_size rollouts per iteration
    lines = [{"iteration": -1, "eval/mean_return": -0.5}]
    for i, r in enumerate(rewards):
        lines.append({"iteration": i, "rollout/mean_return": r, "augment/generations": extra})
    lines[-1]["eval/mean_return"] = 0.25
    (run / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return run


def test_rollouts_to_level_and_generations(tmp_path: Path) -> None:
    slow = make_run(tmp_path, "slow", [0.0, 0.1, 0.2, 0.6])
    fast = make_run(tmp_path, "fast", [0.0, 0.7, 0.1, 0.8], extra=5)
    result = compare_runs([slow, fast], levels=(0.5, 0.9))
    per_iteration = result["runs"][0]["rollouts"][0]
    assert result["runs"][0]["to_level"]["0.5"] == (4 * per_iteration, 4 * per_iteration)
    assert result["runs"][1]["to_level"]["0.5"] == (2 * per_iteration, 2 * (per_iteration + 5))
    assert result["runs"][1]["to_level"]["0.9"] == (None, None)
    # a trailing mean of 2 iterations: (0.7 + 0.1)/2 = 0.4 at iteration 2, (0.1 + 0.8)/2 = 0.45 at 3
    smoothed = compare_runs([fast], levels=(0.5,), window=2)
    assert smoothed["runs"][0]["to_level"]["0.5"] == (None, None)
    assert result["runs"][0]["eval_first"] == -0.5 and result["runs"][0]["eval_last"] == 0.25


def test_cli_table_and_plot(tmp_path: Path) -> None:
    a = make_run(tmp_path, "a", [0.1, 0.6])
    b = make_run(tmp_path, "b", [0.2, 0.3])
    png = tmp_path / "curves.png"
    out = CliRunner().invoke(cli, ["compare", str(a), str(b), "--level", "0.5", "--plot", str(png)])
    assert out.exit_code == 0, out.output
    assert "not reached" in out.output and png.stat().st_size > 1000
