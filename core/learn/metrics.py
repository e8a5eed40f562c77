"""The bookkeeping of ``arena train``, kept apart from the algorithm: timings, cross-process sums, the run's files.

``Run.step`` (``arena.core.learn.run``) reads as the algorithm: play → experience → rewards → augment → credit →
update → evolve → evaluate → record. What a learner's phases cost and produced on this process goes into a
:class:`LearnerTally`; :class:`IterationLine` turns the tallies into the iteration's metrics line (summing the
processes' numbers under ``accelerate launch``); :class:`Recorder` writes ``metrics.jsonl``, the trackers of
``report_to`` and the rollout dumps, which :func:`read_rollouts` reads back. The line's keys, values and order are
those of the single ``step`` this replaced (tests/golden pins the values).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from arena.core.api.samples import Sample
from arena.core.learn.distributed import Dist
from arena.core.learn.trackers import open_trackers

#: A learner's metric name: plain for one learner, ``NAME/...`` when several share the run (``Run._key``).
KeyFn = Callable[[str], str]

#: The trainer's entries that the line carries under other names (``time/update_tokens_per_s``) or not at all.
_TRAIN_TIMINGS = ("train/seconds", "train/tokens_per_s")


def abs_advantage(sample: Sample) -> float:
    """|advantage| of a sample; a per-token advantage counts as the magnitude of its sum."""
    value = sample.advantage
    return abs(value) if isinstance(value, int | float) else abs(sum(value))


def generated_tokens(samples: Sequence[Sample]) -> int:
    return sum(len(s.completion_ids) for s in samples)


@attrs.define
class LearnerTally:
    """What one learner's phases of one iteration cost and produced on this process.

    Names are without the learner's prefix; :meth:`IterationLine.add_learner` adds it. ``seconds`` holds the
    wall time of the timed phases (``credit``: rewards, augment and credit together; ``update``; ``weight_sync``
    when the backend needs the new weights), ``dynamic`` DAPO's ``dynamic/...`` numbers, ``augment`` the
    ``augment/...`` numbers and ``time/augment...`` timings of ``augment_group``.
    """

    rollout_seconds: float = 0.0
    requests: int = 0
    generated: int = 0
    seconds: dict[str, float] = attrs.field(factory=dict)
    dynamic: dict[str, float] = attrs.field(factory=dict)
    augment: dict[str, float] = attrs.field(factory=dict)

    def played(self, stats: Mapping[str, float]) -> None:
        """Add a ``Run.play`` call's rollout seconds and LLM requests."""
        self.rollout_seconds += stats["rollout_seconds"]
        self.requests += int(stats["requests"])

    def resampled(self, extra: dict[str, float]) -> None:
        """Add DAPO's extra rounds (``Run.resample``): their cost, and its ``dynamic/...`` numbers."""
        self.rollout_seconds += extra.pop("rollout_seconds")
        self.requests += int(extra.pop("requests"))
        self.generated += int(extra.pop("generated"))
        self.dynamic = extra

    @contextmanager
    def timing(self, phase: str) -> Iterator[None]:
        """Add the wall time of the ``with`` block to ``seconds[phase]`` (a phase may be timed in parts)."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[phase] = self.seconds.get(phase, 0.0) + time.perf_counter() - started

    def times(self, key: KeyFn) -> dict[str, float]:
        """The ``time/`` entries, in the line's order: rollout, credit, augment's, update, weight sync."""
        times = {key("time/rollout"): self.rollout_seconds, key("time/credit"): self.seconds["credit"]}
        times.update({key(name): value for name, value in self.augment.items() if name.startswith("time/")})
        times[key("time/update")] = self.seconds["update"]
        if "weight_sync" in self.seconds:
            times[key("time/weight_sync")] = self.seconds["weight_sync"]
        return times

    def counts(self, key: KeyFn) -> dict[str, float]:
        """``augment_group``'s counts (``augment/...``): summed over the processes, unlike its timings."""
        return {key(name): value for name, value in self.augment.items() if not name.startswith("time/")}


def combine_ranks(
    dist: Dist, local: dict[str, Any], times: dict[str, float], counts: dict[str, float]
) -> tuple[dict[str, Any], dict[str, float], dict[str, float]]:
    """One learner's per-process numbers of an iteration, for the metrics line (several processes).

    Sums: samples, rewards, |advantages|, LLM requests, generated tokens, the ``augment/`` counts, and
    ``rollout_tokens_per_s`` (each process's generated tokens over its own rollout seconds: the processes
    generate side by side). Maxima: every ``time/`` entry (the iteration waits for the slowest process).
    Every process must call this (it gathers).
    """
    parts = dist.gather((local, times, counts))
    total = {name: sum(p[0][name] for p in parts) for name in local}
    total["rollout_tokens_per_s"] = sum(
        p[0]["generated"] / p[0]["rollout_seconds"] for p in parts if p[0]["rollout_seconds"]
    )
    slowest: dict[str, float] = {}
    summed: dict[str, float] = {}
    for _, part_times, part_counts in parts:
        for name, value in part_times.items():
            slowest[name] = max(slowest.get(name, value), value)
        for name, value in part_counts.items():
            summed[name] = summed.get(name, 0.0) + value
    return total, slowest, summed


class IterationLine:
    """One iteration's metrics line, in a fixed layout: ``iteration``; each learner's block; ``processes`` (several
    processes only); ``population`` (ratings, pool size); ``evaluation``; then every ``time/`` entry."""

    def __init__(self, iteration: int, dist: Dist) -> None:
        self.iteration = iteration
        self.dist = dist
        self.learners: dict[str, Any] = {}
        self.population: dict[str, Any] = {}
        self.evaluation: dict[str, float] = {}
        self.times: dict[str, float] = {}

    def add_learner(
        self,
        key: KeyFn,
        tally: LearnerTally,
        samples: Sequence[Sample],
        rollout: Mapping[str, float],
        train: Mapping[str, float],
    ) -> None:
        """One learner's block from its tally, its trained ``samples`` (this process's), ``rollout`` (outcome
        metrics of every process's trials: already the same everywhere) and the trainer's ``train`` metrics.

        With several processes every process must call this, in the same order (it gathers)."""
        block = self.learners
        block.update({key(name): value for name, value in tally.dynamic.items()})
        local = {
            "samples": len(samples),
            "reward": sum(s.reward for s in samples),
            "advantage_abs": sum(abs_advantage(s) for s in samples),
            "requests": tally.requests,
            "generated": tally.generated,
            "rollout_seconds": tally.rollout_seconds,
        }
        times, counts = tally.times(key), tally.counts(key)
        if self.dist.world == 1:  # exactly the one-process numbers (np.mean's summation order)
            mean_reward = float(np.mean([s.reward for s in samples])) if samples else 0.0
            mean_advantage = float(np.mean([abs_advantage(s) for s in samples])) if samples else 0.0
            rollout_tps = tally.generated / tally.rollout_seconds if tally.rollout_seconds else 0.0
        else:
            local, times, counts = combine_ranks(self.dist, local, times, counts)
            mean_reward = local["reward"] / local["samples"] if local["samples"] else 0.0
            mean_advantage = local["advantage_abs"] / local["samples"] if local["samples"] else 0.0
            rollout_tps = local["rollout_tokens_per_s"]
        self.times.update(times)
        block.update(counts)
        block.update(rollout)
        block[key("rollout/samples")] = local["samples"]
        block[key("rollout/llm_requests")] = local["requests"]
        block[key("rollout/mean_reward")] = mean_reward
        block[key("rollout/mean_advantage_abs")] = mean_advantage
        block.update({key(name): value for name, value in train.items() if name not in _TRAIN_TIMINGS})
        block[key("time/update_tokens_per_s")] = train.get("train/tokens_per_s", 0.0)
        block[key("time/rollout_tokens_per_s")] = rollout_tps

    @contextmanager
    def timing(self, name: str) -> Iterator[None]:
        """Set ``times[name]`` to the wall time of the ``with`` block."""
        started = time.perf_counter()
        yield
        self.times[name] = time.perf_counter() - started

    def finish(self) -> dict[str, Any]:
        processes = {"processes": self.dist.world} if self.dist.world > 1 else {}
        return {
            "iteration": self.iteration,
            **self.learners,
            **processes,
            **self.population,
            **self.evaluation,
            **self.times,
        }


def sample_to_json(sample: Sample) -> dict[str, Any]:
    """A row of the rollout dump (``--dump-rollouts``): the sample's text, credit and loss kind."""
    return {
        "kind": sample.kind,
        "context_text": sample.context_text,
        "rollout_context_text": sample.rollout_context_text
        if sample.rollout_context_text is not None
        else sample.context_text,
        "completion_text": sample.completion_text,
        "token_temperatures": list(sample.temperatures),
        "behaviour_logprobs": list(sample.behaviour_logprobs),
        "reward_terms": sample.reward_terms,
        "return": sample.ret,
        "advantage": sample.advantage,
        "group_id": sample.group_id,
        "anchor": sample.anchor,
        "opponent": sample.opponent,
        "episode": sample.episode,
        "turn": sample.turn,
        "loss": sample.loss,
        "trial_id": sample.trial_id,
        "plans": sample.meta.get("plans", {}),
        "injected": sample.meta.get("injected"),
        "shaped_gamma": sample.meta.get("shaped_gamma"),
    }


class Recorder:
    """The run directory's per-iteration files: ``metrics.jsonl``, the trackers of ``report_to``
    (``arena.core.learn.trackers``) and the rollout dumps ``rollouts/iter_NNNNN.jsonl``.

    Only the main process writes; on the others every method does nothing (a dump's rows are gathered before)."""

    def __init__(self, out_dir: Path, dist: Dist) -> None:
        self.out_dir = out_dir
        self.dist = dist
        self.trackers: Any = None

    def open(self, report_to: Sequence[str], config: Mapping[str, Any]) -> None:
        """Start the trackers (at the start of a run, once its directory exists)."""
        if self.dist.is_main:
            self.trackers = open_trackers(report_to, self.out_dir, config)

    def metrics(self, metrics: Mapping[str, Any]) -> None:
        if not self.dist.is_main:
            return
        with open(self.out_dir / "metrics.jsonl", "a") as f:
            f.write(json.dumps(metrics, sort_keys=True) + "\n")
        if self.trackers is not None:
            self.trackers.log(metrics)

    def rollouts(self, iteration: int, rows: Sequence[Mapping[str, Any]]) -> None:
        if not self.dist.is_main:
            return
        folder = self.out_dir / "rollouts"
        folder.mkdir(exist_ok=True)
        with open(folder / f"iter_{iteration:05d}.jsonl", "w") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")

    def close(self) -> None:
        if self.trackers is not None:
            self.trackers.close()


def read_rollouts(run_dir: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(iteration, row)`` for every row of a run's rollout dumps (``arena train --dump-rollouts``), in iteration
    order and, within an iteration, in the order :meth:`Recorder.rollouts` wrote them; nothing for a run without
    dumps. The rows' keys: docs/training.md, "What a run writes"."""
    for dump in sorted((run_dir / "rollouts").glob("iter_*.jsonl")):
        iteration = int(dump.stem.removeprefix("iter_"))
        with open(dump) as f:
            for line in f:
                if line.strip():
                    yield iteration, json.loads(line)
