"""``arena play``: many games between fixed seats through the real trial loop, summarised per seat."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import attrs
from tqdm import tqdm

from arena.core.api.records import TrialRecord, TrialSpec
from arena.core.config.trial import PlayConfig
from arena.core.host.plugins import PluginSet
from arena.core.rollout.engine import RolloutEngine
from arena.core.rollout.seats import BackendPool


@attrs.frozen
class SeatSummary:
    spec: str
    agent: str
    mean_return: float
    wins: int
    draws: int
    losses: int
    invalid_actions: int


def trial_specs(config: PlayConfig) -> list[TrialSpec]:
    """Game ``i`` is one trial seeded ``config.seed + i``."""
    return [
        TrialSpec(
            trial_id=f"game-{i:06d}",
            arena_id=config.arena,
            seats=tuple(config.seats),
            seed=config.seed + i,
            episodes=config.trial.episodes,
            arena_kwargs=dict(config.arena_kwargs),
            options={name: dict(settings) for name, settings in config.options.items()},
            early_stop_on_win=config.trial.early_stop_on_win,
            training=False,
        )
        for i in range(config.games)
    ]


def summarize(config: PlayConfig, trials: Sequence[TrialRecord]) -> list[SeatSummary]:
    """Per seat: outcome and return of each trial's last played episode; invalid answers over all episodes."""
    if not trials:
        return []
    agents = list(trials[0].final.returns)
    summaries = []
    for spec, agent in zip(config.seats, agents, strict=True):
        finals = [t.final for t in trials]
        outcomes = [e.outcomes[agent] for e in finals]
        summaries.append(
            SeatSummary(
                spec=spec,
                agent=agent,
                mean_return=sum(e.returns[agent] for e in finals) / len(finals),
                wins=outcomes.count("win"),
                draws=outcomes.count("draw"),
                losses=outcomes.count("loss"),
                invalid_actions=sum(e.invalid_actions[agent] for t in trials for e in t.episodes),
            )
        )
    return summaries


def by_episode(trials: Sequence[TrialRecord], agent: str) -> list[dict[str, float]]:
    """Mean return and win rate at each episode index, over the trials that reached it, and ``won_by``: the share
    of all trials won in some episode up to this one (MAGE's trial success, with or without early stop)."""
    longest = max((len(t.episodes) for t in trials), default=0)
    rows = []
    for k in range(longest):
        reached = [t.episodes[k] for t in trials if len(t.episodes) > k]
        won = sum(any(e.outcomes[agent] == "win" for e in t.episodes[: k + 1]) for t in trials)
        rows.append(
            {
                "episode": k + 1,
                "trials": len(reached),
                "mean_return": sum(e.returns[agent] for e in reached) / len(reached),
                "win_rate": sum(e.outcomes[agent] == "win" for e in reached) / len(reached),
                "won_by": won / len(trials),
            }
        )
    return rows


def _messages(messages: Any) -> list[dict[str, str]] | None:
    return [{"role": m.role, "content": m.content} for m in messages] if messages else None


def trial_to_json(trial: TrialRecord) -> dict[str, Any]:
    """One trial as a JSON line of ``arena play --dump`` (the format is in docs/training.md, "Dump files").

    Every LLM turn carries the chat ``prompt`` it was sent (memories, reflections and plugin instructions
    included: what the model saw), every reflection its prompt too; other seats' steps have ``prompt: null``.
    """
    return {
        "trial_id": trial.spec.trial_id,
        "arena": trial.spec.arena_id,
        "seats": list(trial.spec.seats),
        "seed": trial.spec.seed,
        "episodes": [
            {
                "index": e.index,
                "returns": e.returns,
                "outcomes": e.outcomes,
                "invalid_actions": e.invalid_actions,
                "forfeited_by": e.forfeited_by,
                "summaries": e.summaries,
                "steps": [
                    {
                        "agent": s.agent,
                        "move": s.move,
                        "public_move": s.move_seen_by(""),
                        "action": s.action,
                        "answer": s.answer,
                        "invalid": s.invalid,
                        "error": s.error,
                        "attempts": s.attempts,
                        "prompt": _messages(s.prompt),
                    }
                    for s in e.steps
                ],
            }
            for e in trial.episodes
        ],
        "reflections": [
            {
                "name": r.name,
                "episode": r.episode,
                "agent": r.agent,
                "content": r.content,
                "prompt": _messages(r.prompt),
            }
            for r in trial.reflections
        ],
    }


def run_play(
    config: PlayConfig,
    extra_plugins: Mapping[str, object] | None = None,
    backends: BackendPool | None = None,
    dump: Path | None = None,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Play ``config.games`` trials and return the ``--json`` result."""
    plugins = PluginSet(config.plugins, extra=extra_plugins)
    bar = tqdm(
        total=config.games, desc=f"{config.arena}", unit="game", disable=None if progress is None else not progress
    )
    if dump is not None:
        dump.parent.mkdir(parents=True, exist_ok=True)
    dump_file: TextIO | None = open(dump, "w") if dump is not None else None  # noqa: SIM115 - closed below

    def done(trial: TrialRecord) -> None:
        bar.update(1)
        if dump_file is not None:
            dump_file.write(json.dumps(trial_to_json(trial)) + "\n")

    engine = RolloutEngine(
        plugins, config.trial, backends=backends, max_live_trials=config.max_live_trials, on_trial_end=done
    )
    try:
        trials = engine.run(trial_specs(config))
    finally:
        bar.close()
        if dump_file is not None:
            dump_file.close()
    seats = summarize(config, trials)
    result: dict[str, Any] = {
        "arena": config.arena,
        "games": len(trials),
        "seats": [
            {
                "spec": s.spec,
                "mean_return": s.mean_return,
                "wins": s.wins,
                "draws": s.draws,
                "losses": s.losses,
                "invalid_actions": s.invalid_actions,
            }
            for s in seats
        ],
        "episodes_per_trial": config.trial.episodes,
        "llm_requests": engine.stats.requests,
        "ticks": engine.stats.ticks,
    }
    if config.trial.episodes > 1:
        result["by_episode"] = {s.spec: by_episode(trials, s.agent) for s in seats}
    return result


def print_table(result: Mapping[str, Any], out: TextIO = sys.stdout) -> None:
    games = result["games"]
    header = f"{'seat':<5} {'spec':<24} {'mean return':>12} {'wins':>6} {'draws':>6} {'losses':>7} {'invalid':>8}"
    print(f"{result['arena']}: {games} game(s)", file=out)
    print(header, file=out)
    print("-" * len(header), file=out)
    for i, seat in enumerate(result["seats"]):
        print(
            f"{i:<5} {seat['spec']:<24} {seat['mean_return']:>12.4f} {seat['wins']:>6} {seat['draws']:>6} "
            f"{seat['losses']:>7} {seat['invalid_actions']:>8}",
            file=out,
        )
    for spec, rows in result.get("by_episode", {}).items():
        print(f"\n{spec} by episode of the trial:", file=out)
        for row in rows:
            print(
                f"  episode {row['episode']}: trials {row['trials']:>6}  mean return {row['mean_return']:+.4f}  "
                f"win rate {row['win_rate']:.3f}  won by now {row['won_by']:.3f}",
                file=out,
            )
