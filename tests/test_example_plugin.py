"""Item 8 of the foundation: a third-party plugin distribution, pip-installed, found and used.

The example in docs/examples/arena-nim is installed into the running venv, checked through the real CLI in
subprocesses (entry points are read afresh there), and uninstalled afterwards.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "arena-nim"


def pip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args],
        capture_output=True,
        text=True,
        timeout=600,
    )


def arena(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "arena.core.cli.main", *args], capture_output=True, text=True, timeout=600
    )


@pytest.fixture(scope="module")
def nim_installed() -> Iterator[None]:
    # --no-deps/--no-build-isolation: everything it needs is in this venv already; no network needed.
    proc = pip("install", "--no-deps", "--no-build-isolation", str(EXAMPLE))
    assert proc.returncode == 0, proc.stderr
    try:
        yield
    finally:
        pip("uninstall", "-y", "arena-nim")


@pytest.mark.slow
def test_installed_plugin_is_listed_and_played(nim_installed: None, tmp_path: Path) -> None:
    listing = arena("plugins", "--json")
    assert listing.returncode == 0, listing.stderr
    plugins = {p["name"]: p for p in json.loads(listing.stdout)}
    assert plugins["nim"]["distribution"] == "arena-nim"
    assert set(plugins["nim"]["hooks"]) == {"register_arenas", "reflect"}

    arenas = {a["id"]: a for a in json.loads(arena("arenas", "--json").stdout)}
    assert arenas["nim"]["plugin"] == "nim" and arenas["nim"]["api"] == "aec"

    dump = tmp_path / "nim.jsonl"
    played = arena(
        "play", "nim", "--seat", "model:scripted", "--seat", "random", "--games", "12", "--episodes", "2",
        "--plugin", "nim", "--dump", str(dump), "--json",
    )  # fmt: skip
    assert played.returncode == 0, played.stderr
    result = json.loads(played.stdout)
    assert result["games"] == 12 and result["seats"][0]["invalid_actions"] == 0
    trials = [json.loads(line) for line in dump.read_text().splitlines()]
    # The generic renderer wrote the prompts and the plugin's reflect hook ran between the two episodes.
    assert all(t["reflections"] and t["reflections"][0]["name"] == "nim-lesson" for t in trials)
    assert all(len(t["episodes"]) == 2 for t in trials)


@pytest.mark.slow
def test_example_env_passes_pettingzoo_api_test(nim_installed: None) -> None:
    code = "from arena_nim import NimEnv; from pettingzoo.test import api_test; api_test(NimEnv(), num_cycles=100)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
