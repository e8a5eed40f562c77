"""The model registry: named models resolve through their plugin; listing never builds anything."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from arena.core.host import catalog
from arena.core.models import resolve_model
from arena.core.models.listing import build_model, list_models


def test_builtin_models_are_registered_with_info() -> None:
    models = catalog.models()
    for name in ("scripted", "tiny", "smollm2-135m-instruct"):
        assert name in models
    assert models.get("tiny").meta["default_backend"] == "hf"
    info = models.get("tiny").meta["info"]()
    assert isinstance(info["parameters"], int) and info["parameters"] > 1_000_000
    assert info["path"].startswith(os.environ["ARENA_CACHE"])
    assert "tiny-v" in info["path"] and info["path"].endswith("-seed0")


def test_listing_does_not_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENA_CACHE", str(tmp_path))
    rows = {row["name"]: row for row in list_models()}
    assert set(rows) >= {"scripted", "tiny", "smollm2-135m-instruct"}
    for name in ("tiny", "smollm2-135m-instruct"):
        row = rows[name]
        assert row["built"] is False
        assert row["default_backend"] == "hf" and row["description"]
        assert isinstance(row["parameters"], int)
        assert row["path"].startswith(str(tmp_path))
    assert rows["scripted"]["default_backend"] == "scripted"
    assert not (tmp_path / "models").exists() or not any((tmp_path / "models").iterdir())


def test_resolve_model_passes_through_unknown_names(monkeypatch: pytest.MonkeyPatch) -> None:
    from arena.core import models

    monkeypatch.setattr(models, "hub_unreachable", lambda: None)  # a machine that reaches the hub
    assert resolve_model("Qwen/Qwen2.5-0.5B-Instruct") == "Qwen/Qwen2.5-0.5B-Instruct"
    assert resolve_model("scripted") == "scripted"


def test_build_model_uses_the_registered_builder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from arena.core.models.tiny import build as tiny

    calls: list[bool] = []

    def fake_build(force: bool = False) -> Path:
        calls.append(force)
        return tmp_path

    monkeypatch.setattr(tiny, "build_tiny", fake_build)
    assert build_model("tiny", force=True) == tmp_path
    assert calls == [True]
