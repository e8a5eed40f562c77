"""The menu proof's readings (tests/arenas/menu_proof.py): rollouts split by SGE's reflection kind, the failed
plan named again, and the informative groups summed over a run's iterations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena.plugins.sge import NEGATIVE_HEADER, POSITIVE_HEADER
from tests.arenas.menu_proof import informative_share, reflection_kind, rollout_rates, signal_groups, summary_cells


def _row(context: str, answer: str, ret: float) -> dict[str, object]:
    return {"kind": "action", "context_text": context, "rollout_context_text": context, "completion_text": answer,
            "return": ret}  # fmt: skip


def test_the_reflection_kind_is_read_from_the_prompt() -> None:
    assert reflection_kind("Menu 3: ...") == "none"
    assert reflection_kind(f"Menu 3: ...\n\n{NEGATIVE_HEADER}\nPlan Delta failed") == "negative"
    assert reflection_kind(f"Menu 3: ...\n\n{POSITIVE_HEADER}\n...") == "positive"


def test_rollout_rates_split_by_reflection_and_count_the_failed_plan_named_again(tmp_path: Path) -> None:
    negative = f"Menu 3: ...\n\n{NEGATIVE_HEADER}\n1. Plan Delta\nPlan Delta failed: it is not the plan that pays"
    rows = [
        _row("Menu 3: plain", "<strategy>Plan Alpha</strategy> KTX", 1.0),
        _row("Menu 3: plain", "<strategy>Plan Delta</strategy> KTM", 0.0),
        _row(negative, "<strategy>Plan Delta</strategy> KTM", 0.0),
        _row(negative, "<strategy>Plan Alpha</strategy> KTX", 1.0),
        {"kind": "reflection", "context_text": "x", "rollout_context_text": "x", "completion_text": "", "return": 1.0},
    ]
    (tmp_path / "rollouts").mkdir()
    (tmp_path / "rollouts" / "iter_00000.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    rates = rollout_rates(tmp_path)
    assert rates["rollouts"] == 4 and rates["rollouts_none"] == 2 and rates["rollouts_negative"] == 2
    assert rates["win_none"] == 0.5 and rates["win_negative"] == 0.5 and rates["win"] == 0.5
    assert rates["failed_named_again"] == 0.5


def test_signal_groups_sum_every_iteration(tmp_path: Path) -> None:
    rows = [
        {"iteration": 0, "dynamic/groups_played": 16.0, "dynamic/groups_informative": 1.0},
        {"iteration": 1, "dynamic/groups_played": 4.0, "dynamic/groups_informative": 3.0},
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert signal_groups(tmp_path) == {"groups_played": 20.0, "groups_informative": 4.0, "informative": 0.2}


def test_summary_pairs_every_method_with_each_baseline_over_shared_seeds() -> None:
    runs = {
        "grpo": {0: {"win": 0.2}, 1: {"win": 0.2}, 2: {"win": 0.2}},
        "sge": {0: {"win": 0.4}, 1: {"win": 0.4}, 2: {"win": 0.2}},
        "sge-no-reflection": {0: {"win": 0.2}, 1: {"win": 0.2}},
    }
    cells = summary_cells(runs, "win", ["grpo", "sge"])
    assert cells[:3] == [
        "grpo 0.200 [0.200, 0.200]",
        "sge 0.333 [0.046, 0.620]",
        "sge-no-reflection 0.200 [0.200, 0.200]",
    ]
    pairs = [c for c in cells if " − " in c]
    # sge-no-reflection ran two seeds: it is paired over those two only; a baseline is never paired with itself.
    assert [c.split(" [")[0] for c in pairs] == [
        "sge − grpo +0.133",
        "sge-no-reflection − grpo +0.000",
        "grpo − sge -0.133",
        "sge-no-reflection − sge -0.200",
    ]
    assert summary_cells(runs, "absent", ["grpo"]) == []


def test_informative_share_is_the_chance_a_group_holds_a_win_and_a_loss() -> None:
    # A menu always won or never won gives no signal; at s = 1/2 a group of 8 lacks one with probability 2 / 256.
    assert informative_share([1.0, 0.0]) == 0.0
    assert informative_share([0.5]) == pytest.approx(1 - 2 / 256)
    assert informative_share([0.5, 0.0], group_size=2) == pytest.approx(0.25)
