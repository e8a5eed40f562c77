"""Where built models live and how they get there without ever leaving a half-written directory behind.

Every model is built into a temporary sibling of its final directory and renamed into place, so a crash (or a
concurrent reader) sees either no directory or a complete one. A lock file next to the target keeps two
processes from building the same model twice at once: the second waits and then finds the finished directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import structlog

log = structlog.get_logger("arena.models")


def cache_root() -> Path:
    """``$ARENA_CACHE``, by default ``~/.cache/arena`` (read on every call so tests can redirect it)."""
    root = os.environ.get("ARENA_CACHE") or os.path.join("~", ".cache", "arena")
    return Path(root).expanduser()


def models_dir() -> Path:
    """``$ARENA_CACHE/models``: one sub-directory per built or converted model."""
    return cache_root() / "models"


@contextlib.contextmanager
def _locked(target: Path) -> Iterator[None]:
    target.parent.mkdir(parents=True, exist_ok=True)
    lock_path = target.parent / f".{target.name}.lock"
    with open(lock_path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build_atomically(target: Path, build: Callable[[Path], None], *, force: bool = False) -> Path:
    """Run ``build(tmp_dir)`` and rename ``tmp_dir`` to ``target`` unless ``target`` already exists.

    ``tmp_dir`` sits next to ``target`` (same filesystem, so the rename is atomic). With ``force`` an existing
    ``target`` is replaced: it is moved aside first and deleted only after the new one is in place.
    """
    target = Path(target)
    with _locked(target):
        if target.is_dir() and not force:
            return target
        for stale in target.parent.glob(f".{target.name}.*.tmp"):  # left by a killed build; we hold the lock
            shutil.rmtree(stale, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"))
        try:
            build(tmp)
            # mkdtemp creates 0700 (and some writers 0600 files); the cache may be shared by users of one machine.
            os.chmod(tmp, 0o755)
            for path in tmp.rglob("*"):
                os.chmod(path, 0o755 if path.is_dir() else 0o644)
            old: Path | None = None
            if target.exists():
                old = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".old"))
                os.replace(target, old / "previous")
            os.replace(tmp, target)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return target
