"""``parse_action``: lenient on format, strict on legality, and never raises."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena.arenas.builtin_plugin import OPENSPIEL_GAMES
from arena.core.api.arena import Move, SeatView
from arena.core.rollout.text_adapter import adapter_for, format_moves, normalise, parse_action

MoveSet = tuple[str, list[Move], list[Move]]  # (label, legal moves, all moves)


def _move_sets(factories: dict[str, Any], view_of: Callable[[Any], SeatView]) -> list[MoveSet]:
    """Legal and all moves at the initial state and a few mid-game states of every built-in arena."""
    sets: list[MoveSet] = []
    for arena_id in OPENSPIEL_GAMES:
        env = factories[arena_id]()
        adapter = adapter_for(env)
        rng = np.random.default_rng(0)
        env.reset(seed=1)
        for ply in range(4):
            _, _, term, trunc, info = env.last()
            if term or trunc:
                break
            view = view_of(env)
            sets.append((f"{arena_id}@{ply}", adapter.legal_moves(view), adapter.all_moves(view)))
            env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
    rps = factories["rock_paper_scissors"]()
    obs, _ = rps.reset(seed=0)
    rps_view = SeatView(env=rps, agent="player_0", seat=0, observation=obs["player_0"], action_mask=None)
    moves = adapter_for(rps).legal_moves(rps_view)
    sets.append(("rps", moves, moves))
    generic = [Move(a, str(a), (f"action {a}",)) for a in (0, 2, 5)]
    sets.append(("generic", generic, [Move(a, str(a), (f"action {a}",)) for a in range(6)]))
    return sets


@pytest.fixture(scope="module")
def move_sets(factories: dict[str, Any], view_of: Callable[[Any], SeatView]) -> list[MoveSet]:
    return _move_sets(factories, view_of)


def _check(result: Any, moves: list[Move]) -> None:
    if result.valid:
        assert result.action in {m.action for m in moves}
        assert result.error is None
    else:
        assert isinstance(result.error, str) and result.error


@st.composite
def answers(draw: st.DrawFn, moves: list[Move]) -> str:
    """Answers built from tags, move names/aliases, numbers and noise: the shapes models actually produce."""
    spellings = [s for m in moves for s in (m.name, *m.aliases)] or ["x"]
    fragment = st.one_of(
        st.sampled_from(["<action>", "</action>", "<ACTION>", "< action >", "</ Action>", "`", '"', "(", ")", ". "]),
        st.sampled_from(spellings),
        st.sampled_from(spellings).map(str.upper),
        st.integers(-3, 20).map(str),
        st.text(max_size=6),
    )
    return "".join(draw(st.lists(fragment, max_size=8)))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_never_raises_on_any_text(move_sets: list[MoveSet], data: st.DataObject) -> None:
    _, moves, all_moves = data.draw(st.sampled_from(move_sets))
    answer = data.draw(st.text())
    _check(parse_action(answer, moves, all_moves), moves)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_never_raises_on_tagged_move_soup(move_sets: list[MoveSet], data: st.DataObject) -> None:
    _, moves, all_moves = data.draw(st.sampled_from(move_sets))
    answer = data.draw(answers(moves))
    _check(parse_action(answer, moves, all_moves), moves)
    _check(parse_action(answer, moves), moves)


@given(st.text())
def test_normalise_never_raises(text: str) -> None:
    assert isinstance(normalise(text), str)


def test_every_move_parses_to_itself(move_sets: list[MoveSet]) -> None:
    for label, moves, all_moves in move_sets:
        for move in moves:
            for spelling in (move.name, *move.aliases, f"<action>{move.name}</action>", f"I pick {move.name}."):
                result = parse_action(spelling, moves, all_moves)
                assert result.action == move.action, (label, spelling, result)


KUHN = [Move(0, "Pass", ("check",)), Move(1, "Bet", ("raise",))]
KUHN_FACING = [Move(0, "Pass", ("fold",)), Move(1, "Bet", ("call",))]


@pytest.mark.parametrize(
    ("answer", "moves", "expected"),
    [
        ("<action> bet </action>", KUHN, 1),
        ("BET", KUHN, 1),
        ("I'll call... <action>1</action>", KUHN_FACING, 1),
        ("<Action>Pass", KUHN, 0),
        ("<action>pass</action> wait, no: <action>Bet</action>", KUHN, 1),
        ("<action>Bet</action> and then <action>", KUHN, 1),
        ("0", KUHN, 0),
        ("`Pass`", KUHN, 0),
        ('"Bet".', KUHN, 1),
        ("[bet]", KUHN, 1),
        ("**Bet**", KUHN, 1),
        ("1: Bet", KUHN, 1),
        ("check", KUHN, 0),
        ("fold", KUHN_FACING, 0),
        ("I thought about a bet, but I will pass.", KUHN, 0),
        ("Passing is weak, so I bet!", KUHN, 1),
        ("<action>I call</action>", KUHN_FACING, 1),
    ],
)
def test_lenient_examples(answer: str, moves: list[Move], expected: int) -> None:
    result = parse_action(answer, moves)
    assert result.valid and result.action == expected, result
    assert result.move == next(m.name for m in moves if m.action == expected)


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ("7", "illegal action 7"),
        ("<action>-1</action>", "illegal action -1"),
        ("", "empty answer"),
        ("   \n", "empty answer"),
        ("<action></action>", "empty answer"),
        ("I am not sure.", "no legal move found in answer"),
        ("Bettor", "no legal move found in answer"),
    ],
)
def test_invalid_examples(answer: str, error: str) -> None:
    result = parse_action(answer, KUHN)
    assert not result.valid and result.error == error


TTT_ALL = [Move(a, f"({a // 3},{a % 3})", (f"x({a // 3},{a % 3})", str(a))) for a in range(9)]
TTT_LEGAL = [m for m in TTT_ALL if m.action not in (1, 4)]  # (0,1) and (1,1) are taken


def test_illegal_named_move() -> None:
    result = parse_action("<action>(1,1)</action>", TTT_LEGAL, TTT_ALL)
    assert not result.valid and result.error == "illegal move '(1,1)'"
    assert parse_action("x(1,1)", TTT_LEGAL, TTT_ALL).error == "illegal move '(1,1)'"
    assert parse_action("4", TTT_LEGAL, TTT_ALL).error == "illegal action 4"


def test_board_coordinates() -> None:
    assert parse_action("x(2,2)", TTT_LEGAL, TTT_ALL).action == 8
    assert parse_action("( 2 , 0 )", TTT_LEGAL, TTT_ALL).action == 6
    assert parse_action("I'll take the corner (0,0) to block.", TTT_LEGAL, TTT_ALL).action == 0
    assert parse_action("Cell 5 looks best", TTT_LEGAL, TTT_ALL).action == 5
    # digits inside a named (occupied) cell are not cell numbers
    assert not parse_action("I'd love (0,1) but it is taken", TTT_LEGAL, TTT_ALL).valid
    # a named cell beats a stray number mentioned later
    assert parse_action("(2,0) because of 3 threats", TTT_LEGAL, TTT_ALL).action == 6


def test_liars_dice_spellings() -> None:
    moves = [Move(7, "bid 2 × 2", ("2-2", "bid 2-2", "2 × 2", "2 x 2")), Move(12, "liar", ("Liar", "call liar"))]
    assert parse_action("bid 2 x 2", moves).action == 7
    assert parse_action("<action>2-2</action>", moves).action == 7
    assert parse_action("Bid 2×2", moves).action == 7
    assert parse_action("That bid is a lie. LIAR!", moves).action == 12


def test_format_moves() -> None:
    assert format_moves(KUHN) == "0: Pass\n1: Bet"
