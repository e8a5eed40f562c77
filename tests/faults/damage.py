"""The kinds of damage the suite does to a checkpoint, as functions of its directory."""

from __future__ import annotations

import json
import shutil
import struct
from collections.abc import Callable
from pathlib import Path

from arena.core.learn import checkpoint as ck

WEIGHTS = Path("learners/agent/model.safetensors")
TENSORS = Path("tensors.safetensors")
STATE = Path("state.json")


def truncate(file: Path) -> None:
    data = file.read_bytes()
    file.write_bytes(data[: len(data) // 2])


def flip_header(file: Path) -> None:
    """Flip bits inside the safetensors JSON header (bytes 8..): it no longer parses."""
    data = bytearray(file.read_bytes())
    for i in range(9, 13):
        data[i] ^= 0xFF
    file.write_bytes(bytes(data))


def set_first_float(file: Path, value: float, contains: str = "") -> None:
    """Overwrite the first float32 element of the first F32 tensor whose name contains ``contains``, in place."""
    data = bytearray(file.read_bytes())
    size = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + size])
    for key, info in sorted(header.items()):
        if key != "__metadata__" and info["dtype"] == "F32" and contains in key:
            start = 8 + size + info["data_offsets"][0]
            data[start : start + 4] = struct.pack("<f", value)
            file.write_bytes(bytes(data))
            return
    raise AssertionError(f"no F32 tensor with {contains!r} in {file}")


def edit_state(step: Path, change: Callable[[dict], None]) -> None:
    state = json.loads((step / STATE).read_text())
    change(state)
    (step / STATE).write_text(json.dumps(state))


def _bad_rng(state: dict) -> None:
    internal = state["rng"]["python"]["__tuple__"][1]["__tuple__"]  # (version, internal, gauss), as JSON
    state["rng"]["python"]["__tuple__"][1]["__tuple__"] = internal[:10]  # a Mersenne Twister state of 10 words


def _empty(step: Path) -> None:
    shutil.rmtree(step)
    step.mkdir()


#: Damage that every checkpoint detects, with or without its manifest (the manifest catches each first).
DETECTED: dict[str, Callable[[Path], None]] = {
    "weights truncated": lambda s: truncate(s / WEIGHTS),
    "weights header flipped": lambda s: flip_header(s / WEIGHTS),
    "weights bytes flipped to NaN": lambda s: set_first_float(s / WEIGHTS, float("nan")),
    "weights deleted": lambda s: (s / WEIGHTS).unlink(),
    "optimizer tensors truncated": lambda s: truncate(s / TENSORS),
    "optimizer tensors header flipped": lambda s: flip_header(s / TENSORS),
    "optimizer moments flipped to NaN": lambda s: set_first_float(s / TENSORS, float("nan"), "exp_avg"),
    "optimizer tensors deleted": lambda s: (s / TENSORS).unlink(),
    "state.json truncated": lambda s: truncate(s / STATE),
    "state.json empty": lambda s: (s / STATE).write_text(""),
    "state.json deleted": lambda s: (s / STATE).unlink(),
    "state.json missing key": lambda s: edit_state(s, lambda st: st.pop("population")),
    "state.json missing learner state": lambda s: edit_state(s, lambda st: st["learners"]["agent"].pop("trainer")),
    "bad RNG state": lambda s: edit_state(s, _bad_rng),
    "empty newest step directory": _empty,
    "inf in the weights": lambda s: set_first_float(s / WEIGHTS, float("inf")),
}

#: Damage only the manifest's checksums can see: a weight changed to another finite number.
CHECKSUM_ONLY: dict[str, Callable[[Path], None]] = {
    "weights bytes changed (finite)": lambda s: set_first_float(s / WEIGHTS, 0.125),
}


def drop_manifests(run: Path) -> None:
    """Make every checkpoint of ``run`` look written by an arena before manifests."""
    for step in ck.checkpoint_dirs(run):
        (step / ck.MANIFEST).unlink(missing_ok=True)


def contents(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
