"""``tiny-doors``: the reveal marker lands where the recall head reads it, the SFT answers, and the build's report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena.arenas.doors import DoorsEnv
from arena.core.api.errors import ArenaError
from arena.core.models.tiny import build as tiny
from arena.core.models.tiny.circuit import IS_OPP, opponent_prefix_ids
from arena.core.models.tiny.doors_reader import (
    REVEALED,
    ReaderRecipe,
    answers_for,
    build_tiny_doors,
    collect_doors_prompts,
    recall_on_reveal,
)
from arena.core.models.tiny.recipe import SFTConfig

QUICK = ReaderRecipe(
    trials=12, eval_trials=6, sft=SFTConfig(epochs=1, lr=1e-3, warmup_steps=1, token_budget=4096, max_steps=2)
)


def test_the_doors_summary_names_the_revealed_door_where_the_reader_looks() -> None:
    import numpy as np

    from arena.core.api.arena import SeatView

    env = DoorsEnv(doors=9)
    for action, names_it in [(0, True), (None, True), (None, False)]:  # scout; the prize found; a miss
        env.reset(seed=3)
        wrong = env.prize % 9 + 1
        env.step(action if action is not None else (env.prize if names_it else wrong))
        obs, _, _, _, info = env.last()
        view = SeatView(env=env, agent="player_0", seat=0, observation=obs, action_mask=np.asarray(info["action_mask"]))
        found = REVEALED.search(env.arena_text_adapter.episode_summary(view))
        assert (found is not None) == names_it and (found is None or int(found.group(1)) == env.prize)


def test_answers_are_the_revealed_id_or_every_id() -> None:
    assert answers_for("Outcome: You scouted (score 0): the prize is behind door #7.\n...", 9) == (
        "<action>7</action>",
    )
    every = answers_for("This is episode 1 of 3 of a trial", 9)
    assert every == tuple(f"<action>{k}</action>" for k in range(10))  # 0 is scout: uniform over the 10 choices


def test_collected_prompts_reveal_doors_in_later_episodes_only() -> None:
    prompts = collect_doors_prompts(seed=5, trials=40, doors=9, scout_rate=0.5)
    assert len(prompts) == 120 and {episode for _, episode in prompts} == {0, 1, 2}
    revealed = [episode for messages, episode in prompts if REVEALED.search(messages[-1].content)]
    assert revealed and 0 not in revealed  # nothing is known in episode 1
    assert all("9 doors" in messages[-1].content for messages, _ in prompts)


def test_the_reveal_marker_points_the_recall_head_at_the_door(tmp_path: Path) -> None:
    """The mechanism, on a quick `tiny`: after marking ``#`` the recall head at ``<action>`` attends to the revealed
    digit (and the SFT only has to learn the readout); the report records it and what the SFT reached."""
    from transformers import AutoTokenizer, LlamaForCausalLM

    base = tiny.build_tiny(tmp_path / "tiny", seed=0, quick=True, steps=2)
    with pytest.raises(ArenaError, match="out_dir"):
        build_tiny_doors(recipe=QUICK, base=base)
    path = build_tiny_doors(tmp_path / "reader", recipe=QUICK, base=base)
    report = json.loads((path / "build_report.json").read_text())
    assert report["base"]["build_version"] == tiny.BUILD_VERSION and report["sft"]["steps"] == 2
    assert report["quality"]["recall_on_reveal"] > 0.8, report["quality"]
    assert set(report["quality"]) >= {"reading", "scout_first", "legal_mass"}

    tokenizer = AutoTokenizer.from_pretrained(path)
    model = LlamaForCausalLM.from_pretrained(path).eval()
    embed = model.model.embed_tokens.weight.detach()
    column = model.config.hidden_size - IS_OPP
    marker = tokenizer.encode("#", add_special_tokens=False)[0]
    prefix_value = embed[opponent_prefix_ids(tokenizer), column].mean()
    assert float(embed[marker, column]) == pytest.approx(float(prefix_value)) and float(prefix_value) > 0
    from arena.core.models.held import load_held

    masks = load_held(path)
    assert masks is not None and bool(masks["model.embed_tokens.weight"][marker, column])  # RL keeps the mark

    # Without the mark the same head finds nothing to read.
    unmarked = LlamaForCausalLM.from_pretrained(base).eval()
    circuit = json.loads((Path(base) / "build_report.json").read_text())["circuit"]
    prompts = collect_doors_prompts(seed=9, trials=10, doors=9, scout_rate=0.6)
    assert recall_on_reveal(unmarked, AutoTokenizer.from_pretrained(base), prompts, circuit) < 0.2
