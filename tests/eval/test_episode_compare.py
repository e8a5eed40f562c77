"""``arena compare --by-episode``: methods by episode from eval reports, over seeds, paired against a baseline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena.core.api.errors import ArenaError
from arena.core.eval.episode_compare import compare_by_episode, format_episode_table, method_of, plot_by_episode


def fake_run(root: Path, name: str, seed: int, pool: list[float], unseen: list[float]) -> Path:
    """A run directory with a config and an ``arena eval`` report of the hidden-type RPS shape."""
    run = root / name
    (run / "eval").mkdir(parents=True)
    (run / "config.yaml").write_text(f"seed: {seed}\n")
    report = {
        "episodes_per_trial": 3,
        "ceilings": {
            "opponents": ["rps-rock", "rps-paper"],
            "pool": {"measured": pool, "fixed": [0.5, 0.5, 0.5], "adaptive": [0.5, 1.0, 1.0]},
        },
        "opponents": [
            {"opponent": "rps-rock", "by_episode": []},
            {
                "opponent": "rps-scissors",
                "by_episode": [],
                "ceilings": {"measured": unseen, "fixed": [0.0, 0.0, 0.0], "adaptive": [1 / 3, 1.0, 1.0]},
            },
        ],
    }
    (run / "eval" / "report.json").write_text(json.dumps(report))
    return run


def test_method_names_drop_the_seed() -> None:
    assert method_of(Path("runs/rps/mage_s0")) == "mage"
    assert method_of(Path("grpo_memory-seed12")) == "grpo_memory"
    assert method_of(Path("mage")) == "mage"


def test_paired_differences_by_episode_against_the_pool_and_the_unseen(tmp_path: Path) -> None:
    runs = [
        fake_run(tmp_path, "mage_s0", 0, [0.5, 1.0, 1.0], [0.0, 0.9, 0.8]),
        fake_run(tmp_path, "mage_s1", 1, [0.5, 0.9, 1.0], [0.0, 0.7, 0.9]),
        fake_run(tmp_path, "mage_s2", 2, [0.4, 1.0, 0.9], [0.1, 0.8, 0.7]),
        fake_run(tmp_path, "grpo_s0", 0, [0.5, 0.5, 0.5], [0.0, 0.0, 0.0]),
        fake_run(tmp_path, "grpo_s1", 1, [0.5, 0.5, 0.5], [0.0, 0.1, 0.0]),
        fake_run(tmp_path, "grpo_s2", 2, [0.5, 0.5, 0.5], [0.0, 0.0, 0.0]),
    ]
    result = compare_by_episode(runs, baseline="grpo")
    mage = next(m for m in result["methods"] if m["method"] == "mage")
    assert mage["seeds"] == [0, 1, 2] and set(mage["targets"]) == {"pool", "rps-scissors"}
    third = mage["targets"]["rps-scissors"]["episodes"][2]
    assert third["value"]["mean"] == pytest.approx(0.8)
    paired = third["vs_baseline"]
    assert paired["seeds"] == [0, 1, 2] and paired["ahead"] == 3 and paired["behind"] == 0
    assert paired["diff"]["mean"] == pytest.approx(0.8) and paired["diff"]["low"] > 0
    second = mage["targets"]["rps-scissors"]["episodes"][1]["vs_baseline"]["diff"]["values"]
    assert second == pytest.approx([0.9, 0.6, 0.8])  # per seed, mine minus the baseline's of the same seed
    assert mage["targets"]["pool"]["adaptive"] == [0.5, 1.0, 1.0]
    table = format_episode_table(result)
    assert "### pool" in table and "### rps-scissors" in table and "(baseline)" in table
    assert (plot_by_episode(result, tmp_path / "p.png")).stat().st_size > 0


def test_a_run_without_an_evaluation_or_two_runs_of_one_seed_is_an_error(tmp_path: Path) -> None:
    run = tmp_path / "mage_s0"
    run.mkdir()
    (run / "config.yaml").write_text("seed: 0\n")
    with pytest.raises(ArenaError, match="arena eval"):
        compare_by_episode([run])
    a = fake_run(tmp_path / "a", "mage_s0", 0, [0.5] * 3, [0.0] * 3)
    b = fake_run(tmp_path / "b", "mage_s0", 0, [0.5] * 3, [0.0] * 3)
    with pytest.raises(ArenaError, match="two runs"):
        compare_by_episode([a, b])
    with pytest.raises(ArenaError, match="baseline"):
        compare_by_episode([a], baseline="grpo")


def evaluated_run(root: Path, name: str, seed: int, eval_seed: int, rates: list[float], games: int = 100) -> Path:
    """A run whose report evaluated ``rps-scissors`` on ``games`` trials from ``eval_seed``, with Wilson intervals."""
    from arena.core.eval.stats import wilson

    run = fake_run(root, name, seed, [0.5] * 3, rates)
    report = json.loads((run / "eval" / "report.json").read_text())
    report.update(seed=eval_seed, games=games)
    scissors = report["opponents"][1]
    scissors["by_episode"] = [
        {"episode": k + 1, "win_rate": wilson(round(r * games), games).to_json()} for k, r in enumerate(rates)
    ]
    (run / "eval" / "report.json").write_text(json.dumps(report))
    return run


def test_runs_evaluated_on_the_same_trials_carry_that_samples_error(tmp_path: Path) -> None:
    # Three seeds that trained alike and were evaluated on the same 100 trials agree to the last trial: the spread
    # over seeds is 0, but the one evaluation sample still has its own error (Wilson ±0.098 at 0.5), which the
    # interval must keep (Kuhn in chips: −0.270 [−0.295, −0.245] over seeds, −0.125 on 600 other trials).
    shared = [evaluated_run(tmp_path, f"mage_s{s}", s, 1_000_000, [0.5, 0.5, 0.5]) for s in range(3)]
    result = compare_by_episode(shared)
    value = result["methods"][0]["targets"]["rps-scissors"]["episodes"][0]["value"]
    assert result["methods"][0]["shared_evaluation"]
    assert value["mean"] == pytest.approx(0.5) and value["seeds_half_width"] == pytest.approx(0.0)
    assert value["high"] - value["low"] == pytest.approx(2 * 0.0973, abs=0.003)
    assert "evaluated on the same trials" in format_episode_table(result)
    # Each seed on its own trials: the seeds' spread already holds the evaluation's error, the t interval stands.
    apart = [
        evaluated_run(tmp_path / "apart", f"mage_s{s}", s, 1_000 * s, [0.5, 0.5, r])
        for s, r in enumerate([0.4, 0.5, 0.6])
    ]
    result = compare_by_episode(apart)
    value = result["methods"][0]["targets"]["rps-scissors"]["episodes"][2]["value"]
    assert not result["methods"][0]["shared_evaluation"] and "eval_se" not in value
    assert value["high"] - value["mean"] == pytest.approx(4.303 * 0.1 / 3**0.5, rel=1e-3)


def test_a_paired_difference_on_shared_trials_keeps_both_runs_errors_within_rate_bounds(tmp_path: Path) -> None:
    runs = [evaluated_run(tmp_path, f"mage_s{s}", s, 7, [0.0, 1.0, 1.0]) for s in range(3)]
    runs += [evaluated_run(tmp_path, f"grpo_s{s}", s, 7, [0.0, 0.2, 0.2]) for s in range(3)]
    mage = next(m for m in compare_by_episode(runs, baseline="grpo")["methods"] if m["method"] == "mage")
    second = mage["targets"]["rps-scissors"]["episodes"][1]
    diff = second["vs_baseline"]["diff"]
    # Both runs' errors (Wilson at 1.0 of 100 and at 0.2 of 100): half-width z·sqrt(se_a² + se_b²) ≈ 0.08.
    assert diff["mean"] == pytest.approx(0.8) and diff["high"] - diff["mean"] == pytest.approx(0.08, abs=0.005)
    assert second["value"]["high"] == 1.0  # a rate's interval stops at 1
