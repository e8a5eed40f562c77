"""Checkpoints that survive ``kill -9``: safetensors and JSON, written to a temp dir, then renamed.

A checkpoint is a directory ``checkpoints/step-00000012/`` holding

* ``learners/<name>/``: each learner's weights (``model.safetensors``) with its model config and tokenizer, so
  the directory loads as a model on its own (``model:RUN/checkpoints/step-00000012/learners/agent``): it is what
  ``arena eval`` plays and what a snapshot of the learner in the opponent pool points to;
* ``tensors.safetensors``: every other tensor (optimizer moments, torch RNG states), flattened by key path;
* ``state.json``: everything else (optimizer hyper-parameters and step counts, scheduler, numpy and Python RNG
  states, trainer and population state), with tensors replaced by references into ``tensors.safetensors``.

Nothing is pickled, so loading a checkpoint runs no code. The directory appears under its final name only after
every file is written and flushed (``os.replace`` of a complete temp dir), so a crash at any moment leaves either
the previous checkpoints or the new one, never half of one. The newest ``keep`` checkpoints are kept.

Checkpoints verify themselves. ``manifest.json``, written last (after every other file is flushed), holds the
size and SHA-256 of every file; ``load_checkpoint`` checks them, parses every file, and refuses non-finite
floating-point values (weights, optimizer moments) and RNG states that do not restore; any failure is a
``DamagedCheckpoint`` naming the file and what is wrong with it. A checkpoint written before manifests existed
(no ``manifest.json``) is still read: everything but the checksums is checked, and ``legacy`` says so.
A failed write (full disk, any ``OSError``) removes its temp dir and raises ``CheckpointWriteError``, one line
naming the path and the cause; the checkpoints already there are untouched.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from arena.core.api.errors import ArenaError

CHECKPOINTS = "checkpoints"
MANIFEST = "manifest.json"
#: Where a resumed run moves a damaged checkpoint (kept, never deleted; not counted or pruned as a checkpoint).
DAMAGED_SUFFIX = ".damaged"
_NAME = re.compile(r"^step-(\d{8})$")
_TENSOR_REF = "__tensor__"


class DamagedCheckpoint(Exception):
    """A checkpoint directory that cannot be trusted: ``reason`` names the file and what is wrong with it."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"{self.path.name}: {reason}")


class CheckpointWriteError(ArenaError):
    """A checkpoint that could not be written (full disk, permissions, I/O error); nothing partial is left."""


def io_cause(exc: BaseException) -> str:
    """The cause of an I/O failure in a few words (``No space left on device``), from Python or safetensors."""
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    text = " ".join(str(exc).split())
    code = re.search(r"code: (\d+)", text) or re.search(r"os error (\d+)", text)
    if code:
        return os.strerror(int(code.group(1)))
    return text or type(exc).__name__


def _flatten(obj: Any, path: str, tensors: dict[str, torch.Tensor]) -> Any:
    """JSON-able structure with tensors moved into ``tensors`` (keys are their paths)."""
    if isinstance(obj, torch.Tensor):
        key = path or "root"
        tensors[key] = obj.detach().cpu().contiguous()
        return {_TENSOR_REF: key}
    if isinstance(obj, Mapping):
        # JSON keys are strings; remember int keys (optimizer state is keyed by parameter index).
        out = {str(k): _flatten(v, f"{path}.{k}" if path else str(k), tensors) for k, v in obj.items()}
        int_keys = [str(k) for k in obj if isinstance(k, int)]
        if int_keys:
            out["__int_keys__"] = int_keys
        return out
    if isinstance(obj, tuple):
        return {"__tuple__": [_flatten(v, f"{path}.{i}", tensors) for i, v in enumerate(obj)]}
    if isinstance(obj, list):
        return [_flatten(v, f"{path}.{i}", tensors) for i, v in enumerate(obj)]
    if isinstance(obj, np.ndarray):
        return {"__ndarray__": obj.tolist(), "dtype": str(obj.dtype)}
    if isinstance(obj, np.generic):
        return obj.item()
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    raise TypeError(f"cannot checkpoint a value of type {type(obj).__name__} at {path or 'root'}")


def _unflatten(obj: Any, tensors: Mapping[str, torch.Tensor]) -> Any:
    if isinstance(obj, list):
        return [_unflatten(v, tensors) for v in obj]
    if isinstance(obj, dict):
        if set(obj) == {_TENSOR_REF}:
            return tensors[obj[_TENSOR_REF]]
        if set(obj) == {"__tuple__"}:
            return tuple(_unflatten(v, tensors) for v in obj["__tuple__"])
        if set(obj) == {"__ndarray__", "dtype"}:
            return np.asarray(obj["__ndarray__"], dtype=obj["dtype"])
        int_keys = set(obj.get("__int_keys__", ()))
        return {(int(k) if k in int_keys else k): _unflatten(v, tensors) for k, v in obj.items() if k != "__int_keys__"}
    return obj


def rng_state() -> dict[str, Any]:
    """Every RNG a CPU run draws from: Python, NumPy's global, torch's CPU (and CUDA when present)."""
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def check_rng_state(state: Any) -> None:
    """Raise ``ValueError`` unless ``state`` (``rng_state()``'s layout) restores; touches no global RNG."""
    try:
        version, internal, gauss = state["python"]
        random.Random().setstate((version, tuple(internal), gauss))
        kind, keys, pos, has_gauss, cached = state["numpy"]
        np.random.RandomState().set_state((kind, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))
        torch.Generator().set_state(state["torch"])
    except Exception as exc:  # any shape of garbage: wrong length, wrong type, missing entry
        detail = " ".join(str(exc).split())
        raise ValueError(f"the RNG state does not restore ({type(exc).__name__}: {detail})") from None


def set_rng_state(state: Mapping[str, Any]) -> None:
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((kind, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(list(state["cuda"]))


def checkpoint_dirs(run_dir: Path) -> list[Path]:
    """Complete checkpoints, oldest first (temp dirs of interrupted saves are ignored)."""
    root = Path(run_dir) / CHECKPOINTS
    if not root.is_dir():
        return []
    return sorted((p for p in root.iterdir() if p.is_dir() and _NAME.match(p.name)), key=lambda p: p.name)


LEARNERS = "learners"


def save_checkpoint(
    run_dir: Path,
    step: int,
    models: Mapping[str, Mapping[str, torch.Tensor]],
    state: Mapping[str, Any],
    keep: int = 3,
    model_files: Mapping[str, Callable[[Path], None]] | None = None,
) -> Path:
    """Write checkpoint ``step`` atomically and prune to the newest ``keep``; returns its directory.

    ``models`` maps learner names to weights; ``model_files[name](directory)`` writes whatever else makes the
    learner's directory loadable (model config, tokenizer, generation config). Every file is flushed, then the
    manifest of their checksums, then the directory is renamed into place. A failed write raises
    ``CheckpointWriteError`` (one line: the path and the cause) and leaves no temp dir behind; an interruption
    (``kill -9``) leaves at most a temp dir, which the next save removes.
    """
    root = Path(run_dir) / CHECKPOINTS
    final = root / f"step-{step:08d}"
    tmp = root / f".tmp-step-{step:08d}-{os.getpid()}"
    tensors: dict[str, torch.Tensor] = {}
    flat = _flatten(dict(state), "", tensors)  # a value that cannot be stored fails before anything is written
    try:
        root.mkdir(parents=True, exist_ok=True)
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir()
        for learner, model_state in models.items():
            folder = tmp / LEARNERS / learner
            folder.mkdir(parents=True)
            if model_files and learner in model_files:
                model_files[learner](folder)
            # Tied weights share storage; safetensors refuses shared tensors, so store independent copies.
            weights = {k: v.detach().cpu().clone().contiguous() for k, v in model_state.items()}
            save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
        save_file(tensors, str(tmp / "tensors.safetensors"))
        with open(tmp / "state.json", "w") as f:
            json.dump(flat, f)
        files = sorted(p for p in tmp.rglob("*") if p.is_file())
        for file in files:
            with open(file, "rb") as f:
                os.fsync(f.fileno())
        manifest = {"format": 1, "step": step, "files": {p.relative_to(tmp).as_posix(): _describe(p) for p in files}}
        with open(tmp / MANIFEST, "w") as f:
            json.dump(manifest, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        if final.exists():  # re-saving a step (after a resume) replaces it whole
            shutil.rmtree(final)
        os.replace(tmp, final)
        _fsync_dir(root)
    except (OSError, SafetensorError) as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        where = getattr(exc, "filename", None) or tmp
        previous = latest_checkpoint(run_dir)
        kept = f"the previous checkpoint {previous.name} is intact" if previous else "no earlier checkpoint exists"
        raise CheckpointWriteError(
            f"cannot write checkpoint {final}: {io_cause(exc)} (at {where}); nothing partial was left and {kept}"
        ) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    for old in checkpoint_dirs(run_dir)[:-keep] if keep > 0 else []:
        shutil.rmtree(old, ignore_errors=True)
    for stale in root.glob(".tmp-step-*"):
        shutil.rmtree(stale, ignore_errors=True)
    return final


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _describe(path: Path) -> dict[str, Any]:
    return {"size": path.stat().st_size, "sha256": _sha256(path)}


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class CheckpointFormatError(ValueError):
    """A checkpoint written in a layout this version cannot read."""


def check_layout(path: Path) -> None:
    """Refuse, in one clear sentence, the single-model layout used before the population manager."""
    path = Path(path)
    if (path / "model.safetensors").is_file() and not (path / LEARNERS).is_dir():
        raise CheckpointFormatError(
            f"checkpoint {path} has the older single-model layout (model.safetensors at its top, no learners/ "
            "folder), which this version of arena cannot load; train again, or move model.safetensors together "
            "with the base model's config.json and tokenizer files into learners/<learner name>/"
        )


def verify_checkpoint(path: Path) -> bool:
    """Check ``path``'s files against its manifest; True when it has one, False for a legacy checkpoint.

    Raises ``DamagedCheckpoint`` for an empty directory, an unreadable manifest, or a file that is missing or
    differs from the manifest in size or checksum. A legacy checkpoint (no manifest) must at least have its
    ``state.json`` and ``tensors.safetensors``.
    """
    path = Path(path)
    if not path.is_dir():
        raise DamagedCheckpoint(path, "not a directory")
    if not any(path.iterdir()):
        raise DamagedCheckpoint(path, "the directory is empty")
    manifest = path / MANIFEST
    if not manifest.is_file():
        for name in ("state.json", "tensors.safetensors"):
            if not (path / name).is_file():
                raise DamagedCheckpoint(path, f"{name} is missing (and there is no {MANIFEST})")
        return False
    try:
        files = json.loads(manifest.read_text())["files"]
        entries = [(str(name), int(entry["size"]), str(entry["sha256"])) for name, entry in files.items()]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise DamagedCheckpoint(path, f"{MANIFEST} is unreadable ({type(exc).__name__})") from None
    for name, size, digest in entries:
        file = path / name
        if not file.is_file():
            raise DamagedCheckpoint(path, f"{name} is missing")
        found = file.stat().st_size
        if found != size:
            raise DamagedCheckpoint(path, f"{name} has {found} bytes, the manifest says {size}")
        if _sha256(file) != digest:
            raise DamagedCheckpoint(path, f"{name} does not match its checksum")
    return True


def _nonfinite(tensors: Mapping[str, torch.Tensor]) -> list[str]:
    return [k for k, t in tensors.items() if t.is_floating_point() and not bool(torch.isfinite(t).all())]


def _rng_states(state: Any) -> Iterable[Any]:
    if isinstance(state, Mapping):
        if "rng" in state:
            yield state["rng"]
        for part in state.get("ranks") or ():
            if isinstance(part, Mapping) and "rng" in part:
                yield part["rng"]


def load_checkpoint(
    path: Path, required: Iterable[str] = ()
) -> tuple[dict[str, dict[str, torch.Tensor]], dict[str, Any]]:
    """``({learner: weights}, state)`` of one checkpoint directory; no pickle involved.

    Verifies the checkpoint first (``verify_checkpoint``), then refuses what a checksum cannot vouch for: a file
    that does not parse, a tensor reference without its tensor, a ``required`` top-level key missing from the
    state, a non-finite floating-point value anywhere (weights, optimizer moments, master weights), an RNG state
    that does not restore. Every failure is a ``DamagedCheckpoint``; the older single-model layout is a
    ``CheckpointFormatError``.
    """
    path = Path(path)
    check_layout(path)
    verify_checkpoint(path)
    try:
        tensors = load_file(str(path / "tensors.safetensors"))
    except (OSError, SafetensorError) as exc:
        raise DamagedCheckpoint(path, f"tensors.safetensors does not load ({' '.join(str(exc).split())})") from None
    try:
        with open(path / "state.json") as f:
            raw = json.load(f)
    except OSError as exc:
        raise DamagedCheckpoint(path, f"state.json cannot be read ({exc.strerror})") from None
    except ValueError as exc:  # JSONDecodeError, and bad UTF-8
        raise DamagedCheckpoint(path, f"state.json is not valid JSON ({exc})") from None
    try:
        state = _unflatten(raw, tensors)
    except KeyError as exc:
        raise DamagedCheckpoint(path, f"state.json refers to tensor {exc} that tensors.safetensors lacks") from None
    if not isinstance(state, dict):
        raise DamagedCheckpoint(path, f"state.json holds a {type(state).__name__}, not a mapping")
    missing = [key for key in required if key not in state]
    if missing:
        raise DamagedCheckpoint(path, f"state.json lacks {', '.join(map(repr, missing))}")
    bad = _nonfinite(tensors)
    if bad:
        raise DamagedCheckpoint(path, f"tensors.safetensors holds non-finite values ({', '.join(bad[:3])})")
    for rng in _rng_states(state):
        try:
            check_rng_state(rng)
        except ValueError as exc:
            raise DamagedCheckpoint(path, f"state.json: {exc}") from None
    root = path / LEARNERS
    learners = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    models = {}
    for name in learners:
        file = root / name / "model.safetensors"
        where = f"{LEARNERS}/{name}/model.safetensors"
        if not file.is_file():
            raise DamagedCheckpoint(path, f"{where} is missing")
        try:
            models[name] = load_file(str(file))
        except (OSError, SafetensorError) as exc:
            raise DamagedCheckpoint(path, f"{where} does not load ({' '.join(str(exc).split())})") from None
        bad = _nonfinite(models[name])
        if bad:
            raise DamagedCheckpoint(path, f"{where} holds non-finite weights ({', '.join(bad[:3])})")
    return models, state


def is_legacy(path: Path) -> bool:
    """A checkpoint written before manifests (no ``manifest.json``): checked, but without checksums."""
    return not (Path(path) / MANIFEST).is_file()


def newest_intact(
    run_dir: Path, required: Iterable[str] = ()
) -> tuple[Path | None, dict[str, dict[str, torch.Tensor]], dict[str, Any], list[DamagedCheckpoint]]:
    """The newest checkpoint of ``run_dir`` that loads, its contents, and the damaged newer ones skipped."""
    damaged: list[DamagedCheckpoint] = []
    for candidate in reversed(checkpoint_dirs(run_dir)):
        try:
            models, state = load_checkpoint(candidate, required)
        except DamagedCheckpoint as exc:
            damaged.append(exc)
            continue
        return candidate, models, state, damaged
    return None, {}, {}, damaged


def set_aside(path: Path) -> Path:
    """Rename a damaged checkpoint to ``step-N.damaged`` (``-2``, ... if taken): kept for inspection, never pruned."""
    path = Path(path)
    target = path.with_name(path.name + DAMAGED_SUFFIX)
    n = 2
    while target.exists():
        target = path.with_name(f"{path.name}{DAMAGED_SUFFIX}-{n}")
        n += 1
    os.replace(path, target)
    return target


def describe_damage(damaged: Iterable[DamagedCheckpoint]) -> str:
    return "; ".join(str(d) for d in damaged)


def learner_model_dir(checkpoint: Path, learner: str) -> Path:
    """The directory of ``learner``'s model in ``checkpoint``, loadable as ``model:PATH``."""
    check_layout(Path(checkpoint))
    folder = Path(checkpoint) / LEARNERS / learner
    if not (folder / "model.safetensors").is_file():
        present = sorted(p.name for p in (Path(checkpoint) / LEARNERS).glob("*")) or ["none"]
        raise FileNotFoundError(f"checkpoint {checkpoint} has no learner {learner!r} (learners: {', '.join(present)})")
    return folder


def latest_checkpoint(run_dir: Path) -> Path | None:
    dirs = checkpoint_dirs(run_dir)
    return dirs[-1] if dirs else None


def step_of_or_none(path: Path) -> int | None:
    match = _NAME.match(Path(path).name)
    return int(match.group(1)) if match else None


def step_of(path: Path) -> int:
    match = _NAME.match(Path(path).name)
    if not match:
        raise ValueError(f"{path} is not a checkpoint directory")
    return int(match.group(1))
