"""What ``arena report`` reads from a run directory, and the numbers it derives from it.

``load_run(run_dir)`` gathers the files ``arena train`` and ``arena eval`` wrote: ``config.yaml``,
``metrics.jsonl`` (one line per iteration), ``population.json`` (optional) and every ``arena eval`` result
found under the run (``RUN/eval/report.json``, ``RUN/eval-*/report.json``, ...). The functions below turn them
into plain series and tables; ``summarize`` puts the headline numbers into one JSON-ready dict. Nothing here
draws or writes files (``run_plots`` and ``run_report`` do).

Iterations on the x axis count the policy updates done before the games were played: the rollout games of
metrics line ``iteration: i`` are played before update ``i``, so they sit at ``x = i``; the evaluation on that
line runs after the update (``x = i + 1``); the line ``iteration: -1`` is the evaluation before training
(``x = 0``); ratings on line ``i`` include the games of iteration ``i`` (``x = i + 1``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from arena.core.api.errors import ArenaError
from arena.core.config.loader import load_config
from arena.core.learn.run_config import TrainConfig

METRICS = "metrics.jsonl"
CONFIG = "config.yaml"
POPULATION = "population.json"
EVAL_REPORT = "report.json"
#: Overall (all opponents together) in the outcome series; no member is named like this.
ALL = "all opponents"
#: How many iterations ``first``/``last`` average over in the summary.
HEAD = 5

Point = tuple[float, float]


@attrs.frozen
class EvalResult:
    """One ``arena eval`` result: its ``report.json`` path and content."""

    path: Path
    report: dict[str, Any]

    @property
    def label(self) -> str:
        return f"{self.report['learner']} step {self.report['step']} ({self.path.parent.name}/)"


@attrs.frozen
class RunData:
    """Everything ``arena report`` shows, as read from the run directory.

    ``metrics`` are the lines of ``metrics.jsonl`` in file order; ``population`` is ``population.json`` or
    None when the run has none yet; ``evals`` are sorted by checkpoint step, then path.
    """

    run_dir: Path
    config: TrainConfig
    metrics: list[dict[str, Any]]
    population: dict[str, Any] | None
    evals: list[EvalResult]

    @property
    def learners(self) -> list[str]:
        return [entry.name for entry in self.config.learners]

    def prefix(self, learner: str) -> str:
        """Metric names are plain for one learner and ``NAME/...`` with several (``Run._key``)."""
        return "" if len(self.config.learners) == 1 else f"{learner}/"


# -- reading ------------------------------------------------------------------------------------------------


def load_run(run_dir: Path, skip: Path | None = None) -> RunData:
    """Read a run directory; every problem is an ``ArenaError`` with one clear line.

    ``skip`` is a folder not searched for eval results (the report's own output folder).
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ArenaError(f"{run_dir} is not a directory; give a run directory written by arena train")
    missing = [name for name in (CONFIG, METRICS) if not (run_dir / name).is_file()]
    if missing:
        raise ArenaError(
            f"{run_dir} is not a run directory (no {' or '.join(missing)}); give a directory written by arena train"
        )
    config = load_config(TrainConfig, run_dir / CONFIG)
    return RunData(
        run_dir=run_dir,
        config=config,
        metrics=read_metrics(run_dir / METRICS),
        population=read_population(run_dir / POPULATION),
        evals=find_eval_reports(run_dir, skip),
    )


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of ``metrics.jsonl``. A cut-off last line is dropped: a running ``arena train`` may be
    writing it right now. A bad line elsewhere is an error naming the line."""
    lines = path.read_text().splitlines()
    out = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines):
                break
            raise ArenaError(f"{path}:{number} is not a JSON line") from None
        if not isinstance(row, dict) or "iteration" not in row:
            raise ArenaError(f"{path}:{number} is not a metrics line (no 'iteration')")
        out.append(row)
    return out


def read_population(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError:
        raise ArenaError(f"{path} is not valid JSON") from None
    return data if isinstance(data, dict) else None


def is_eval_report(data: Any) -> bool:
    """An ``arena eval`` result (``evaluation.evaluate_run``'s dict) has these keys."""
    return isinstance(data, dict) and all(k in data for k in ("opponents", "episodes_per_trial", "step", "learner"))


def find_eval_reports(run_dir: Path, skip: Path | None = None) -> list[EvalResult]:
    """``report.json`` files of ``arena eval`` one or two folders below the run (``eval/``, ``eval-step20/``,
    ``evals/step20/``). Checkpoints, snapshots and rollouts are not searched: they are large and hold none."""
    skip_dir = Path(skip).resolve() if skip is not None else None
    found = []
    for path in sorted([*run_dir.glob(f"*/{EVAL_REPORT}"), *run_dir.glob(f"*/*/{EVAL_REPORT}")]):
        if path.parts[len(run_dir.parts)] in ("checkpoints", "snapshots", "rollouts", "tensorboard"):
            continue
        if skip_dir is not None and path.parent.resolve() == skip_dir:
            continue
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue  # not ours to judge; the page lists only what it could read
        if is_eval_report(data):
            found.append(EvalResult(path, data))
    return sorted(found, key=lambda e: (int(e.report["step"]), str(e.path)))


# -- series -------------------------------------------------------------------------------------------------


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def x_of(iteration: int, section: str) -> float:
    """Updates done when the games were played (module docstring): rollouts at ``i``, everything else after."""
    return float(iteration) if section == "rollout" else float(iteration + 1)


def outcome_series(run: RunData, learner: str, section: str) -> dict[str, dict[str, list[Point]]]:
    """``{opponent: {"win_rate": [(x, y)...], "mean_return": [...]}}`` from ``PREFIX<section>/<opponent>/...``
    keys, plus the overall keys under ``ALL``; ``section`` is ``rollout`` or ``eval``.

    Opponent names may hold slashes (``model:runs/x/...``), so the name is what lies between the section and
    the final field.
    """
    head = f"{run.prefix(learner)}{section}/"
    series: dict[str, dict[str, list[Point]]] = {}
    for row in run.metrics:
        x = x_of(int(row["iteration"]), section)
        for key, value in row.items():
            if not key.startswith(head) or not _finite(value):
                continue
            middle, _, field = key[len(head) :].rpartition("/")
            if field not in ("win_rate", "mean_return"):
                continue
            name = middle or ALL
            series.setdefault(name, {"win_rate": [], "mean_return": []})[field].append((x, float(value)))
    return series


def rating_series(run: RunData) -> dict[str, dict[str, list[Point]]]:
    """``{member: {"elo": [(x, y)...], "openskill": [...]}}`` from the ``rating/<member>/<system>`` keys;
    members in order of first appearance (snapshots join mid-run). ``openskill`` is μ − 3σ; runs written before
    the ratings moved to openskill logged it as ``rating/<member>/trueskill``, read into the same series."""
    series: dict[str, dict[str, list[Point]]] = {}
    for row in run.metrics:
        x = x_of(int(row["iteration"]), "rating")
        for key, value in row.items():
            if not key.startswith("rating/") or not _finite(value):
                continue
            member, _, system = key[len("rating/") :].rpartition("/")
            if member and system in ("elo", "openskill", "trueskill"):
                system = "openskill" if system == "trueskill" else system
                series.setdefault(member, {"elo": [], "openskill": []})[system].append((x, float(value)))
    return series


def mean_of(points: Sequence[Point]) -> float | None:
    return sum(y for _, y in points) / len(points) if points else None


# -- tables -------------------------------------------------------------------------------------------------


def win_rate_matrix(population: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Learners (rows) × members (columns) from ``population.json``.

    ``{"iteration", "learners", "members", "win_rate", "games", "probability"}``; the last three are row lists
    aligned with ``members``; ``win_rate`` is None where the learner has no games against the member (or does
    not draw it, e.g. itself). Members keep the pool order, then any member only a learner's rows name.
    """
    if not population or not isinstance(population.get("learners"), Mapping):
        return None
    records: dict[str, list[dict[str, Any]]] = dict(population["learners"])
    members = [str(m["name"]) for m in population.get("members") or [] if isinstance(m, Mapping) and "name" in m]
    for rows in records.values():
        members += [str(r["member"]) for r in rows if str(r["member"]) not in members]
    win_rate, games, probability = [], [], []
    for learner in records:
        by_member = {str(r["member"]): r for r in records[learner]}
        win_rate.append([_rate(by_member.get(m)) for m in members])
        games.append([int(by_member[m].get("games") or 0) if m in by_member else 0 for m in members])
        probability.append([by_member[m].get("probability") if m in by_member else None for m in members])
    return {
        "iteration": population.get("iteration"),
        "learners": list(records),
        "members": members,
        "win_rate": win_rate,
        "games": games,
        "probability": probability,
    }


def _rate(record: Mapping[str, Any] | None) -> float | None:
    if record is None or not record.get("games"):
        return None
    if _finite(record.get("win_rate")):
        return float(record["win_rate"])
    return float(record.get("wins") or 0) / float(record["games"])


def final_ratings(run: RunData) -> list[dict[str, Any]]:
    """The ratings table of ``population.json`` (best conservative rating first); without that file, the last
    ``rating/*`` values of ``metrics.jsonl`` (elo and ``conservative`` only)."""
    if run.population and isinstance(run.population.get("ratings"), list):
        return [dict(r) for r in run.population["ratings"] if isinstance(r, Mapping) and "name" in r]
    rows = []
    for member, systems in rating_series(run).items():
        elo, skill = systems["elo"], systems["openskill"]
        rows.append(
            {"name": member, "elo": elo[-1][1] if elo else None, "conservative": skill[-1][1] if skill else None}
        )
    return sorted(rows, key=lambda r: -(r["conservative"] if r["conservative"] is not None else -math.inf))


def wall_time(run: RunData) -> dict[str, Any]:
    """Seconds in the timed phases, summed over iterations and learners: ``{"total", "by_phase"}``.

    ``time/*_per_s`` are rates, not durations, and are left out. Checkpoint writing and the evaluation before
    training are not timed by ``arena train``, so the total is a little below the real wall time.
    """
    phases: dict[str, float] = {}
    learners = set(run.learners)
    for row in run.metrics:
        for key, value in row.items():
            head, sep, phase = key.partition("time/")
            if not sep or phase.endswith("per_s") or not _finite(value):
                continue
            if head and head.rstrip("/") not in learners:
                continue
            phases[phase] = phases.get(phase, 0.0) + float(value)
    return {"total": sum(phases.values()), "by_phase": phases}


def iterations_done(run: RunData) -> int:
    """Training iterations in ``metrics.jsonl`` (the line ``-1`` is the evaluation before training)."""
    return max((int(r["iteration"]) + 1 for r in run.metrics), default=0)


def last_training_eval(run: RunData, learner: str) -> dict[str, Any] | None:
    """The newest line with ``eval/*`` keys for ``learner``: ``{"x", "iteration", "opponents": {name: {...}}}``."""
    head = f"{run.prefix(learner)}eval/"
    for row in reversed(run.metrics):
        if any(k.startswith(head) for k in row):
            series = outcome_series(attrs.evolve(run, metrics=[row]), learner, "eval")
            opponents = {name: {f: pts[0][1] if pts else None for f, pts in s.items()} for name, s in series.items()}
            return {
                "iteration": int(row["iteration"]),
                "x": x_of(int(row["iteration"]), "eval"),
                "opponents": opponents,
            }
    return None


def newest_eval_per_opponent(evals: Iterable[EvalResult]) -> list[tuple[EvalResult, dict[str, Any]]]:
    """For each (learner, opponent) pair ``arena eval`` measured, its row from the newest checkpoint."""
    newest: dict[tuple[str, str], tuple[EvalResult, dict[str, Any]]] = {}
    for result in evals:  # sorted by step: later ones replace earlier ones
        for row in result.report["opponents"]:
            newest[(str(result.report["learner"]), str(row["opponent"]))] = (result, row)
    return list(newest.values())


# -- the summary --------------------------------------------------------------------------------------------


def learner_summary(run: RunData, learner: str) -> dict[str, Any]:
    """Per opponent, rollout win rate and mean return averaged over the first and the last ``HEAD`` iterations."""
    entry = next(e for e in run.config.learners if e.name == learner)
    rollout = {}
    for name, s in outcome_series(run, learner, "rollout").items():
        rollout[name] = {
            "iterations": len(s["win_rate"]),
            "first": {f: mean_of(pts[:HEAD]) for f, pts in s.items()},
            "last": {f: mean_of(pts[-HEAD:]) for f, pts in s.items()},
        }
    return {
        "model": entry.seat_spec,
        "plugins": list(entry.plugins),
        "rollout": rollout,
        "last_eval": last_training_eval(run, learner),
    }


def eval_summary(result: EvalResult) -> dict[str, Any]:
    report = result.report
    return {
        "path": str(result.path),
        "learner": report["learner"],
        "step": report["step"],
        "checkpoint": report.get("checkpoint"),
        "games": report.get("games"),
        "episodes_per_trial": report["episodes_per_trial"],
        "opponents": {
            str(r["opponent"]): {
                "group": r.get("group"),
                "trials": r.get("trials"),
                "win_rate": r["win_rate"]["rate"],
                "win_rate_low": r["win_rate"]["low"],
                "win_rate_high": r["win_rate"]["high"],
                "mean_return": r["mean_return"]["mean"],
                "by_episode": [e["win_rate"]["rate"] for e in r["by_episode"]],
            }
            for r in report["opponents"]
        },
    }


def summarize(run: RunData) -> dict[str, Any]:
    """The headline numbers of the run as one JSON-ready dict (the ``summary`` of ``arena report --json``)."""
    config = run.config
    members = run.metrics[-1].get("population/members") if run.metrics else None
    return {
        "run": str(run.run_dir),
        "arena": config.arena,
        "arena_kwargs": dict(config.arena_kwargs),
        "iterations_done": iterations_done(run),
        "iterations_configured": config.iterations,
        "trials_per_iteration": config.groups * config.group_size,
        "episodes_per_trial": config.trial.episodes,
        "opponents": [{"spec": o.spec, "weight": o.weight} for o in config.opponents],
        "unseen": list(config.unseen),
        "population_members": members,
        "wall_time_s": wall_time(run),
        "learners": {name: learner_summary(run, name) for name in run.learners},
        "win_rate_matrix": win_rate_matrix(run.population),
        "ratings": final_ratings(run),
        "evaluations": [eval_summary(e) for e in run.evals],
    }


def json_safe(value: Any) -> Any:
    """``value`` with NaN and infinities as None: strict JSON for ``--json`` readers."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value
