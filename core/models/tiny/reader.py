"""What the readers built on `tiny` share (``tiny-doors``, ``tiny-vault``): where they are cached, what ``arena models``
shows of them, the rule that only the default recipe fills the cache, and how a built reader is saved.

A reader is the cached `tiny` with one more fact marked for its memory circuit and a short SFT on one arena's prompts
(docs/models.md); its build module says what it marks and teaches, this one how it lands on disk.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from arena.core.api.errors import ArenaError
from arena.core.models.cache import build_atomically, models_dir
from arena.core.models.tiny import build as tiny
from arena.core.models.tiny.recipe import SFTConfig

R = TypeVar("R")

__all__ = ["build_reader", "reader_dir", "reader_info", "reader_sft", "save_reader"]


def reader_sft() -> SFTConfig:
    """The readers' SFT: two epochs at lr 1e-3 (the circuit held, the ``MEM`` readout free)."""
    return SFTConfig(epochs=2, lr=1e-3, warmup_steps=20, token_budget=4096, min_lr_ratio=0.1)


def reader_dir(name: str, version: int, seed: int = 0) -> Path:
    """``<models>/<name>-v<version>-tiny-v<tiny's version>-seed<seed>``: a new `tiny` builds a new reader."""
    return models_dir() / f"{name}-v{version}-tiny-v{tiny.BUILD_VERSION}-seed{seed}"


def reader_info(path: Path, quality_keys: Sequence[str]) -> dict[str, Any]:
    """What ``arena models`` shows: the path, whether it is built, and the build report's ``quality_keys``."""
    info: dict[str, Any] = {"path": str(path), "built": (path / "config.json").is_file(), "base": "tiny"}
    report = path / "build_report.json"
    if report.is_file():
        data = json.loads(report.read_text())
        info.update({k: data["quality"][k] for k in quality_keys})
    return info


def build_reader(
    cached: Path,
    out_dir: Path | str | None,
    seed: int,
    recipe: R,
    default: R,
    base: Path | str | None,
    force: bool,
    build_into: Callable[[Path, Path, int, R], None],
) -> Path:
    """Build into ``out_dir`` (default: ``cached``) from ``base`` (default: the cached `tiny` of ``seed``, built
    first when missing); a built directory is returned as it is unless ``force``. Only the default recipe on the
    default base fills the cache."""
    if out_dir is None and (recipe != default or base is not None):
        raise ArenaError("only the default recipe on the cached tiny builds into the cache: give an out_dir")
    target = Path(out_dir) if out_dir is not None else cached
    if (target / "config.json").is_file() and not force:
        return target
    source = Path(base) if base is not None else Path(tiny.build_tiny(seed=seed))
    return build_atomically(target, lambda tmp: build_into(tmp, source, seed, recipe), force=force)


def save_reader(
    out: Path, base: Path, model: Any, tokenizer: Any, held: dict[str, Any], report: dict[str, Any]
) -> None:
    """The weights, tokenizer and chat template, the held masks (RL keeps the circuit and the marks) and the
    readout file of ``base``, and ``build_report.json`` (``report`` plus the base it was built on)."""
    from arena.core.models.held import READOUT_FILE, load_held, save_held

    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    for name in ("tokenizer_config.json", "chat_template.jinja"):
        if (base / name).is_file():
            shutil.copy(base / name, out / name)
    if held:
        save_held(out, held)
    readout = load_held(base, READOUT_FILE)
    if readout:
        save_held(out, readout, READOUT_FILE)
    report = {"base": {"name": tiny.NAME, "build_version": tiny.BUILD_VERSION, "path": str(base)}, **report}
    (out / "build_report.json").write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
