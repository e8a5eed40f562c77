"""``arena eval`` end to end on a tiny run directory: JSON, report files, ratings, and one-line errors.

The run directory is written with the same pieces ``arena train`` uses (the dumped ``TrainConfig`` and
``checkpoint.save_checkpoint`` with a loadable learner directory) around the offline toy model, so these tests do
not depend on a training run. ``test_eval_after_real_training`` (slow) does the same after a real ``arena train``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import save_file

from arena.core.cli.main import main
from arena.core.config.loader import to_dict
from arena.core.config.trial import InvalidActionConfig, PromptConfig, TrialConfig
from arena.core.eval.eval_report import format_markdown
from arena.core.eval.evaluation import read_ratings
from arena.core.eval.stats import wilson
from arena.core.learn import checkpoint as ck
from arena.core.learn.run_config import LearnerConfig, OpponentEntry, TrainConfig
from tests.toy_model import build_model, build_tokenizer

RATINGS = {
    "version": 1,
    "players": [
        {
            "name": "conservative",
            "elo": 980.0,
            "mu": 24.0,
            "sigma": 7.5,
            "games": 8,
            "wins": 3,
            "draws": 0,
            "losses": 5,
        },
        {"name": "agent", "elo": 1020.0, "mu": 26.0, "sigma": 7.0, "games": 8, "wins": 5, "draws": 0, "losses": 3},
    ],
}


def write_run(root: Path, with_checkpoint: bool = True) -> Path:
    tokenizer = build_tokenizer()
    model = build_model(len(tokenizer), tokenizer.eos_token_id, tokenizer.pad_token_id)
    base = root / "base-model"
    model.save_pretrained(base)
    tokenizer.save_pretrained(base)
    config = TrainConfig(
        arena="kuhn_poker",
        opponents=[OpponentEntry("conservative", 0.5), OpponentEntry("aggressive", 0.5)],
        unseen=["cfr"],
        learners=[LearnerConfig(name="agent", model=str(base), backend="hf", plugins=["grpo", "reflection"])],
        trial=TrialConfig(
            episodes=2,
            invalid_action=InvalidActionConfig(policy="random"),
            prompt=PromptConfig(max_new_tokens=8),
        ),
        torch_threads=1,
    )
    run = root / "run"
    run.mkdir()
    (run / "config.yaml").write_text(yaml.safe_dump(to_dict(config), sort_keys=False))
    if with_checkpoint:

        def model_files(folder: Path) -> None:
            model.config.save_pretrained(folder)
            tokenizer.save_pretrained(folder)

        state = {"iteration": 1, "learners": {"agent": {"plugins": {}}}, "population": {"ratings": RATINGS}}
        ck.save_checkpoint(run, 1, {"agent": model.state_dict()}, state, model_files={"agent": model_files})
    return run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_run(tmp_path_factory.mktemp("eval"))


def test_json_report_and_files(run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report"
    args = ["eval", str(run_dir), "--opponents", "all", "--games", "4", "--policy-samples", "4", "--json"]
    assert main([*args, "--out", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)  # stdout holds exactly one JSON object
    assert {
        "run", "checkpoint", "step", "learner", "seat", "arena", "games", "seed", "episodes_per_trial", "opponents",
        "exploitability", "ratings", "report",
    } <= set(report)  # fmt: skip
    assert report["learner"] == "agent" and report["step"] == 1 and report["games"] == 4
    assert report["seed"] == TrainConfig(arena="kuhn_poker", opponents=[]).eval.seed
    assert [(r["opponent"], r["group"]) for r in report["opponents"]] == [
        ("conservative", "train"),
        ("aggressive", "train"),
        ("cfr", "unseen"),
    ]
    for row in report["opponents"]:
        assert row["trials"] == 4 and row["wins"] + row["draws"] + row["losses"] == 4
        assert row["win_rate"]["low"] <= row["win_rate"]["rate"] <= row["win_rate"]["high"]
        assert [e["episode"] for e in row["by_episode"]] == [1, 2]
        assert all(e["trials"] == 4 for e in row["by_episode"])  # every episode is played: no early stop
        assert row["by_seat"]["first"]["n"] == 2 and row["by_seat"]["second"]["n"] == 2
        assert row["invalid_per_trial"]["mean"] >= 0
        won_by = [e["won_by"]["k"] for e in row["by_episode"]]
        assert won_by == sorted(won_by) and won_by[0] == row["by_episode"][0]["win_rate"]["k"]
        assert won_by[-1] >= max(e["win_rate"]["k"] for e in row["by_episode"])
    # The ceiling is known for MAGE's deterministic styles only, and no episode's win rate passes it.
    styles = {r["opponent"]: r for r in report["opponents"] if r["opponent"] != "cfr"}
    for row in styles.values():
        assert row["winnable"]["n"] == 4
        assert all(e["win_rate"]["k"] <= row["winnable"]["k"] for e in row["by_episode"])
        assert row["by_episode"][-1]["won_by"]["k"] <= row["winnable"]["k"]
    assert report["opponents"][2]["winnable"] is None
    exploit = report["exploitability"]
    assert exploit["uniform"] == pytest.approx(11 / 24) and exploit["cfr"] < 1e-3
    assert 0 <= exploit["learned"] <= 1.0 + 1e-9 and 0 <= exploit["invalid_rate"] <= 1
    assert len(exploit["policy"]) == 12
    for row in exploit["policy"].values():
        assert row["Pass"] + row["Bet"] == pytest.approx(1.0) and row["samples"] == 4
    assert [r["member"] for r in report["ratings"]["rows"]] == ["agent", "conservative"]  # highest elo first
    assert {"elo", "mu", "sigma", "games"} <= set(report["ratings"]["columns"])
    for name in ("report.json", "report.md", "success_by_episode.png"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0
    assert json.loads((out / "report.json").read_text())["opponents"] == report["opponents"]
    markdown = (out / "report.md").read_text()
    assert "![win rate by episode](success_by_episode.png)" in markdown and "| cfr | unseen |" in markdown
    assert "| won by episode 2 | winnable |" in markdown and "Won by episode N: " in markdown
    assert (out / "success_by_episode.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_text_output_ends_with_the_report_path(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", str(run_dir), "--opponents", "intermediate", "--games", "2", "--policy-samples", "1"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1] == f"report: {run_dir / 'eval' / 'report.md'}"
    text = "\n".join(lines)
    assert "intermediate" in text and "CFR+ policy" in text and "Population ratings:" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--opponents", "nobody"], "unknown opponent 'nobody' for arena kuhn_poker; valid: "),
        (["--learner", "bob"], "unknown learner 'bob'"),
        (["--checkpoint", "step-00000099"], "is not a checkpoint directory; checkpoints of this run: step-00000001"),
    ],
)
def test_one_line_errors(run_dir: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    assert main(["eval", str(run_dir), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err


def test_not_a_run_and_no_checkpoint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", str(tmp_path)]) == 2
    assert "is not a run directory" in capsys.readouterr().err
    run = write_run(tmp_path, with_checkpoint=False)
    assert main(["eval", str(run)]) == 2
    assert "has no checkpoint yet" in capsys.readouterr().err


def test_an_older_checkpoint_layout_is_refused_clearly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path, with_checkpoint=False)
    old = run / "checkpoints" / "step-00000003"
    old.mkdir(parents=True)
    # The layout before the population manager: one model.safetensors at the top, the state beside it.
    save_file({"w": torch.zeros(2)}, str(old / "model.safetensors"))
    save_file({}, str(old / "tensors.safetensors"))
    (old / "state.json").write_text(json.dumps({"iteration": 3, "trainer": {}}))
    capsys.readouterr()  # the progress output of writing the run
    assert main(["eval", str(run)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "older single-model layout" in err and "\n" not in err


def test_ratings_are_read_defensively() -> None:
    assert read_ratings({}) is None
    assert read_ratings({"population": {"ratings": {}}}) is None
    table = read_ratings({"population": {"ratings": {"a": {"mu": 20, "note": "x"}, "b": {"mu": 30, "flag": True}}}})
    assert table == {"columns": ["mu"], "rows": [{"member": "b", "mu": 30.0}, {"member": "a", "mu": 20.0}]}


@pytest.mark.slow
def test_eval_after_real_training(tmp_path: Path) -> None:
    """One iteration of the real ``arena train`` on the toy model, then ``arena eval`` on its run directory."""
    base = write_run(tmp_path, with_checkpoint=False)
    config = tmp_path / "train.yaml"
    raw = yaml.safe_load((base / "config.yaml").read_text())
    raw.update(iterations=1, groups=1, group_size=2)
    raw["eval"].update(games=2, opponents=["intermediate"])
    config.write_text(yaml.safe_dump(raw))
    run = tmp_path / "trained"
    command = [sys.executable, "-m", "arena.core.cli.main"]
    train = subprocess.run([*command, "train", "--population", str(config), "--out", str(run)], capture_output=True)
    assert train.returncode == 0, train.stderr.decode()[-2000:]
    result = subprocess.run(
        [*command, "eval", str(run), "--games", "2", "--policy-samples", "2", "--json"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout)
    assert report["opponents"][0]["opponent"] == "cfr" and report["step"] == 1
    assert (run / "eval" / "report.md").is_file()


def test_a_report_from_before_won_by_still_renders() -> None:
    row = {
        "opponent": "cfr", "group": "unseen", "trials": 2, "win_rate": wilson(1, 2).to_json(),
        "draw_rate": wilson(0, 2).to_json(), "loss_rate": wilson(1, 2).to_json(),
        "mean_return": {"mean": 0.0, "n": 2, "low": -1.0, "high": 1.0}, "invalid_per_trial": {"mean": 0.0},
        "by_episode": [{"episode": k, "trials": 2, "win_rate": wilson(1, 2).to_json()} for k in (1, 2)],
    }  # fmt: skip
    report = {
        "learner": "agent", "step": 3, "run": "r", "arena": "kuhn_poker", "games": 2, "episodes_per_trial": 2,
        "seed": 0, "checkpoint": "c", "seat": "learner:agent", "plugins": ["mage"], "opponents": [row],
    }  # fmt: skip
    markdown = format_markdown(report, plot=None)
    assert "| opponent | episode 1 | episode 2 |" in markdown
    assert "won by" not in markdown and "winnable" not in markdown
