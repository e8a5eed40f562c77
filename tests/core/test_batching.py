"""Every tick sends all pending requests of all live trials as one batch."""

from __future__ import annotations

from .helpers import play, specs


def test_first_tick_batches_every_trial() -> None:
    # The LLM moves first in every trial, so the first tick must carry one request per trial.
    records, backend, engine = play(specs(32, seats=("model:scripted", "random")))
    assert len(records) == 32
    assert backend.batch_sizes[0] == 32
    assert engine.stats.requests == sum(1 for r in records for s in r.final.steps if s.completion is not None)
    assert engine.stats.ticks == len(backend.batch_sizes)
    # Kuhn poker gives player 0 at most two decisions: two ticks at most.
    assert engine.stats.ticks <= 2


def test_self_play_both_seats_share_batches() -> None:
    records, backend, _ = play(specs(8, arena="tic_tac_toe", seats=("model:scripted", "model:scripted")))
    # Both seats use one backend object: at most one batch per move of the longest game (9 moves).
    assert len(backend.batch_sizes) <= 9
    assert sum(backend.batch_sizes) == sum(len(r.final.steps) for r in records)


def test_live_trial_cap_bounds_batches_and_keeps_results() -> None:
    capped, backend, _ = play(specs(20), max_live_trials=4)
    assert max(backend.batch_sizes) <= 4
    uncapped, _, _ = play(specs(20))
    # Seeds are derived per request, so batching never changes what is played.
    assert [t.final.returns for t in capped] == [t.final.returns for t in uncapped]
    assert [[s.answer for s in t.final.steps] for t in capped] == [[s.answer for s in t.final.steps] for t in uncapped]


def test_parallel_arena_llm_seats_move_in_one_batch() -> None:
    records, backend, _ = play(
        specs(3, arena="rock_paper_scissors", seats=("model:scripted", "model:scripted")),
    )
    rounds = len(records[0].final.steps) // 2
    # Each round is one tick holding both seats of all three trials.
    assert backend.batch_sizes == [6] * rounds
