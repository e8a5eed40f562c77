"""`arena train` end to end on a toy model: run directory contents, dumps, and exact resume after kill -9."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

CONFIG = """
arena: kuhn_poker
seed: 3
iterations: {iterations}
groups: 3
group_size: 4
opponents:
  - {{spec: conservative, weight: 0.5}}
  - {{spec: aggressive, weight: 0.5}}
learners:
  - name: agent
    model: {model}
    backend: hf
    plugins: [grpo, reflection]
    optim: {{lr: 1.0e-3, micro_batch_tokens: 2048}}
trial:
  episodes: 2
  invalid_action: {{policy: random}}
  prompt: {{max_new_tokens: 8}}
eval: {{games: 4, opponents: [intermediate]}}
checkpoint: {{every: 1, keep: 2}}
torch_threads: 1
"""


def write_config(tmp_path: Path, toy_dir: Path, iterations: int) -> Path:
    path = tmp_path / "toy_grpo.yaml"
    path.write_text(CONFIG.format(iterations=iterations, model=toy_dir))
    return path


def arena(*args: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONHASHSEED="0")
    return subprocess.Popen(
        [sys.executable, "-m", "arena.core.cli.main", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def learning_metrics(run: Path) -> list[dict]:
    lines = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in m.items() if not k.startswith("time/")} for m in lines]


def test_run_directory_and_rollout_dump(tmp_path: Path, toy_dir: Path) -> None:
    config = write_config(tmp_path, toy_dir, iterations=2)
    proc = arena("train", "--population", str(config), "--out", str(tmp_path / "run"), "--dump-rollouts")
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    run = tmp_path / "run"
    assert (run / "config.yaml").exists()
    assert set(json.loads((run / "plugins.json").read_text())["enabled"]["agent"]) == {"grpo", "reflection"}
    population = json.loads((run / "population.json").read_text())
    assert population["iteration"] == 2 and population["ratings"]
    metrics = learning_metrics(run)
    assert [m["iteration"] for m in metrics] == [-1, 0, 1]
    assert {"rollout/mean_return", "rollout/win_rate", "train/loss", "train/entropy", "train/clip_fraction"} <= set(
        metrics[1]
    )
    assert "eval/mean_return" in metrics[-1] and "eval/intermediate/win_rate" in metrics[-1]
    assert any(f"rollout/{name}/win_rate" in metrics[1] for name in ("conservative", "aggressive"))
    rows = [json.loads(line) for line in (run / "rollouts" / "iter_00000.jsonl").read_text().splitlines()]
    assert rows and {
        "kind", "context_text", "rollout_context_text", "completion_text", "token_temperatures", "behaviour_logprobs",
        "reward_terms", "return", "advantage", "group_id", "anchor", "opponent", "episode", "turn",
    } <= set(rows[0])  # fmt: skip
    assert any(r["kind"].startswith("reflection") for r in rows)
    assert len(list((run / "checkpoints").iterdir())) == 2
    # TensorBoard events carry the same scalars as metrics.jsonl.
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run / "tensorboard"))
    events.Reload()
    returns = [e.value for e in events.Scalars("rollout/mean_return")]
    assert returns == pytest.approx([m["rollout/mean_return"] for m in metrics[1:]])
    # The checkpoint's learner directory is a model of its own.
    latest = sorted((run / "checkpoints").iterdir())[-1] / "learners" / "agent"
    assert {"model.safetensors", "config.json", "tokenizer.json"} <= {p.name for p in latest.iterdir()}


def test_a_run_keeps_the_entries_its_model_marks_held(tmp_path: Path, toy_dir: Path) -> None:
    """``held_weights.safetensors`` in the model directory: the run trains the rest, keeps those entries, and
    writes the masks into every copy of the model it saves (here the checkpoint's learner directory)."""
    import shutil

    import torch
    from safetensors.torch import load_file

    from arena.core.models.held import HELD_FILE, load_held, save_held

    model_dir = tmp_path / "model"
    shutil.copytree(toy_dir, model_dir)
    start = load_file(str(model_dir / "model.safetensors"))
    masks = {}
    for name, tensor in start.items():
        if tensor.ndim == 2 and "embed" not in name:  # tied embeddings are saved under one name only
            mask = torch.zeros_like(tensor, dtype=torch.bool)
            mask[: tensor.shape[0] // 2] = True
            masks[name] = mask
    save_held(model_dir, masks)
    config = write_config(tmp_path, model_dir, iterations=1)
    proc = arena("train", "--population", str(config), "--out", str(tmp_path / "run"))
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    learner = sorted((tmp_path / "run" / "checkpoints").iterdir())[-1] / "learners" / "agent"
    assert (learner / HELD_FILE).is_file()
    saved = load_held(learner)
    assert saved is not None and set(saved) == set(masks)
    trained = load_file(str(learner / "model.safetensors"))
    for name, mask in masks.items():
        assert torch.equal(trained[name][mask], start[name][mask]), name
    assert any(not torch.equal(trained[n][~m], start[n][~m]) for n, m in masks.items())


def test_a_readout_run_trains_the_readout_alone(tmp_path: Path, toy_dir: Path) -> None:
    """``optim.train: readout``: only the entries ``readout_weights.safetensors`` marks move (less those the model
    also holds), every other weight stays as built, and every saved copy of the model carries both files."""
    import shutil

    import torch
    from safetensors.torch import load_file

    from arena.core.models.held import HELD_FILE, READOUT_FILE, load_held, save_held

    model_dir = tmp_path / "model"
    shutil.copytree(toy_dir, model_dir)
    start = load_file(str(model_dir / "model.safetensors"))
    embed = next(name for name in start if "embed" in name)
    readout = torch.zeros_like(start[embed], dtype=torch.bool)
    readout[:, :4] = True  # four coordinates of every token, as tiny's MEM columns
    held = torch.zeros_like(readout)
    held[:, 0] = True  # one of them the model itself holds: it stays held
    save_held(model_dir, {embed: readout}, READOUT_FILE)
    save_held(model_dir, {embed: held})
    config = write_config(tmp_path, model_dir, iterations=1)
    proc = arena("train", "--population", str(config), "learners.0.optim.train=readout", "--out", str(tmp_path / "run"))
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    learner = sorted((tmp_path / "run" / "checkpoints").iterdir())[-1] / "learners" / "agent"
    assert (learner / READOUT_FILE).is_file() and (learner / HELD_FILE).is_file()
    assert load_held(learner, READOUT_FILE) is not None
    trained = load_file(str(learner / "model.safetensors"))
    for name, tensor in start.items():
        if name != embed:
            assert torch.equal(trained[name], tensor), name
    free = readout & ~held
    assert torch.equal(trained[embed][~free], start[embed][~free])
    assert not torch.equal(trained[embed][free], start[embed][free])


def test_readout_training_on_a_model_without_a_readout_is_one_line(tmp_path: Path, toy_dir: Path) -> None:
    config = write_config(tmp_path, toy_dir, iterations=1)
    proc = arena("train", "--population", str(config), "learners.0.optim.train=readout", "--out", str(tmp_path / "run"))
    _, err = proc.communicate(timeout=600)
    assert proc.returncode != 0
    assert "marks no readout" in err and "Traceback" not in err


def assert_master_weights_checkpointed(run: Path, toy_dir: Path) -> None:
    """The GPU default (bf16 weights), on CPU: each checkpoint holds the float32 master copies next to the bf16
    learner weights that are those copies rounded, and training moved them."""
    import torch
    from safetensors.torch import load_file

    from arena.core.learn import checkpoint as ck

    assert all(m["train/steps"] > 0 for m in learning_metrics(run)[1:])
    latest = sorted((run / "checkpoints").iterdir())[-1]
    weights, state = ck.load_checkpoint(latest)
    master = state["learners"]["agent"]["trainer"]["master_weights"]
    saved = load_file(str(latest / "learners" / "agent" / "model.safetensors"))
    start = load_file(str(toy_dir / "model.safetensors"))
    assert master and all(t.dtype == torch.float32 for t in master.values())
    for name, copy in master.items():
        if name in saved:  # a tied matrix is saved under one of its names
            assert saved[name].dtype == torch.bfloat16
            assert torch.equal(saved[name], copy.to(torch.bfloat16)), name
    assert any(not torch.equal(master[n], start[n]) for n in start if n in master)
    assert set(weights["agent"]) >= set(saved)


# float32: 4 iterations, killed once a checkpoint exists (mid-iteration 2) and again after iteration 3.
# bfloat16 (the GPU default, about 3x slower on CPU): 2 iterations killed once, which is what proves the float32
# master copies come back from the checkpoint; the reference run's checkpoints are checked for them too.
KILLS = {"float32": (4, (1, 3)), "bfloat16": (2, (1,))}


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_kill_and_resume_gives_the_same_metrics(tmp_path: Path, toy_dir: Path, dtype: str) -> None:
    iterations, kill_points = KILLS[dtype]
    config = write_config(tmp_path, toy_dir, iterations=iterations)
    config.write_text(config.read_text() + f"backend_options: {{hf: {{dtype: {dtype}}}}}\n")
    reference = tmp_path / "reference"
    proc = arena("train", "--population", str(config), "--out", str(reference))
    assert proc.wait(timeout=900) == 0, proc.stderr.read() if proc.stderr else ""
    if dtype == "bfloat16":
        assert_master_weights_checkpointed(reference, toy_dir)

    run = tmp_path / "killed"
    kills = 0
    for kill_after in kill_points:  # kill once a checkpoint at that iteration exists (mid-iteration afterwards)
        proc = (
            arena("train", "--population", str(config), "--out", str(run))
            if kill_after == kill_points[0]
            else arena("train", "--resume", str(run))
        )
        deadline = time.time() + 600
        while time.time() < deadline and not (run / "checkpoints" / f"step-{kill_after:08d}").exists():
            if proc.poll() is not None:
                break
            time.sleep(0.05)
        time.sleep(0.3)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
    assert kills >= 1, "the run finished before it could be killed; the test proves nothing"
    proc = arena("train", "--resume", str(run))
    assert proc.wait(timeout=900) == 0, proc.stderr.read() if proc.stderr else ""
    assert learning_metrics(run) == learning_metrics(reference)
