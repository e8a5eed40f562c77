"""safari: installing proactive exploration with an expert ("Teaching LLM Agents to Explore Better", seed 004).

The pipeline of the SAFARI summary, as commands (``register_commands``); no trial hooks, it trains offline:

1. ``arena safari data``: **exploratory data construction.** For each task (an arena seed) an *expert* (a scripted
   oracle such as ``text_maze-explorer`` or ``mcts:200``, or a model spec) plays the learner's seat. At each of
   the first ``depth`` learner decisions of a line the state is copied (``arena.core.rollout.arena_state``) and the line
   branches: besides the expert's choice, ``width − 1`` other legal actions (sampled uniformly) are each taken once
   from the copied state, after which the expert continues to the end. A line deviates at most
   ``max_deviations`` times; branches are expanded breadth-first until ``max_trajectories`` lines per task. Each
   finished line is scored with the length-penalised reward ``score = R − λ·len/max_len`` (R the learner's
   return, len its decisions, max_len the arena's step limit, ``env.max_steps``, else the longest line of the
   task's tree; λ = ``length_penalty``, 0.5 by default so a success always outscores a failure). The performance
   filter keeps the successful lines (outcome "win", the engine's rule) with at least ``min_deviations``
   deviations and score ≥ ``min_score``, then the top ``keep_fraction`` of them by score (ties: more deviations
   first, i.e. the more exploration-rich line). Every learner decision of a kept line (``train_on: all``; ``expert``
   skips the deviating steps) becomes one SFT example: the chat messages the rollout engine would send the learner
   at that state (``build_turn_prompt`` on the same ``Turn`` the engine builds: rules, recent steps, observation,
   answer format, legal moves) and the answer ``<action>MOVE</action>``. Duplicates (same prompt and answer) are
   written once.
2. ``arena sft``: supervised fine-tuning (``arena.core.learn.sft``, the ``Trainer`` with loss kind ``sft``).
3. ``arena safari pairs``: **contrastive pairs.** Along the expert's line of each task, at each learner decision
   (up to ``states_per_task``), the student (the SFT model through its backend, at ``temperature``) answers the
   engine's prompt. When its move differs from the expert's, both actions are valued by ``rollouts`` Monte-Carlo
   rollouts: restore the copied state, apply the action, let a forward-only policy play to the end
   (``rollout_policy``: ``expert``, the scripted oracle, by default; ``student``, the SFT model itself), average.
   A rollout's value is the same length-penalised score as in stage 1 (``value: scored``) or the plain return
   (``value: return``). Pairs whose values differ by more than ``margin`` are kept: the better action is chosen,
   the worse rejected (the student's side is its own answer text, the expert's side ``<action>MOVE</action>``).
   Both sides are legal moves (``rejected: legal``, the default): when the student's answer names no legal move,
   up to ``student_samples`` − 1 more answers are drawn and the first legal one is the student's; a state where
   none is legal makes no pair and is counted (``no_legal_answer``), never paired as "expert move over an illegal
   answer", a pair that teaches the answer format (SFT's job), not which legal move explores better.
   ``rejected: any`` keeps the earlier pairs: the student's first answer whatever it is, an illegal one worth
   ``invalid_value`` (−1.5, the engine's forfeit) without rollouts. A rollout whose student answer is unusable
   ends with ``invalid_value`` either way. ``pairs_summary.json`` counts the answers drawn, the illegal ones, the
   states without a legal answer, and the kept pairs that are legal against legal (``legal_pairs``) or have an
   illegal rejected side (``illegal_rejected``, 0 under ``legal``).
4. ``arena safari dpo``: **DPO (β 0.1) plus an SFT term** on the pairs: per pair a ``dpo_chosen`` and a
   ``dpo_rejected`` sample sharing ``meta["pair"]`` and, when ``sft_coef > 0``, an ``sft`` sample of the chosen
   answer; one ``Trainer.update`` per batch of pairs; the reference is the model as loaded (the SFT model).
5. ``arena safari run CONFIG``: every stage in one directory (``data/``, ``sft/``, ``pairs/``, ``dpo/``), then an
   optional evaluation of the base, SFT and DPO models (pass@k on one-player arenas, win rate in games).

Every stage writes a JSON summary (counts, timings, pass rates) and prints one at the end.

Settings of stage 3 (``PairOptions``: ``pairs`` in a ``safari run`` config; most are ``safari pairs`` options too):

| setting | default | meaning |
| --- | --- | --- |
| ``states_per_task`` | ``8`` | decisions of the expert's line where the student answers |
| ``rollouts`` | ``4`` | Monte-Carlo rollouts per valued action |
| ``rollout_policy`` | ``"expert"`` | forward-only policy of the rollouts: ``expert`` or ``student`` |
| ``value`` | ``"scored"`` | a rollout's value: the length-penalised score, or ``return`` |
| ``margin`` | ``0.01`` | a pair is kept when its values differ by more than this |
| ``length_penalty`` | ``0.5`` | λ of the scored value |
| ``invalid_value`` | ``-1.5`` | value of an answer or rollout without a legal move |
| ``temperature`` | ``1.0`` | the student's sampling temperature |
| ``rejected`` | ``"legal"`` | ``legal``: both sides of a pair are legal moves; ``any``: first answer, legal or not |
| ``student_samples`` | ``4`` | answers drawn at a state (``legal``) until one names a legal move |

Choices the summary leaves open, made here: uniform alternatives (not the expert's second-best), breadth-first
expansion, the "win" outcome as success, λ = 0.5, keep_fraction 0.5, the canonical ``<action>MOVE</action>``
answer for expert steps, the scripted expert as the forward policy, margin 0.01 on the scored value (a wasted
step costs λ/max_len = 0.017 on text_maze's small layouts), and re-tokenised answer text for DPO.
"""

from __future__ import annotations

import json
import math
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

import attrs
import click
import numpy as np

from arena.core import (
    ArenaError,
    ArenaSnapshot,
    ChatMessage,
    GenerationRequest,
    Move,
    PromptConfig,
    SeatView,
    Segment,
    Step,
    TrialConfig,
    TrialSpec,
    Turn,
    action_mask_of,
    adapter_for,
    api_kind,
    build_turn_prompt,
    derive_seed,
    episode_outcomes,
    hookimpl,
    make_arena,
    parse_action,
    restore,
    snapshot,
)

NAME = "safari"
LEARNER_SEAT_SPEC = "model:learner"
MAX_EPISODE_STEPS = 1000


def answer_of(move: str) -> str:
    """The arena's answer format for a chosen move."""
    return f"<action>{move}</action>"


# ----------------------------------------------------------------------------------------------------------------
# Playing an arena step by step, with copies of the state
# ----------------------------------------------------------------------------------------------------------------


@attrs.frozen
class Label:
    """One learner decision of a line: the prompt the engine would send, what was played, and whether it was a
    deviation from the expert's choice."""

    messages: tuple[ChatMessage, ...]
    action: int
    move: str
    answer: str
    deviation: bool


@attrs.define
class Cursor:
    """One line of play in progress, stopped at a learner decision (or done). Rewards are credited as the engine
    credits them (an agent's reward when it is next selected), so ``totals`` matches the engine's returns."""

    env: Any
    steps: list[Step] = attrs.field(factory=list)
    totals: dict[str, float] = attrs.field(factory=dict)
    labels: list[Label] = attrs.field(factory=list)
    deviations: int = 0
    done: bool = False
    forfeited: bool = False

    @property
    def decisions(self) -> int:
        return len(self.labels)


@attrs.frozen(eq=False)
class Node:
    """A copied cursor: the arena state and the line's bookkeeping, restorable any number of times."""

    snap: ArenaSnapshot
    steps: tuple[Step, ...]
    totals: dict[str, float]
    labels: tuple[Label, ...]
    deviations: int


class Game:
    """An arena with the learner in one seat and programmatic opponents in the others.

    ``make_env`` overrides how envs are built (tests use a hand-made env); ``opponents`` are seat specs in seat
    order for every seat but ``learner_seat``.
    """

    def __init__(
        self,
        arena: str,
        arena_kwargs: Mapping[str, Any] | None = None,
        learner_seat: int = 0,
        opponents: Sequence[str] = (),
        prompt: PromptConfig | None = None,
        make_env: Callable[[], Any] | None = None,
    ) -> None:
        self.arena = arena
        self.arena_kwargs = dict(arena_kwargs or {})
        self.make_env = make_env or (lambda: make_arena(arena, **self.arena_kwargs))
        self.prompt_config = prompt or PromptConfig()
        env = self.make_env()
        self.agents = list(env.possible_agents)
        self.adapter = adapter_for(env)
        if api_kind(env) != "aec":
            raise ArenaError(f"SAFARI plays turn-based (AEC) arenas; {arena!r} is a parallel env")
        env.close()
        if not 0 <= learner_seat < len(self.agents):
            raise ArenaError(f"learner seat {learner_seat} does not exist in {arena!r} ({len(self.agents)} seats)")
        if len(opponents) != len(self.agents) - 1:
            raise ArenaError(
                f"arena {arena!r} has {len(self.agents)} seats: give {len(self.agents) - 1} opponent(s) for the "
                f"seats other than the learner's, got {len(opponents)}"
            )
        self.learner_seat = learner_seat
        self.learner = self.agents[learner_seat]
        others = list(opponents)
        self.seats = tuple(LEARNER_SEAT_SPEC if i == learner_seat else others.pop(0) for i in range(len(self.agents)))
        self.trial = TrialSpec(trial_id="safari", arena_id=arena, seats=self.seats, seed=0, training=False)

    # -- opponents ----------------------------------------------------------------------------------------------

    def opponents(self, seed: int) -> dict[str, Any]:
        from arena.core import make_opponent, parse_seat

        return {
            agent: make_opponent(parse_seat(spec), self.arena, seed=derive_seed(seed, "safari-seat", i))
            for i, (agent, spec) in enumerate(zip(self.agents, self.seats, strict=True))
            if i != self.learner_seat
        }

    # -- lines of play --------------------------------------------------------------------------------------------

    def start(self, env: Any, seed: int, opponents: Mapping[str, Any]) -> Cursor:
        """Reset ``env`` to task ``seed`` and play the opponents up to the learner's first decision."""
        env.reset(seed=seed)
        cursor = Cursor(env=env, totals={a: 0.0 for a in self.agents})
        self.settle(cursor, opponents)
        return cursor

    def settle(self, cursor: Cursor, opponents: Mapping[str, Any]) -> None:
        """Run the env (the opponents' moves, finished agents' last steps) until the learner must act or the end."""
        env = cursor.env
        while env.agents:
            if len(cursor.steps) > MAX_EPISODE_STEPS:
                raise ArenaError(f"arena {self.arena!r}: a SAFARI line exceeded {MAX_EPISODE_STEPS} steps")
            agent = env.agent_selection
            observation, reward, termination, truncation, info = env.last()
            cursor.totals[agent] += float(reward)
            if termination or truncation:
                env.step(None)
                continue
            if agent == self.learner:
                return
            seat = self.agents.index(agent)
            view = SeatView(env, agent, seat, observation, action_mask_of(observation, info), dict(info))
            action = int(opponents[agent].act(view))
            move = self.adapter.action_name(view, action)
            cursor.steps.append(
                Step(episode=0, index=len(cursor.steps), agent=agent, seat=seat, action=action, move=move)
            )
            env.step(action)
        cursor.done = True

    def view(self, cursor: Cursor) -> SeatView:
        """The learner's view at the pending decision (no reward is credited here)."""
        observation, _, _, _, info = cursor.env.last()
        return SeatView(
            cursor.env, self.learner, self.learner_seat, observation, action_mask_of(observation, info), dict(info)
        )

    def turn(self, cursor: Cursor, view: SeatView) -> Turn:
        """The ``Turn`` the engine builds at this decision (one episode, no memories or plugin instructions)."""
        answer_format = getattr(self.adapter, "answer_format", None)
        return Turn(
            trial=self.trial,
            episode=0,
            step=len(cursor.steps),
            agent=self.learner,
            seat=self.learner_seat,
            rules=self.adapter.rules(view),
            observation=self.adapter.observation(view),
            legal_moves=tuple(self.adapter.legal_moves(view)),
            history=tuple(cursor.steps),
            earlier_episodes=(),
            reflections=(),
            answer_format=answer_format(view) if answer_format else None,
        )

    def prompt(self, turn: Turn) -> tuple[ChatMessage, ...]:
        return build_turn_prompt(turn, [], [], self.prompt_config)

    def all_moves(self, view: SeatView) -> tuple[Move, ...]:
        all_moves = getattr(self.adapter, "all_moves", None)
        return tuple(all_moves(view)) if all_moves else ()

    def apply(
        self,
        cursor: Cursor,
        turn: Turn,
        action: int,
        opponents: Mapping[str, Any],
        answer: str | None = None,
        deviation: bool = False,
    ) -> None:
        """Play the learner's ``action`` (a legal one) and run on to its next decision."""
        move = next((m for m in turn.legal_moves if m.action == action), None)
        if move is None:
            raise ArenaError(f"action {action} is not legal here (legal: {[m.action for m in turn.legal_moves]})")
        text = answer if answer is not None else answer_of(move.name)
        cursor.labels.append(Label(self.prompt(turn), action, move.name, answer_of(move.name), deviation))
        cursor.deviations += int(deviation)
        cursor.steps.append(
            Step(
                episode=0,
                index=turn.step,
                agent=self.learner,
                seat=self.learner_seat,
                action=action,
                move=move.name,
                observation=turn.observation,
                answer=text,
            )
        )
        cursor.env.step(action)
        self.settle(cursor, opponents)

    def fork(self, cursor: Cursor) -> Node:
        return Node(
            snapshot(cursor.env), tuple(cursor.steps), dict(cursor.totals), tuple(cursor.labels), cursor.deviations
        )

    def resume(self, node: Node, env: Any) -> Cursor:
        restore(env, node.snap)
        return Cursor(env, list(node.steps), dict(node.totals), list(node.labels), node.deviations)

    # -- results --------------------------------------------------------------------------------------------------

    def learner_return(self, cursor: Cursor) -> float:
        return float(cursor.totals[self.learner])

    def success(self, cursor: Cursor) -> bool:
        if cursor.forfeited:
            return False
        return episode_outcomes(cursor.totals, cursor.env)[self.learner] == "win"

    def step_limit(self, env: Any) -> int | None:
        limit = getattr(getattr(env, "unwrapped", env), "max_steps", None)
        return int(limit) if isinstance(limit, int) and limit > 0 else None


def length_score(ret: float, length: int, max_len: int, penalty: float) -> float:
    """SAFARI's length-penalised reward ``R − λ·len/max_len``."""
    return float(ret) - penalty * length / max(1, max_len)


# ----------------------------------------------------------------------------------------------------------------
# Policies: the expert, the student, the forward-only rollout policy
# ----------------------------------------------------------------------------------------------------------------


@attrs.frozen
class Choice:
    """A policy's decision: a legal action (None: the answer named no legal move) and the answer text."""

    action: int | None
    answer: str


class Policy(Protocol):
    name: str

    def choose(self, game: Game, cursors: Sequence[Cursor], seeds: Sequence[int]) -> list[Choice]:
        """One decision per cursor (each stopped at a learner decision, each in its own env)."""
        ...


class ScriptedPolicy:
    """A programmatic opponent (``text_maze-explorer``, ``mcts:200``, ``cfr``...) playing the learner's seat."""

    def __init__(self, spec: str, arena: str, seed: int = 0, opponent: Any = None) -> None:
        from arena.core import make_opponent, parse_seat

        self.name = spec
        self.opponent = opponent or make_opponent(parse_seat(spec), arena, seed=derive_seed(seed, "safari", spec))

    def choose(self, game: Game, cursors: Sequence[Cursor], seeds: Sequence[int]) -> list[Choice]:
        choices = []
        for cursor in cursors:
            view = game.view(cursor)
            action = int(self.opponent.act(view))
            choices.append(Choice(action, answer_of(game.adapter.action_name(view, action))))
        return choices


class ModelPolicy:
    """A model seat: the engine's prompt, one sampled answer per decision (batched), parsed like the engine does."""

    def __init__(self, spec: str, backend: Any = None, temperature: float = 1.0, max_new_tokens: int = 256) -> None:
        from arena.core import BackendPool, parse_seat

        self.name = spec
        self.backend = backend or BackendPool().get(parse_seat(spec if spec.startswith("model:") else f"model:{spec}"))
        self.temperature = temperature
        self.max_new_tokens = max_new_tokens

    def choose(self, game: Game, cursors: Sequence[Cursor], seeds: Sequence[int]) -> list[Choice]:
        if not cursors:
            return []
        turns, requests, all_moves = [], [], []
        for cursor, seed in zip(cursors, seeds, strict=True):
            view = game.view(cursor)
            turn = game.turn(cursor, view)
            turns.append(turn)
            all_moves.append(game.all_moves(view))
            requests.append(
                GenerationRequest(
                    messages=game.prompt(turn),
                    segments=(Segment(temperature=self.temperature),),
                    max_new_tokens=self.max_new_tokens,
                    seed=int(seed),
                    purpose="action",
                )
            )
        answers = self.backend.generate(requests)
        choices = []
        for turn, moves, completions in zip(turns, all_moves, answers, strict=True):
            text = completions[0].text
            parsed = parse_action(text, turn.legal_moves, moves)
            legal = parsed.valid and any(m.action == parsed.action for m in turn.legal_moves)
            choices.append(Choice(int(parsed.action) if legal else None, text))
        return choices


def make_policy(spec: str, game: Game, seed: int = 0, temperature: float = 1.0, backend: Any = None) -> Policy:
    """``model:...`` → a model policy; anything else → a registered opponent playing the learner's seat."""
    if spec.startswith("model:"):
        return ModelPolicy(
            spec, backend=backend, temperature=temperature, max_new_tokens=game.prompt_config.max_new_tokens
        )
    return ScriptedPolicy(spec, game.arena, seed)


# ----------------------------------------------------------------------------------------------------------------
# Stage 1: exploratory data construction
# ----------------------------------------------------------------------------------------------------------------


@attrs.frozen
class DataOptions:
    width: int = 2
    depth: int = 6
    max_deviations: int = 2
    max_trajectories: int = 8
    length_penalty: float = 0.5
    keep_fraction: float = 0.5
    min_score: float | None = None
    min_deviations: int = 0
    train_on: Literal["all", "expert"] = "all"


@attrs.frozen
class Trajectory:
    task_seed: int
    index: int
    labels: tuple[Label, ...]
    ret: float
    success: bool
    deviations: int
    step_limit: int | None
    details: dict[str, Any] = attrs.field(factory=dict)
    abandoned: bool = False

    @property
    def length(self) -> int:
        return len(self.labels)


def expand_task(game: Game, expert: Policy, seed: int, options: DataOptions) -> list[Trajectory]:
    """The expert's tree of lines for task ``seed``: breadth-first, branching from copied states (see module doc)."""
    env = game.make_env()
    opponents = game.opponents(seed)
    rng = np.random.default_rng(derive_seed(seed, "safari-branches"))
    root = game.start(env, seed, opponents)
    queue: deque[tuple[Node, int | None]] = deque([(game.fork(root), None)])
    planned = 1
    lines: list[Trajectory] = []
    while queue and len(lines) < options.max_trajectories:
        node, forced = queue.popleft()
        cursor = game.resume(node, env)
        abandoned = False
        while not cursor.done:
            view = game.view(cursor)
            turn = game.turn(cursor, view)
            if forced is not None:
                game.apply(cursor, turn, forced, opponents, deviation=True)
                forced = None
                continue
            seeds = [derive_seed(seed, "expert", len(lines), cursor.decisions)]
            choice = expert.choose(game, [cursor], seeds)[0]
            if choice.action is None:  # a model expert without a legal move: the line is lost
                abandoned = True
                break
            if cursor.decisions < options.depth and cursor.deviations < options.max_deviations and options.width > 1:
                others = [m.action for m in turn.legal_moves if m.action != choice.action]
                picks: list[int] = [int(a) for a in rng.permutation(others)[: options.width - 1]] if others else []
                if picks and planned < options.max_trajectories:
                    node_here = game.fork(cursor)
                    for alt in picks:
                        if planned >= options.max_trajectories:
                            break
                        queue.append((node_here, int(alt)))
                        planned += 1
            game.apply(cursor, turn, choice.action, opponents)
        details_of = getattr(game.adapter, "episode_details", None)
        details = {}
        if details_of is not None and cursor.done:
            details = dict(details_of(SeatView(env, game.learner, game.learner_seat, None, None, {})))
        lines.append(
            Trajectory(
                task_seed=seed,
                index=len(lines),
                labels=tuple(cursor.labels),
                ret=game.learner_return(cursor),
                success=not abandoned and game.success(cursor),
                deviations=cursor.deviations,
                step_limit=game.step_limit(env),
                details=details,
                abandoned=abandoned,
            )
        )
    env.close()
    return lines


def select_lines(lines: Sequence[Trajectory], options: DataOptions) -> list[tuple[Trajectory, float]]:
    """The performance filter of one task's lines: successful, exploration-rich enough, best scores first."""
    if not lines:
        return []
    max_len = lines[0].step_limit or max(t.length for t in lines)
    scored = [(t, length_score(t.ret, t.length, max_len, options.length_penalty)) for t in lines]
    good = [
        (t, s)
        for t, s in scored
        if t.success
        and t.deviations >= options.min_deviations
        and (options.min_score is None or s >= options.min_score)
    ]
    good.sort(key=lambda ts: (-ts[1], -ts[0].deviations, ts[0].index))
    keep = max(1, math.ceil(options.keep_fraction * len(good))) if good else 0
    return good[:keep]


def build_data(
    game: Game,
    expert: Policy,
    seeds: Sequence[int],
    options: DataOptions,
    out: Path,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Stage 1 over ``seeds``: ``sft.jsonl`` (examples), ``trajectories.jsonl`` (every line), ``data_summary.json``."""
    from tqdm import tqdm

    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    examples: list[dict[str, Any]] = []
    seen: set[str] = set()
    all_lines: list[Trajectory] = []
    kept_lines: list[tuple[Trajectory, float]] = []
    with (out / "trajectories.jsonl").open("w") as traj_file:
        for seed in tqdm(seeds, desc="safari data", unit="task", disable=None if progress is None else not progress):
            lines = expand_task(game, expert, int(seed), options)
            kept = select_lines(lines, options)
            kept_ids = {t.index: s for t, s in kept}
            all_lines.extend(lines)
            kept_lines.extend(kept)
            for t in lines:
                row = {
                    "task_seed": t.task_seed,
                    "line": t.index,
                    "moves": [lb.move for lb in t.labels],
                    "deviations": [i for i, lb in enumerate(t.labels) if lb.deviation],
                    "return": t.ret,
                    "success": t.success,
                    "abandoned": t.abandoned,
                    "kept": t.index in kept_ids,
                    "score": kept_ids.get(t.index),
                    "details": t.details,
                }
                traj_file.write(json.dumps(row) + "\n")
            for t, score in kept:
                for i, label in enumerate(t.labels):
                    if options.train_on == "expert" and label.deviation:
                        continue
                    key = json.dumps([[m.role, m.content] for m in label.messages]) + "\x1f" + label.answer
                    if key in seen:
                        continue
                    seen.add(key)
                    examples.append(
                        {
                            "messages": [{"role": m.role, "content": m.content} for m in label.messages],
                            "answer": label.answer,
                            "arena": game.arena,
                            "task_seed": t.task_seed,
                            "line": t.index,
                            "decision": i,
                            "deviation": label.deviation,
                            "score": score,
                            "return": t.ret,
                        }
                    )
    with (out / "sft.jsonl").open("w") as handle:
        for row in examples:
            handle.write(json.dumps(row) + "\n")
    expert_lines = [t for t in all_lines if t.index == 0]
    summary = {
        "stage": "data",
        "arena": game.arena,
        "arena_kwargs": game.arena_kwargs,
        "seats": list(game.seats),
        "expert": expert.name,
        "tasks": len(seeds),
        "options": attrs.asdict(options),
        "lines": len(all_lines),
        "successful_lines": sum(t.success for t in all_lines),
        "abandoned_lines": sum(t.abandoned for t in all_lines),
        "kept_lines": len(kept_lines),
        "examples": len(examples),
        "expert_pass_rate": float(np.mean([t.success for t in expert_lines])) if expert_lines else 0.0,
        "tree_pass_rate": float(np.mean([t.success for t in all_lines])) if all_lines else 0.0,
        "tasks_with_kept_lines": len({t.task_seed for t, _ in kept_lines}),
        "mean_kept_length": float(np.mean([t.length for t, _ in kept_lines])) if kept_lines else 0.0,
        "mean_kept_deviations": float(np.mean([t.deviations for t, _ in kept_lines])) if kept_lines else 0.0,
        "mean_kept_score": float(np.mean([s for _, s in kept_lines])) if kept_lines else 0.0,
        "seconds": round(time.perf_counter() - started, 3),
    }
    (out / "data_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


# ----------------------------------------------------------------------------------------------------------------
# Stage 3: contrastive pairs valued by Monte-Carlo rollouts
# ----------------------------------------------------------------------------------------------------------------


@attrs.frozen
class PairOptions:
    states_per_task: int = 8
    rollouts: int = 4
    rollout_policy: Literal["expert", "student"] = "expert"
    value: Literal["scored", "return"] = "scored"
    margin: float = 0.01
    length_penalty: float = 0.5
    invalid_value: float = -1.5
    temperature: float = 1.0
    #: ``legal``: a pair's two sides are legal moves, so a rejected answer is never one that names no legal move
    #: (such states are resampled up to ``student_samples`` answers, else make no pair and are counted);
    #: ``any``: the student's first answer whatever it is (an illegal one is worth ``invalid_value``).
    rejected: Literal["legal", "any"] = "legal"
    #: Answers drawn at a state under ``rejected: legal`` until one names a legal move (the first one with the
    #: seed ``any`` uses, the others only when it names none).
    student_samples: int = 4


def rollout_values(
    game: Game,
    node: Node,
    actions: Sequence[int],
    policy: Policy,
    rollouts: int,
    options: PairOptions,
    seed: int,
    opponents_seed: int,
) -> list[float]:
    """The mean value of each of ``actions`` at ``node``: ``rollouts`` lines each, all advanced in lockstep so a
    model policy answers every live line in one batch."""
    cursors: list[tuple[int, Cursor, dict[str, Any]]] = []
    for a_index, action in enumerate(actions):
        for r in range(rollouts):
            env = game.make_env()
            cursor = game.resume(node, env)
            opponents = game.opponents(derive_seed(opponents_seed, a_index, r))
            turn = game.turn(cursor, game.view(cursor))
            game.apply(cursor, turn, int(action), opponents)
            cursors.append((a_index, cursor, opponents))
    tick = 0
    while True:
        live = [(a, c, o) for a, c, o in cursors if not c.done and not c.forfeited]
        if not live:
            break
        seeds = [derive_seed(seed, "rollout", i, tick, c.decisions) for i, (_, c, _) in enumerate(live)]
        choices = policy.choose(game, [c for _, c, _ in live], seeds)
        for (_, cursor, opponents), choice in zip(live, choices, strict=True):
            if choice.action is None:
                cursor.forfeited = True
                continue
            game.apply(cursor, game.turn(cursor, game.view(cursor)), choice.action, opponents, answer=choice.answer)
        tick += 1
    values: list[list[float]] = [[] for _ in actions]
    for a_index, cursor, _ in cursors:
        values[a_index].append(line_value(game, cursor, options))
        cursor.env.close()
    return [float(np.mean(v)) for v in values]


def line_value(game: Game, cursor: Cursor, options: PairOptions) -> float:
    """What a finished rollout is worth: the forfeit value, the return, or the length-penalised score."""
    if cursor.forfeited:
        return options.invalid_value
    ret = game.learner_return(cursor)
    if options.value == "return":
        return ret
    max_len = game.step_limit(cursor.env) or MAX_EPISODE_STEPS
    return length_score(ret, cursor.decisions, max_len, options.length_penalty)


def build_pairs(
    game: Game,
    expert: Policy,
    student: Policy,
    forward: Policy,
    seeds: Sequence[int],
    options: PairOptions,
    progress: bool | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Stage 3 over ``seeds``: the kept pairs (JSON rows) and counts."""
    from tqdm import tqdm

    if options.rejected not in ("legal", "any"):
        raise ArenaError(f"pairs.rejected must be 'legal' or 'any', got {options.rejected!r}")
    if options.student_samples < 1:
        raise ArenaError(f"pairs.student_samples must be at least 1, got {options.student_samples}")
    pairs: list[dict[str, Any]] = []
    counts = {
        "states": 0,
        "student_valid": 0,
        "student_answers": 0,
        "illegal_answers": 0,
        "no_legal_answer": 0,
        "agree": 0,
        "valued": 0,
        "kept": 0,
        "legal_pairs": 0,
        "illegal_rejected": 0,
        "student_chosen": 0,
    }
    gaps: list[float] = []
    for seed in tqdm(seeds, desc="safari pairs", unit="task", disable=None if progress is None else not progress):
        env = game.make_env()
        opponents = game.opponents(seed)
        cursor = game.start(env, int(seed), opponents)
        while not cursor.done and cursor.decisions < options.states_per_task:
            view = game.view(cursor)
            turn = game.turn(cursor, view)
            messages = game.prompt(turn)
            decision = cursor.decisions
            node = game.fork(cursor)
            expert_choice = expert.choose(game, [cursor], [derive_seed(seed, "expert", decision)])[0]
            restore(env, node.snap)  # a model expert or student never touches the env, a scripted one may search
            answers = student.choose(game, [cursor], [derive_seed(seed, "student", decision)])
            restore(env, node.snap)
            if expert_choice.action is None:
                break
            if options.rejected == "legal" and answers[0].action is None and options.student_samples > 1:
                more = range(1, options.student_samples)
                answers += student.choose(
                    game, [cursor] * len(more), [derive_seed(seed, "student", decision, k) for k in more]
                )
                restore(env, node.snap)
            sample = next((k for k, c in enumerate(answers) if c.action is not None), 0)
            student_choice = answers[sample]
            counts["states"] += 1
            counts["student_valid"] += int(answers[0].action is not None)
            counts["student_answers"] += len(answers)
            counts["illegal_answers"] += sum(c.action is None for c in answers)
            counts["no_legal_answer"] += int(student_choice.action is None)
            names = {m.action: m.name for m in turn.legal_moves}
            if student_choice.action == expert_choice.action:
                counts["agree"] += 1
            elif student_choice.action is None and options.rejected == "legal":
                pass  # no legal answer to pair with: counted in no_legal_answer, never a rejected side
            else:
                if student_choice.action is None:
                    (v_expert,) = rollout_values(
                        game,
                        node,
                        [expert_choice.action],
                        forward,
                        options.rollouts,
                        options,
                        derive_seed(seed, "values", decision),
                        derive_seed(seed, "rollout-opponents", decision),
                    )
                    v_student = options.invalid_value
                else:
                    v_expert, v_student = rollout_values(
                        game,
                        node,
                        [expert_choice.action, student_choice.action],
                        forward,
                        options.rollouts,
                        options,
                        derive_seed(seed, "values", decision),
                        derive_seed(seed, "rollout-opponents", decision),
                    )
                counts["valued"] += 1
                gaps.append(abs(v_expert - v_student))
                if abs(v_expert - v_student) > options.margin:
                    student_better = v_student > v_expert
                    student_legal = student_choice.action is not None
                    expert_answer = answer_of(names[expert_choice.action])
                    pairs.append(
                        {
                            "messages": [{"role": m.role, "content": m.content} for m in messages],
                            "chosen": student_choice.answer if student_better else expert_answer,
                            "rejected": expert_answer if student_better else student_choice.answer,
                            "chosen_by": "student" if student_better else "expert",
                            "values": {"expert": v_expert, "student": v_student},
                            "expert_move": names[expert_choice.action],
                            "student_move": None if student_choice.action is None else names.get(student_choice.action),
                            "student_legal": student_legal,
                            "student_sample": sample,
                            "arena": game.arena,
                            "task_seed": int(seed),
                            "decision": decision,
                            "rollouts": options.rollouts,
                        }
                    )
                    counts["kept"] += 1
                    counts["legal_pairs"] += int(student_legal)
                    counts["illegal_rejected"] += int(not student_legal)
                    counts["student_chosen"] += int(student_better)
            cursor = game.resume(node, env)
            game.apply(cursor, turn, expert_choice.action, opponents)
        env.close()
    stats: dict[str, Any] = dict(counts)
    states = max(1, counts["states"])
    stats.update(
        {
            "rejected": options.rejected,
            "student_valid_rate": counts["student_valid"] / states,
            "agreement_rate": counts["agree"] / states,
            "mean_value_gap": float(np.mean(gaps)) if gaps else 0.0,
        }
    )
    return pairs, stats


# ----------------------------------------------------------------------------------------------------------------
# Stage 4: DPO plus SFT
# ----------------------------------------------------------------------------------------------------------------


@attrs.frozen
class DPOOptions:
    beta: float = 0.1
    sft_coef: float = 1.0
    epochs: int = 2
    lr: float = 2e-5
    batch_size: int = 8
    seed: int = 0


def pair_units(backend: Any, rows: Sequence[Mapping[str, Any]], sft_coef: float) -> list[list[Any]]:
    """Per pair: ``dpo_chosen`` and ``dpo_rejected`` samples sharing ``meta["pair"]``, plus an ``sft`` sample of the
    chosen answer when ``sft_coef > 0``."""
    from arena.core import messages_of, text_sample

    units = []
    for k, row in enumerate(rows):
        messages = messages_of(row["messages"])
        unit = [
            text_sample(backend, messages, str(row["chosen"]), "dpo_chosen", {"pair": k}, f"pair-{k}"),
            text_sample(backend, messages, str(row["rejected"]), "dpo_rejected", {"pair": k}, f"pair-{k}"),
        ]
        if sft_coef > 0:
            unit.append(text_sample(backend, messages, str(row["chosen"]), "sft", {"pair_sft": k}, f"pair-{k}"))
        units.append(unit)
    return units


def run_dpo(
    pairs_path: Path, model_spec: str, out: Path, options: DPOOptions, progress: bool | None = None
) -> dict[str, Any]:
    """Stage 4: DPO (+ SFT) on the pairs file; the model goes to ``out`` (loads as ``model:OUT``)."""
    from tqdm import tqdm

    from arena.core import load_backend, make_trainer, mean_of, save_model, train_batches

    started = time.perf_counter()
    rows = [json.loads(line) for line in Path(pairs_path).read_text().splitlines() if line.strip()]
    backend = load_backend(model_spec)
    out.mkdir(parents=True, exist_ok=True)
    history: list[dict[str, float]] = []
    if rows:
        units = pair_units(backend, rows, options.sft_coef)
        trainer = make_trainer(backend, options.lr, 8192, 1.0, dpo_beta=options.beta, sft_coef=options.sft_coef)
        steps = options.epochs * math.ceil(len(units) / options.batch_size)
        bar = tqdm(total=steps, desc="safari dpo", unit="step", disable=None if progress is None else not progress)
        try:
            history = train_batches(
                trainer, units, options.epochs, options.batch_size, options.seed, lambda _: bar.update(1)
            )
        finally:
            bar.close()
        save_model(backend, trainer, out)
    else:
        # Nothing to learn from: the output is the input model, so later stages still find a model here.
        save_model(backend, None, out)
    per_epoch = max(1, math.ceil(len(rows) / options.batch_size))
    summary = {
        "stage": "dpo",
        "pairs": len(rows),
        "model": model_spec,
        "out": str(out),
        "options": attrs.asdict(options),
        "steps": len(history),
        "loss_first_epoch": mean_of(history[:per_epoch], "train/loss"),
        "loss_last_epoch": mean_of(history[-per_epoch:], "train/loss"),
        "reward_accuracy_first_epoch": mean_of(history[:per_epoch], "train/dpo_reward_accuracy"),
        "reward_accuracy_last_epoch": mean_of(history[-per_epoch:], "train/dpo_reward_accuracy"),
        "reward_margin_last_epoch": mean_of(history[-per_epoch:], "train/dpo_reward_margin"),
        "seconds": round(time.perf_counter() - started, 3),
    }
    (out / "dpo_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


# ----------------------------------------------------------------------------------------------------------------
# Evaluation and the whole pipeline
# ----------------------------------------------------------------------------------------------------------------


@attrs.frozen
class EvalOptions:
    """``tasks`` 0 skips evaluation; ``arena_kwargs`` override the run's (e.g. ``split: test``)."""

    tasks: int = 0
    samples: int = 4
    first_seed: int = 0
    arena_kwargs: dict[str, Any] = attrs.field(factory=dict)
    #: Evaluate the starting model too (off: only the SFT and DPO models, e.g. for the seeds of a comparison
    #: whose starting model was measured once on the same tasks).
    base: bool = True


@attrs.frozen
class SafariConfig:
    """``arena safari run CONFIG``: every stage with these settings, into ``out``."""

    arena: str
    expert: str
    model: str = "model:tiny"
    arena_kwargs: dict[str, Any] = attrs.field(factory=dict)
    learner_seat: int = 0
    opponents: list[str] = attrs.field(factory=list)
    tasks: int = 8
    first_seed: int = 0
    pair_tasks: int = 8
    pair_first_seed: int = 1000
    #: The SFT stage's example order (``SFTSettings.seed``); independent runs vary it with ``first_seed``,
    #: ``pair_first_seed`` and ``dpo.seed``.
    seed: int = 0
    out: str | None = None
    data: DataOptions = attrs.field(factory=DataOptions)
    sft_epochs: int = 2
    sft_lr: float = 1e-4
    sft_batch_size: int = 16
    pairs: PairOptions = attrs.field(factory=PairOptions)
    dpo: DPOOptions = attrs.field(factory=DPOOptions)
    eval: EvalOptions = attrs.field(factory=EvalOptions)
    #: How evaluation trials are played (invalid-answer policy, answer budget, temperature): set it to the
    #: ``trial`` section of the RL run SAFARI is compared with, so both are measured the same way.
    trial: TrialConfig = attrs.field(factory=TrialConfig)


def evaluate_model(
    model_spec: str, game: Game, options: EvalOptions, trial: TrialConfig | None = None
) -> dict[str, Any]:
    """pass@k on a one-player arena; win rate and mean return against the opponents in a game."""
    from arena.core import PluginSet, RolloutEngine, evaluate_tasks

    trial = trial or TrialConfig()
    kwargs = {**game.arena_kwargs, **options.arena_kwargs}
    if len(game.agents) == 1:
        report = evaluate_tasks(
            model_spec,
            game.arena,
            kwargs,
            options.tasks,
            options.samples,
            trial_config=trial,
            first_seed=options.first_seed,
        )
        return {
            "pass_at_k": report["pass_at_k"],
            "success_rate": report["success_rate"],
            "mean_score": report["mean_score"],
            "flags": report["flags"],
        }
    seats = tuple(model_spec if s == LEARNER_SEAT_SPEC else s for s in game.seats)
    specs = [
        TrialSpec(
            trial_id=f"safari-eval-{seed}-{j}",
            arena_id=game.arena,
            seats=seats,
            seed=seed,
            arena_kwargs=kwargs,
            training=False,
        )
        for seed in range(options.first_seed, options.first_seed + options.tasks)
        for j in range(options.samples)
    ]
    trials = RolloutEngine(PluginSet([]), trial).run(specs)
    outcomes = [t.final.outcomes[game.learner] for t in trials]
    return {
        "games": len(trials),
        "win_rate": float(np.mean([o == "win" for o in outcomes])),
        "draw_rate": float(np.mean([o == "draw" for o in outcomes])),
        "mean_return": float(np.mean([t.final.returns[game.learner] for t in trials])),
    }


def game_of(config: SafariConfig) -> Game:
    return Game(config.arena, config.arena_kwargs, config.learner_seat, config.opponents)


def write_pairs(
    pairs: Sequence[Mapping[str, Any]], stats: Mapping[str, Any], out: Path, extra: Mapping[str, Any]
) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    with (out / "pairs.jsonl").open("w") as handle:
        for row in pairs:
            handle.write(json.dumps(row) + "\n")
    summary = {"stage": "pairs", **extra, **stats}
    (out / "pairs_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def run_pairs(
    game: Game,
    model_spec: str,
    expert_spec: str,
    seeds: Sequence[int],
    options: PairOptions,
    out: Path,
    progress: bool | None = None,
) -> dict[str, Any]:
    started = time.perf_counter()
    student = ModelPolicy(model_spec, temperature=options.temperature, max_new_tokens=game.prompt_config.max_new_tokens)
    expert = make_policy(expert_spec, game, seed=1)
    forward: Policy = student if options.rollout_policy == "student" else make_policy(expert_spec, game, seed=2)
    pairs, stats = build_pairs(game, expert, student, forward, seeds, options, progress)
    extra = {
        "arena": game.arena,
        "model": model_spec,
        "expert": expert_spec,
        "tasks": len(seeds),
        "options": attrs.asdict(options),
        "seconds": round(time.perf_counter() - started, 3),
    }
    return write_pairs(pairs, stats, out, extra)


def run_pipeline(config: SafariConfig, out: Path, progress: bool | None = None) -> dict[str, Any]:
    """All stages of ``config`` into ``out``; returns (and writes as ``summary.json``) every stage's summary."""
    from arena.core import SFTSettings, run_sft

    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(attrs.asdict(config), indent=2) + "\n")
    game = game_of(config)
    summary: dict[str, Any] = {}
    expert = make_policy(config.expert, game, seed=0)
    seeds = list(range(config.first_seed, config.first_seed + config.tasks))
    summary["data"] = build_data(game, expert, seeds, config.data, out / "data", progress)
    if summary["data"]["examples"] == 0:
        raise ArenaError("the expert kept no successful line: no SFT data (more tasks, or another expert)")
    settings = SFTSettings(
        epochs=config.sft_epochs, lr=config.sft_lr, batch_size=config.sft_batch_size, seed=config.seed
    )
    summary["sft"] = run_sft(out / "data" / "sft.jsonl", config.model, out / "sft", settings, progress)
    sft_spec = f"model:{out / 'sft'}"
    pair_seeds = list(range(config.pair_first_seed, config.pair_first_seed + config.pair_tasks))
    summary["pairs"] = run_pairs(game, sft_spec, config.expert, pair_seeds, config.pairs, out / "pairs", progress)
    summary["dpo"] = run_dpo(out / "pairs" / "pairs.jsonl", sft_spec, out / "dpo", config.dpo, progress)
    if config.eval.tasks > 0:
        summary["eval"] = {
            label: evaluate_model(spec, game, config.eval, config.trial)
            for label, spec in (("base", config.model), ("sft", sft_spec), ("dpo", f"model:{out / 'dpo'}"))
            if label != "base" or config.eval.base
        }
    summary["seconds"] = round(time.perf_counter() - started, 3)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def format_summary(summary: Mapping[str, Any]) -> str:
    """A few lines per stage for the terminal."""
    lines = []
    if "data" in summary:
        d = summary["data"]
        lines.append(
            f"data: {d['tasks']} tasks, {d['lines']} lines ({d['successful_lines']} successful, "
            f"{d['kept_lines']} kept), "
            f"{d['examples']} examples; expert pass rate {d['expert_pass_rate']:.2f}; {d['seconds']:.1f}s"
        )
    if "sft" in summary:
        s = summary["sft"]
        lines.append(
            f"sft: {s['examples']} examples, {s['steps']} steps, loss {s['loss_first_epoch']} → "
            f"{s['loss_last_epoch']}; {s['seconds']:.1f}s"
        )
    if "pairs" in summary:
        p = summary["pairs"]
        lines.append(
            f"pairs: {p['states']} states, student valid {p['student_valid_rate']:.2f}, "
            f"agrees {p['agreement_rate']:.2f}, {p['valued']} valued, {p['kept']} kept "
            f"({p.get('legal_pairs', '?')} legal vs legal, {p.get('illegal_rejected', '?')} with an illegal "
            f"rejected answer, {p['student_chosen']} with the student's answer chosen); {p['seconds']:.1f}s"
        )
        if p.get("no_legal_answer"):
            legal = p.get("rejected") == "legal"
            samples = p.get("options", {}).get("student_samples", 1) if legal else 1
            what = "no pair there (rejected: legal)" if legal else "each valued at invalid_value (rejected: any)"
            lines.append(
                f"pairs: {p['no_legal_answer']} of {p['states']} states without a legal student answer in "
                f"{samples} sample(s), {what}; {p.get('illegal_answers', '?')} of "
                f"{p.get('student_answers', '?')} answers drawn named no legal move"
            )
    if "dpo" in summary:
        q = summary["dpo"]
        lines.append(
            f"dpo: {q['pairs']} pairs, {q['steps']} steps, loss {q['loss_first_epoch']} → {q['loss_last_epoch']}, "
            f"reward accuracy {q['reward_accuracy_last_epoch']}; {q['seconds']:.1f}s"
        )
    from arena.core import format_flag

    for label, report in (summary.get("eval") or {}).items():
        parts = [f"{k} {v}" for k, v in report.items() if k != "flags"]
        parts += [format_flag(k, f) for k, f in (report.get("flags") or {}).items()]
        lines.append(f"eval {label}: " + ", ".join(parts))
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------------------------
# Commands
# ----------------------------------------------------------------------------------------------------------------


def _kwargs(items: Sequence[str]) -> dict[str, Any]:
    import yaml

    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.UsageError(f"--arena-kwarg expects KEY=VALUE, got {item!r}")
        out[key] = yaml.safe_load(value)
    return out


_DATA, _PAIRS, _DPO = DataOptions(), PairOptions(), DPOOptions()
_ARENA_OPTIONS = [
    click.option("--arena", "arena_id", required=True, help="Arena id (text_maze, tic_tac_toe, kuhn_poker...)."),
    click.option("--arena-kwarg", "arena_kwargs", multiple=True, help="KEY=VALUE arena option (repeat)."),
    click.option("--seat", "learner_seat", type=int, default=0, show_default=True, help="The learner's seat."),
    click.option("--opponent", "opponents", multiple=True, help="Seat spec of each other seat, in seat order."),
    click.option(
        "--expert", required=True, help="Expert: an opponent id (text_maze-explorer, mcts:200) or model spec."
    ),
    click.option("--tasks", type=int, default=8, show_default=True, help="Tasks (arena seeds)."),
    click.option("--first-seed", type=int, default=0, show_default=True, help="Seed of the first task."),
    click.option("--out", type=click.Path(path_type=Path), required=True, help="Output directory."),
]


def _with(options: Sequence[Callable[[Any], Any]]) -> Callable[[Any], Any]:
    def decorate(f: Any) -> Any:
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


@hookimpl
def register_commands(cli: Any) -> None:
    @cli.group("safari")
    def safari() -> None:
        """SAFARI: expert tree data → SFT → contrastive pairs by Monte-Carlo values → DPO + SFT."""

    @safari.command("data")
    @_with(_ARENA_OPTIONS)
    @click.option("--width", type=int, default=_DATA.width, show_default=True, help="Actions tried per branch point.")
    @click.option("--depth", type=int, default=_DATA.depth, show_default=True, help="Decisions that may branch.")
    @click.option("--max-deviations", type=int, default=_DATA.max_deviations, show_default=True)
    @click.option("--max-trajectories", type=int, default=_DATA.max_trajectories, show_default=True)
    @click.option("--length-penalty", type=float, default=_DATA.length_penalty, show_default=True, help="λ.")
    @click.option("--keep-fraction", type=float, default=_DATA.keep_fraction, show_default=True)
    @click.option("--train-on", type=click.Choice(["all", "expert"]), default="all", show_default=True)
    def data_cmd(
        arena_id: str,
        arena_kwargs: tuple[str, ...],
        learner_seat: int,
        opponents: tuple[str, ...],
        expert: str,
        tasks: int,
        first_seed: int,
        out: Path,
        width: int,
        depth: int,
        max_deviations: int,
        max_trajectories: int,
        length_penalty: float,
        keep_fraction: float,
        train_on: Literal["all", "expert"],
    ) -> None:
        """Stage 1: the expert's tree of lines → DIR/sft.jsonl (+ trajectories.jsonl, data_summary.json)."""
        game = Game(arena_id, _kwargs(arena_kwargs), learner_seat, opponents)
        options = DataOptions(
            width=width,
            depth=depth,
            max_deviations=max_deviations,
            max_trajectories=max_trajectories,
            length_penalty=length_penalty,
            keep_fraction=keep_fraction,
            train_on=train_on,
        )
        seeds = list(range(first_seed, first_seed + tasks))
        summary = build_data(game, make_policy(expert, game), seeds, options, out)
        click.echo(format_summary({"data": summary}))

    @safari.command("pairs")
    @_with(_ARENA_OPTIONS)
    @click.option("--model", "model_spec", required=True, help="The student (the SFT model), e.g. model:DIR.")
    @click.option("--states-per-task", type=int, default=_PAIRS.states_per_task, show_default=True)
    @click.option("--rollouts", type=int, default=_PAIRS.rollouts, show_default=True, help="M per action.")
    @click.option("--rollout-policy", type=click.Choice(["expert", "student"]), default="expert", show_default=True)
    @click.option("--value", type=click.Choice(["scored", "return"]), default="scored", show_default=True)
    @click.option("--margin", type=float, default=_PAIRS.margin, show_default=True)
    @click.option("--temperature", type=float, default=_PAIRS.temperature, show_default=True)
    @click.option(
        "--rejected",
        type=click.Choice(["legal", "any"]),
        default=_PAIRS.rejected,
        show_default=True,
        help="legal: both sides of a pair are legal moves; any: an illegal student answer may be the rejected one.",
    )
    @click.option(
        "--student-samples",
        type=int,
        default=_PAIRS.student_samples,
        show_default=True,
        help="Answers drawn at a state (--rejected legal) until one names a legal move.",
    )
    def pairs_cmd(
        arena_id: str,
        arena_kwargs: tuple[str, ...],
        learner_seat: int,
        opponents: tuple[str, ...],
        expert: str,
        tasks: int,
        first_seed: int,
        out: Path,
        model_spec: str,
        states_per_task: int,
        rollouts: int,
        rollout_policy: Literal["expert", "student"],
        value: Literal["scored", "return"],
        margin: float,
        temperature: float,
        rejected: Literal["legal", "any"],
        student_samples: int,
    ) -> None:
        """Stage 3: (expert, student) action pairs valued by rollouts → DIR/pairs.jsonl (+ pairs_summary.json)."""
        game = Game(arena_id, _kwargs(arena_kwargs), learner_seat, opponents)
        options = PairOptions(
            states_per_task=states_per_task,
            rollouts=rollouts,
            rollout_policy=rollout_policy,
            value=value,
            margin=margin,
            temperature=temperature,
            rejected=rejected,
            student_samples=student_samples,
        )
        summary = run_pairs(game, model_spec, expert, list(range(first_seed, first_seed + tasks)), options, out)
        click.echo(format_summary({"pairs": summary}))

    @safari.command("dpo")
    @click.argument("pairs", type=click.Path(path_type=Path, exists=True, dir_okay=False))
    @click.option("--model", "model_spec", required=True, help="The model to train (the SFT model), model:DIR.")
    @click.option("--out", type=click.Path(path_type=Path), required=True)
    @click.option("--beta", type=float, default=_DPO.beta, show_default=True)
    @click.option("--sft-coef", type=float, default=_DPO.sft_coef, show_default=True, help="0 turns SFT off.")
    @click.option("--epochs", type=int, default=_DPO.epochs, show_default=True)
    @click.option("--lr", type=float, default=_DPO.lr, show_default=True)
    @click.option("--batch-size", type=int, default=_DPO.batch_size, show_default=True, help="Pairs per step.")
    def dpo_cmd(
        pairs: Path, model_spec: str, out: Path, beta: float, sft_coef: float, epochs: int, lr: float, batch_size: int
    ) -> None:
        """Stage 4: DPO (+ SFT on the chosen answers) on PAIRS; OUT loads as model:OUT."""
        options = DPOOptions(beta=beta, sft_coef=sft_coef, epochs=epochs, lr=lr, batch_size=batch_size)
        click.echo(format_summary({"dpo": run_dpo(pairs, model_spec, out, options)}))

    @safari.command("run")
    @click.argument("config_path")
    @click.argument("overrides", nargs=-1)
    @click.option("--out", type=click.Path(path_type=Path), default=None, help="Output dir. [default: config's out]")
    def run_cmd(config_path: str, overrides: tuple[str, ...], out: Path | None) -> None:
        """Every stage of a SAFARI config (KEY=VALUE overrides, e.g. tasks=4 data.width=3)."""
        from arena.core import load_config

        config = load_config(SafariConfig, config_path, overrides)
        target = out or Path(config.out or f"runs/safari-{config.arena}")
        summary = run_pipeline(config, target)
        click.echo(format_summary(summary))
        click.echo(f"summary: {target / 'summary.json'}")
