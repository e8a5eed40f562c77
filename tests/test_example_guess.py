"""Issue 29: the second example distribution, docs/examples/arena-guess, pip-installed, found, checked and used.

Installed into the running venv, checked through the real CLI in subprocesses (entry points are read afresh
there), and uninstalled afterwards, exactly as tests/test_example_plugin.py does with arena-nim.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_example_plugin import arena, pip

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "arena-guess"
SEATS = ("--seat", "model:scripted", "--seat", "guess-bot")  # guesser (seat 0), hider (seat 1)
MEMORY = "What earlier episodes of this trial showed:"


@pytest.fixture(scope="module")
def guess_installed() -> Iterator[None]:
    # --no-deps/--no-build-isolation: everything it needs is in this venv already; no network needed.
    proc = pip("install", "--no-deps", "--no-build-isolation", str(EXAMPLE))
    assert proc.returncode == 0, proc.stderr
    try:
        yield
    finally:
        pip("uninstall", "-y", "arena-guess")


@pytest.mark.slow
def test_installed_plugin_is_listed_and_checked(guess_installed: None) -> None:
    listing = arena("plugins", "--json")
    assert listing.returncode == 0, listing.stderr
    plugins = {p["name"]: p for p in json.loads(listing.stdout)}
    assert plugins["guess"]["distribution"] == "arena-guess"
    assert set(plugins["guess"]["hooks"]) == {"register_arenas", "register_opponents", "retrieve_memory"}
    assert {s["name"] for s in plugins["guess"]["settings"]} == {"max_facts", "header"}
    assert "without @hookimpl" not in listing.stderr

    arenas = {a["id"]: a for a in json.loads(arena("arenas", "--json").stdout)}
    assert arenas["guess"]["plugin"] == "guess" and arenas["guess"]["players"] == 2

    checked = arena("check-arena", "guess", *SEATS, "--json")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    findings = {f["check"]: f for f in json.loads(checked.stdout)}
    assert all(f["ok"] for f in findings.values()), findings
    # The guesser's first prompt names the hider's move without its number, and lists non-digit move names.
    (prompt,) = findings["first prompts"]["details"]
    assert "hider: hides a number" in prompt and "1: guess 1" in prompt


@pytest.mark.slow
def test_memory_reaches_the_second_episodes_prompt(guess_installed: None, tmp_path: Path) -> None:
    dump = tmp_path / "guess.jsonl"
    played = arena(
        "play", "guess", *SEATS, "--games", "6", "--episodes", "2", "--plugin", "guess", "--dump", str(dump),
        "--json",
    )  # fmt: skip
    assert played.returncode == 0, played.stderr
    result = json.loads(played.stdout)
    assert result["games"] == 6 and result["seats"][0]["invalid_actions"] == 0
    trials = [json.loads(line) for line in dump.read_text().splitlines()]
    assert len(trials) == 6 and all(len(t["episodes"]) == 2 for t in trials)
    for trial in trials:
        first, second = ([s for s in e["steps"] if s["prompt"]] for e in trial["episodes"])
        assert first and second and all(s["agent"] == "guesser" for s in first + second)
        assert all(MEMORY not in s["prompt"][-1]["content"] for s in first)
        # What episode 1's answers showed is in every prompt of episode 2, in the words the plugin wrote.
        guesses = [s["action"] for s in first]  # action k guesses the number k
        for step in second:
            text = step["prompt"][-1]["content"]
            facts = [line for line in text.splitlines() if line.startswith("- in episode 1 the number was ")]
            assert MEMORY in text and [int(fact.rsplit(" ", 1)[1]) for fact in facts] == guesses, text
        # The hider is a scripted opponent: its move is named by action_name, without the hidden number.
        hider = [s for e in trial["episodes"] for s in e["steps"] if s["agent"] == "hider"]
        assert {s["move"] for s in hider} == {"hides a number"}


@pytest.mark.slow
def test_example_env_passes_pettingzoo_api_test(guess_installed: None) -> None:
    code = (
        "from arena_guess import GuessEnv; from pettingzoo.test import api_test; "
        "api_test(GuessEnv(), num_cycles=100); api_test(GuessEnv(numbers=3, guesses=1), num_cycles=100)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
