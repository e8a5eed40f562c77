"""Scripted demonstrations for the ``tiny`` model: real prompts from the real engine, scripted answers.

The prompts are not written by hand: every built-in arena is played by the real ``RolloutEngine`` with a
reflecting plugin enabled (game arenas: half the trials ``reflection``, half ``mage``; solo arenas:
``reflection``), the LLM seat driven by a ``ScriptedBackend`` whose responder records each ``GenerationRequest``.
So the model sees exactly the turn and reflection prompts it will be asked at run time (rules, episode k of N,
earlier reflections, recent steps, observation, ``Legal moves:`` block, answer format).
The answers stand in for what a pretrained LLM already knows: the *format*, and reflections and strategies worth
reading, while the *choice* of move stays untrained (uniform over the legal moves) and is left for RL.

Demonstration kinds and their exact prompts and answers:

``action``
    prompt: a captured turn prompt, unchanged (it ends with ``Legal moves:`` / ``ID: NAME`` lines and
    "Think briefly if it helps, then give exactly one legal move as <action>MOVE</action>.").
    answers: ``<action>NAME</action>`` for every legal move (up to ``MAX_BRANCHES``, drawn uniformly without
    replacement beyond that); all are trained on the same prompt, so the learned distribution is uniform over
    the legal moves.

``reflection``
    prompt: a captured reflection prompt, unchanged: the ``reflection`` plugin's ("You are player_0 in
    kuhn_poker. Episode 1 of 2 just ended; ... Moves of the episode: ... Outcome: ... Answer inside
    <remark>...</remark>.") or ``mage``'s ("... Moves of episode 2: ... What you saw: ... Result: loss, your
    return -1. ... Answer inside <remark>...</remark>.").
    answer: ``<remark>OTHERS. OUTCOME. REVEALED. PLAN</remark>`` built from the prompt text: the other seats'
    moves ("player_1 played Bet, Pass."), the outcome sentence in the first person ("I lost (returns: ...)."),
    what the episode revealed (the betting line, the cards at showdown, the dice, the rounds of
    rock-paper-scissors; board diagrams are left out) and one plan sentence from ``PLANS[arena]``.

``strategy``
    prompt: a captured turn prompt with one instruction paragraph from ``STRATEGY_INSTRUCTIONS`` inserted just
    before the answer-format line (where ``pre_action`` instructions go), e.g. "First write a short strategy
    inside <strategy>...</strategy>, then your move.".
    answer: ``<strategy>PLAN</strategy>\\n<action>NAME</action>`` (PLAN from ``PLANS[arena]``, NAME uniform).

``tip``
    prompt: a captured reflection prompt whose last paragraph is replaced by one of ``TIP_INSTRUCTIONS``, e.g.
    "Write one short tip for your next episode, one line inside <tip>...</tip>.".
    answer: ``<tip>Against OTHER: they played MOVES; PLAN</tip>`` (one line).

``action_crop`` (training only)
    prompt: the tail of a captured turn prompt, from "Current observation:" or from "Legal moves:" to the end;
    answers as for ``action``. Short sequences teach "copy a move from the list" in a fraction of the compute;
    with relative (rotary) positions the skill carries over to the full prompts.

``action_drill`` (training only)
    prompt: a captured turn prompt cut to start at "Current observation:", its ``Legal moves:`` block replaced by
    a random subset (1 to 16, in id order) of every move the arena listed anywhere in the collected prompts;
    answers as for ``action``, over that subset. The listing then disagrees with the board, so the only way to
    answer legally is to read the list: move priors ("any empty-looking cell") stop paying, and the seeded copy
    circuit (``arena.core.models.tiny.circuit``) is what the warm start learns to trust.

``tip_action``
    prompt: a captured turn prompt with a memory section of ``<tip>…</tip>`` lines (as ``retrieve_memory`` items
    with ``tag="tip"`` render) inserted before the recent-steps paragraph; answer as for ``action``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs
import numpy as np

from arena.core.api.backend import ChatMessage, GenerationRequest
from arena.core.api.records import TrialSpec
from arena.core.api.seeding import derive_seed
from arena.core.backends.scripted import ScriptedBackend, legal_moves_in_prompt, listed_moves
from arena.core.config.trial import PromptConfig, TrialConfig
from arena.core.host.plugins import PluginSet
from arena.core.models.tiny.recipe import DemoCounts
from arena.core.rollout.engine import RolloutEngine
from arena.core.rollout.prompts import ANSWER_FORMAT
from arena.core.rollout.seats import BackendPool

DemoKind = Literal["action", "action_crop", "action_drill", "reflection", "strategy", "tip", "tip_action"]

#: The built-in arenas the demonstrations cover, in a fixed order (the data order depends on it).
ARENAS: tuple[str, ...] = (
    "kuhn_poker",
    "leduc_poker",
    "tic_tac_toe",
    "connect_four",
    "liars_dice",
    "rock_paper_scissors",
    "text_maze",
)

#: Single-agent arenas: the scripted model plays alone (no opponents, no seats to swap).
SOLO_ARENAS: frozenset[str] = frozenset({"text_maze", "coding"})

#: The opponents the demonstrations are played against, per game arena, as seat specs (the arguments keep
#: collection fast: the opponents' play only has to be varied, not strong). Fixed here, as ARENAS is, and not read
#: from the opponent catalogue: the recipe of v4 collected against every registered opponent, so registering the
#: Kuhn styles bluffer, calling-station and folder and rps-paper, rps-scissors (4c75957) silently changed what a v4
#: build is (9 Kuhn opponents instead of 6, hence other demo texts, tokenizer and SFT data) without a new
#: BUILD_VERSION, and so would any third-party opponent plugin. Sorted by name, the order the catalogue gave.
DEMO_OPPONENTS: dict[str, tuple[str, ...]] = {
    "kuhn_poker": ("aggressive", "cfr:50", "cfr-argmax:50", "conservative", "intermediate", "random"),
    "leduc_poker": ("cfr:50", "cfr-argmax:50", "random"),
    "tic_tac_toe": (
        "mcts:20",
        "random",
        "ttt-anti-diagonal",
        "ttt-center",
        "ttt-col-major",
        "ttt-corners",
        "ttt-edges",
        "ttt-row-major",
    ),
    "connect_four": ("mcts:20", "random"),
    "liars_dice": ("random",),
    "rock_paper_scissors": ("random", "rps-beat-last", "rps-copy", "rps-cycle", "rps-frequency", "rps-rock"),
}

#: How many answers one action prompt gets (distinct legal moves), trained together as a prefix tree. Training on
#: every legal move of a prompt at once is the cleanest signal for "answer with a listed move, any of them".
MAX_BRANCHES = 16

MODEL_SEAT = "model:scripted"

#: The answer budget while collecting: generous, since the scripted seat's tokens are bytes and neither a
#: reference function nor a remark may be cut short.
COLLECT_MAX_NEW_TOKENS = 2048

STRATEGY_INSTRUCTIONS: tuple[str, ...] = (
    "First write a short strategy inside <strategy>...</strategy>, then your move.",
    "Before you choose, write a short plan for this turn inside <strategy>...</strategy>; then give your move.",
    "Write a short strategy inside <strategy>…</strategy> first, then your move as <action>MOVE</action>.",
)

#: The same requests for free-text arenas (coding), as the sge plugin words them there.
CODE_STRATEGY_INSTRUCTIONS: tuple[str, ...] = (
    "First write a short strategy inside <strategy>...</strategy>, then your code.",
    "Before you write the function, write a short plan inside <strategy>...</strategy>; then your code.",
)

#: The coding arena's closing instruction (``answer_format`` of its adapter): plugin instructions go before it.
CODE_ANSWER_FORMAT = "Write the complete function in one ```python code block."

TIP_INSTRUCTIONS: tuple[str, ...] = (
    "Write one short tip for your next episode, one line inside <tip>...</tip>.",
    "Write a tip for your future self inside <tip>...</tip>: one line about what to do next time.",
    "Summarise the lesson of this episode as a one-line tip inside <tip>...</tip>.",
)

TIP_SECTIONS: tuple[str, ...] = (
    "Tips from your memory:",
    "Tips from earlier episodes:",
    # EMPO²'s header (arena.plugins.empo2.MEMORY_SECTION; the paper's words).
    "Here are some memories you collected in your previous exploration:",
)

PLANS: dict[str, tuple[str, ...]] = {
    "kuhn_poker": (
        "bet with the King, pass with the Jack, and see how the opponent answers a bet with the Queen",
        "check first and call a bet only with a strong card",
        "bet more often to test whether the opponent folds weak cards",
        "pass with weak cards and call bets with the King",
        "bluff now and then with the Jack and watch the reaction",
    ),
    "leduc_poker": (
        "raise with a King or a pair with the public card, call with a Queen, fold weak hands to raises",
        "call in round 1 and decide after the public card is dealt",
        "raise early to see whether the opponent folds",
        "fold a Jack against a raise unless it pairs the public card",
        "play a pair aggressively and check weak hands",
    ),
    "tic_tac_toe": (
        "take the centre, then a corner, and block any line of two",
        "block the opponent's open lines first, then build my own",
        "take a corner and aim for a fork",
        "answer an edge with the centre and keep my marks connected",
        "complete a line when I can, otherwise block",
    ),
    "connect_four": (
        "play the centre columns and stack threats",
        "block any three in a row before building my own",
        "build a diagonal while watching the opponent's columns",
        "keep discs near the middle and avoid giving a winning square",
        "play where the opponent wants to play next",
    ),
    "liars_dice": (
        "bid on my own face and call liar when the bid needs the other die",
        "raise the quantity slowly and call liar on high bids",
        "bid 1 of my face first and see what the opponent does",
        "call liar when the bid is above what my die supports",
        "bluff a higher face now and then",
    ),
    "text_maze": (
        "read every note before I open a chest, and open only the chest the note names",
        "search each drawer, cupboard and crate for keys before I leave a room",
        "visit every unexplored exit and come back to locked doors once I hold their key",
        "take each key I find and unlock the door of its colour",
        "keep track of the rooms I have seen and explore the new ones first",
    ),
    "coding": (
        "read the examples first and handle the empty input before the loop",
        "write the simplest loop that follows the description word by word",
        "check the edge cases the examples show and return early for them",
        "build the result step by step and return it at the end",
        "use a comprehension over the input and keep the function short",
    ),
    "rock_paper_scissors": (
        "look for a pattern in the opponent's moves and play what beats it",
        "play what beats the opponent's last move",
        "mix rock, paper and scissors until a habit shows",
        "play what beats the opponent's most frequent move",
        "switch after a loss and repeat after a win",
    ),
}


@attrs.frozen
class Captured:
    """One request the engine sent to the scripted seat, with the prompt text and the arena it came from."""

    arena: str
    purpose: str
    messages: tuple[ChatMessage, ...]

    @property
    def text(self) -> str:
        return self.messages[-1].content


@attrs.frozen
class Demo:
    """A prompt and the answers trained on it (several answers share the prompt as a prefix tree).

    ``legal`` lists the move names of the prompt's ``Legal moves:`` block (empty for reflections and tips).
    """

    arena: str
    kind: DemoKind
    messages: tuple[ChatMessage, ...]
    answers: tuple[str, ...]
    legal: tuple[str, ...] = ()


# -- collection ---------------------------------------------------------------------------------------------


def opponent_seats(arena: str) -> list[str]:
    """The opponents ``arena``'s demonstrations are played against, as seat specs (``DEMO_OPPONENTS``)."""
    return list(DEMO_OPPONENTS.get(arena, ()))


def _plugin_setup(arena: str, index: int) -> tuple[str, dict[str, dict[str, Any]]]:
    """The reflecting plugin of the ``index``-th trial of a seating, and its options.

    Game arenas alternate between the plain ``reflection`` plugin and ``mage`` (whose reflection prompt differs:
    "Moves of episode k:" with what the seat saw before each move, a ``Result:`` line, earlier reflections), so
    the model meets the reflection prompt of the product's main job. MAGE's default memory shows earlier
    episodes as the plain plugin does; its history memories are left out (their long transcripts would cost
    build time, and v3 already answered them legally: docs/models.md). Solo arenas keep the plain plugin.
    """
    if arena in SOLO_ARENAS or index % 2 == 0:
        return "reflection", {}
    # MAGE cuts reflections at its own token budget; the scripted seat's tokens are bytes, so give it the engine's.
    return "mage", {"mage": {"memory": "reflection_only", "max_new_tokens": COLLECT_MAX_NEW_TOKENS}}


def collect_prompts(arena: str, seed: int, trials: int) -> list[Captured]:
    """Play ``arena`` against all its opponents, from both seats, with 1–3 episodes per trial; record prompts.

    The scripted seat answers with the demonstration targets (a uniform legal move, a scripted remark), so the
    prompts of later episodes carry realistic earlier reflections. Which plugin reflects follows
    ``_plugin_setup``.
    """
    captured: list[Captured] = []

    def responder(request: GenerationRequest, rng: np.random.Generator) -> str:
        captured.append(Captured(arena=arena, purpose=request.purpose, messages=request.messages))
        if request.purpose == "action" and arena == "coding":
            return coding_answers(coding_reference(request.messages[-1].content), "action", rng)[0]
        if request.purpose == "action":
            moves = legal_moves_in_prompt(request)
            return action_answer(moves[int(rng.integers(len(moves)))]) if moves else "<action>0</action>"
        return remark_answer(request.messages[-1].content, rng)

    backend = ScriptedBackend(responder=responder)
    pool = BackendPool()
    pool.add("scripted", "scripted", backend)
    by_plugin: dict[str, list[TrialSpec]] = {}

    def add(trial_id: str, seats: tuple[str, ...], seed_parts: tuple[Any, ...], index: int) -> None:
        plugin, options = _plugin_setup(arena, index)
        by_plugin.setdefault(plugin, []).append(
            TrialSpec(
                trial_id=trial_id,
                arena_id=arena,
                seats=seats,
                seed=derive_seed(seed, arena, *seed_parts) % (2**31),
                episodes=1 + index % 3,
                options=options,
                training=False,
            )
        )

    if arena in SOLO_ARENAS:
        for i in range(trials):
            add(f"demo-{arena}-solo-{i}", (MODEL_SEAT,), ("solo", i), i)
    opponents = [] if arena in SOLO_ARENAS else opponent_seats(arena)
    trials_per_seating = max(1, -(-trials // (2 * max(1, len(opponents)))))
    for opponent in opponents:
        for model_seat in (0, 1):
            seats = (MODEL_SEAT, opponent) if model_seat == 0 else (opponent, MODEL_SEAT)
            for i in range(trials_per_seating):
                add(f"demo-{arena}-{opponent}-{model_seat}-{i}", seats, (opponent, model_seat, i), i)
    config = TrialConfig(prompt=PromptConfig(max_new_tokens=COLLECT_MAX_NEW_TOKENS))
    for plugin in sorted(by_plugin, key=lambda name: name != "reflection"):  # the plain plugin first
        RolloutEngine(PluginSet([plugin]), config, backends=pool).run(by_plugin[plugin])
    return captured


# -- answers built from prompt text -------------------------------------------------------------------------


def action_answer(move: str) -> str:
    return f"<action>{move}</action>"


_STEP_LINE = re.compile(r"^- Step \d+, (.+?): (.+?)(?: \(invalid answer: .*\))?$")
#: The moves block's header: "Moves of the episode:" (``reflection``) or "Moves of episode 2:" (``mage``).
_MOVES_HEAD = re.compile(r"Moves of (?:the episode|episode \d+):")
#: Where the closing request of a reflection prompt starts (both plugins open it with "Reflect on").
REFLECT_REQUEST = "\n\nReflect on "
_REFLECT_HEAD = re.compile(r"You are (\S+) in (\S+)\.")


def _section(text: str, start: str, end: str) -> str:
    begin = text.find(start)
    if begin < 0:
        return ""
    begin += len(start)
    stop = text.find(end, begin)
    return text[begin : stop if stop >= 0 else len(text)].strip()


def _moves_block(prompt: str) -> list[tuple[str, str]]:
    """(who, move) for every step of a reflection prompt's moves block; ``who`` is "you" for the reflecting seat
    (``mage`` writes "you (player_0)"); the "What you saw:" lines under a step are skipped."""
    head = _MOVES_HEAD.search(prompt)
    if head is None:
        return []
    steps = []
    for line in _section(prompt[head.start() :], head.group(0), "\n\nOutcome:").splitlines():
        match = _STEP_LINE.match(line.strip())
        if match:
            who = match.group(1)
            steps.append(("you" if who == "you" or who.startswith("you (") else who, match.group(2)))
    return steps


def is_mage_reflection(prompt: str) -> bool:
    """Whether a reflection prompt is ``mage``'s ("Moves of episode k:") rather than the plain plugin's."""
    head = _MOVES_HEAD.search(prompt)
    return head is not None and head.group(0) != "Moves of the episode:"


def others_moves(prompt: str) -> dict[str, list[str]]:
    """The moves of every other seat in a reflection prompt's moves block, in order."""
    moves: dict[str, list[str]] = {}
    for who, move in _moves_block(prompt):
        if who != "you":
            moves.setdefault(who, []).append(move)
    return moves


def own_moves(prompt: str) -> list[str]:
    """The reflecting seat's own moves in a reflection prompt's moves block, in order."""
    return [move for who, move in _moves_block(prompt) if who == "you"]


def _first_person(text: str) -> str:
    text = re.sub(r"\bYou\b", "I", text)
    text = re.sub(r"\byour\b", "my", text)
    return re.sub(r"\byou\b", "me", text)


def outcome_lines(prompt: str) -> list[str]:
    """The outcome paragraph without board diagrams (a model can't summarise a grid in one sentence); ``mage``'s
    closing "Result: …" line is kept even when a diagram comes before it."""
    lines = []
    in_board = False
    for line in _section(prompt, "Outcome:", REFLECT_REQUEST).splitlines():
        if line.rstrip().endswith("board:"):
            in_board = True
        elif line.strip() and (not in_board or line.startswith("Result: ")):
            lines.append(_first_person(line.strip()))
    return lines


def _arena_of(prompt: str) -> str:
    match = _REFLECT_HEAD.search(prompt)
    return match.group(2) if match else ""


def _plan(arena: str, rng: np.random.Generator) -> str:
    plans = PLANS.get(arena) or PLANS["rock_paper_scissors"]
    return plans[int(rng.integers(len(plans)))]


def _moves_phrase(moves: Sequence[str], limit: int = 6) -> str:
    shown = ", ".join(moves[:limit])
    return shown + (f" and {len(moves) - limit} more" if len(moves) > limit else "")


def remark_answer(prompt: str, rng: np.random.Generator) -> str:
    """``<remark>…</remark>``: the others' moves, the outcome and what was revealed, then a plan."""
    arena = _arena_of(prompt)
    parts = [f"{who} played {_moves_phrase(moves)}." for who, moves in others_moves(prompt).items()]
    if not parts and arena in SOLO_ARENAS:
        parts.append(f"I played {_moves_phrase(own_moves(prompt))}.")
    elif not parts:
        parts.append("The others made no move.")
    parts.extend(outcome_lines(prompt))
    parts.append(f"Next episode I will {_plan(arena, rng)}.")
    return "<remark>" + " ".join(parts) + "</remark>"


def tip_answer(prompt: str, rng: np.random.Generator) -> str:
    """``<tip>…</tip>``: one line naming the other seat's moves and a plan."""
    arena = _arena_of(prompt)
    moves = others_moves(prompt)
    plan = _plan(arena, rng)
    if moves:
        who, seen = next(iter(moves.items()))
        return f"<tip>Against {who}: they played {_moves_phrase(seen, 4)}; {plan}.</tip>"
    return f"<tip>{plan[0].upper()}{plan[1:]}.</tip>"


def strategy_answer(arena: str, move: str, rng: np.random.Generator) -> str:
    plan = _plan(arena, rng)
    return f"<strategy>I will {plan}.</strategy>\n{action_answer(move)}"


# -- coding answers ------------------------------------------------------------------------------------------

#: Small textual edits that turn a reference solution into a plausible wrong one (an off-by-one, a flipped
#: comparison, the other extreme). A coding prompt is trained on its reference and on one such mutant, so the
#: warm-started model writes working code about half the time and leaves the rest to RL, as its moves are left
#: uniform in the games.
MUTATIONS: tuple[tuple[str, str], ...] = (
    (" <= ", " < "),
    (" < ", " <= "),
    (" >= ", " > "),
    (" > ", " >= "),
    (" == ", " != "),
    (" + 1", ""),
    (" - 1", ""),
    ("range(1, ", "range(0, "),
    ("[::-1]", ""),
    ("min(", "max("),
    ("max(", "min("),
    (" and ", " or "),
    (" or ", " and "),
    ("True", "False"),
    (".lower()", ".upper()"),
    ("sorted(", "list("),
    ("return 0", "return 1"),
)

_INT_LITERAL = re.compile(r"(?<![\w.])(\d+)(?![\w.])")


def mutant(code: str, rng: np.random.Generator) -> str | None:
    """One plausible bug in ``code``: a listed edit at its first occurrence, or an integer literal plus one."""
    edits = [(old, new) for old, new in MUTATIONS if old in code]
    head, _, body = code.partition("\n")  # literals of the body only: the def line names the task
    literals = list(_INT_LITERAL.finditer(body))
    options = len(edits) + (1 if literals else 0)
    if options == 0:
        return None
    pick = int(rng.integers(options))
    if pick < len(edits):
        old, new = edits[pick]
        return code.replace(old, new, 1)
    match = literals[int(rng.integers(len(literals)))]
    return f"{head}\n{body[: match.start()]}{int(match.group(1)) + 1}{body[match.end() :]}"


def code_answer(code: str) -> str:
    return f"```python\n{code.strip()}\n```"


def coding_answers(task_reference: str, kind: DemoKind, rng: np.random.Generator) -> tuple[str, ...]:
    """The reference in a fenced block and, when one applies, a mutant; with a strategy first for ``strategy``."""
    codes = [task_reference]
    bug = mutant(task_reference, rng)
    if bug is not None and bug != task_reference:
        codes.append(bug)
    if kind == "strategy":
        return tuple(f"<strategy>I will {_plan('coding', rng)}.</strategy>\n{code_answer(c)}" for c in codes)
    return tuple(code_answer(c) for c in codes)


# -- prompt variants ----------------------------------------------------------------------------------------


def _replace_last_user(messages: tuple[ChatMessage, ...], text: str) -> tuple[ChatMessage, ...]:
    return (*messages[:-1], ChatMessage("user", text))


CROP_MARKERS: tuple[str, ...] = ("Current observation:", "Legal moves:")


def cropped(messages: tuple[ChatMessage, ...], marker: str) -> tuple[ChatMessage, ...]:
    """A turn prompt cut to start at its ``marker`` paragraph (the whole prompt when the marker is missing)."""
    text = messages[-1].content
    start = text.rfind(marker)
    return _replace_last_user(messages, text[start:] if start >= 0 else text)


def with_listing(messages: tuple[ChatMessage, ...], moves: Sequence[tuple[int, str]]) -> tuple[ChatMessage, ...]:
    """A turn prompt whose ``Legal moves:`` block (the end of the prompt) lists ``moves`` instead."""
    text = messages[-1].content
    start = text.rfind("Legal moves:")
    if start < 0:
        raise ValueError("the prompt has no 'Legal moves:' block")
    listing = "\n".join(f"{index}: {name}" for index, name in moves)
    return _replace_last_user(messages, f"{text[:start]}Legal moves:\n{listing}")


def move_vocabulary(items: Sequence[Captured]) -> list[tuple[int, str]]:
    """Every (id, name) pair listed in any of ``items``' ``Legal moves:`` blocks, in id order."""
    return sorted({pair for item in items for pair in listed_moves(item.text)})


def drilled(
    messages: tuple[ChatMessage, ...], vocabulary: Sequence[tuple[int, str]], rng: np.random.Generator
) -> tuple[ChatMessage, ...]:
    """A cropped turn prompt listing a random subset of ``vocabulary`` (see ``action_drill``)."""
    size = int(rng.integers(1, min(len(vocabulary), MAX_BRANCHES) + 1))
    picked = sorted(rng.choice(len(vocabulary), size=size, replace=False).tolist())
    return with_listing(cropped(messages, "Current observation:"), [vocabulary[i] for i in picked])


def with_instruction(
    messages: tuple[ChatMessage, ...], instruction: str, answer_format: str = ANSWER_FORMAT
) -> tuple[ChatMessage, ...]:
    """A turn prompt with a plugin instruction paragraph just before the answer-format line."""
    text = messages[-1].content
    head, sep, tail = text.rpartition(answer_format)
    if not sep:
        return _replace_last_user(messages, f"{text}\n\n{instruction}")
    return _replace_last_user(messages, f"{head}{instruction}\n\n{sep}{tail}")


def with_tip_instruction(messages: tuple[ChatMessage, ...], instruction: str) -> tuple[ChatMessage, ...]:
    """A reflection prompt whose closing request asks for a tip instead of a remark."""
    text = messages[-1].content
    head, sep, _ = text.rpartition(REFLECT_REQUEST)
    return _replace_last_user(messages, f"{head if sep else text}\n\n{instruction}")


def with_tip_memory(messages: tuple[ChatMessage, ...], section: str, tips: Sequence[str]) -> tuple[ChatMessage, ...]:
    """A turn prompt with a ``<tip>`` memory section before the recent-steps paragraph."""
    paragraphs = messages[-1].content.split("\n\n")
    block = section + "\n" + "\n".join(f"<tip>{tip}</tip>" for tip in tips)
    for index, paragraph in enumerate(paragraphs):
        if paragraph.startswith(("No moves yet", "Recent steps")):
            paragraphs.insert(index, block)
            break
    else:
        paragraphs.insert(max(len(paragraphs) - 2, 0), block)
    return _replace_last_user(messages, "\n\n".join(paragraphs))


# -- assembling the data set --------------------------------------------------------------------------------


def _unique(items: Sequence[Captured], exclude: set[str]) -> list[Captured]:
    seen = set(exclude)
    out = []
    for item in items:
        if item.text not in seen:
            seen.add(item.text)
            out.append(item)
    return out


def _take(items: Sequence[Captured], count: int, rng: np.random.Generator) -> list[Captured]:
    if len(items) <= count:
        return list(items)
    picked = sorted(rng.choice(len(items), size=count, replace=False).tolist())
    return [items[i] for i in picked]


@functools.cache
def _coding_references() -> dict[str, str]:
    """The reference solution of every coding task, by the line its prompt opens with."""
    from arena.arenas.coding_tasks import all_tasks

    return {f"Write a Python function `{t.signature}`.": t.reference for t in all_tasks()}


def coding_reference(prompt: str) -> str:
    """The reference solution of the coding task a turn prompt asks for (its first ``Write a Python function``
    line); ``ValueError`` when the prompt names no known task."""
    references = _coding_references()
    for line in prompt.splitlines():
        if line.strip() in references:
            return references[line.strip()]
    raise ValueError("no coding task in the prompt")


def _action_demo(arena: str, kind: DemoKind, messages: tuple[ChatMessage, ...], rng: np.random.Generator) -> Demo:
    if arena == "coding":
        answers = coding_answers(coding_reference(messages[-1].content), kind, rng)
        return Demo(arena=arena, kind=kind, messages=messages, answers=answers)
    moves = legal_moves_in_prompt(GenerationRequest(messages=messages))
    count = min(len(moves), MAX_BRANCHES)
    chosen = rng.choice(len(moves), size=count, replace=False).tolist()
    if kind == "strategy":
        answers = tuple(strategy_answer(arena, moves[i], rng) for i in chosen[:2])
    else:
        answers = tuple(action_answer(moves[i]) for i in chosen)
    return Demo(arena=arena, kind=kind, messages=messages, answers=answers, legal=tuple(moves))


def build_demos(
    seed: int,
    counts: DemoCounts,
    exclude: set[str] | None = None,
    arenas: Sequence[str] = ARENAS,
    per_arena: Mapping[str, DemoCounts] | None = None,
) -> list[Demo]:
    """The demonstrations of every arena, in a fixed order; prompts whose text is in ``exclude`` are skipped.

    ``per_arena`` replaces ``counts`` for the arenas it names (long prompts such as text_maze's get fewer).

    Everything random comes from generators seeded by ``seed`` and the arena, so equal arguments give an equal
    list (the build's bit-for-bit reproducibility starts here).
    """
    demos: list[Demo] = []
    base = counts
    for arena in arenas:
        counts = (per_arena or {}).get(arena, base)
        rng = np.random.default_rng(derive_seed(seed, "demos", arena))
        captured = collect_prompts(arena, seed, counts.trials)
        actions = _unique([c for c in captured if c.purpose == "action"], exclude or set())
        reflections = _unique([c for c in captured if c.purpose == "reflection"], exclude or set())
        chosen_actions = _take(actions, counts.action + counts.strategy + counts.tip_action, rng)
        order = rng.permutation(len(chosen_actions)).tolist()
        plain = [chosen_actions[i] for i in order[: counts.action]]
        strategic = [chosen_actions[i] for i in order[counts.action : counts.action + counts.strategy]]
        tipped = [chosen_actions[i] for i in order[counts.action + counts.strategy :]]
        for item in plain:
            demos.append(_action_demo(arena, "action", item.messages, rng))
        for item in plain[: counts.crops if arena != "coding" else 0]:
            marker = CROP_MARKERS[int(rng.integers(len(CROP_MARKERS)))]
            demos.append(_action_demo(arena, "action_crop", cropped(item.messages, marker), rng))
        if counts.drills and arena != "coding":
            vocabulary = move_vocabulary(actions)
            for index in range(counts.drills):
                item = plain[index % len(plain)]
                demos.append(_action_demo(arena, "action_drill", drilled(item.messages, vocabulary, rng), rng))
        for item in strategic:
            if arena == "coding":
                instruction = CODE_STRATEGY_INSTRUCTIONS[int(rng.integers(len(CODE_STRATEGY_INSTRUCTIONS)))]
                prompt = with_instruction(item.messages, instruction, CODE_ANSWER_FORMAT)
            else:
                instruction = STRATEGY_INSTRUCTIONS[int(rng.integers(len(STRATEGY_INSTRUCTIONS)))]
                prompt = with_instruction(item.messages, instruction)
            demos.append(_action_demo(arena, "strategy", prompt, rng))
        for item in tipped:
            section = TIP_SECTIONS[int(rng.integers(len(TIP_SECTIONS)))]
            tips = [f"{p[0].upper()}{p[1:]}." for p in rng.choice(PLANS[arena], size=2, replace=False).tolist()]
            demos.append(_action_demo(arena, "tip_action", with_tip_memory(item.messages, section, tips), rng))
        remarked = _take(reflections, counts.reflection, rng)
        for item in remarked:
            answers = (remark_answer(item.text, rng),)
            demos.append(Demo(arena=arena, kind="reflection", messages=item.messages, answers=answers))
        # Tip requests replace the closing paragraph of the plain plugin's prompts only: MAGE never asks for tips,
        # and its prompts are longer (build time).
        plain_reflections = [c for c in reflections if c not in remarked and not is_mage_reflection(c.text)]
        for item in _take(plain_reflections, counts.tip, rng):
            instruction = TIP_INSTRUCTIONS[int(rng.integers(len(TIP_INSTRUCTIONS)))]
            messages = with_tip_instruction(item.messages, instruction)
            demos.append(Demo(arena=arena, kind="tip", messages=messages, answers=(tip_answer(item.text, rng),)))
    return demos


def demo_texts(demos: Sequence[Demo]) -> list[str]:
    """Every prompt and answer text, for training the tokenizer."""
    texts: list[str] = []
    for demo in demos:
        texts.extend(m.content for m in demo.messages)
        texts.extend(demo.answers)
    return texts


def describe(demos: Sequence[Demo]) -> dict[str, Any]:
    """Counts per arena and kind, for the build report."""
    table: dict[str, dict[str, int]] = {}
    for demo in demos:
        row = table.setdefault(demo.arena, {})
        row[demo.kind] = row.get(demo.kind, 0) + 1
    return table
