"""Experiment trackers, chosen by ``report_to`` as in TRL and transformers: ``tensorboard``, ``wandb``, ``trackio``.

``arena train`` always writes ``metrics.jsonl``; each tracker named in the config's ``report_to`` gets the same
lines, under the same metric names (``rollout/win_rate``, ``rating/NAME/elo``...), with the iteration as the
step. Only numbers are sent (finite ints and floats; ``iteration`` itself is the step, not a metric).

- ``tensorboard`` (the default; the ``tensorboard`` package is a dependency of the main install): event files
  in ``RUN/tensorboard/``, ``tensorboard --logdir RUN/tensorboard``.
- ``wandb`` (extra ``arena-rl[wandb]``): one run per ``arena train``, project ``$WANDB_PROJECT`` or ``arena``,
  named after the run directory, files under ``RUN/`` (``RUN/wandb/``). ``WANDB_MODE=offline`` needs no
  network and no account; ``wandb sync RUN/wandb/offline-run-*`` uploads later.
- ``trackio`` (extra ``arena-rl[trackio]``): local-first, project ``$TRACKIO_PROJECT`` or ``arena``, the run
  named after the run directory, stored under trackio's own directory (``$HF_HOME/trackio``);
  ``trackio show`` opens the dashboard.

``none`` (alone) or an empty list: ``metrics.jsonl`` only. A tracker whose package is missing is an error at the
start of the run, naming the extra to install.
"""

from __future__ import annotations

import inspect
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from arena.core.api.errors import ArenaError

TrackerName = Literal["tensorboard", "wandb", "trackio", "none"]
TRACKERS: tuple[str, ...] = ("tensorboard", "wandb", "trackio")
#: The pip extra that installs each tracker's package.
EXTRAS = {"tensorboard": "tensorboard", "wandb": "wandb", "trackio": "trackio"}


def normalize_report_to(value: str | Sequence[str] | None) -> list[str]:
    """``report_to`` as a list of tracker names: a single name becomes a list, ``none`` (or ``[none]``) empty;
    unknown names and ``none`` beside a tracker are errors."""
    if value is None:
        return []
    names = [value] if isinstance(value, str) else [str(v) for v in value]
    if "none" in names:
        if len(names) > 1:
            raise ValueError(f"report_to: 'none' cannot stand beside trackers, got {names}")
        return []
    unknown = [n for n in names if n not in TRACKERS]
    if unknown:
        raise ValueError(f"report_to: unknown tracker {unknown[0]!r}; choose from {', '.join(TRACKERS)} or none")
    return list(dict.fromkeys(names))


def scalars(metrics: Mapping[str, Any]) -> dict[str, float]:
    """The finite numbers of a metrics line, ``iteration`` (the step) left out; booleans are not numbers."""
    return {
        key: float(value)
        for key, value in metrics.items()
        if key != "iteration"
        and isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
    }


def _missing(name: str, exc: ImportError) -> ArenaError:
    return ArenaError(
        f"report_to lists {name!r} but its package is not installed ({exc}); pip install 'arena-rl[{EXTRAS[name]}]' "
        f"or drop it from report_to"
    )


class TensorBoardTracker:
    name = "tensorboard"

    def __init__(self, out_dir: Path) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as exc:
            raise _missing(self.name, exc) from exc
        self.writer = SummaryWriter(str(out_dir / "tensorboard"))

    def log(self, values: Mapping[str, float], step: int) -> None:
        for key, value in values.items():
            self.writer.add_scalar(key, value, step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class WandbTracker:
    name = "wandb"

    def __init__(self, out_dir: Path, config: Mapping[str, Any]) -> None:
        try:
            import wandb
        except ImportError as exc:
            raise _missing(self.name, exc) from exc
        self.run = wandb.init(
            project=os.environ.get("WANDB_PROJECT", "arena"),
            name=out_dir.name,
            dir=str(out_dir),
            config=dict(config),
            reinit="create_new",
        )

    def log(self, values: Mapping[str, float], step: int) -> None:
        self.run.log(dict(values), step=step)

    def close(self) -> None:
        self.run.finish()


class TrackioTracker:
    name = "trackio"

    def __init__(self, out_dir: Path, config: Mapping[str, Any]) -> None:
        try:
            import trackio
        except ImportError as exc:
            raise _missing(self.name, exc) from exc
        self.trackio = trackio
        kwargs: dict[str, Any] = {"project": os.environ.get("TRACKIO_PROJECT", "arena"), "name": out_dir.name}
        known = inspect.signature(trackio.init).parameters
        for key in ("auto_log_cpu", "auto_log_gpu"):  # the run's own metrics only, as the other trackers
            if key in known:
                kwargs[key] = False
        self.run = trackio.init(config=dict(config), **kwargs)

    def log(self, values: Mapping[str, float], step: int) -> None:
        self.trackio.log(dict(values), step=step)

    def close(self) -> None:
        self.trackio.finish()


class Trackers:
    """The trackers of one run: ``log`` sends a metrics line to each, ``close`` closes them all."""

    def __init__(self, trackers: Sequence[Any]) -> None:
        self.trackers = list(trackers)

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.trackers]

    def log(self, metrics: Mapping[str, Any]) -> None:
        values = scalars(metrics)
        step = int(metrics["iteration"])
        for tracker in self.trackers:
            tracker.log(values, step)

    def close(self) -> None:
        for tracker in self.trackers:
            tracker.close()
        self.trackers = []


def open_trackers(report_to: Sequence[str], out_dir: Path, config: Mapping[str, Any] | None = None) -> Trackers:
    """The trackers ``report_to`` names, opened for the run directory ``out_dir`` (``config``: the run config as
    a dict, for the trackers that store it)."""
    opened: list[Any] = []
    try:
        for name in normalize_report_to(report_to):
            if name == "tensorboard":
                opened.append(TensorBoardTracker(out_dir))
            elif name == "wandb":
                opened.append(WandbTracker(out_dir, config or {}))
            else:
                opened.append(TrackioTracker(out_dir, config or {}))
    except BaseException:
        for tracker in opened:
            tracker.close()
        raise
    return Trackers(opened)
