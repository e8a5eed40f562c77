"""Held-out ("unseen") opponents: disjoint from everything the learners train against, checked.

A run config's ``unseen`` list names the opponents ``arena eval --opponents unseen`` measures generalisation
against, so none of them may be a player the learners meet in training. ``overlaps(config)`` finds, for every
unseen opponent, the training-pool member (or learner) it is the same player as:

* a programmatic opponent with the same id as a pool member, whatever its argument: ``cfr:50`` and ``cfr`` are
  the same CFR+ player, ``text_maze-explorer:no-note`` a variant of ``text_maze-explorer``;
* except for opponents registered with ``strength_arg`` (the argument's default): their argument is a strength
  level, so another strength is another player, the same strength the same one. ``mcts`` (``strength_arg`` 100)
  held out as ``mcts:1000`` from a pool with ``mcts:100`` is MAGE's tic-tac-toe protocol; ``mcts`` and
  ``mcts:100`` are one player;
* a model seat naming the same model as a pool member (the backend aside);
* a model seat naming a learner's starting model when the learners play LLM copies of themselves: snapshots
  (``population.snapshot_every``) or co-evolving learners (``population.learners_as_opponents`` with two or more).

``TrainConfig`` raises the first overlap at construction, so ``load_config`` reports it as one ``ConfigError``
line naming the file, the unseen opponent and the member. ``why_unseen`` is the line ``arena eval`` prints for each
unseen opponent; it also refuses, as an ``ArenaError``, a model seat inside the run directory (a snapshot or
checkpoint of the run) or one of the checkpoint's pool members, which the config alone cannot show.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from arena.core.api.errors import ArenaError
from arena.core.rollout.seats import SeatSpec, parse_seat


def _meta(name: str) -> Mapping[str, Any]:
    from arena.core.host import catalog

    try:
        return catalog.opponents().get(name).meta
    except ArenaError:  # unknown opponents are reported where they are played
        return {}


def _strength(seat: SeatSpec, default: Any) -> str:
    text = seat.arg if seat.arg is not None else str(default)
    try:
        return str(int(text))
    except ValueError:
        return text


def same_player(unseen: SeatSpec, member: SeatSpec) -> str | None:
    """Why ``unseen`` is the same player as the pool's ``member`` (a few words), or None when it is another."""
    if unseen.kind != member.kind or unseen.name != member.name:
        return None
    if unseen.kind == "model":
        return "the same model"
    if unseen.arg == member.arg:
        return "the same opponent"
    default = _meta(unseen.name).get("strength_arg")
    if default is None:
        return f"the same opponent {unseen.name!r} under another argument"
    if _strength(unseen, default) == _strength(member, default):
        return f"the same opponent at the same strength: {unseen.name!r} defaults to {default}"
    return None


def _self_play(config: Any) -> bool:
    population = config.population
    return population.snapshot_every > 0 or (population.learners_as_opponents and len(config.learners) > 1)


def overlaps(config: Any) -> list[str]:
    """One message per unseen opponent that the learners meet in training (``config``: a ``TrainConfig``)."""
    out = []
    for text in config.unseen:
        unseen = parse_seat(text)
        found = None
        for entry in config.opponents:
            why = same_player(unseen, parse_seat(entry.spec))
            if why is not None:
                found = f"is the training pool's {entry.spec!r} ({why})"
                break
        if found is None and unseen.kind == "model" and _self_play(config):
            for learner in config.learners:
                if parse_seat(learner.seat_spec).name == unseen.name:
                    found = (
                        f"is the model learner {learner.name!r} starts from, and the learners train against "
                        "copies of themselves (population.snapshot_every / learners_as_opponents)"
                    )
                    break
        if found is not None:
            out.append(
                f"unseen opponent {text!r} {found}; an unseen opponent must be one the learners never train against"
            )
    return out


def check_unseen(config: Any) -> None:
    """Raise ``ValueError`` (``load_config`` makes it a ``ConfigError`` naming the file) on the first overlap."""
    problems = overlaps(config)
    if problems:
        raise ValueError(problems[0])


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except (ValueError, OSError):
        return False
    return True


def why_unseen(config: Any, text: str, run_dir: Path, state: Mapping[str, Any] | None = None) -> str:
    """One line: why ``text`` is unseen for this run (not in the pool; not a snapshot of the learner).

    Raises ``ArenaError`` when the run shows it is not: a pool member of the checkpoint (``state["population"]``)
    or a model inside the run directory (a snapshot or checkpoint of the run).
    """
    problems = [p for p in overlaps(config) if p.startswith(f"unseen opponent {text!r} ")]
    if problems:
        raise ArenaError(problems[0])
    seat = parse_seat(text)
    pool = [entry.spec for entry in config.opponents]
    population = (state or {}).get("population")
    members = population.get("pool", {}).get("members", []) if isinstance(population, Mapping) else []
    snapshots = [m for m in members if isinstance(m, Mapping) and m.get("kind") == "snapshot"]
    if seat.kind == "model":
        path = Path(seat.name)
        if not path.is_absolute():
            path = run_dir / path if (run_dir / path).exists() else path
        specs = [str(m.get("spec", "")) for m in members if isinstance(m, Mapping)]
        member_paths = [parse_seat(spec).name for spec in specs if spec.startswith("model:")]
        if _inside(path, run_dir) or seat.name in member_paths:
            raise ArenaError(
                f"unseen opponent {text!r} is a snapshot of the learner (a model of this run, {run_dir}); "
                "it is not unseen"
            )
    listed = ", ".join(pool) or "empty"
    if seat.kind == "opponent":
        others = [spec for spec in pool if parse_seat(spec).name == seat.name]  # another strength (checked above)
        where = f"; {', '.join(others)} there is {seat.name} at another strength" if others else ""
        return f"not in the training pool ({listed}{where}); not a snapshot of the learner (a programmatic opponent)"
    return (
        f"not in the training pool ({listed}); not a snapshot of the learner (a model outside the run directory, "
        f"none of the checkpoint's {len(snapshots)} snapshot(s))"
    )
