"""The format probe: RL-sized steps towards an off-format first token and towards a legal move, on a copy."""

from __future__ import annotations

from pathlib import Path

import torch

from arena.core.models.tiny import build as tiny
from arena.core.models.tiny.demos import build_demos
from arena.core.models.tiny.probe import format_probe
from arena.core.models.tiny.recipe import DemoCounts


def test_probe_moves_a_copy_and_honours_held_entries(tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = tiny.build_tiny(tmp_path / "m", seed=0, quick=True, steps=2)
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    tokenizer = AutoTokenizer.from_pretrained(path)
    counts = DemoCounts(action=6, reflection=0, strategy=0, tip=0, tip_action=0, crops=0, trials=8)
    demos = build_demos(5, counts, arenas=("kuhn_poker", "tic_tac_toe"))
    start = [p.detach().clone() for p in model.parameters()]

    free = format_probe(model, tokenizer, demos, steps=3, lr=1e-3)
    assert set(free) == {"off_format", "legal_move"}
    assert all(len(trace) == 4 and all(0.0 <= p <= 1.0 for p in trace) for trace in free.values())
    assert free["off_format"][-1] > free["off_format"][0]  # the steps push towards their targets
    assert free["legal_move"][-1] > free["legal_move"][0]
    assert all(torch.equal(a, b) for a, b in zip(start, model.parameters(), strict=True))  # the model is untouched

    # The build's own masks (the copy circuit) keep RL-sized steps from pushing the answer off its format
    # (measured on this quick model at lr 1e-4, 3 steps: 0.2 free, under 1e-4 held).
    from arena.core.models.held import load_held

    circuit = load_held(path)
    assert circuit is not None
    unheld = format_probe(model, tokenizer, demos, steps=3, lr=1e-4)["off_format"]
    kept = format_probe(model, tokenizer, demos, held=circuit, steps=3, lr=1e-4)["off_format"]
    assert kept[-1] < 0.1 * unheld[-1]

    everything = {n: torch.ones_like(p, dtype=torch.bool) for n, p in model.named_parameters()}
    frozen = format_probe(model, tokenizer, demos, held=everything, steps=2, lr=1e-2)
    for trace in frozen.values():
        assert max(trace) - min(trace) < 1e-6  # nothing may move
