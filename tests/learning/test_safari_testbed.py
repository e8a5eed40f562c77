"""SAFARI's testbed (issue 26): exploratory expert data teaches `tiny` to read the note before it opens a chest;
the hindsight-biased demonstrator's data does not.

Both demonstrators win every small layout (tests/arenas/test_text_maze.py); only the explorer's lines show the note
read first. A short SAFARI data + SFT stage from each, evaluated on held-out layouts, must then separate on
``note_before_chest`` (docs/testbeds.md, section 6). A data construction that dropped the expert's reading steps,
or an SFT that learned nothing, shows as no gap.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena.core.config.trial import InvalidActionConfig, PromptConfig, TrialConfig
from arena.core.learn.sft import SFTSettings, run_sft
from arena.plugins.safari import DataOptions, EvalOptions, Game, build_data, evaluate_model, make_policy

TRIAL = TrialConfig(
    episodes=1, invalid_action=InvalidActionConfig(policy="random"), prompt=PromptConfig(max_new_tokens=24)
)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_explorer_data_reads_the_note_first_and_hindsight_data_does_not(tmp_path: Path, model_cache: None) -> None:
    """Measured (2026-12-06, tiny v8, 16 data tasks, 2 SFT epochs, 12 held-out layouts × 4; 55 s in make test, 150 s
    beside another job): the note read first before 30 of 30 chests on the explorer's data, 10 of 37 on the
    hindsight data (the full runs,
    docs/results.md "SAFARI's testbed": 0.91 against 0.18 over 3 seeds, per seed 0.13-0.27 on the hindsight side).
    Bars: above 0.7 against below 0.45, 0.4 apart. At one epoch on 12 tasks the hindsight student still read first
    0.61 of the time: too short a budget to unlearn `tiny`'s habits, so the test uses two."""
    game = Game("text_maze", {"size": "small", "split": "train"}, 0, [])
    rates = {}
    for expert in ("text_maze-explorer", "text_maze-explorer:hindsight"):
        out = tmp_path / expert.replace(":", "_")
        data = build_data(game, make_policy(expert, game), list(range(16)), DataOptions(), out / "data")
        assert data["examples"] > 0
        run_sft(out / "data" / "sft.jsonl", "model:tiny", out / "sft", SFTSettings(epochs=2, lr=1e-4), progress=False)
        report = evaluate_model(
            f"model:{out / 'sft'}", game, EvalOptions(tasks=12, samples=4, arena_kwargs={"split": "test"}), TRIAL
        )
        rates[expert] = report["flags"].get("note_before_chest", {"rate": float("nan"), "of": 0})
    print(json.dumps(rates))
    explorer, hindsight = rates["text_maze-explorer"], rates["text_maze-explorer:hindsight"]
    assert explorer["of"] >= 10 and hindsight["of"] >= 10  # both students open chests
    assert explorer["rate"] > 0.7
    assert hindsight["rate"] < 0.45
    assert explorer["rate"] > hindsight["rate"] + 0.4
