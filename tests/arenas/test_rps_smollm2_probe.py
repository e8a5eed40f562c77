"""The hidden-types probe's readings (tests/arenas/rps_smollm2_probe.py): the counter share it reports from
training rollouts, and the linear probe that says whether the decision state carries the opponent's type."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from arena.core.models.smol.rps import winning_move
from tests.arenas.rps_smollm2_probe import probe_accuracy, rollout_table


def test_the_counter_beats_the_type() -> None:
    assert [winning_move(t) for t in ("rps-rock", "rps-paper", "rps-scissors")] == ["paper", "scissors", "rock"]


def test_a_linear_probe_reads_a_dense_code_and_not_noise() -> None:
    """96 states of width 576, 8 folds of 12 (the decode's shape): a type spread over 50 directions is read well
    above chance, pure noise is not (chance 1/3)."""
    generator = torch.Generator().manual_seed(0)
    labels = torch.arange(96) % 3
    folds = torch.arange(96) // 12
    noise = torch.randn(96, 576, generator=generator)
    dense = noise.clone()
    dense[:, :50] += 0.6 * labels[:, None]
    assert probe_accuracy(dense, labels, folds) > 0.65
    assert probe_accuracy(noise, labels, folds) < 0.45


def _action(opponent: str, episode: int, move: str) -> dict[str, object]:
    return {
        "kind": "action",
        "completion_text": f"<action>{move}</action>",
        "group_id": opponent,
        "episode": episode,
        "advantage": 0.0,
        "opponent": opponent,
    }


def test_the_rollout_table_counts_the_counters_from_episode_2_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A policy that reads its memory (the counter from episode 2 on, rock in episode 1) against one that does not."""
    (tmp_path / "rollouts").mkdir()
    rows = []
    for opponent in ("rps-rock", "rps-paper"):
        rows.append(_action(opponent, 0, "rock"))
        rows += [_action(opponent, episode, winning_move(opponent)) for episode in (1, 2)]
    (tmp_path / "rollouts" / "iter_00000.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    rollout_table(tmp_path)
    out = capsys.readouterr().out
    assert "paper 0/0/2  rock 0/2/0" in out  # by opponent from episode 2 on: r/p/s
    assert "episode 1: the opponent's counter played 0 of 2" in out
    assert "episodes 2+: the opponent's counter played 4 of 4" in out


def test_the_payoff_is_win_draw_loss() -> None:
    from tests.arenas.rps_readout_budget import payoff

    moves = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1, 2])  # rock, paper, scissors against ...
    types = torch.tensor([0, 0, 0, 1, 1, 1, 2, 2, 2])  # ... always-rock, always-paper, always-scissors
    assert payoff(moves, types).tolist() == [0, 1, -1, -1, 0, 1, 1, -1, 0]


def _features(states: torch.Tensor) -> dict[str, torch.Tensor]:
    types = torch.arange(3).repeat_interleave(12)
    return {
        "states": states,
        "logits": torch.zeros(36, 3),
        "types": types,
        "episodes": torch.arange(36) % 3 + 1,
    }


def test_a_readout_learns_to_counter_only_when_the_state_carries_the_type() -> None:
    """The budget simulation: a state that names the type (from episode 2 on) is learned to its counter; a state
    that is the same for every prompt cannot beat 1/3, whatever the step."""
    from tests.arenas.rps_readout_budget import simulate

    types = torch.arange(3).repeat_interleave(12)
    episodes = torch.arange(36) % 3 + 1
    named = torch.nn.functional.one_hot(types, 3).float() * (episodes >= 2).float()[:, None]
    learned = simulate(_features(torch.cat([named, torch.ones(36, 1)], dim=1)), lr=0.1, iterations=60, seed=0)
    assert learned["counter 0.9"] is not None
    blind = simulate(_features(torch.ones(36, 4)), lr=0.1, iterations=60, seed=0)
    assert blind["counter 0.5"] is None


def test_a_kl_to_the_start_holds_a_blind_readout_where_noise_alone_collapses_it() -> None:
    """A state with a large shared part and nothing else (SmolLM2's decision state, 56 of norm against the type's
    0.5, in caricature): without the KL term the update's noise pushes one move over 0.9 of episode 1's play within
    60 iterations in every seed; ``kl=1`` holds it in every seed (measured: collapse at iterations 3-18 at lr 3e-3,
    never with the KL)."""
    from tests.arenas.rps_readout_budget import simulate

    shared = _features(torch.full((36, 4), 50.0))
    free = [simulate(shared, lr=3e-3, iterations=60, seed=seed)["collapsed"] for seed in range(4)]
    held = [simulate(shared, lr=3e-3, iterations=60, seed=seed, kl=1.0)["collapsed"] for seed in range(4)]
    assert all(c is not None for c in free), free
    assert held == [None] * 4, held


def test_the_restatement_names_the_move_the_memory_shows() -> None:
    from arena.core.models.smol.rps import RpsPrompt
    from tests.arenas.rps_smollm2_probe import restatement

    def prompt(opponent: str, episode: int) -> RpsPrompt:
        return RpsPrompt("rps_types_smollm2_mage", opponent, episode, 0, ())

    assert restatement(prompt("rps-rock", 1)) == "First episode. "
    assert restatement(prompt("rps-rock", 2)) == "They played rock. "
    assert restatement(prompt("rps-scissors", 3)) == "They played scissors. "
