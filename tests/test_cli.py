"""The command line: listings, `arena play`, and one clear line for every error a user can cause."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from arena.core.cli.main import main

ARENA = [sys.executable, "-m", "arena.core.cli.main"]


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    return subprocess.run([*ARENA, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=600)


def test_lists_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins", "--json"]) == 0
    plugins = json.loads(capsys.readouterr().out)
    assert {"name", "distribution", "version", "hooks"} <= set(plugins[0])
    assert main(["arenas", "--json"]) == 0
    arenas = {a["id"]: a for a in json.loads(capsys.readouterr().out)}
    assert arenas["rock_paper_scissors"]["api"] == "parallel"
    assert arenas["kuhn_poker"]["players"] == 2 and arenas["kuhn_poker"]["source"] == "open_spiel:kuhn_poker"
    assert main(["opponents", "--arena", "kuhn_poker", "--json"]) == 0
    ids = {o["id"] for o in json.loads(capsys.readouterr().out)}
    assert {"random", "cfr", "cfr-argmax", "conservative", "aggressive", "intermediate"} <= ids
    assert "mcts" not in ids


def test_play_json_shape(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["play", "kuhn_poker", "--seat", "model:scripted", "--seat", "intermediate", "--games", "40", "--json"])
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert result["arena"] == "kuhn_poker" and result["games"] == 40
    assert [s["spec"] for s in result["seats"]] == ["model:scripted", "intermediate"]
    for seat in result["seats"]:
        assert {"spec", "mean_return", "wins", "draws", "losses", "invalid_actions"} <= set(seat)
        assert seat["wins"] + seat["draws"] + seat["losses"] == 40
    assert abs(result["seats"][0]["mean_return"] + result["seats"][1]["mean_return"]) < 1e-9  # zero-sum


def test_play_config_file_and_dump(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "rps.yaml"
    config.write_text(
        "arena: rock_paper_scissors\nseats: [model:scripted, rps-cycle]\ngames: 5\ntrial:\n  episodes: 2\n"
    )
    dump = tmp_path / "trials.jsonl"
    assert main(["play", "--config", str(config), "--dump", str(dump), "seed=3", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["games"] == 5 and len(result["by_episode"]["model:scripted"]) == 2
    trials = [json.loads(line) for line in dump.read_text().splitlines()]
    assert len(trials) == 5 and trials[0]["seed"] == 3
    # won_by: the share of trials won in some episode so far, recounted from the dump.
    won = [[e["outcomes"]["player_0"] == "win" for e in t["episodes"]] for t in trials]
    expected = [sum(any(w[: k + 1]) for w in won) / 5 for k in range(2)]
    assert [row["won_by"] for row in result["by_episode"]["model:scripted"]] == pytest.approx(expected)
    assert trials[0]["reflections"][0]["name"] == "reflection"


def test_play_passes_plugin_options_to_the_trials(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["play", "kuhn_poker", "--seat", "model:scripted", "--seat", "aggressive", "--games", "3"]
    base += ["--episodes", "2", "--plugin", "mage", "--json"]
    by_memory = {}
    for memory in ("reflection_only", "history_only"):
        dump = tmp_path / f"{memory}.jsonl"
        assert main([*base, "--dump", str(dump), f"options.mage.memory={memory}"]) == 0
        capsys.readouterr()
        by_memory[memory] = [json.loads(line) for line in dump.read_text().splitlines()]
    # MAGE reflects only when a later episode reads the reflection: history_only shows transcripts instead.
    assert all(t["reflections"] and t["reflections"][0]["name"] == "mage" for t in by_memory["reflection_only"])
    assert all(not t["reflections"] for t in by_memory["history_only"])


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["play", "kuhn", "--seat", "random", "--seat", "random"], "unknown arena 'kuhn' (did you mean 'kuhn_poker'?)"),
        (["play", "kuhn_poker", "--seat", "cfrr", "--seat", "random"], "unknown opponent 'cfrr'"),
        (["play", "kuhn_poker", "--seat", "random", "--seat", "random", "--plugin", "reflekt"], "unknown plugin"),
        (
            ["play", "kuhn_poker", "--seat", "random", "--seat", "random", "trial.episods=2"],
            "unknown key 'trial.episods'",
        ),
        (["play", "kuhn_poker", "--seat", "random"], "has 2 seat(s) but 1"),
        (["opponents", "--arena", "chess"], "unknown arena 'chess'"),
        (["play", "tic_tac_toe", "--seat", "mcts:lots", "--seat", "random"], "mcts"),
    ],
)
def test_user_errors_are_one_clear_line(args: list[str], needle: str) -> None:
    proc = run_cli(*args)
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ") and needle in lines[0]
    assert "Traceback" not in proc.stderr


def test_unknown_arena_lists_alternatives() -> None:
    proc = run_cli("play", "chess", "--seat", "random", "--seat", "random")
    assert "available: " in proc.stderr and "tic_tac_toe" in proc.stderr


@pytest.mark.slow
def test_cfr_self_play_matches_the_game_value() -> None:
    proc = run_cli("play", "kuhn_poker", "--seat", "cfr", "--seat", "cfr", "--games", "20000", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert abs(result["seats"][0]["mean_return"] - (-1 / 18)) < 0.02, result


@pytest.mark.slow
def test_mcts_never_loses_to_random_at_tic_tac_toe() -> None:
    proc = run_cli("play", "tic_tac_toe", "--seat", "mcts:1000", "--seat", "random", "--games", "50", "--json")
    assert proc.returncode == 0, proc.stderr
    mcts = json.loads(proc.stdout)["seats"][0]
    assert mcts["losses"] == 0 and mcts["wins"] + mcts["draws"] == 50
