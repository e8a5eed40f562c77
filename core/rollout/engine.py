"""The rollout engine: many trials at once, one backend batch per tick.

A *trial* is ``episodes`` episodes of one arena with fixed seats, each restarted from the trial's seed, with
reflection turns in between (``reflect`` hook). Each trial is an asyncio coroutine; LLM seats ``await`` the
``TickBatcher``, which sends every pending request of every live trial to the backend as one batch when all
live trials are waiting. Programmatic opponents answer synchronously. Hooks fire in the order documented in
``arena.core.api.hookspecs``.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np
import structlog

from arena.core.api.arena import Move, ParseResult, SeatView
from arena.core.api.backend import Backend, ChatMessage, Completion, GenerationRequest, Segment
from arena.core.api.errors import ArenaError, PluginError
from arena.core.api.records import (
    ActionPlan,
    EpisodeRecord,
    MemoryItem,
    Outcome,
    Reflection,
    ReflectionRequest,
    Step,
    TrialRecord,
    TrialSpec,
    Turn,
)
from arena.core.api.seeding import derive_seed
from arena.core.config.trial import TrialConfig
from arena.core.host import catalog
from arena.core.host.plugins import PluginSet
from arena.core.rollout.batching import BatchStats, TickBatcher
from arena.core.rollout.prompts import build_turn_prompt
from arena.core.rollout.seats import BackendPool, SeatSpec, make_opponent, parse_seat
from arena.core.rollout.text_adapter import action_mask_of, adapter_for, parse_action

log = structlog.get_logger("arena.engine")


@attrs.frozen
class _Decision:
    step: Step
    action: Any
    forfeit: bool


@attrs.define
class _Seat:
    spec: SeatSpec
    agent: str
    index: int
    backend: Backend | None = None
    opponent: Any = None

    @property
    def is_llm(self) -> bool:
        return self.backend is not None


@attrs.define
class _TrialState:
    """Mutable bookkeeping of one running trial; only frozen records leave it."""

    spec: TrialSpec
    env: Any
    adapter: Any
    seats: list[_Seat]
    episodes: list[EpisodeRecord] = attrs.field(factory=list)
    reflections: list[Reflection] = attrs.field(factory=list)
    #: Scripted players standing behind ``oracle:`` guides (``Guide``), one per (spec, seat), made on first use.
    oracles: dict[tuple[str, int], Any] = attrs.field(factory=dict)


def episode_outcomes(returns: dict[str, float], env: Any = None) -> dict[str, Outcome]:
    """Win if a seat's return beats every other seat's, draw if tied for best, else loss.

    A single-agent episode is a win when its return is positive. An env can decide for itself through
    ``env.unwrapped.arena_outcome(returns, agent)``.
    """
    custom = getattr(getattr(env, "unwrapped", None), "arena_outcome", None)
    outcomes: dict[str, Outcome] = {}
    for agent, value in returns.items():
        if custom is not None:
            outcomes[agent] = custom(returns, agent)
            continue
        others = [v for a, v in returns.items() if a != agent]
        if not others:
            outcomes[agent] = "win" if value > 0 else "loss"
        elif value > max(others):
            outcomes[agent] = "win"
        elif value == max(others):
            outcomes[agent] = "draw"
        else:
            outcomes[agent] = "loss"
    return outcomes


def extract_tag(text: str, tag: str | None) -> str:
    """The content of the last ``<tag>…</tag>`` (an unclosed last tag runs to the end); else the whole text."""
    if not tag:
        return text.strip()
    closed = re.findall(rf"<{tag}>(.*?)</{tag}>", text, flags=re.IGNORECASE | re.DOTALL)
    if closed:
        return str(closed[-1]).strip()
    opened = re.split(rf"<{tag}>", text, flags=re.IGNORECASE)
    if len(opened) > 1:
        return opened[-1].strip()
    return text.strip()


def trained_seats(spec: TrialSpec, llm_seats: Sequence[int]) -> tuple[int, ...]:
    """The seats held by a learner of the run: ``meta["trained_seats"]`` when the trainer set it (the learner's
    seat and any co-evolving learner's), else every seat holding the spec of ``meta["learner_seat"]``, else every
    LLM seat (``arena play``)."""
    if "trained_seats" in spec.meta:
        return tuple(int(i) for i in spec.meta["trained_seats"])
    learner_seat = spec.meta.get("learner_seat")
    if learner_seat is None:
        return tuple(llm_seats)
    learner = spec.seats[int(learner_seat)]
    return tuple(i for i, text in enumerate(spec.seats) if text == learner)


def trial_won(spec: TrialSpec, seats: Sequence[_Seat], record: EpisodeRecord) -> bool:
    """``early_stop_on_win``'s test: every trained seat won ``record``.

    A trial is won *for a seat*. Against a fixed LLM opponent (a snapshot, a model member of the pool) only the
    learner's win stops the trial. "Any LLM seat won" stopped every LLM-vs-LLM trial after its first episode,
    since one seat or the other wins every decisive episode. Two trained seats (two co-evolving learners, a
    learner against itself, two LLM seats in ``arena play``) cannot both win, so such a match plays every episode.
    """
    trained = trained_seats(spec, [s.index for s in seats if s.is_llm])
    return bool(trained) and all(record.outcomes.get(seats[i].agent) == "win" for i in trained)


class RolloutEngine:
    """Plays trials concurrently.

    ``plugins`` are the enabled plugins of the run; ``backends`` resolves ``model:`` seats (pass a pool with
    pre-built backends to share a model with a trainer); ``on_trial_end`` is called with each finished
    ``TrialRecord`` (progress bars, streaming dumps).
    """

    def __init__(
        self,
        plugins: PluginSet,
        config: TrialConfig | None = None,
        backends: BackendPool | None = None,
        max_live_trials: int = 256,
        on_trial_end: Callable[[TrialRecord], None] | None = None,
    ) -> None:
        self.plugins = plugins
        self.config = config or TrialConfig()
        self.backends = backends or BackendPool()
        self.max_live_trials = max_live_trials
        self.on_trial_end = on_trial_end
        self.stats = BatchStats()

    # -- running ------------------------------------------------------------------------------------------

    def run(self, specs: Sequence[TrialSpec]) -> list[TrialRecord]:
        """Play every trial; records come back in the order of ``specs``."""
        return asyncio.run(self.arun(specs))

    async def arun(self, specs: Sequence[TrialSpec]) -> list[TrialRecord]:
        self._validate(specs)
        batcher = TickBatcher()
        results: list[TrialRecord | None] = [None] * len(specs)
        queue = deque(enumerate(specs))
        finished = asyncio.Event()
        failure: list[BaseException] = []
        remaining = [len(specs)]
        tasks: set[asyncio.Task[None]] = set()
        started = time.perf_counter()

        async def play(position: int, spec: TrialSpec) -> None:
            try:
                record = await self._run_trial(spec, batcher)
                results[position] = record
                if self.on_trial_end is not None:
                    self.on_trial_end(record)
            except BaseException as exc:
                failure.append(exc)
                finished.set()
                return
            finally:
                remaining[0] -= 1
                start_next()  # before the flush check, so the newcomer counts as live
                batcher.trial_finished()
            if remaining[0] == 0:
                finished.set()

        def start_next() -> None:
            if queue and not failure:
                position, spec = queue.popleft()
                batcher.trial_started()
                task = asyncio.get_running_loop().create_task(play(position, spec))
                tasks.add(task)
                task.add_done_callback(tasks.discard)

        if not specs:
            return []
        for _ in range(min(self.max_live_trials, len(specs))):
            start_next()
        await finished.wait()
        if failure:
            for task in list(tasks):
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise failure[0]
        self._merge_stats(batcher.stats)
        log.info(
            "trial batch",
            trials=len(specs),
            ticks=batcher.stats.ticks,
            llm_requests=batcher.stats.requests,
            mean_batch=round(batcher.stats.mean_batch, 2),
            seconds=round(time.perf_counter() - started, 3),
        )
        return [r for r in results if r is not None]

    def _merge_stats(self, stats: BatchStats) -> None:
        self.stats.ticks += stats.ticks
        self.stats.requests += stats.requests
        self.stats.batch_sizes.extend(stats.batch_sizes)
        self.stats.generate_seconds += stats.generate_seconds

    def _validate(self, specs: Sequence[TrialSpec]) -> None:
        """Fail on a bad arena or seat before any game starts, with one clear message."""
        checked: set[tuple[str, tuple[str, ...]]] = set()
        for spec in specs:
            key = (spec.arena_id, spec.seats)
            if key in checked:
                continue
            checked.add(key)
            env = catalog.make_arena(spec.arena_id, **spec.arena_kwargs)
            players = len(env.possible_agents)
            env.close()
            if len(spec.seats) != players:
                raise ArenaError(
                    f"arena {spec.arena_id!r} has {players} seat(s) but {len(spec.seats)} were given "
                    f"({', '.join(spec.seats)})"
                )
            for text in spec.seats:
                seat = parse_seat(text)
                if seat.kind == "model":
                    self.backends.get(seat)
                else:
                    make_opponent(seat, spec.arena_id, seed=0)

    # -- one trial ----------------------------------------------------------------------------------------

    async def _run_trial(self, spec: TrialSpec, batcher: TickBatcher) -> TrialRecord:
        env = catalog.make_arena(spec.arena_id, **spec.arena_kwargs)
        try:
            state = _TrialState(spec=spec, env=env, adapter=adapter_for(env), seats=self._make_seats(spec, env))
            self.plugins.call("trial_start", trial=spec)
            for episode in range(spec.episodes):
                self.plugins.call("episode_start", trial=spec, episode=episode)
                record = await self._run_episode(state, episode, batcher)
                state.episodes.append(record)
                self.plugins.call("episode_end", trial=spec, episode=record)
                last = episode + 1 == spec.episodes or (spec.early_stop_on_win and trial_won(spec, state.seats, record))
                await self._reflect(state, record, batcher, last=last)
                if last:
                    break
            trial = TrialRecord(spec=spec, episodes=tuple(state.episodes), reflections=tuple(state.reflections))
            self.plugins.call("trial_end", trial=trial)
            return trial
        finally:
            env.close()

    def _make_seats(self, spec: TrialSpec, env: Any) -> list[_Seat]:
        seats = []
        for index, (text, agent) in enumerate(zip(spec.seats, env.possible_agents, strict=True)):
            seat = parse_seat(text)
            if seat.kind == "model":
                seats.append(_Seat(spec=seat, agent=agent, index=index, backend=self.backends.get(seat)))
            else:
                seed = derive_seed(spec.seed, spec.trial_id, "seat", index)
                opponent = make_opponent(seat, spec.arena_id, seed=seed)
                seats.append(_Seat(spec=seat, agent=agent, index=index, opponent=opponent))
        return seats

    async def _run_episode(self, state: _TrialState, episode: int, batcher: TickBatcher) -> EpisodeRecord:
        if catalog.api_kind(state.env) == "parallel":
            return await self._run_parallel_episode(state, episode, batcher)
        return await self._run_aec_episode(state, episode, batcher)

    async def _run_aec_episode(self, state: _TrialState, episode: int, batcher: TickBatcher) -> EpisodeRecord:
        env, spec = state.env, state.spec
        env.reset(seed=spec.seed)
        by_agent = {seat.agent: seat for seat in state.seats}
        totals = {agent: 0.0 for agent in env.possible_agents}
        steps: list[Step] = []
        forfeited: str | None = None
        for agent in env.agent_iter(self.config.max_steps * len(state.seats) + len(state.seats)):
            observation, reward, termination, truncation, info = env.last()
            totals[agent] += float(reward)
            if termination or truncation:
                env.step(None)
                continue
            if len(steps) >= self.config.max_steps:
                raise ArenaError(f"arena {spec.arena_id!r} episode exceeded max_steps={self.config.max_steps}")
            seat = by_agent[agent]
            view = SeatView(env, agent, seat.index, observation, action_mask_of(observation, info), dict(info))
            (decision,) = await self._decide(state, episode, [(seat, view)], steps, batcher)
            steps.append(decision.step)
            self.plugins.call("post_step", trial=spec, step=decision.step)
            if decision.forfeit:
                forfeited = agent
                break
            env.step(decision.action)
        return self._finish_episode(state, episode, steps, totals, forfeited)

    async def _run_parallel_episode(self, state: _TrialState, episode: int, batcher: TickBatcher) -> EpisodeRecord:
        env, spec = state.env, state.spec
        observations, infos = env.reset(seed=spec.seed)
        by_agent = {seat.agent: seat for seat in state.seats}
        totals = {agent: 0.0 for agent in env.possible_agents}
        steps: list[Step] = []
        forfeited: str | None = None
        rounds = 0
        while env.agents:
            rounds += 1
            if rounds > self.config.max_steps:
                raise ArenaError(f"arena {spec.arena_id!r} episode exceeded max_steps={self.config.max_steps}")
            pairs = []
            for agent in env.agents:
                seat = by_agent[agent]
                info = dict(infos.get(agent, {}))
                obs = observations[agent]
                pairs.append((seat, SeatView(env, agent, seat.index, obs, action_mask_of(obs, info), info)))
            decisions = await self._decide(state, episode, pairs, steps, batcher)
            actions = {}
            for (seat, _), decision in zip(pairs, decisions, strict=True):
                steps.append(decision.step)
                self.plugins.call("post_step", trial=spec, step=decision.step)
                if decision.forfeit and forfeited is None:
                    forfeited = seat.agent
                actions[seat.agent] = decision.action
            if forfeited is not None:
                break
            observations, rewards, _, _, infos = env.step(actions)
            for agent, value in rewards.items():
                totals[agent] += float(value)
        return self._finish_episode(state, episode, steps, totals, forfeited)

    def _finish_episode(
        self, state: _TrialState, episode: int, steps: list[Step], totals: dict[str, float], forfeited: str | None
    ) -> EpisodeRecord:
        invalid_cfg = self.config.invalid_action
        returns = dict(totals)
        if forfeited is not None:
            returns = {
                agent: invalid_cfg.offender_reward if agent == forfeited else invalid_cfg.other_reward
                for agent in totals
            }
        invalid = {agent: 0 for agent in totals}
        for step in steps:
            invalid[step.agent] += step.invalid_answers
        summaries = {}
        details: dict[str, dict[str, Any]] = {}
        details_of = getattr(state.adapter, "episode_details", None)
        for seat in state.seats:
            if not seat.is_llm:
                continue
            if details_of is not None:
                details[seat.agent] = dict(details_of(SeatView(state.env, seat.agent, seat.index, None, None, {})))
            if forfeited is not None:
                who = "You" if forfeited == seat.agent else forfeited
                summaries[seat.agent] = (
                    f"The episode ended early: {who} gave no legal move and forfeited. "
                    f"Your return: {returns[seat.agent]:+g}."
                )
            else:
                view = SeatView(state.env, seat.agent, seat.index, None, None, {})
                summaries[seat.agent] = state.adapter.episode_summary(view)
        return EpisodeRecord(
            trial_id=state.spec.trial_id,
            index=episode,
            seed=state.spec.seed,
            steps=tuple(steps),
            returns=returns,
            outcomes=episode_outcomes(returns, state.env),
            invalid_actions=invalid,
            forfeited_by=forfeited,
            summaries=summaries,
            details=details,
        )

    # -- decisions ----------------------------------------------------------------------------------------

    async def _decide(
        self,
        state: _TrialState,
        episode: int,
        pairs: Sequence[tuple[_Seat, SeatView]],
        steps: Sequence[Step],
        batcher: TickBatcher,
    ) -> list[_Decision]:
        """Decisions for several seats that move at once (one seat in an AEC arena); LLM seats batch together."""
        decisions: list[_Decision | None] = [None] * len(pairs)
        llm: list[tuple[int, _Seat, SeatView]] = []
        for position, (seat, view) in enumerate(pairs):
            if seat.is_llm:
                llm.append((position, seat, view))
            else:
                decisions[position] = self._opponent_decision(state, episode, seat, view, len(steps) + position)
        if llm:
            answers = await self._llm_decisions(state, episode, llm, steps, batcher)
            for (position, _, _), decision in zip(llm, answers, strict=True):
                decisions[position] = decision
        return [d for d in decisions if d is not None]

    def _opponent_decision(
        self, state: _TrialState, episode: int, seat: _Seat, view: SeatView, index: int
    ) -> _Decision:
        if getattr(state.adapter, "parse_answer", None) is not None:
            # A free-text arena (TextArena's games): the opponent's action is the env's own text, and the env
            # judges it, as it judges a model's parsed answer.
            text_action = seat.opponent.act(view)
            name = state.adapter.action_name(view, text_action)
            step = Step(episode=episode, index=index, agent=seat.agent, seat=seat.index, action=text_action, move=name)
            return _Decision(step=step, action=text_action, forfeit=False)
        action = int(seat.opponent.act(view))
        legal = view.legal_actions()
        if action not in legal:
            raise PluginError(
                f"opponent {seat.spec.text!r} played illegal action {action} in arena {state.spec.arena_id!r} "
                f"(legal: {legal})"
            )
        move = state.adapter.action_name(view, action)
        step = Step(episode=episode, index=index, agent=seat.agent, seat=seat.index, action=action, move=move)
        return _Decision(step=step, action=action, forfeit=False)

    def _turn(
        self, state: _TrialState, episode: int, seat: _Seat, view: SeatView, steps: Sequence[Step], index: int
    ) -> Turn:
        adapter = state.adapter
        return Turn(
            trial=state.spec,
            episode=episode,
            step=index,
            agent=seat.agent,
            seat=seat.index,
            rules=adapter.rules(view),
            observation=adapter.observation(view),
            legal_moves=tuple(adapter.legal_moves(view)),
            history=tuple(steps),
            earlier_episodes=tuple(state.episodes),
            reflections=tuple(state.reflections),
            answer_format=answer_format(view) if (answer_format := getattr(adapter, "answer_format", None)) else None,
            default_segment=Segment(temperature=self.config.prompt.temperature, top_p=self.config.prompt.top_p),
        )

    def _plan(
        self, turn: Turn
    ) -> tuple[list[MemoryItem], list[str], tuple[Segment, ...], int, dict[str, dict[str, Any]], bool]:
        memories = [item for items in self.plugins.call("retrieve_memory", turn=turn) for item in items]
        plans: list[ActionPlan] = self.plugins.call("pre_action", turn=turn)
        prompt_cfg = self.config.prompt
        segments: tuple[Segment, ...] = (turn.default_segment or Segment(prompt_cfg.temperature, prompt_cfg.top_p),)
        max_new_tokens = prompt_cfg.max_new_tokens
        owner: str | None = None
        for plan in plans:
            if plan.segments is None and plan.max_new_tokens is None:
                continue
            name = plan.source or "a plugin"
            if owner is not None:
                raise PluginError(
                    f"plugins {owner!r} and {name!r} both set the sampling plan in hook 'pre_action' (implemented "
                    f"by {', '.join(self.plugins.implements('pre_action'))}); only one plugin per learner may"
                )
            owner = name
            if plan.segments is not None:
                segments = plan.segments
            if plan.max_new_tokens is not None:
                max_new_tokens = plan.max_new_tokens
        metas = {plan.source or f"pre_action#{i}": dict(plan.meta) for i, plan in enumerate(plans) if plan.meta}
        recompute_old = any(plan.recompute_old for plan in plans)
        return memories, [plan.instructions for plan in plans], segments, max_new_tokens, metas, recompute_old

    def _oracle_targets(
        self, state: _TrialState, seat: _Seat, view: SeatView, segments: tuple[Segment, ...]
    ) -> tuple[Segment, ...]:
        """Fill the ``target`` of every ``oracle:`` guide: the scripted player's move in this seat's state, as the
        answer it would write (``<action>MOVE</action>``). The backend turns it into the oracle's point mass."""
        if not any(s.guide is not None and s.guide.oracle is not None for s in segments):
            return segments
        filled = []
        for segment in segments:
            guide = segment.guide
            if guide is None or guide.oracle is None:
                filled.append(segment)
                continue
            key = (guide.oracle, seat.index)
            if key not in state.oracles:
                seed = derive_seed(state.spec.seed, state.spec.trial_id, "oracle", guide.oracle, seat.index)
                state.oracles[key] = make_opponent(parse_seat(guide.oracle), state.spec.arena_id, seed=seed)
            action = int(state.oracles[key].act(view))
            target = f"<action>{state.adapter.action_name(view, action)}</action>"
            filled.append(attrs.evolve(segment, guide=attrs.evolve(guide, target=target)))
        return tuple(filled)

    async def _llm_decisions(
        self,
        state: _TrialState,
        episode: int,
        llm: Sequence[tuple[int, _Seat, SeatView]],
        steps: Sequence[Step],
        batcher: TickBatcher,
    ) -> list[_Decision]:
        cfg = self.config.invalid_action
        max_attempts = 1 + (cfg.retries if cfg.policy == "retry" else 0)
        turns = [self._turn(state, episode, seat, view, steps, len(steps) + pos) for pos, seat, view in llm]
        # The full action space lets the parser say "illegal move" rather than "no move found".
        all_moves_of = getattr(state.adapter, "all_moves", None)
        all_moves = [tuple(all_moves_of(view)) if all_moves_of else () for _, _, view in llm]
        # Free-text arenas (coding) parse the whole answer into an env action themselves.
        parse_answer = getattr(state.adapter, "parse_answer", None)
        plans = [self._plan(turn) for turn in turns]
        plans = [
            (mem, ins, self._oracle_targets(state, seat, view, segs), max_new, metas, recompute)
            for (mem, ins, segs, max_new, metas, recompute), (_, seat, view) in zip(plans, llm, strict=True)
        ]
        results: list[_Decision | None] = [None] * len(llm)
        notes = [""] * len(llm)
        attempts = [0] * len(llm)
        while True:
            open_slots = [i for i, r in enumerate(results) if r is None]
            if not open_slots:
                break
            items: list[tuple[Backend, GenerationRequest]] = []
            prompts = {}
            for i in open_slots:
                turn, (memories, instructions, segments, max_new, _, _) = turns[i], plans[i]
                attempts[i] += 1
                messages = build_turn_prompt(turn, memories, instructions, self.config.prompt, notes[i])
                prompts[i] = messages
                seed = derive_seed(state.spec.seed, state.spec.trial_id, episode, turn.step, turn.agent, attempts[i])
                request = GenerationRequest(
                    messages=messages, segments=segments, max_new_tokens=max_new, seed=seed, purpose="action"
                )
                seat = llm[i][1]
                assert seat.backend is not None
                items.append((seat.backend, request))
            answers = await batcher.submit(items)
            for i, completions in zip(open_slots, answers, strict=True):
                completion = completions[0]
                turn = turns[i]
                if parse_answer is not None:
                    parsed = parse_answer(llm[i][2], completion.text)
                else:
                    parsed = parse_action(completion.text, turn.legal_moves, all_moves[i])
                if parsed.valid and parse_answer is not None:
                    results[i] = self._text_decision(turn, prompts[i], completion, attempts[i], parsed)
                    continue
                if parsed.valid:
                    move = next(m for m in turn.legal_moves if m.action == parsed.action)
                    results[i] = self._answer_decision(state, turn, prompts[i], completion, attempts[i], move)
                    continue
                error = parsed.error or "invalid answer"
                if attempts[i] < max_attempts:
                    notes[i] = (
                        f"Your previous answer was not a legal move ({error}). "
                        "Answer again with one legal move from the list."
                        if parse_answer is None
                        else f"Your previous answer could not be used ({error}). Answer again."
                    )
                    continue
                if parse_answer is not None:
                    # No move list to draw a random fallback from: a free-text answer that cannot be used forfeits.
                    results[i] = self._text_decision(turn, prompts[i], completion, attempts[i], parsed)
                    continue
                results[i] = self._answer_decision(state, turn, prompts[i], completion, attempts[i], None, error)
        decisions = []
        for i, r in enumerate(results):
            assert r is not None
            changes: dict[str, Any] = {}
            if plans[i][4] or plans[i][5]:
                changes.update(plans=plans[i][4], recompute_old=plans[i][5])
            if r.step.action is not None:
                # Other seats see the adapter's public name of the move, not the actor's own Move.name, which may
                # name what only the actor knows ("hide 9"); taken at the actor's view, before the env steps.
                public = state.adapter.action_name(llm[i][2], r.step.action)
                if public != r.step.move:
                    changes["public_move"] = public
            decisions.append(attrs.evolve(r, step=attrs.evolve(r.step, **changes)) if changes else r)
        return decisions

    def _text_decision(
        self,
        turn: Turn,
        prompt: tuple[ChatMessage, ...],
        completion: Completion,
        attempts: int,
        parsed: ParseResult,
    ) -> _Decision:
        """The step of a free-text answer (``parse_answer``): the env action is whatever the adapter parsed."""
        step = Step(
            episode=turn.episode,
            index=turn.step,
            agent=turn.agent,
            seat=turn.seat,
            action=parsed.action,
            move=parsed.move or ("(answer)" if parsed.valid else "(no usable answer)"),
            observation=turn.observation,
            answer=completion.text,
            invalid=not parsed.valid,
            error=parsed.error,
            attempts=attempts,
            prompt=prompt,
            completion=completion,
        )
        return _Decision(step=step, action=parsed.action, forfeit=not parsed.valid)

    def _answer_decision(
        self,
        state: _TrialState,
        turn: Turn,
        prompt: tuple[ChatMessage, ...],
        completion: Completion,
        attempts: int,
        move: Move | None,
        error: str | None = None,
    ) -> _Decision:
        """The step of an LLM answer: a legal ``move``, or ``error`` and then the invalid-action policy."""
        forfeit = False
        if move is None:
            forfeit = self.config.invalid_action.policy != "random"
            if not forfeit:
                # Episode in the seed: each episode of a trial draws its own fallback moves.
                seed = derive_seed(state.spec.seed, state.spec.trial_id, turn.episode, turn.step, "random")
                rng = np.random.default_rng(seed)
                move = turn.legal_moves[int(rng.integers(len(turn.legal_moves)))]
        step = Step(
            episode=turn.episode,
            index=turn.step,
            agent=turn.agent,
            seat=turn.seat,
            action=move.action if move is not None else None,
            move=move.name if move is not None else "(no legal move)",
            observation=turn.observation,
            answer=completion.text,
            invalid=error is not None,
            error=error,
            attempts=attempts,
            prompt=prompt,
            completion=completion,
        )
        return _Decision(step=step, action=step.action, forfeit=forfeit)

    # -- reflections --------------------------------------------------------------------------------------

    async def _reflect(self, state: _TrialState, record: EpisodeRecord, batcher: TickBatcher, last: bool) -> None:
        spec = state.spec
        wanted: list[tuple[_Seat, ReflectionRequest]] = []
        for seat in state.seats:
            if not seat.is_llm:
                continue
            for request in self.plugins.call(
                "reflect",
                trial=spec,
                episode=record,
                agent=seat.agent,
                seat=seat.index,
                reflections=tuple(state.reflections),
                last=last,
            ):
                wanted.append((seat, request))
        if not wanted:
            return
        items: list[tuple[Backend, GenerationRequest]] = []
        for number, (seat, request) in enumerate(wanted):
            assert seat.backend is not None
            seed = derive_seed(spec.seed, spec.trial_id, record.index, seat.agent, request.name, number)
            items.append(
                (
                    seat.backend,
                    GenerationRequest(
                        messages=request.messages,
                        segments=request.segments,
                        max_new_tokens=request.max_new_tokens,
                        seed=seed,
                        purpose="reflection",
                    ),
                )
            )
        answers = await batcher.submit(items)
        for (seat, request), completions in zip(wanted, answers, strict=True):
            completion = completions[0]
            reflection = Reflection(
                name=request.name,
                trial_id=spec.trial_id,
                episode=record.index,
                agent=seat.agent,
                seat=seat.index,
                content=extract_tag(completion.text, request.extract_tag)[: request.max_chars],
                answer=completion.text,
                prompt=request.messages,
                completion=completion,
                trained=request.trained,
            )
            state.reflections.append(reflection)
            self.plugins.call("store_memory", trial=spec, reflection=reflection)
