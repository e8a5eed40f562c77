"""One writer per run directory, no silent reuse of one, and runs that move."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arena.core.api.errors import ArenaError
from arena.core.learn import checkpoint as ck
from arena.core.learn import rundir
from arena.core.learn.run import Run
from tests.faults.conftest import (
    arena_cli,
    copy_run,
    learning_metrics,
    same_weights,
    train,
    train_config,
    weights,
    write_config,
)


def test_a_second_writer_is_refused_and_the_lock_dies_with_its_holder(tmp_path: Path) -> None:
    held = rundir.RunLock(tmp_path / "run")
    with pytest.raises(ArenaError, match=f"in use by another arena train \\(pid {os.getpid()}\\)"):
        rundir.RunLock(tmp_path / "run")
    held.release()
    rundir.RunLock(tmp_path / "run").release()  # free again

    # A holder killed with SIGKILL runs no clean-up: the kernel drops its lock all the same.
    code = (
        "import sys, time; from arena.core.learn.rundir import RunLock; RunLock(sys.argv[1]); "
        "print('held', flush=True); "
        "time.sleep(60)"
    )
    child = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "run")], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "held"
    with pytest.raises(ArenaError, match=f"pid {child.pid}"):
        rundir.RunLock(tmp_path / "run")
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    rundir.RunLock(tmp_path / "run").release()


def test_two_arena_train_on_one_out(reference: Path, toy_dir: Path, tmp_path: Path) -> None:
    """The second refuses in one line (exit 2) while the first goes on writing, alone."""
    config = write_config(tmp_path, toy_dir, iterations=1000)
    run = tmp_path / "run"
    first = arena_cli("train", "--population", str(config), "--out", str(run))
    try:
        deadline = time.time() + 300
        while time.time() < deadline and not (run / "config.yaml").exists() and first.poll() is None:
            time.sleep(0.05)
        second = arena_cli("train", "--resume", str(run))
        _, err = second.communicate(timeout=300)
        assert first.poll() is None, "the first run ended: the test proves nothing"
        assert second.returncode == 2, err
        assert "Traceback" not in err
        last = err.strip().splitlines()[-1]
        assert last.startswith(f"error: {run} is in use by another arena train (pid {first.pid})"), err
        # The first one keeps its directory to itself: one row per iteration, in order, none twice.
        before = ck.latest_checkpoint(run)
        while time.time() < deadline and ck.latest_checkpoint(run) == before and first.poll() is None:
            time.sleep(0.05)
        iterations = [m["iteration"] for m in learning_metrics(run)]
        assert iterations == list(range(-1, len(iterations) - 1))
    finally:
        first.kill()
        first.wait()


def test_a_fresh_run_into_an_existing_one_refuses_unless_told(reference: Path, toy_dir: Path, tmp_path: Path) -> None:
    run = copy_run(reference, tmp_path / "run")
    before = (run / "metrics.jsonl").read_text()
    with pytest.raises(ArenaError, match=r"already holds a run .*--resume .*--overwrite"):
        train(train_config(toy_dir), run)
    assert (run / "metrics.jsonl").read_text() == before
    config = write_config(tmp_path, toy_dir)
    proc = arena_cli("train", "--population", str(config), "--out", str(run))
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2 and err.strip().splitlines()[-1].startswith("error: ") and "--overwrite" in err
    assert len(err.strip().splitlines()) == 1, err  # refused before any model loads: one line, nothing else
    # --overwrite starts over: the same run as the reference, not two runs' rows in one file.
    Run(train_config(toy_dir), run, progress=False).run(overwrite=True)
    assert learning_metrics(run) == learning_metrics(reference)
    assert same_weights(weights(run, 2), weights(reference, 2))


def test_out_naming_a_file_is_one_line(toy_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "a_file"
    target.write_text("not a run")
    config = write_config(tmp_path, toy_dir)
    proc = arena_cli("train", "--population", str(config), "--out", str(target))
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2
    assert err.strip() == f"error: --out {target} is a file, not a directory; give a new or existing run directory"
    with pytest.raises(ArenaError, match="is a file"):
        train(train_config(toy_dir), target / "below")


def killed_after_step_1(reference: Path, target: Path) -> Path:
    """``reference`` as it was when killed after its first checkpoint (metrics rows -1 and 0)."""
    run = copy_run(reference, target)
    shutil.rmtree(run / ck.CHECKPOINTS / "step-00000002")
    shutil.rmtree(run / "snapshots" / "agent-it00002")
    lines = (run / "metrics.jsonl").read_text().splitlines()
    (run / "metrics.jsonl").write_text("\n".join(lines[:2]) + "\n")
    return run


def test_a_moved_run_with_snapshots_resumes_exactly(toy_dir: Path, tmp_path: Path) -> None:
    reference = train(train_config(toy_dir, snapshot_every=1), tmp_path / "reference")
    first = killed_after_step_1(reference, tmp_path / "first")
    state = json.loads((ck.latest_checkpoint(first) / "state.json").read_text())
    assert str(reference.resolve()) not in json.dumps(state)  # stored relative to the run
    assert "${RUN}/snapshots/agent-it00001" in json.dumps(state)
    moved = tmp_path / "elsewhere" / "moved"
    moved.parent.mkdir()
    shutil.move(str(first), str(moved))
    train(train_config(toy_dir, snapshot_every=1), moved, resume=True)
    assert learning_metrics(moved) == learning_metrics(reference)
    assert same_weights(weights(moved, 2), weights(reference, 2))
    members = json.loads((moved / "population.json").read_text())["members"]
    snapshots = [m["spec"] for m in members if m["kind"] == "snapshot"]
    assert snapshots and all(str(moved.resolve()) in spec for spec in snapshots)


def test_absolute_snapshot_paths_of_older_checkpoints_still_load(toy_dir: Path, tmp_path: Path) -> None:
    reference = train(train_config(toy_dir, snapshot_every=1), tmp_path / "reference")
    first = killed_after_step_1(reference, tmp_path / "first")
    for step in ck.checkpoint_dirs(first):  # as an older arena wrote them: absolute paths, no manifest
        text = (step / "state.json").read_text().replace("${RUN}", str(reference.resolve()))
        (step / "state.json").write_text(text)
        (step / ck.MANIFEST).unlink()
    moved = tmp_path / "moved"
    shutil.move(str(first), str(moved))
    expected = learning_metrics(reference)
    shutil.rmtree(reference)  # the old absolute paths lead nowhere now
    resumed = Run(train_config(toy_dir, snapshot_every=1), moved, progress=False)
    assert resumed.resume() is not None
    specs = [m.spec for m in resumed.population.pool.members.values() if m.kind == "snapshot"]
    assert specs and all(spec.startswith(f"model:{moved.resolve()}/snapshots/") for spec in specs)
    resumed.run(resume=True)
    assert learning_metrics(moved) == expected
