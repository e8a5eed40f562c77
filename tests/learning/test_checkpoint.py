"""Checkpoints: exact round trip without pickle, atomic under a crash, pruned to the newest k."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import torch

from arena.core.learn import checkpoint as ck


def optimizer_state() -> dict:
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(torch.randn(4, 3)).sum().backward()
    opt.step()
    return {"model": model.state_dict(), "opt": opt.state_dict()}


def test_round_trip_is_exact(tmp_path: Path) -> None:
    torch.manual_seed(0)
    parts = optimizer_state()
    state = {"optimizer": parts["opt"], "rng": ck.rng_state(), "trainer": {"iteration": 7, "elo": {"a": 1012.5}}}
    path = ck.save_checkpoint(tmp_path, 7, {"agent": parts["model"]}, state)
    models, loaded = ck.load_checkpoint(path)
    weights = models["agent"]
    assert ck.learner_model_dir(path, "agent") == path / "learners" / "agent"
    with pytest.raises(FileNotFoundError, match="no learner 'other'"):
        ck.learner_model_dir(path, "other")
    assert all(torch.equal(weights[k], v) for k, v in parts["model"].items())
    assert loaded["trainer"] == {"iteration": 7, "elo": {"a": 1012.5}}
    opt_state = loaded["optimizer"]["state"]
    assert set(opt_state) == set(parts["opt"]["state"])  # int keys survive JSON
    for index, entry in parts["opt"]["state"].items():
        assert torch.equal(opt_state[index]["exp_avg"], entry["exp_avg"])
    assert loaded["optimizer"]["param_groups"] == parts["opt"]["param_groups"]
    # Loading the optimizer state into a fresh optimizer works.
    model = torch.nn.Linear(3, 2)
    fresh = torch.optim.AdamW(model.parameters(), lr=1e-3)
    fresh.load_state_dict(loaded["optimizer"])
    assert ck.step_of(path) == 7


def test_rng_states_restore_the_same_draws(tmp_path: Path) -> None:
    random.seed(1)
    np.random.seed(1)
    torch.manual_seed(1)
    path = ck.save_checkpoint(tmp_path, 1, {}, {"rng": ck.rng_state()})
    expected = (random.random(), np.random.rand(), torch.rand(1).item())
    _, loaded = ck.load_checkpoint(path)
    ck.set_rng_state(loaded["rng"])
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == expected


def test_crash_while_saving_keeps_the_previous_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ck.save_checkpoint(tmp_path, 1, {"a": {"w": torch.ones(2)}}, {"step": 1})

    def dies(*args, **kwargs):
        raise KeyboardInterrupt("killed while writing")

    monkeypatch.setattr(ck.json, "dump", dies)
    with pytest.raises(KeyboardInterrupt):
        ck.save_checkpoint(tmp_path, 2, {"a": {"w": torch.zeros(2)}}, {"step": 2})
    monkeypatch.undo()
    latest = ck.latest_checkpoint(tmp_path)
    assert latest is not None and ck.step_of(latest) == 1
    weights, state = ck.load_checkpoint(latest)
    assert state == {"step": 1} and torch.equal(weights["a"]["w"], torch.ones(2))
    # The next save cleans up the interrupted temp dir.
    ck.save_checkpoint(tmp_path, 3, {"a": {"w": torch.zeros(2)}}, {"step": 3})
    assert not list((tmp_path / "checkpoints").glob(".tmp-*"))


def test_keeps_the_newest_k(tmp_path: Path) -> None:
    for step in range(1, 6):
        ck.save_checkpoint(tmp_path, step, {}, {"step": step}, keep=2)
    assert [ck.step_of(p) for p in ck.checkpoint_dirs(tmp_path)] == [4, 5]


def test_unsupported_values_are_refused(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="object at bad"):
        ck.save_checkpoint(tmp_path, 1, {}, {"bad": object()})
