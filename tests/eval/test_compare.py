"""``arena compare``: rollouts to a reward level, counted from hand-made metrics."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from arena.core.api.errors import ArenaError
from arena.core.cli.main import cli
from arena.core.eval.compare import compare_runs

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


def make_seeded_run(root: Path, name: str, plugins: list[str], seed: int, start: float, end: float) -> Path:
    """A run of ``plugins`` with ``seed``: training rewards 0.1 then 0.5, held-out reward ``start`` → ``end``."""
    run = root / name
    run.mkdir()
    config = (CONFIGS / "kuhn_grpo.yaml").read_text()
    config = config.replace("plugins: [grpo]", f"plugins: [{', '.join(plugins)}]", 1)
    (run / "config.yaml").write_text(config.replace("\nseed: 0\n", f"\nseed: {seed}\n", 1))
    lines = [{"iteration": -1, "eval/mean_return": start}, {"iteration": 0, "rollout/mean_return": 0.1}]
    lines.append({"iteration": 1, "rollout/mean_return": 0.5, "eval/mean_return": end})
    (run / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return run


def seeded_runs(root: Path) -> list[Path]:
    # herl beats grpo by 0.10, 0.20 and 0.00 held-out reward on seeds 0, 1 and 2; golf has seeds 0 and 3 only.
    runs = []
    for seed, (base, herl) in enumerate([(0.30, 0.40), (0.20, 0.40), (0.50, 0.50)]):
        runs.append(make_seeded_run(root, f"grpo_s{seed}", ["grpo"], seed, 0.25, base))
        runs.append(make_seeded_run(root, f"herl_s{seed}", ["herl", "grpo"], seed, 0.25, herl))
    runs.append(make_seeded_run(root, "golf_s0", ["golf", "grpo"], 0, 0.25, 0.10))
    runs.append(make_seeded_run(root, "golf_s3", ["golf", "grpo"], 3, 0.25, 0.90))
    return runs


def test_by_method_pairs_by_seed_with_t_intervals(tmp_path: Path) -> None:
    from arena.core.eval.method_compare import summarise_methods

    runs = seeded_runs(tmp_path)
    curves = compare_runs(runs, levels=(0.5,))["runs"]
    result = summarise_methods(curves, baseline="grpo", levels=(0.5,))
    rows = {row["method"]: row for row in result["methods"]}
    assert list(rows) == ["grpo", "herl,grpo", "golf,grpo"]
    herl = rows["herl,grpo"]
    assert herl["seeds"] == [0, 1, 2]
    paired = herl["vs_baseline"]
    assert (paired["ahead"], paired["behind"], paired["tied"]) == (2, 0, 1)
    diff = paired["eval_end_diff"]
    assert math.isclose(diff["mean"], 0.1)
    # sd of (0.1, 0.2, 0.0) is 0.1; the t quantile with 2 degrees of freedom is 4.303
    assert math.isclose(diff["high"] - diff["mean"], 4.303 * 0.1 / math.sqrt(3), rel_tol=1e-9)
    # golf shares seed 0 only with grpo: one difference, no interval
    golf = rows["golf,grpo"]["vs_baseline"]
    assert golf["seeds"] == [0] and golf["behind"] == 1 and golf["eval_end_diff"]["low"] is None
    assert rows["grpo"].get("vs_baseline") is None
    assert math.isclose(rows["grpo"]["eval_gain"]["mean"], (0.05 - 0.05 + 0.25) / 3)
    per_iteration = curves[0]["rollouts"][0]
    assert rows["grpo"]["to_level"]["0.5"] == {"0": 2 * per_iteration, "1": 2 * per_iteration, "2": 2 * per_iteration}


def test_by_method_rejects_duplicate_seeds_and_unknown_baseline(tmp_path: Path) -> None:
    from arena.core.eval.method_compare import summarise_methods

    runs = seeded_runs(tmp_path)
    curves = compare_runs([*runs, make_seeded_run(tmp_path, "grpo_again", ["grpo"], 1, 0.25, 0.3)])["runs"]
    with pytest.raises(ArenaError, match="two runs of method 'grpo' with seed 1"):
        summarise_methods(curves)
    with pytest.raises(ArenaError, match="baseline 'ppo' is none of the compared methods"):
        summarise_methods(curves[:2], baseline="ppo")


def test_cli_by_method_table_and_plot(tmp_path: Path) -> None:
    runs = seeded_runs(tmp_path)[:4]
    png = tmp_path / "methods.png"
    args = ["compare", *map(str, runs), "--baseline", "grpo", "--level", "0.3", "--plot", str(png)]
    out = CliRunner().invoke(cli, args)
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0].startswith("method | seeds | held-out start") and "end − grpo" in lines[0]
    herl = next(line for line in lines if line.startswith("herl,grpo"))
    assert "| 0,1 |" in herl and "+0.150 [" in herl and "2 / 0 / 0" in herl
    assert png.stat().st_size > 1000
    as_json = CliRunner().invoke(cli, [*args[:-2], "--json"])
    assert json.loads(as_json.output)["methods"][1]["vs_baseline"]["ahead"] == 2


def test_t_quantiles() -> None:
    from arena.core.eval.stats import Z95, mean_t_ci, t95

    assert t95(1) == 12.706 and t95(30) == 2.042
    assert abs(t95(31) - 2.040) < 1e-3 and abs(t95(120) - 1.980) < 1e-3 and t95(10_000) > Z95
    with pytest.raises(ValueError):
        t95(0)
    one = mean_t_ci([0.5])
    assert one.mean == 0.5 and one.low is None


def test_by_method_separates_models_and_pairs_each_with_its_own_baseline(tmp_path: Path) -> None:
    from arena.core.eval.method_compare import summarise_methods

    runs = seeded_runs(tmp_path)[:2]  # grpo and herl on tiny (kuhn_grpo's model), seed 0
    for name, plugins in (("big_grpo", ["grpo"]), ("big_herl", ["herl", "grpo"])):
        run = make_seeded_run(tmp_path, name, plugins, 0, 0.25, 0.9 if name == "big_grpo" else 0.5)
        config = (run / "config.yaml").read_text().replace("model: tiny", "model: smollm2-135m-instruct", 1)
        (run / "config.yaml").write_text(config)
        runs.append(run)
    result = summarise_methods(compare_runs(runs)["runs"], baseline="grpo")
    rows = {row["method"]: row for row in result["methods"]}
    assert set(rows) == {"grpo @ tiny", "herl,grpo @ tiny", "grpo @ smollm2-135m-instruct",
                         "herl,grpo @ smollm2-135m-instruct"}  # fmt: skip
    # tiny: herl 0.40 against grpo 0.30; smollm2: herl 0.50 against grpo 0.90
    assert math.isclose(rows["herl,grpo @ tiny"]["vs_baseline"]["eval_end_diff"]["mean"], 0.1)
    assert math.isclose(rows["herl,grpo @ smollm2-135m-instruct"]["vs_baseline"]["eval_end_diff"]["mean"], -0.4)
