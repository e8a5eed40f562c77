"""Shared test set-up: a private cache directory so tests never touch ~/.cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    if "ARENA_CACHE" not in os.environ:
        os.environ["ARENA_CACHE"] = str(Path(tmp_path_factory.mktemp("arena-cache")))
