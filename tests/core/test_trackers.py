"""``report_to``: trackers get the metrics lines of ``metrics.jsonl`` under the same names, iteration as the step."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

from arena.core.api.errors import ArenaError, ConfigError
from arena.core.config.loader import load_config
from arena.core.learn.run_config import TrainConfig
from arena.core.learn.trackers import normalize_report_to, open_trackers, scalars

LINES = [
    {"iteration": 0, "rollout/win_rate": 0.25, "rating/agent/elo": 1016.0, "time/rollout": 3, "note": "x"},
    {"iteration": 1, "rollout/win_rate": 0.5, "rating/agent/elo": 1020.5, "train/loss": float("nan")},
]


def test_report_to_setting() -> None:
    assert load_config(TrainConfig, "kuhn_grpo").report_to == ["tensorboard"]  # the default
    assert load_config(TrainConfig, "kuhn_grpo", ["report_to=none"]).report_to == []
    assert load_config(TrainConfig, "kuhn_grpo", ["report_to=wandb"]).report_to == ["wandb"]
    assert load_config(TrainConfig, "kuhn_grpo", ["report_to=[trackio,tensorboard]"]).report_to == [
        "trackio",
        "tensorboard",
    ]
    with pytest.raises(ConfigError, match="report_to"):
        load_config(TrainConfig, "kuhn_grpo", ["report_to=[mlflow]"])
    with pytest.raises(ValueError, match="none"):
        normalize_report_to(["none", "wandb"])


def test_scalars_keep_finite_numbers_only() -> None:
    assert scalars(LINES[0]) == {"rollout/win_rate": 0.25, "rating/agent/elo": 1016.0, "time/rollout": 3.0}
    assert scalars({"iteration": 2, "flag": True, "x": float("inf")}) == {}


def test_tensorboard_writes_the_metrics_to_the_run_directory(tmp_path: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    trackers = open_trackers(["tensorboard"], tmp_path)
    assert trackers.names == ["tensorboard"]
    for line in LINES:
        trackers.log(line)
    trackers.close()
    events = EventAccumulator(str(tmp_path / "tensorboard"))
    events.Reload()
    assert set(events.Tags()["scalars"]) == {"rollout/win_rate", "rating/agent/elo", "time/rollout"}
    assert [(e.step, e.value) for e in events.Scalars("rating/agent/elo")] == [(0, 1016.0), (1, 1020.5)]
    assert [(e.step, e.value) for e in events.Scalars("rollout/win_rate")] == [(0, 0.25), (1, 0.5)]


def test_no_tracker_writes_nothing(tmp_path: Path) -> None:
    trackers = open_trackers([], tmp_path)
    trackers.log(LINES[0])
    trackers.close()
    assert list(tmp_path.iterdir()) == []


def test_a_missing_tracker_package_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "wandb", None)  # import wandb raises ImportError
    monkeypatch.setitem(sys.modules, "trackio", None)
    with pytest.raises(ArenaError, match=r"arena-rl\[wandb\]"):
        open_trackers(["wandb"], tmp_path)
    with pytest.raises(ArenaError, match=r"arena-rl\[trackio\]"):
        open_trackers(["tensorboard", "trackio"], tmp_path)


def test_wandb_offline_writes_a_run_under_the_run_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    trackers = open_trackers(["wandb"], tmp_path / "run-1", {"arena": "kuhn_poker"})
    for line in LINES:
        trackers.log(line)
    trackers.close()
    runs = list((tmp_path / "run-1" / "wandb").glob("offline-run-*"))
    assert len(runs) == 1 and list(runs[0].glob("*.wandb"))


def test_trackio_logs_locally(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("trackio")
    from trackio.utils import TRACKIO_DIR  # trackio's own store ($HF_HOME/trackio), not configurable per run

    project = f"arena-test-{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("TRACKIO_PROJECT", project)
    trackers = open_trackers(["trackio"], tmp_path / "run-1")
    for line in LINES:
        trackers.log(line)
    trackers.close()
    assert list(Path(TRACKIO_DIR).glob(f"{project}*"))
