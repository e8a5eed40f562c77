"""A full disk: one line naming the path and the cause, no partial checkpoint, the previous one intact.

As root (CI) the run lives on a small tmpfs that really fills up; elsewhere a stub raises ENOSPC where the write
would have failed. Either way the run can be resumed once there is room again, and continues exactly.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from arena.core.api.errors import ArenaError
from arena.core.learn import checkpoint as ck
from arena.core.learn.run import Run
from tests.faults.conftest import arena_cli, copy_run, learning_metrics, same_weights, train, train_config, weights


def one_checkpoint_run(reference: Path, target: Path) -> Path:
    """The reference run as it was after iteration 0: checkpoint step-1 and metrics rows -1 and 0."""
    run = copy_run(reference, target)
    shutil.rmtree(run / ck.CHECKPOINTS / "step-00000002")
    lines = (run / "metrics.jsonl").read_text().splitlines()
    (run / "metrics.jsonl").write_text("\n".join(lines[:2]) + "\n")
    return run


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MiB tmpfs (root only: skipped elsewhere, where the stub tests below stand in)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root; the ENOSPC stub tests cover this case")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path, leave: int) -> Path:
    stat = os.statvfs(disk)
    free = stat.f_bavail * stat.f_frsize
    filler = disk / "filler"
    with open(filler, "wb") as f:
        f.write(b"\0" * max(0, free - leave))
    return filler


def test_a_full_tmpfs(reference: Path, toy_dir: Path, small_disk: Path) -> None:
    run = one_checkpoint_run(reference, small_disk / "run")
    filler = fill(small_disk, leave=1 << 20)  # room for the metrics line, not for a 5 MB checkpoint
    proc = arena_cli("train", "--resume", str(run))
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and errors == [err.strip().splitlines()[-1]], err
    assert f"cannot write checkpoint {run / ck.CHECKPOINTS / 'step-00000002'}" in errors[0]
    assert "No space left on device" in errors[0] and "step-00000001 is intact" in errors[0]
    assert [p.name for p in (run / ck.CHECKPOINTS).iterdir()] == ["step-00000001"]  # no temp dir left
    ck.load_checkpoint(run / ck.CHECKPOINTS / "step-00000001")  # verifies: intact
    # Room again: the run resumes and ends exactly as the reference did.
    filler.unlink()
    train(train_config(toy_dir), run, resume=True)
    assert learning_metrics(run) == learning_metrics(reference)
    assert same_weights(weights(run, 2), weights(reference, 2))


def test_enospc_while_writing_a_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ck.save_checkpoint(tmp_path, 1, {"a": {"w": torch.ones(4)}}, {"step": 1})
    real = ck.save_file
    calls = []

    def full(tensors, filename, metadata=None):  # the second file hits a full disk half-way
        calls.append(filename)
        if len(calls) == 2:
            Path(filename).write_bytes(b"\0" * 10)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), filename)
        return real(tensors, filename, metadata=metadata)

    monkeypatch.setattr(ck, "save_file", full)
    with pytest.raises(ck.CheckpointWriteError) as caught:
        ck.save_checkpoint(tmp_path, 2, {"a": {"w": torch.zeros(4)}}, {"step": 2})
    message = str(caught.value)
    assert "\n" not in message and "No space left on device" in message and calls[1] in message
    assert "the previous checkpoint step-00000001 is intact" in message
    assert [p.name for p in (tmp_path / ck.CHECKPOINTS).iterdir()] == ["step-00000001"]
    _, state = ck.load_checkpoint(tmp_path / ck.CHECKPOINTS / "step-00000001")
    assert state == {"step": 1}


def test_safetensors_io_errors_read_as_their_cause() -> None:
    from safetensors import SafetensorError

    rust = SafetensorError('Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No sp" })')
    assert ck.io_cause(rust) == os.strerror(errno.ENOSPC)
    assert ck.io_cause(OSError(errno.EACCES, os.strerror(errno.EACCES), "/x")) == os.strerror(errno.EACCES)


def test_enospc_on_any_other_run_file_is_one_line(
    reference: Path, toy_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = one_checkpoint_run(reference, tmp_path / "run")

    def full(self: Run) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.out_dir / "population.json.tmp"))

    monkeypatch.setattr(Run, "write_population", full)
    with pytest.raises(ArenaError) as caught:
        train(train_config(toy_dir), run, resume=True)
    assert str(caught.value) == f"cannot write {run / 'population.json.tmp'}: No space left on device; the run stopped"
    monkeypatch.undo()
    train(train_config(toy_dir), run, resume=True)  # and it resumes from there exactly
    assert learning_metrics(run) == learning_metrics(reference)
