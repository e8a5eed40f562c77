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
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file

CHECKPOINTS = "checkpoints"
_NAME = re.compile(r"^step-(\d{8})$")
_TENSOR_REF = "__tensor__"


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
    learner's directory loadable (model config, tokenizer, generation config).
    """
    root = Path(run_dir) / CHECKPOINTS
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step-{step:08d}"
    tmp = root / f".tmp-step-{step:08d}-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    tensors: dict[str, torch.Tensor] = {}
    flat = _flatten(dict(state), "", tensors)
    written = [tmp / "tensors.safetensors", tmp / "state.json"]
    for learner, model_state in models.items():
        folder = tmp / LEARNERS / learner
        folder.mkdir(parents=True)
        if model_files and learner in model_files:
            model_files[learner](folder)
        # Tied weights share storage; safetensors refuses shared tensors, so store independent copies.
        weights = {k: v.detach().cpu().clone().contiguous() for k, v in model_state.items()}
        save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
        written.extend(p for p in folder.iterdir() if p.is_file())
    save_file(tensors, str(tmp / "tensors.safetensors"))
    with open(tmp / "state.json", "w") as f:
        json.dump(flat, f)
    for file in written:
        with open(file, "rb") as f:
            os.fsync(f.fileno())
    if final.exists():  # re-saving a step (after a resume) replaces it whole
        shutil.rmtree(final)
    os.replace(tmp, final)
    _fsync_dir(root)
    for old in checkpoint_dirs(run_dir)[:-keep] if keep > 0 else []:
        shutil.rmtree(old, ignore_errors=True)
    for stale in root.glob(".tmp-step-*"):
        shutil.rmtree(stale, ignore_errors=True)
    return final


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


def load_checkpoint(path: Path) -> tuple[dict[str, dict[str, torch.Tensor]], dict[str, Any]]:
    """``({learner: weights}, state)`` of one checkpoint directory; no pickle involved."""
    path = Path(path)
    check_layout(path)
    tensors = load_file(str(path / "tensors.safetensors"))
    with open(path / "state.json") as f:
        state = _unflatten(json.load(f), tensors)
    root = path / LEARNERS
    learners = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    return {name: load_file(str(root / name / "model.safetensors")) for name in learners}, state


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


def step_of(path: Path) -> int:
    match = _NAME.match(Path(path).name)
    if not match:
        raise ValueError(f"{path} is not a checkpoint directory")
    return int(match.group(1))
