"""Where the built ``tiny`` marks the opponent's moves, by hand (docs/models.md, "v8").

Over the prompts of 85 demonstrations of every arena, counts the positions right after an opponent's step prefix
(``- Step 2, player_1: ``) whose PREV_OPP (after layer 0) is below 0.3 ("missed") and the other positions where it
is above 0.3 ("stray"), for the build as it is and with v7's shared previous-token head put back (``--v7``).

    .venv/bin/python tests/models/marker_probe.py          # about a minute here
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from arena.core.models import resolve_model
from arena.core.models.tiny.circuit import opponent_prefix_ids
from arena.core.models.tiny.demos import build_demos
from arena.core.models.tiny.quality import prompt_ids
from arena.core.models.tiny.recipe import DemoCounts


def main() -> None:
    path = Path(resolve_model("tiny"))
    info = json.loads((path / "build_report.json").read_text())["circuit"]
    prev_opp = info["reserved_coordinates"]["prev_opp"]
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    if "--v7" in sys.argv and info.get("recall_marker_head") == 1:
        # v7: head 0 writes PREV_OPP from its value's second channel, head 1 nothing.
        head_dim = model.config.head_dim
        with torch.no_grad():
            o = model.model.layers[0].self_attn.o_proj.weight
            o[prev_opp, 1], o[prev_opp, head_dim + 1] = o[prev_opp, head_dim + 1].clone(), 0.0
    counts = DemoCounts(action=6, reflection=3, strategy=0, tip=2, tip_action=2, crops=0, drills=0, trials=20)
    prompts = [prompt_ids(tokenizer, d.messages) for d in build_demos(4242, counts)]
    prefixes = set(opponent_prefix_ids(tokenizer))
    marked = missed = stray = 0
    for ids in prompts:
        with torch.no_grad():
            value = model(input_ids=torch.tensor([ids]), output_hidden_states=True).hidden_states[1][0, :, prev_opp]
        after = torch.tensor([i > 0 and ids[i - 1] in prefixes for i in range(len(ids))])
        marked += int(after.sum())
        missed += int(((value < 0.3) & after).sum())
        stray += int(((value > 0.3) & ~after).sum())
    print(f"{len(prompts)} prompts, {marked} positions after an opponent's prefix: {missed} missed, {stray} stray")


if __name__ == "__main__":
    main()
