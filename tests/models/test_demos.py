"""The scripted demonstrations cover the prompts of both reflecting plugins, and their remarks read both."""

from __future__ import annotations

import numpy as np

from arena.core.api.backend import ChatMessage
from arena.core.models.tiny.demos import (
    TIP_INSTRUCTIONS,
    build_demos,
    collect_prompts,
    is_mage_reflection,
    others_moves,
    outcome_lines,
    own_moves,
    remark_answer,
    with_tip_instruction,
)
from arena.core.models.tiny.recipe import DemoCounts

MAGE_PROMPT = """You are player_1 in tic_tac_toe. Episode 2 of 3 of this trial just ended. The next episode starts from exactly the same initial state against the same opponent, so what you learned about the opponent still holds.

Your reflections on earlier episodes:
- After episode 1: player_0 played (0,0). I lost.

Moves of episode 2:
- Step 1, player_0: (0,0)
- Step 2, you (player_1): (1,1)
  What you saw: Board (you are 'o', '.' is empty):
      0 1 2
  0   x . .
  Player 1 to move.
- Step 3, player_0: (1,0)
- Step 4, you (player_1): (0,1) (invalid answer: no <action> tag)

Outcome: You lost (returns: Player 0 +1, Player 1 -1).
Final board:
    0 1 2
0   x o .
Result: loss, your return -1.

Reflect on the episode: what the opponent did and what it tells you about its strategy, which of your moves helped or hurt, and a concrete plan for the next episode. Be specific and brief. Answer inside <remark>...</remark>."""  # noqa: E501

PLAIN_PROMPT = """You are player_0 in kuhn_poker. Episode 1 of 2 just ended; the next episode starts from the same position against the same opponents.

Moves of the episode:
- Step 1, you: Bet
- Step 2, player_1: Bet

Outcome: You won (returns: Player 0 +2, Player 1 -2).
Showdown: Player 0 had King, Player 1 had Queen.

Reflect on what happened: what the opponents did, what you learned about them, and what you will do differently. Answer inside <remark>...</remark>."""  # noqa: E501


def test_mage_reflection_prompts_are_read_like_the_plain_ones() -> None:
    assert others_moves(MAGE_PROMPT) == {"player_0": ["(0,0)", "(1,0)"]}
    assert own_moves(MAGE_PROMPT) == ["(1,1)", "(0,1)"]  # "you (player_1)" is the reflecting seat
    # The board diagram is left out, MAGE's closing result line is kept.
    assert outcome_lines(MAGE_PROMPT) == ["I lost (returns: Player 0 +1, Player 1 -1).", "Result: loss, my return -1."]
    assert others_moves(PLAIN_PROMPT) == {"player_1": ["Bet"]} and own_moves(PLAIN_PROMPT) == ["Bet"]
    assert is_mage_reflection(MAGE_PROMPT) and not is_mage_reflection(PLAIN_PROMPT)
    assert outcome_lines(PLAIN_PROMPT) == [
        "I won (returns: Player 0 +2, Player 1 -2).",
        "Showdown: Player 0 had King, Player 1 had Queen.",
    ]
    remark = remark_answer(MAGE_PROMPT, np.random.default_rng(0))
    assert remark.startswith("<remark>player_0 played (0,0), (1,0). I lost") and remark.endswith("</remark>")
    assert "you (player_1)" not in remark and "Result: loss, my return -1." in remark


def test_tip_instruction_replaces_the_closing_request_of_either_plugin() -> None:
    for prompt in (MAGE_PROMPT, PLAIN_PROMPT):
        text = with_tip_instruction((ChatMessage("user", prompt),), TIP_INSTRUCTIONS[0])[-1].content
        assert text.endswith("\n\n" + TIP_INSTRUCTIONS[0]) and "Reflect on" not in text and "<remark>" not in text


def test_game_prompts_come_from_both_reflecting_plugins_and_mage_memories() -> None:
    captured = collect_prompts("kuhn_poker", seed=0, trials=160)
    reflections = [c.text for c in captured if c.purpose == "reflection"]
    mage = [t for t in reflections if "Moves of episode " in t]
    plain = [t for t in reflections if "Moves of the episode:" in t]
    assert mage and plain and len(mage) + len(plain) == len(reflections)
    # Earlier reflections inside MAGE prompts are whole scripted remarks, not cut at MAGE's token budget.
    earlier = [line for t in mage for line in t.splitlines() if line.startswith("- After episode 1: ")]
    assert earlier and all(line.endswith(".") for line in earlier)
    actions = [c.text for c in captured if c.purpose == "action"]
    assert any("Your reflections on earlier episodes of this trial:" in t for t in actions)


def test_the_warm_start_writes_remarks_for_both_plugins_and_tips_after_the_plain_prompt() -> None:
    demos = build_demos(0, DemoCounts(action=2, reflection=12, strategy=0, tip=4, tip_action=0, crops=0, trials=60),
                        arenas=("kuhn_poker",))  # fmt: skip
    remarks = [d.messages[-1].content for d in demos if d.kind == "reflection"]
    tips = [d.messages[-1].content for d in demos if d.kind == "tip"]
    assert len(remarks) == 12 and len(tips) == 4
    assert any(is_mage_reflection(t) for t in remarks) and not all(is_mage_reflection(t) for t in remarks)
    assert not any(is_mage_reflection(t) for t in tips) and not set(tips) & set(remarks)


def test_solo_arenas_keep_the_plain_plugin() -> None:
    reflections = [c.text for c in collect_prompts("text_maze", seed=0, trials=6) if c.purpose == "reflection"]
    assert reflections and all("Moves of the episode:" in t for t in reflections)


def test_the_demonstrations_do_not_depend_on_which_opponents_are_registered() -> None:
    """The build collects against a fixed list, not the catalogue: v4 read the catalogue, so registering new Kuhn
    styles (4c75957) silently changed every v4 build made afterwards (its MAGE-on-Kuhn test went from 132 -> 163
    first-episode wins to 128 -> 109)."""
    from arena.core.host import catalog
    from arena.core.models.tiny.demos import ARENAS, opponent_seats

    before = {arena: opponent_seats(arena) for arena in ARENAS}
    registered = set(catalog.opponents().names())
    for arena, seats in before.items():
        assert {seat.split(":")[0] for seat in seats} <= registered, arena  # a renamed opponent fails here
    prompts = [c.text for c in collect_prompts("kuhn_poker", seed=0, trials=12)]
    catalog.opponents().add("kuhn-newcomer", lambda *a, **k: None, plugin="test-plugin")
    try:
        assert {arena: opponent_seats(arena) for arena in ARENAS} == before
        assert [c.text for c in collect_prompts("kuhn_poker", seed=0, trials=12)] == prompts
    finally:
        catalog.reset()
    # v4's opponents, as before 4c75957.
    assert before["kuhn_poker"] == ["aggressive", "cfr:50", "cfr-argmax:50", "conservative", "intermediate", "random"]
    rps = ["random", "rps-beat-last", "rps-copy", "rps-cycle", "rps-frequency", "rps-rock"]
    assert before["rock_paper_scissors"] == rps
