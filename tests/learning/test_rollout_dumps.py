"""The rollout dumps (``arena train --dump-rollouts``): what :class:`Recorder` writes, :func:`read_rollouts` reads
back, in iteration order and row order, on the main process only."""

from __future__ import annotations

from pathlib import Path

from arena.core.learn.distributed import Dist
from arena.core.learn.metrics import Recorder, read_rollouts


def test_read_rollouts_returns_every_row_in_iteration_and_write_order(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path, Dist())
    # Written out of order and past iteration 9, so a name sort that ignored the zero padding would misorder them.
    recorder.rollouts(10, [{"kind": "action", "n": 3}])
    recorder.rollouts(2, [{"kind": "action", "n": 1}, {"kind": "reflection", "n": 2}])
    assert list(read_rollouts(tmp_path)) == [
        (2, {"kind": "action", "n": 1}),
        (2, {"kind": "reflection", "n": 2}),
        (10, {"kind": "action", "n": 3}),
    ]


def test_a_run_without_dumps_reads_as_no_rows_and_other_ranks_write_none(tmp_path: Path) -> None:
    assert list(read_rollouts(tmp_path)) == []
    Recorder(tmp_path, Dist(rank=1, world=2)).rollouts(0, [{"kind": "action"}])
    assert not (tmp_path / "rollouts").exists()
