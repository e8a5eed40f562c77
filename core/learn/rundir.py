"""A run directory's housekeeping: one writer at a time, no silent reuse, paths that survive a move.

* ``RunLock``: an exclusive ``fcntl.flock`` on ``RUN/.lock``, held by the ``arena train`` that writes the run.
  The kernel drops it when the process exits or is killed (``kill -9`` included), so a crashed run never
  leaves a stale lock; a second writer is refused in one line that names the holder's pid.
* ``holds_run``/``clear_run``: a fresh ``arena train`` into a directory that already holds a run refuses unless
  told ``--resume`` (continue it) or ``--overwrite`` (start over: the old run's files are removed).
* ``portable``/``localize``: the checkpoint stores paths inside the run (snapshots, as
  ``model:/abs/RUN/snapshots/agent-it00004``) relative to it, as ``model:${RUN}/snapshots/agent-it00004``; a
  resumed run puts its own directory back in. (``population.json``, a view for people, keeps absolute paths:
  the run rewrites it every iteration.) Checkpoints written with absolute paths still load: a path into
  a ``snapshots/`` folder that no longer exists is taken from this run's ``snapshots/`` when it is there.
* ``cut_metrics``: ``metrics.jsonl`` cut back to the rows before an iteration (a resumed run writes the rest
  again), dropping a partial line; written atomically.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from arena.core.api.errors import ArenaError

LOCK = ".lock"
RUN_TOKEN = "${RUN}"
#: Files and folders whose presence makes a directory a run (``arena train`` writes them first).
RUN_MARKERS = ("config.yaml", "metrics.jsonl", "checkpoints", "population.json")
_SNAPSHOT_PATH = re.compile(r"(?<=model:)(/[^@#\s]*?/snapshots/([^/@#\s]+))")


class RunLock:
    """Hold ``RUN/.lock`` exclusively for as long as this object is open (``release`` or process exit)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)
        check_out_dir(self.run_dir)
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            self.path = self.run_dir / LOCK
            self.fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise ArenaError(f"cannot create run directory {self.run_dir}: {exc.strerror}") from None
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(self.fd, 64).decode(errors="replace").strip() or "unknown"
            os.close(self.fd)
            self.fd = None
            raise ArenaError(
                f"{self.run_dir} is in use by another arena train (pid {holder}); wait for it to end or give "
                "another --out"
            ) from None
        os.ftruncate(self.fd, 0)
        os.write(self.fd, f"{os.getpid()}\n".encode())

    def release(self) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


def check_out_dir(path: Path) -> None:
    """A run directory must be a directory (or not exist yet): ``--out some_file`` is one clear line."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ArenaError(f"--out {path} is a file, not a directory; give a new or existing run directory")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ArenaError(f"--out {path}: {parent} is a file, not a directory")
            break


def holds_run(path: Path) -> list[str]:
    """The run files ``path`` holds (empty for a new or empty directory)."""
    path = Path(path)
    return [name for name in RUN_MARKERS if (path / name).exists()] if path.is_dir() else []


def clear_run(path: Path) -> None:
    """Remove everything in ``path`` but the lock (``--overwrite``)."""
    for entry in Path(path).iterdir():
        if entry.name == LOCK:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def _map_strings(obj: Any, fn: Any) -> Any:
    if isinstance(obj, str):
        return fn(obj)
    if isinstance(obj, Mapping):
        return {k: _map_strings(v, fn) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_map_strings(v, fn) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_map_strings(v, fn) for v in obj)
    return obj


def portable(obj: Any, run_dir: Path) -> Any:
    """``obj`` with every mention of ``run_dir`` (absolute) in its strings replaced by ``${RUN}``."""
    root = str(Path(run_dir).resolve())
    return _map_strings(obj, lambda s: s.replace(root + "/", RUN_TOKEN + "/") if root + "/" in s else s)


def localize(obj: Any, run_dir: Path) -> Any:
    """``portable``'s inverse for this run's directory; old absolute snapshot paths that moved are re-pointed."""
    root = Path(run_dir).resolve()

    def fix(text: str) -> str:
        if RUN_TOKEN in text:
            text = text.replace(RUN_TOKEN, str(root))

        def moved(match: re.Match[str]) -> str:
            old, name = match.group(1), match.group(2)
            here = root / "snapshots" / name
            return str(here) if not Path(old).exists() and here.exists() else old

        return _SNAPSHOT_PATH.sub(moved, text) if "/snapshots/" in text else text

    return _map_strings(obj, fix)


def cut_metrics(path: Path, iteration: int) -> int:
    """Keep the rows of ``metrics.jsonl`` whose iteration is below ``iteration`` (none when it is 0: the run
    starts over, its iteration ``-1`` evaluation included); unparseable lines are dropped. Returns rows dropped."""
    path = Path(path)
    if not path.exists():
        return 0
    kept, dropped = [], 0
    for line in path.read_bytes().decode(errors="replace").splitlines():
        try:
            row = json.loads(line)
            keep = iteration > 0 and int(row["iteration"]) < iteration
        except (ValueError, KeyError, TypeError):
            keep = False
        if keep:
            kept.append(line)
        else:
            dropped += 1
    if dropped:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text("".join(line + "\n" for line in kept))
        os.replace(tmp, path)
    return dropped
