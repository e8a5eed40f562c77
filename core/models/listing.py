"""What ``arena models`` shows and how ``arena models --build NAME`` builds: the registered models, no building.

``list_models`` reads each entry's ``info()`` (cheap: parameters, cache path, whether built) and never calls the
resolver, so listing is instant even when ``tiny`` has not been built yet.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from arena.core.host import catalog


def list_models() -> list[dict[str, Any]]:
    """One dict per registered model: name, parameters, path, built, default_backend, description (+ extras)."""
    rows = []
    for entry in catalog.models():
        info_fn = entry.meta.get("info")
        info: dict[str, Any] = {}
        if callable(info_fn):
            try:
                info = dict(info_fn())
            except Exception as exc:  # a broken plugin's info must not hide the other models
                info = {"error": f"{type(exc).__name__}: {exc}"}
        row: dict[str, Any] = {
            "name": entry.name,
            "parameters": info.pop("parameters", None),
            "path": info.pop("path", None),
            "built": info.pop("built", None),
            "default_backend": entry.meta.get("default_backend", "hf"),
            "description": entry.meta.get("description", ""),
            "plugin": entry.plugin,
        }
        row.update(info)
        rows.append(row)
    return rows


def build_model(name: str, force: bool = False) -> Path:
    """Build (or convert) a registered model now and return its directory; ``force`` rebuilds a cached one.

    Entries may register ``build=callable(force: bool) -> path``; without it the resolver is called (it builds
    when missing, so ``force`` is then ignored).
    """
    entry = catalog.models().get(name)
    builder = entry.meta.get("build")
    if callable(builder):
        return Path(builder(force=force))
    return Path(entry.factory())
