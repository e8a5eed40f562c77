"""Held-out ("unseen") opponents are checked against the training pool at config load, and ``arena eval`` says
why each one is unseen.

An unseen opponent the learners also meet in training is a config error naming the member and the file: the same
spec, the same opponent under another argument (``cfr:50`` against ``cfr``), the same player spelled otherwise
(``mcts`` is ``mcts:100``), or the model the learners play copies of (snapshots, co-evolving learners). A strength
argument is the one exception: ``mcts:1000`` held out of a pool with ``mcts:100`` is MAGE's tic-tac-toe protocol.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from arena.core.api.errors import ArenaError, ConfigError
from arena.core.cli.main import main
from arena.core.config.loader import load_config
from arena.core.learn.run_config import TrainConfig

from .test_cli_eval import run_dir, write_run  # noqa: F401  (the module-scoped run directory fixture)

KUHN_POOL = [{"spec": "conservative"}, {"spec": "aggressive"}]
TTT_POOL = [{"spec": "mcts:100", "weight": 0.5}, {"spec": "ttt-corners", "weight": 0.5}]


def write_config(path: Path, arena: str, pool: list[dict[str, Any]], unseen: list[str], **extra: Any) -> Path:
    path.write_text(yaml.safe_dump({"arena": arena, "opponents": pool, "unseen": unseen, **extra}))
    return path


@pytest.mark.parametrize(
    ("arena", "pool", "unseen", "extra", "member"),
    [
        ("kuhn_poker", KUHN_POOL, ["cfr", "aggressive"], {}, "'aggressive'"),  # the same id
        ("kuhn_poker", [*KUHN_POOL, {"spec": "cfr:50"}], ["cfr"], {}, "'cfr:50'"),  # the same opponent, another arg
        ("tic_tac_toe", TTT_POOL, ["mcts"], {}, "'mcts:100'"),  # mcts's default is 100 simulations: the same player
        (
            "kuhn_poker",
            KUHN_POOL,
            ["model:tiny"],
            {"population": {"snapshot_every": 2}},
            "learner 'agent'",
        ),  # the learner plays snapshots of itself: its starting model is not unseen
    ],
)
def test_an_unseen_opponent_met_in_training_is_a_config_error(
    tmp_path: Path, arena: str, pool: list[dict[str, Any]], unseen: list[str], extra: dict[str, Any], member: str
) -> None:
    path = write_config(tmp_path / "overlap.yaml", arena, pool, unseen, **extra)
    with pytest.raises(ConfigError) as caught:
        load_config(TrainConfig, path)
    message = str(caught.value)
    assert isinstance(caught.value, ArenaError)
    assert message.startswith(str(path)) and "\n" not in message
    assert f"unseen opponent {unseen[-1]!r}" in message and member in message


def test_the_overlap_stops_arena_train_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A learner without a model: were the overlap not caught at load, the run would fail later, on another line.
    learners = [{"name": "agent", "model": str(tmp_path / "no-model")}]
    path = write_config(tmp_path / "overlap.yaml", "kuhn_poker", KUHN_POOL, ["conservative"], learners=learners)
    assert main(["train", "--population", str(path), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and "unseen opponent 'conservative'" in err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("arena", "pool", "unseen", "extra"),
    [
        ("tic_tac_toe", TTT_POOL, ["mcts:1000"], {}),  # another strength: MAGE holds MCTS-1000 out of MCTS-100
        ("kuhn_poker", KUHN_POOL, ["cfr", "cfr-argmax", "intermediate"], {}),
        ("kuhn_poker", KUHN_POOL, ["model:tiny"], {}),  # no snapshots, no co-evolution: the learner never plays it
    ],
)
def test_disjoint_unseen_opponents_load(
    tmp_path: Path, arena: str, pool: list[dict[str, Any]], unseen: list[str], extra: dict[str, Any]
) -> None:
    config = load_config(TrainConfig, write_config(tmp_path / "ok.yaml", arena, pool, unseen, **extra))
    assert config.unseen == unseen


def test_eval_says_why_each_unseen_opponent_is_unseen(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    assert main(["eval", str(run_dir), "--opponents", "unseen", "--games", "2", "--policy-samples", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    table = lines.index("Final episode of each trial:")
    (line,) = [x for x in lines[:table] if x.strip().startswith("cfr:")]  # one line per unseen opponent
    assert "not in the training pool" in line and "conservative" in line and "aggressive" in line
    assert "not a snapshot of the learner" in line


def test_eval_refuses_a_snapshot_of_the_run_as_unseen(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path)
    raw = yaml.safe_load((run / "config.yaml").read_text())
    snapshot = run / "checkpoints" / "step-00000001" / "learners" / "agent"
    raw["unseen"] = [f"model:{snapshot}@hf"]
    (run / "config.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    capsys.readouterr()
    assert main(["eval", str(run), "--games", "2", "--policy-samples", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and "snapshot of the learner" in err
