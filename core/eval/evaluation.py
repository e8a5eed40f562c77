"""``arena eval``: a trained run's checkpoint against opponents, above all the ones it never met.

``evaluate_run`` opens a run directory written by ``arena train``, picks a checkpoint (the latest unless told)
and a learner, and plays ``games`` trials against each chosen opponent through the real ``RolloutEngine`` with the
run's trial settings and the learner's plugins (with the plugin state saved in the checkpoint), exactly as
``Run.evaluate`` does during training, except that every episode of a trial is played (no early stop on a win),
so success can be read by episode index. Games ``2j`` and ``2j+1`` share the seed ``seed + j`` with the learner
first, then second: every deal is played from both seats (duplicate format), which halves the luck in the
comparison. Every opponent gets the same seeds, so opponents are compared on the same deals.

The result is one JSON-ready dict (see ``docs/evaluation.md``): per-opponent rates with Wilson intervals, mean
return with a normal interval, invalid answers, success by episode index, the testbed's ceilings by episode and the
share of adaptive headroom captured (``arena.core.eval.ceilings``, where the arena has a ceiling model), Kuhn poker
exploitability, and the population's ratings when the checkpoint has them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import structlog
from tqdm import tqdm

from arena.core.api.errors import ArenaError
from arena.core.api.records import TrialRecord, TrialSpec
from arena.core.config.loader import load_config
from arena.core.eval.ceilings import attach_ceilings
from arena.core.eval.stats import summarize_opponent, wilson
from arena.core.host import catalog
from arena.core.host.plugins import PluginSet
from arena.core.learn import checkpoint as ck
from arena.core.learn.run_config import LearnerConfig, TrainConfig
from arena.core.learn.threads import torch_threads
from arena.core.learn.unseen import why_unseen
from arena.core.rollout.engine import RolloutEngine
from arena.core.rollout.seats import BackendPool, check_opponent, parse_seat

log = structlog.get_logger("arena.eval")

DEFAULT_GAMES = 200
DEFAULT_POLICY_SAMPLES = 64
SELECTIONS = ("unseen", "train", "all")


@attrs.frozen
class RunInfo:
    """What ``arena eval`` needs from a run directory: its config, one learner and one checkpoint of it.

    ``seat_spec`` is ``model:<checkpoint's learner dir>@<backend>``, the backend the learner trained with.
    ``state`` is the checkpoint's ``state.json`` (plugin state, population state, ...).
    """

    run_dir: Path
    config: TrainConfig
    learner: LearnerConfig
    checkpoint: Path
    step: int
    model_dir: Path
    seat_spec: str
    state: dict[str, Any]


def open_run(run_dir: Path, learner: str | None = None, checkpoint: Path | None = None) -> RunInfo:
    """Load a run's config and checkpoint; every problem is an ``ArenaError`` with one clear line.

    ``checkpoint`` may be a checkpoint directory or its name under ``RUN/checkpoints`` (``step-00000040``).
    """
    run_dir = Path(run_dir)
    saved = run_dir / "config.yaml"
    if not run_dir.is_dir() or not saved.is_file():
        raise ArenaError(f"{run_dir} is not a run directory (no config.yaml); give a directory written by arena train")
    config = load_config(TrainConfig, saved)
    names = [entry.name for entry in config.learners]
    name = learner if learner is not None else names[0]
    if name not in names:
        raise ArenaError(f"unknown learner {name!r} in {run_dir}; the run's learners: {', '.join(names)}")
    learner_cfg = config.learners[names.index(name)]
    if checkpoint is None:
        # The newest checkpoint that verifies (manifest, parse, finite values); damaged newer ones are skipped.
        if not ck.checkpoint_dirs(run_dir):
            raise ArenaError(f"run {run_dir} has no checkpoint yet (nothing under {run_dir / ck.CHECKPOINTS})")
        try:
            found, _, state, damaged = ck.newest_intact(run_dir)
        except ck.CheckpointFormatError as exc:
            raise ArenaError(str(exc)) from None
        if found is None:
            raise ArenaError(f"no intact checkpoint in {run_dir / ck.CHECKPOINTS}: {ck.describe_damage(damaged)}")
        chosen = found
        if damaged:
            log.warning(f"checkpoint: {ck.describe_damage(damaged)}; using {chosen.name}", using=chosen.name)
    else:
        chosen = Path(checkpoint)
        if not chosen.is_dir() and (run_dir / ck.CHECKPOINTS / chosen).is_dir():
            chosen = run_dir / ck.CHECKPOINTS / chosen
        looks_like = chosen.is_dir() and (ck.step_of_or_none(chosen) is not None or (chosen / "state.json").exists())
        if not looks_like:
            present = ", ".join(p.name for p in ck.checkpoint_dirs(run_dir)) or "none"
            raise ArenaError(f"{checkpoint} is not a checkpoint directory; checkpoints of this run: {present}")
        try:
            _, state = ck.load_checkpoint(chosen)
        except ck.CheckpointFormatError as exc:
            raise ArenaError(str(exc)) from None
        except ck.DamagedCheckpoint as exc:
            present = ", ".join(p.name for p in ck.checkpoint_dirs(run_dir)) or "none"
            raise ArenaError(
                f"checkpoint {chosen} is damaged: {exc.reason}; checkpoints of this run: {present}"
            ) from None
    try:
        model_dir = ck.learner_model_dir(chosen, name)
    except (FileNotFoundError, ck.CheckpointFormatError) as exc:
        raise ArenaError(str(exc)) from None
    backend, _ = BackendPool.resolve(parse_seat(learner_cfg.seat_spec))
    return RunInfo(
        run_dir=run_dir,
        config=config,
        learner=learner_cfg,
        checkpoint=chosen,
        step=int(state.get("iteration", ck.step_of(chosen))),
        model_dir=model_dir,
        seat_spec=f"model:{model_dir}@{backend}",
        state=dict(state),
    )


def valid_opponents(arena_id: str) -> list[str]:
    """Registered opponents that play ``arena_id``."""
    return [
        entry.name
        for entry in catalog.opponents()
        if entry.meta.get("arenas") is None or arena_id in entry.meta["arenas"]
    ]


def select_opponents(config: TrainConfig, which: str) -> list[tuple[str, str]]:
    """``(seat spec, group)`` for ``unseen``, ``train``, ``all`` or a comma list of seat specs; group is
    ``train``, ``unseen`` or ``named``. Unknown opponents fail here, naming the valid ones."""
    pool = [(entry.spec, "train") for entry in config.opponents]
    unseen = [(spec, "unseen") for spec in config.unseen]
    if which == "train":
        chosen = pool
    elif which == "unseen":
        if not unseen:
            raise ArenaError(
                "the run's config lists no unseen opponents (key 'unseen'); use --opponents train, all or NAME,..."
            )
        chosen = unseen
    elif which == "all":
        chosen = pool + unseen
    else:
        known = {spec: group for spec, group in unseen + pool}
        chosen = [(s.strip(), known.get(s.strip(), "named")) for s in which.split(",") if s.strip()]
        if not chosen:
            raise ArenaError("--opponents is empty; give unseen, train, all or a comma list of seat specs")
    out: list[tuple[str, str]] = []
    for spec, group in chosen:
        seat = parse_seat(spec)
        if seat.kind == "opponent":
            valid = valid_opponents(config.arena)
            if seat.name not in catalog.opponents() or seat.name not in valid:
                raise ArenaError(
                    f"unknown opponent {spec!r} for arena {config.arena}; valid: {', '.join(valid)} "
                    f"(or {', '.join(SELECTIONS)}, or model:PATH)"
                )
            check_opponent(seat, config.arena)
        if spec not in [s for s, _ in out]:
            out.append((spec, group))
    return out


def learner_plugins(info: RunInfo, extra: Mapping[str, object] | None = None) -> PluginSet:
    """The learner's plugins (plus ``extra`` observers, enabled last), restored from the checkpoint's state."""
    extra = dict(extra or {})
    plugins = PluginSet([*info.learner.plugins, *extra], extra=extra)
    saved = (info.state.get("learners") or {}).get(info.learner.name) or {}
    plugins.load_state_dict(dict(saved.get("plugins") or {}))
    return plugins


def eval_specs(info: RunInfo, opponents: Sequence[str], games: int, seed: int) -> list[TrialSpec]:
    """``games`` trials per opponent; game ``k`` uses seed ``seed + k // 2``, the learner first when ``k`` is even."""
    config = info.config
    specs = []
    for opponent in opponents:
        for k in range(games):
            first = k % 2 == 0
            seats = (info.seat_spec, opponent) if first else (opponent, info.seat_spec)
            specs.append(
                TrialSpec(
                    trial_id=f"eval-{opponent}-{k:05d}",
                    arena_id=config.arena,
                    seats=seats,
                    seed=seed + k // 2,
                    episodes=config.trial.episodes,
                    arena_kwargs=dict(config.arena_kwargs),
                    early_stop_on_win=False,
                    training=False,
                    meta={"opponent": opponent},
                )
            )
    return [with_options(spec, info.learner.options) for spec in specs]


def with_options(spec: TrialSpec, options: Mapping[str, Mapping[str, Any]]) -> TrialSpec:
    """``spec`` carrying the learner's plugin settings, for trial hooks that read them.

    ``TrialSpec.options`` is new; a tree without it still evaluates (plugins then see their defaults).
    """
    if "options" in attrs.fields_dict(TrialSpec):
        return attrs.evolve(spec, options={k: dict(v) for k, v in options.items()})
    return spec


def play(
    info: RunInfo, opponents: Sequence[str], games: int, seed: int, pool: BackendPool, progress: bool | None = None
) -> dict[str, list[TrialRecord]]:
    """Every opponent's trials, all in one engine run (one backend batch per tick across opponents)."""
    trial_config = attrs.evolve(info.config.trial, early_stop_on_win=False)
    specs = eval_specs(info, opponents, games, seed)
    bar = tqdm(total=len(specs), desc="eval", unit="trial", disable=None if progress is None else not progress)
    done: dict[str, int] = dict.fromkeys(opponents, 0)

    def finished(trial: TrialRecord) -> None:
        opponent = str(trial.spec.meta["opponent"])
        done[opponent] += 1
        bar.set_postfix_str(f"{opponent} {done[opponent]}/{games}", refresh=False)
        bar.update(1)

    engine = RolloutEngine(
        learner_plugins(info),
        trial_config,
        backends=pool,
        max_live_trials=info.config.max_live_trials,
        on_trial_end=finished,
    )
    try:
        trials = engine.run(specs)
    finally:
        bar.close()
    by_opponent: dict[str, list[TrialRecord]] = {o: [] for o in opponents}
    for trial in trials:
        by_opponent[str(trial.spec.meta["opponent"])].append(trial)
    return by_opponent


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def read_ratings(state: Mapping[str, Any]) -> dict[str, Any] | None:
    """The population's ratings from a checkpoint state, as ``{"columns": [...], "rows": [...]}``, or None.

    The ratings' layout belongs to ``populations/ratings.py``; this reads it defensively as JSON: members are
    a mapping ``name → {field: value}`` (possibly under a ``members``/``ratings``/``players`` key) or a list of
    dicts with a ``name``/``id``. Only numeric fields are shown; rows are sorted by the first of
    conservative, elo, mu, rating present, highest first.
    """
    population = state.get("population")
    ratings = population.get("ratings") if isinstance(population, Mapping) else None
    if not isinstance(ratings, Mapping | list) or not ratings:
        return None
    members: Any = ratings
    if isinstance(ratings, Mapping):
        for key in ("members", "ratings", "players"):
            if isinstance(ratings.get(key), Mapping | list):
                members = ratings[key]
                break
    rows: list[dict[str, Any]] = []
    if isinstance(members, Mapping):
        items = [(str(name), fields) for name, fields in members.items() if isinstance(fields, Mapping)]
    else:
        items = [(str(m.get("name", m.get("id", i))), m) for i, m in enumerate(members) if isinstance(m, Mapping)]
    columns: list[str] = []
    for name, fields in items:
        row: dict[str, Any] = {"member": name}
        for field, value in fields.items():
            if _number(value):
                row[str(field)] = float(value)
                if str(field) not in columns:
                    columns.append(str(field))
        rows.append(row)
    if not rows:
        return None
    order = next((c for c in ("conservative", "elo", "mu", "rating") if c in columns), None)
    if order is not None:
        rows.sort(key=lambda r: -r.get(order, float("-inf")))
    return {"columns": columns, "rows": rows}


def kuhn_winnable(trials: Sequence[TrialRecord], seat_spec: str, opponent: str) -> dict[str, Any] | None:
    """Against one of MAGE's deterministic Kuhn styles, the share of these trials whose deal and seat some line of
    play wins: the ceiling of every episode's win rate, adaptive or not. None for any other opponent."""
    from arena.arenas.opponents.kuhn import KUHN_STYLES, deal_for_seed, winnable

    style = KUHN_STYLES.get(opponent)
    if style is None:
        return None
    hits = [winnable(deal_for_seed(t.spec.seed), list(t.spec.seats).index(seat_spec), style) for t in trials]
    return wilson(sum(hits), len(hits)).to_json()


def evaluate_run(
    run_dir: Path,
    opponents: str = "unseen",
    games: int = DEFAULT_GAMES,
    learner: str | None = None,
    checkpoint: Path | None = None,
    seed: int | None = None,
    policy_samples: int = DEFAULT_POLICY_SAMPLES,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Play the evaluation and return the whole report as one JSON-ready dict (no files written)."""
    if games < 1:
        raise ArenaError(f"--games must be at least 1, got {games}")
    if policy_samples < 1:
        raise ArenaError(f"--policy-samples must be at least 1, got {policy_samples}")
    info = open_run(run_dir, learner, checkpoint)
    config = info.config
    chosen = select_opponents(config, opponents)
    unseen = [(spec, why_unseen(config, spec, info.run_dir, info.state)) for spec, group in chosen if group == "unseen"]
    seed = config.eval.seed if seed is None else seed
    pool = BackendPool()
    with torch_threads(config.torch_threads):
        by_opponent = play(info, [spec for spec, _ in chosen], games, seed, pool, progress)
    rows = []
    for spec, group in chosen:
        row = {"opponent": spec, "group": group, **summarize_opponent(by_opponent[spec], info.seat_spec)}
        if config.arena == "kuhn_poker" and not config.arena_kwargs:
            row["winnable"] = kuhn_winnable(by_opponent[spec], info.seat_spec, spec)
        rows.append(row)
    report: dict[str, Any] = {
        # Per unseen opponent, why it is unseen (arena.core.learn.unseen); a snapshot of the run was refused above.
        "unseen": [{"opponent": spec, "why": why} for spec, why in unseen],
        "run": str(info.run_dir),
        "checkpoint": str(info.checkpoint),
        "step": info.step,
        "learner": info.learner.name,
        "seat": info.seat_spec,
        "plugins": list(info.learner.plugins),
        "arena": config.arena,
        "games": games,
        "seed": seed,
        "episodes_per_trial": config.trial.episodes,
        "invalid_action_policy": config.trial.invalid_action.policy,
        "opponents": rows,
        # The testbed's fixed / adaptive / informed ceilings by episode and the headroom each row captured
        # (arena.core.eval.ceilings); None for an arena or pool without a ceiling model.
        "ceilings": attach_ceilings(
            config.arena,
            dict(config.arena_kwargs),
            [(entry.spec, entry.weight) for entry in config.opponents],
            rows,
            config.trial.episodes,
        ),
        "exploitability": None,
        "ratings": read_ratings(info.state),
    }
    if config.arena == "kuhn_poker" and not config.arena_kwargs:
        from arena.arenas.opponents.kuhn_exploitability import kuhn_report

        report["exploitability"] = kuhn_report(
            backend=pool.get(parse_seat(info.seat_spec)),
            trial_config=attrs.evolve(config.trial, early_stop_on_win=False),
            plugins=lambda extra: learner_plugins(info, extra),
            samples=policy_samples,
            seed=seed,
            finish_spec=lambda spec: with_options(spec, info.learner.options),
        )
    return report
