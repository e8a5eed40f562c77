"""Shared test set-up.

Tests run with a private ``ARENA_CACHE`` so they never depend on what a developer has cached. Built models are
the exception: ``tiny`` takes minutes to build, so the ``model_cache`` fixture points the test at the user's
real cache, where a build is done once and reused (a build is deterministic, so reuse hides nothing).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# Read at import, before any fixture changes the environment.
ORIGINAL_ARENA_CACHE = os.environ.get("ARENA_CACHE")


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    os.environ["ARENA_CACHE"] = str(Path(tmp_path_factory.mktemp("arena-cache")))


@pytest.fixture
def model_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Use the user's model cache (``~/.cache/arena`` unless ARENA_CACHE was set) for this test."""
    if ORIGINAL_ARENA_CACHE is None:
        monkeypatch.delenv("ARENA_CACHE", raising=False)
    else:
        monkeypatch.setenv("ARENA_CACHE", ORIGINAL_ARENA_CACHE)


@pytest.fixture(autouse=True)
def _torch_threads_given_back() -> Iterator[None]:
    """A test that leaves torch's process-wide thread count changed fails (and the count is put back), so that
    one test cannot slow the rest: tests with ``torch_threads: 1`` once left the slow tests on one core."""
    import torch

    before = torch.get_num_threads()
    yield
    after = torch.get_num_threads()
    if after != before:
        torch.set_num_threads(before)
        pytest.fail(f"the test left torch's thread count at {after} (it was {before})")
