"""Every kind of damage to the newest checkpoint: resume falls back to the intact one, exactly, and says so.

With its manifest a checkpoint detects any changed byte (size and SHA-256 per file); without one (an older
arena's checkpoint) it still detects everything that does not parse, lacks a key, or holds NaN/inf; a weight
changed to another finite number is then the one thing it cannot see, and this suite says so too.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import structlog
import torch

from arena.core.api.errors import ArenaError
from arena.core.eval.evaluation import open_run
from arena.core.learn import checkpoint as ck
from arena.core.learn.run import Run
from tests.faults.conftest import copy_run, learning_metrics, same_weights, train, train_config, weights
from tests.faults.damage import CHECKSUM_ONLY, DETECTED, contents, drop_manifests

NEWEST = "step-00000002"


def damaged_copy(reference: Path, tmp_path: Path, damage, legacy: bool) -> Path:
    run = copy_run(reference, tmp_path / "run")
    if legacy:
        drop_manifests(run)
    damage(run / ck.CHECKPOINTS / NEWEST)
    return run


@pytest.mark.parametrize("legacy", [False, True], ids=["manifest", "no-manifest"])
@pytest.mark.parametrize("kind", sorted(DETECTED))
def test_resume_falls_back_to_the_intact_checkpoint_exactly(
    kind: str, legacy: bool, reference: Path, toy_dir: Path, tmp_path: Path
) -> None:
    run = damaged_copy(reference, tmp_path, DETECTED[kind], legacy)
    before = contents(run / ck.CHECKPOINTS / NEWEST)
    with structlog.testing.capture_logs() as logs:
        train(train_config(toy_dir), run, resume=True)
    warnings = [e for e in logs if e["log_level"] == "warning" and e["event"].startswith("checkpoint:")]
    assert len(warnings) == 1, logs
    assert warnings[0]["damaged"] == [NEWEST] and warnings[0]["using"] == "step-00000001"
    assert NEWEST in warnings[0]["event"] and "resuming from step-00000001" in warnings[0]["event"]
    # It replayed iteration 1 from step 1: the same metrics and bit for bit the same weights as the reference.
    assert learning_metrics(run) == learning_metrics(reference)
    assert same_weights(weights(run, 2), weights(reference, 2))
    # The damaged checkpoint was kept, byte for byte, beside the new one.
    assert contents(run / ck.CHECKPOINTS / (NEWEST + ck.DAMAGED_SUFFIX)) == before


@pytest.mark.parametrize("kind", sorted(DETECTED))
def test_eval_picks_the_intact_checkpoint(kind: str, reference: Path, tmp_path: Path) -> None:
    run = damaged_copy(reference, tmp_path, DETECTED[kind], legacy=False)
    with structlog.testing.capture_logs() as logs:
        info = open_run(run)
    assert info.checkpoint.name == "step-00000001"
    assert [e["using"] for e in logs if e["log_level"] == "warning"] == ["step-00000001"]
    # Named explicitly, the damaged one is one clear error.
    with pytest.raises(ArenaError, match=f"checkpoint .*{NEWEST} is damaged: "):
        open_run(run, checkpoint=Path(NEWEST))
    assert (run / ck.CHECKPOINTS / NEWEST).is_dir()  # eval never moves or deletes anything


def test_a_changed_finite_weight_needs_the_manifest(reference: Path, toy_dir: Path, tmp_path: Path) -> None:
    (damage,) = CHECKSUM_ONLY.values()
    with_manifest = damaged_copy(reference, tmp_path / "a", damage, legacy=False)
    with pytest.raises(ck.DamagedCheckpoint, match=r"model\.safetensors does not match its checksum"):
        ck.load_checkpoint(with_manifest / ck.CHECKPOINTS / NEWEST)
    # Without a manifest the value loads as it is: finite and well-formed, nothing can tell it from a weight.
    legacy = damaged_copy(reference, tmp_path / "b", damage, legacy=True)
    models, _ = ck.load_checkpoint(legacy / ck.CHECKPOINTS / NEWEST)
    assert not same_weights(models["agent"], weights(reference, 2))


def test_a_checkpoint_without_manifest_resumes_and_says_so(reference: Path, toy_dir: Path, tmp_path: Path) -> None:
    run = copy_run(reference, tmp_path / "run")
    drop_manifests(run)
    with structlog.testing.capture_logs() as logs:
        resumed = Run(train_config(toy_dir), run, progress=False)
        assert resumed.resume() == run / ck.CHECKPOINTS / NEWEST
    assert any("has no manifest" in e["event"] for e in logs)
    assert resumed.iteration == 2


def test_no_intact_checkpoint_is_one_error_and_deletes_nothing(reference: Path, toy_dir: Path, tmp_path: Path) -> None:
    run = copy_run(reference, tmp_path / "run")
    for step in ck.checkpoint_dirs(run):
        DETECTED["state.json truncated"](step)
    before = {p.name: contents(p) for p in ck.checkpoint_dirs(run)}
    with pytest.raises(ArenaError, match=r"no intact checkpoint in .*step-00000002: state\.json.*step-00000001: "):
        train(train_config(toy_dir), run, resume=True)
    assert {p.name: contents(p) for p in (run / ck.CHECKPOINTS).iterdir()} == before  # not even moved
    with pytest.raises(ArenaError, match="no intact checkpoint"):
        open_run(run)


def test_a_partial_last_metrics_line_is_cut(reference: Path, toy_dir: Path, tmp_path: Path) -> None:
    run = copy_run(reference, tmp_path / "run")
    shutil.rmtree(ck.checkpoint_dirs(run)[-1])  # killed after the metrics line of iteration 1, before its checkpoint
    with open(run / "metrics.jsonl", "a") as f:
        f.write('{"iteration": 2, "rollout/mean_re')  # and in the middle of the next line
    train(train_config(toy_dir), run, resume=True)
    assert learning_metrics(run) == learning_metrics(reference)
    assert same_weights(weights(run, 2), weights(reference, 2))


def test_resume_before_the_first_checkpoint_writes_no_duplicate_rows(
    reference: Path, toy_dir: Path, tmp_path: Path
) -> None:
    run = copy_run(reference, tmp_path / "run")
    shutil.rmtree(run / ck.CHECKPOINTS)
    lines = (run / "metrics.jsonl").read_text().splitlines()
    (run / "metrics.jsonl").write_text(lines[0] + "\n" + lines[1][:20])  # the start eval, half of iteration 0
    train(train_config(toy_dir), run, resume=True)
    assert [m["iteration"] for m in learning_metrics(run)] == [-1, 0, 1]
    assert learning_metrics(run) == learning_metrics(reference)


def test_loaded_optimizer_state_and_weights_are_checked_for_nonfinite_values(tmp_path: Path) -> None:
    model = torch.nn.Linear(2, 2)
    state = {"moments": {"exp_avg": torch.tensor([1.0, float("nan")])}, "rng": ck.rng_state()}
    path = ck.save_checkpoint(tmp_path, 1, {"agent": model.state_dict()}, state)
    with pytest.raises(ck.DamagedCheckpoint, match=r"non-finite values \(moments\.exp_avg\)"):
        ck.load_checkpoint(path)
    with torch.no_grad():
        model.weight[0, 0] = float("inf")
    path = ck.save_checkpoint(tmp_path, 2, {"agent": model.state_dict()}, {"rng": ck.rng_state()})
    with pytest.raises(ck.DamagedCheckpoint, match=r"non-finite weights \(weight\)"):
        ck.load_checkpoint(path)


def test_a_manifest_that_does_not_parse_is_damage(reference: Path, tmp_path: Path) -> None:
    run = copy_run(reference, tmp_path / "run")
    (run / ck.CHECKPOINTS / NEWEST / ck.MANIFEST).write_text("{")
    with pytest.raises(ck.DamagedCheckpoint, match=r"manifest\.json is unreadable"):
        ck.load_checkpoint(run / ck.CHECKPOINTS / NEWEST)
    assert json.loads((run / ck.CHECKPOINTS / "step-00000001" / ck.MANIFEST).read_text())["step"] == 1


def test_arena_eval_and_report_on_a_damaged_run(reference: Path, tmp_path: Path) -> None:
    from tests.faults.conftest import arena_cli

    run = damaged_copy(reference, tmp_path, DETECTED["weights truncated"], legacy=False)
    with open(run / "metrics.jsonl", "a") as f:
        f.write('{"iteration": 2, "rollo')  # a partial last line, as a killed run leaves it
    proc = arena_cli("eval", str(run), "--opponents", "train", "--games", "2", "--policy-samples", "1", "--json")
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert json.loads(out)["step"] == 1 and "Traceback" not in err
    assert f"{NEWEST}: learners/agent/model.safetensors has" in err and "using step-00000001" in err
    proc = arena_cli("report", str(run))
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert "2/2 iterations" in out
