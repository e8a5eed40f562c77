"""pass@k: the unbiased estimator against hand-computed values, and a whole evaluation on the guess_digit arena."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from arena.core.api.backend import GenerationRequest
from arena.core.api.errors import ArenaError
from arena.core.eval.passk import detail_flags, evaluate_tasks, ks_for, pass_at_k
from arena.core.host import catalog
from tests.core.free_text_env import ARENA_ID, register_guess_arena
from tests.core.helpers import scripted_pool


@pytest.fixture(autouse=True)
def guess_arena() -> Iterator[None]:
    register_guess_arena()
    yield
    catalog.reset()


def test_pass_at_k_by_hand() -> None:
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)  # c/n
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)  # 1 - C(3,2)/C(5,2)
    assert pass_at_k(5, 0, 5) == 0.0
    assert pass_at_k(5, 4, 2) == 1.0  # fewer failures than k
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)
    assert ks_for(8) == [1, 2, 4, 8] and ks_for(6) == [1, 2, 4, 6] and ks_for(1) == [1]


def test_evaluate_tasks_on_a_free_text_arena() -> None:
    def responder(request: GenerationRequest, rng: np.random.Generator) -> str:
        return f"<answer>{int(rng.integers(3))}</answer>"  # guesses 0, 1 or 2

    pool, _ = scripted_pool(responder)
    report = evaluate_tasks("model:scripted", ARENA_ID, {}, tasks=5, samples=6, pool=pool, progress=False)
    assert report["tasks"] == 5 and report["samples"] == 6 and list(report["pass_at_k"]) == ["1", "2", "4", "6"]
    rows = {row["seed"]: row for row in report["per_task"]}
    assert rows[3]["successes"] == rows[4]["successes"] == 0  # digits 3 and 4 are never guessed
    expected = np.mean([pass_at_k(6, rows[s]["successes"], 1) for s in range(5)])
    assert report["pass_at_k"]["1"] == pytest.approx(expected)
    assert report["pass_at_k"]["6"] >= report["pass_at_k"]["1"]
    assert all(1 <= row["distinct_outcomes"] <= 3 for row in rows.values())
    again = evaluate_tasks("model:scripted", ARENA_ID, {}, tasks=5, samples=6, pool=pool, progress=False)
    assert again["per_task"] == report["per_task"]  # same tasks, same sampling seeds


def test_games_are_refused() -> None:
    with pytest.raises(ArenaError, match="single-agent"):
        evaluate_tasks("model:scripted", "kuhn_poker", {}, tasks=1, samples=1, progress=False)


def test_detail_flags_count_the_yes_no_facts_an_arena_reports() -> None:
    details = [
        ({"note_before_chest": True, "score": 1.0, "outcome_key": "note"}, True),
        ({"note_before_chest": False, "score": 0.0}, False),
        ({"note_before_chest": None, "score": 0.0}, False),  # no chest opened: the fact does not apply
        ({"note_before_chest": True, "never": None}, False),
    ]
    flags = detail_flags(details)
    assert flags == {
        "note_before_chest": {"rate": pytest.approx(2 / 3), "true": 2, "of": 3, "win_if_true": 0.5, "win_if_false": 0.0}
    }
    assert detail_flags([({"never": None}, True)]) == {}
    only_true = detail_flags([({"flag": True}, True)])["flag"]
    assert only_true["win_if_true"] == 1.0 and only_true["win_if_false"] != only_true["win_if_false"]  # NaN
