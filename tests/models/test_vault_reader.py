"""``tiny-vault``: the chest marker is read where the model answers and where it writes a tip, the SFT targets
(the right tip; the tips' chest ``follow`` of the time; uniform without tips), the collection and the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena.core.api.backend import ChatMessage
from arena.core.api.errors import ArenaError
from arena.core.models.tiny import build as tiny
from arena.core.models.tiny.circuit import ACT, IS_OPP
from arena.core.models.tiny.recipe import SFTConfig
from arena.core.models.tiny.vault_reader import (
    NAMED,
    TIP_ANSWER,
    VaultPrompt,
    VaultReaderRecipe,
    answers_for,
    build_tiny_vault,
    collect_vault_prompts,
    is_tip_request,
    recall_where_read,
)

QUICK = VaultReaderRecipe(
    vaults=6, rounds=2, visits=2, eval_vaults=4,
    sft=SFTConfig(epochs=1, lr=1e-3, warmup_steps=1, token_budget=4096, max_steps=2),
)  # fmt: skip


def _prompt(text: str, tip_request: bool = False, treasure: int = 4) -> VaultPrompt:
    return VaultPrompt((ChatMessage("user", text),), tip_request, treasure)


def test_answers_follow_the_tips_chest_the_recipes_share_of_the_time() -> None:
    tipped = _prompt("memories:\n<tip>treasure in chest #4; at that step you chose open chest 2</tip>\n...")
    every = tuple(f"<action>{k}</action>" for k in range(1, 10))
    assert answers_for(tipped, 9, follow=1.0) == ("<action>4</action>",)
    half = answers_for(tipped, 9, follow=0.5)
    assert len(half) == 16 and half.count("<action>4</action>") == 8 and set(half) == set(every)
    assert all(half.count(a) == 1 for a in every if a != "<action>4</action>")  # the rest evenly
    assert answers_for(_prompt("Vault 3 has 9 chests"), 9, follow=0.5) == every  # no tip: uniform
    assert TIP_ANSWER.format(chest=3) == "<tip>treasure in chest #3</tip>"
    assert answers_for(_prompt("... <tip>...</tip>.", tip_request=True, treasure=7), 9) == (
        "<tip>treasure in chest #7</tip>",
    )
    with pytest.raises(ValueError, match="follow"):
        answers_for(tipped, 9, follow=0.05)


def test_the_collection_carries_earlier_rounds_tips_and_asks_for_tips() -> None:
    prompts = collect_vault_prompts(seed=3, vaults=4, rounds=3, chests=9, visits=3)
    actions = [p for p in prompts if not p.tip_request]
    tips = [p for p in prompts if p.tip_request]
    assert len(actions) == len(tips) == 4 * 3 * 3
    assert all(is_tip_request(p.messages[-1].content) for p in tips)
    assert all(f"chest #{p.treasure}." in p.messages[-1].content for p in tips)  # the summary names it
    tipped = [p for p in actions if NAMED.search(p.messages[-1].content)]
    assert len(tipped) == 4 * 3 * 2  # rounds 2 and 3 read the tips of the rounds before
    # The scripted tips are right: every tip in a vault's prompt names that vault's treasure.
    assert all({int(m) for m in NAMED.findall(p.messages[-1].content)} == {p.treasure} for p in tipped)
    assert all("has 9 chests" in p.messages[-1].content for p in actions)


def test_the_marker_is_read_at_action_and_inside_the_tip(tmp_path: Path) -> None:
    """The mechanism, on a quick `tiny`: ``#`` marks the digit after it and asks for it, so the recall head reads the
    tips' chest at ``<action>`` and the summary's chest at the ``#`` of the tip the model writes."""
    from transformers import AutoTokenizer, LlamaForCausalLM

    from arena.core.models.held import load_held

    base = tiny.build_tiny(tmp_path / "tiny", seed=0, quick=True, steps=2)
    with pytest.raises(ArenaError, match="out_dir"):
        build_tiny_vault(recipe=QUICK, base=base)
    path = build_tiny_vault(tmp_path / "reader", recipe=QUICK, base=base)
    report = json.loads((path / "build_report.json").read_text())
    assert report["base"]["build_version"] == tiny.BUILD_VERSION and report["sft"]["steps"] == 2
    assert report["quality"]["recall"]["action"] > 0.8 and report["quality"]["recall"]["tip"] > 0.8, report
    assert set(report["quality"]) >= {"reading", "tip", "blind_hit", "legal_mass"}

    tokenizer = AutoTokenizer.from_pretrained(path)
    model = LlamaForCausalLM.from_pretrained(path).eval()
    embed = model.model.embed_tokens.weight.detach()
    hidden = model.config.hidden_size
    marker = tokenizer.encode("#", add_special_tokens=False)[0]
    action = tokenizer.encode("<action>", add_special_tokens=False)[0]
    assert float(embed[marker, hidden - IS_OPP]) > 0
    assert float(embed[marker, hidden - ACT]) == pytest.approx(float(embed[action, hidden - ACT]))
    masks = load_held(path)
    assert masks is not None and bool(masks["model.embed_tokens.weight"][marker, hidden - ACT])  # RL keeps both

    # Without the marks the head reads neither place.
    unmarked = LlamaForCausalLM.from_pretrained(base).eval()
    circuit = json.loads((Path(base) / "build_report.json").read_text())["circuit"]
    prompts = collect_vault_prompts(seed=9, vaults=3, rounds=2, chests=9, visits=2)
    shares = recall_where_read(unmarked, AutoTokenizer.from_pretrained(base), prompts, circuit)
    assert shares["action"] < 0.2 and shares["tip"] < 0.2, shares
