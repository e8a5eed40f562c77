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
