"""kill -9 at seeded random points of a short run, then --resume: 6 of 6 end bit for bit as the reference.

Compared: the final checkpoint's weights, every metrics row without its ``time/`` entries, ``population.json``
(with the run's own directory, which snapshot paths name, taken out). The kill points are drawn uniformly over
the run's writing time (after ``config.yaml`` appears), so they land in rollouts, updates, snapshot creation,
checkpoint writes and metrics lines alike.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import time
from pathlib import Path

import pytest

from arena.core.learn import checkpoint as ck
from tests.faults.conftest import arena_cli, learning_metrics, same_weights, weights, write_config

ITERATIONS = 3
TRIALS = 6  # 10 until 2026-12-05: cut to keep `make test` inside 30 minutes on CI (about 12 s a trial)


def population(run: Path) -> str:
    return (run / "population.json").read_text().replace(str(run.resolve()), "RUN")


def finish(proc) -> None:
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err


@pytest.mark.slow
@pytest.mark.timeout(1800)  # 13 CLI runs; with 10 trials (21 runs) 8 were done at the 600 s default on 2 busy cores
def test_kill_at_random_points_and_resume_exactly(toy_dir: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path, toy_dir, iterations=ITERATIONS, snapshot_every=1)
    reference = tmp_path / "reference"
    proc = arena_cli("train", "--population", str(config), "--out", str(reference))
    while not (reference / "config.yaml").exists() and proc.poll() is None:
        time.sleep(0.02)
    started = time.perf_counter()
    finish(proc)
    writing = time.perf_counter() - started  # how long the run writes its directory
    rng = random.Random(28)
    identical = 0
    points = []
    for trial in range(TRIALS):
        run = tmp_path / f"killed-{trial}"
        kill_at = rng.uniform(0.0, writing * 0.9)
        for _ in range(4):  # a machine busier than during the reference can end the run first: kill earlier
            shutil.rmtree(run, ignore_errors=True)
            proc = arena_cli("train", "--population", str(config), "--out", str(run))
            while not (run / "config.yaml").exists() and proc.poll() is None:
                time.sleep(0.01)
            time.sleep(kill_at)
            if proc.poll() is None:
                break
            kill_at /= 2
        assert proc.poll() is None, "the run ended before its kill point; the trial proves nothing"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        done = ck.latest_checkpoint(run)
        points.append((round(kill_at, 2), done.name if done else None))
        finish(arena_cli("train", "--resume", str(run)))
        assert not list((run / ck.CHECKPOINTS).glob(".tmp-*"))
        same = (
            same_weights(weights(run, ITERATIONS), weights(reference, ITERATIONS))
            and learning_metrics(run) == learning_metrics(reference)
            and population(run) == population(reference)
        )
        identical += same
    print(json.dumps({"identical": identical, "trials": TRIALS, "kill points (s, newest checkpoint)": points}))
    assert identical == TRIALS, points
