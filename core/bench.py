"""``arena bench``: measured numbers, not timed tests.

``rollout`` plays many concurrent trials through the real engine, records every batch the engine sent to the
backend, then replays exactly those batches as raw ``generate`` calls in the same process. The ratio of the two
token rates is the share of time the loop itself costs (target ≥ 0.9: overhead under 10%).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import attrs

from arena.core.backends.base import Backend, Completion, GenerationRequest
from arena.core.engine import RolloutEngine
from arena.core.plugins import PluginSet
from arena.core.records import TrialSpec
from arena.core.seats import BackendPool, parse_seat
from arena.core.settings import PromptConfig, TrialConfig

KUHN_POOL = ("conservative", "aggressive", "intermediate")


@attrs.define
class RecordingBackend:
    """Passes batches through to ``inner`` and keeps them (requests, generated tokens, seconds)."""

    inner: Backend
    batches: list[list[GenerationRequest]] = attrs.field(factory=list)
    tokens: int = 0
    seconds: float = 0.0

    @property
    def name(self) -> str:
        return self.inner.name

    def generate(self, requests: Sequence[GenerationRequest]) -> list[list[Completion]]:
        started = time.perf_counter()
        out = self.inner.generate(requests)
        self.seconds += time.perf_counter() - started
        self.batches.append(list(requests))
        self.tokens += sum(len(c.token_ids) for row in out for c in row)
        return out


def bench_rollout(
    model: str = "tiny",
    backend: str | None = None,
    trials: int = 256,
    episodes: int = 3,
    max_new_tokens: int = 48,
    seed: int = 0,
) -> dict[str, Any]:
    """Kuhn poker trials against MAGE's pool on ``model``, with reflections; rollout vs raw generate."""
    seat = parse_seat(f"model:{model}" + (f"@{backend}" if backend else ""))
    pool = BackendPool()
    backend_name, model_name = pool.resolve(seat)
    inner = pool.get(seat)
    recorder = RecordingBackend(inner)
    recording_pool = BackendPool()
    recording_pool.add(backend_name, model_name, recorder)  # type: ignore[arg-type]
    config = TrialConfig(episodes=episodes, prompt=PromptConfig(max_new_tokens=max_new_tokens))
    specs = [
        TrialSpec(
            trial_id=f"bench-{i:05d}",
            arena_id="kuhn_poker",
            seats=(seat.text, KUHN_POOL[i % len(KUHN_POOL)]) if i % 2 == 0 else (KUHN_POOL[i % 3], seat.text),
            seed=seed + i,
            episodes=episodes,
        )
        for i in range(trials)
    ]
    # Warm up (first calls allocate caches and pick kernels) on a slice of the real prompts' shape.
    engine = RolloutEngine(PluginSet(["reflection"]), config, backends=recording_pool, max_live_trials=trials)
    engine.run(specs[: min(4, trials)])
    recorder.batches.clear()
    recorder.tokens, recorder.seconds = 0, 0.0

    engine = RolloutEngine(PluginSet(["reflection"]), config, backends=recording_pool, max_live_trials=trials)
    started = time.perf_counter()
    records = engine.run(specs)
    rollout_seconds = time.perf_counter() - started
    rollout_tokens = recorder.tokens

    started = time.perf_counter()
    raw_tokens = 0
    for batch in recorder.batches:
        raw_tokens += sum(len(c.token_ids) for row in inner.generate(batch) for c in row)
    raw_seconds = time.perf_counter() - started

    rollout_tps = rollout_tokens / rollout_seconds if rollout_seconds else 0.0
    raw_tps = raw_tokens / raw_seconds if raw_seconds else 0.0
    invalid = sum(e.invalid_actions[a] for t in records for e in t.episodes for a in e.invalid_actions)
    llm_turns = sum(1 for t in records for e in t.episodes for s in e.steps if s.completion is not None)
    return {
        "model": model_name,
        "backend": backend_name,
        "trials": trials,
        "episodes": episodes,
        "max_new_tokens": max_new_tokens,
        "rollout_seconds": round(rollout_seconds, 3),
        "rollout_tokens": rollout_tokens,
        "rollout_tokens_per_s": round(rollout_tps, 1),
        "trials_per_s": round(trials / rollout_seconds, 3) if rollout_seconds else 0.0,
        "raw_seconds": round(raw_seconds, 3),
        "raw_tokens": raw_tokens,
        "raw_tokens_per_s": round(raw_tps, 1),
        "ratio": round(rollout_tps / raw_tps, 4) if raw_tps else 0.0,
        "ticks": len(recorder.batches),
        "mean_batch": round(sum(len(b) for b in recorder.batches) / max(1, len(recorder.batches)), 1),
        "generate_seconds_in_rollout": round(recorder.seconds, 3),
        "llm_turns": llm_turns,
        "invalid_answers": invalid,
    }


BENCH_PROMPTS = (
    "You play Kuhn poker and hold the King. Your opponent bets. Think briefly, then answer with "
    "<action>call</action> or <action>fold</action>.",
    "Tic-tac-toe: X holds the centre, O a corner. Which square should X take next? Explain in one sentence.",
    "Write a short strategy for the first move of Liar's dice inside <strategy></strategy> tags.",
    "Name three principles of good exploration in reinforcement learning.",
)


def find_vllm_python() -> str | None:
    """The interpreter that has vLLM: ``$ARENA_VLLM_PYTHON``, this one, or the repo's ``.venv-vllm``."""
    import importlib.util
    import os
    import sys
    from pathlib import Path

    if os.environ.get("ARENA_VLLM_PYTHON"):
        return os.environ["ARENA_VLLM_PYTHON"]
    if importlib.util.find_spec("vllm") is not None:
        return sys.executable
    for base in (Path.cwd(), Path(__file__).resolve().parents[1]):
        candidate = base / ".venv-vllm" / "bin" / "python"
        if candidate.exists():
            return str(candidate)
    return None


def bench_backends(
    model: str = "smollm2-135m-instruct", max_new_tokens: int = 32, repeat: int = 4, noise: float = 0.01
) -> dict[str, Any]:
    """hf vs vllm tokens/s on one workload, one weight sync's wall time, and greedy agreement after the sync.

    vLLM runs in its own interpreter (``find_vllm_python``): the same prompts, then a sync of weights perturbed
    here (seeded Gaussian noise of relative size ``noise``), then greedy decoding on both sides.
    """
    import json
    import subprocess
    import tempfile

    import torch
    from safetensors.torch import save_file

    from arena.core.backends.base import ChatMessage, Segment
    from arena.core.backends.hf import HFBackend

    prompts = list(BENCH_PROMPTS) * repeat
    requests = [
        GenerationRequest(
            messages=(ChatMessage("user", text),), segments=(Segment(),), max_new_tokens=max_new_tokens, seed=i
        )
        for i, text in enumerate(prompts)
    ]
    hf = HFBackend(model)
    hf.generate(requests[:1])
    walls, generated = [], 0
    for _ in range(2):
        started = time.perf_counter()
        out = hf.generate(requests)
        walls.append(time.perf_counter() - started)
        generated = sum(len(c.token_ids) for row in out for c in row)
    result: dict[str, Any] = {
        "model": model,
        "requests": len(requests),
        "max_new_tokens": max_new_tokens,
        "hf_tokens_per_s": round(generated / min(walls), 1),
    }
    python = find_vllm_python()
    if python is None:
        result["vllm"] = "not installed: `make vllm-venv` (CPU) or `pip install 'arena-rl[vllm]'` (GPU)"
        return result
    bench_cmd = [python, "-m", "arena.core.backends.vllm_backend", "bench", "--model", model, "--syncs", "1"]
    bench_cmd += ["--max-new-tokens", str(max_new_tokens), "--repeat", str(repeat), "--dtype", "float32"]
    for text in BENCH_PROMPTS:
        bench_cmd += ["--prompt", text]
    proc = subprocess.run(bench_cmd, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        result["vllm"] = f"failed: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else proc.returncode}"
        return result
    vllm = json.loads(proc.stdout.strip().splitlines()[-1])
    result["vllm_tokens_per_s"] = vllm["tokens_per_s"]
    result["vllm_engine_start_s"] = vllm["engine_start_s"]
    result["vllm_sync_weights_s"] = vllm["sync_weights_s"][0] if vllm["sync_weights_s"] else None
    # Perturb, sync, greedy on both sides.
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for param in hf.model.parameters():
            param.add_(torch.randn(param.shape, generator=generator) * noise * param.abs().mean())
    state = {k: v.detach().clone().contiguous() for k, v in hf.model.state_dict().items()}
    greedy = [
        GenerationRequest(messages=(ChatMessage("user", t),), segments=(Segment(temperature=0.0),), max_new_tokens=32)
        for t in BENCH_PROMPTS
    ]
    hf_ids = [list(row[0].token_ids) for row in hf.generate(greedy)]
    with tempfile.TemporaryDirectory() as tmp:
        weights = f"{tmp}/weights.safetensors"
        save_file(state, weights)
        cmd = [python, "-m", "arena.core.backends.vllm_backend", "compare", "--model", model, "--weights", weights]
        for text in BENCH_PROMPTS:
            cmd += ["--prompt", text]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        result["greedy_agree_after_sync"] = f"failed: {proc.stderr.strip()[-300:]}"
        return result
    compared = json.loads(proc.stdout.strip().splitlines()[-1])
    after = compared["greedy_after_sync"]
    result["sync_weights_s"] = compared["sync_weights_s"]
    result["greedy_agree_after_sync"] = sum(a == b for a, b in zip(after, hf_ids, strict=True)) / len(hf_ids)
    result["greedy_changed_by_sync"] = sum(
        a != b for a, b in zip(compared["greedy_before_sync"], after, strict=True)
    ) / len(hf_ids)
    return result


def bench_train(
    model: str = "tiny", trials: int = 128, repeats: int = 3, micro_batch_tokens: int = 16384
) -> dict[str, Any]:
    """Policy-update tokens/s against a plain causal-LM forward and backward over the same tokens.

    Samples come from a real Kuhn rollout of ``model``; both sides see the same sequences in the same
    micro-batches (the trainer's token-budget cut) and take one AdamW step per pass. The plain side is
    ``model(input_ids, labels=...)``: what any trainer pays at least. ``trl_ratio`` needs ``trl`` installed.
    """
    import importlib.util

    import torch

    from arena.core.experience import trial_samples
    from arena.core.trainer import LossConfig, OptimConfig, Trainer

    seat = parse_seat(f"model:{model}")
    pool = BackendPool()
    backend = pool.get(seat)
    engine = RolloutEngine(PluginSet(["reflection"]), TrialConfig(episodes=2), backends=pool)
    specs = [
        TrialSpec(trial_id=f"b{i}", arena_id="kuhn_poker", seats=(seat.text, KUHN_POOL[i % 3]), seed=i, episodes=2)
        for i in range(trials)
    ]
    samples = [s for t in engine.run(specs) for s in trial_samples(t, "bench", [seat.text])]
    samples = [attrs.evolve(s, advantage=1.0 if i % 2 else -1.0) for i, s in enumerate(samples)]
    net = backend.model  # type: ignore[attr-defined]
    pad = int(getattr(backend.tokenizer, "pad_token_id", 0) or 0)  # type: ignore[attr-defined]
    trainer = Trainer(net, OptimConfig(lr=1e-6, micro_batch_tokens=micro_batch_tokens), LossConfig(), pad_id=pad)
    tokens = sum(len(s.completion_ids) for s in samples)
    all_tokens = sum(len(s.completion_ids) + len(s.context_ids) for s in samples)
    trainer.update(samples)  # warm-up
    started = time.perf_counter()
    for _ in range(repeats):
        trainer.update(samples)
    update_seconds = (time.perf_counter() - started) / repeats

    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-6)
    batches = [[samples[i] for i in micro] for micro in trainer.micro_batches(samples)]

    def plain_pass() -> None:
        net.train()
        for batch in batches:
            width = max(len(s.context_ids) + len(s.completion_ids) for s in batch)
            ids = torch.full((len(batch), width), pad, dtype=torch.long)
            labels = torch.full((len(batch), width), -100, dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for row, s in enumerate(batch):
                seq = list(s.context_ids) + list(s.completion_ids)
                ids[row, : len(seq)] = torch.tensor(seq)
                mask[row, : len(seq)] = 1
                labels[row, len(s.context_ids) : len(seq)] = torch.tensor(s.completion_ids)
            net(input_ids=ids, attention_mask=mask, labels=labels).loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        net.eval()

    plain_pass()
    started = time.perf_counter()
    for _ in range(repeats):
        plain_pass()
    plain_seconds = (time.perf_counter() - started) / repeats
    result: dict[str, Any] = {
        "model": model,
        "samples": len(samples),
        "completion_tokens": tokens,
        "total_tokens": all_tokens,
        "micro_batches": len(batches),
        "update_seconds": round(update_seconds, 4),
        "plain_seconds": round(plain_seconds, 4),
        "update_tokens_per_s": round(tokens / update_seconds, 1),
        "plain_tokens_per_s": round(tokens / plain_seconds, 1),
        "ratio": round(plain_seconds / update_seconds, 4),
    }
    if importlib.util.find_spec("trl") is None:
        result["trl_ratio"] = None
        result["trl"] = "not installed (pip install trl to compare with GRPOTrainer)"
    return result
