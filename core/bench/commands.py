"""``arena bench``: measured numbers, not timed tests.

``rollout`` plays many concurrent trials through the real engine, records every batch the engine sent to the
backend, then replays exactly those batches as raw ``generate`` calls in the same process. The ratio of the two
token rates is the share of time the loop itself costs (target ≥ 0.9: overhead under 10%).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from arena.core.api.backend import Backend, Completion, GenerationRequest
from arena.core.api.records import TrialSpec
from arena.core.api.samples import Sample
from arena.core.config.trial import PromptConfig, TrialConfig
from arena.core.host.plugins import PluginSet
from arena.core.rollout.engine import RolloutEngine
from arena.core.rollout.seats import BackendPool, parse_seat

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
    model: str = "smollm2-135m-instruct",
    max_new_tokens: int = 32,
    repeat: int = 4,
    noise: float = 0.01,
    dtype: str = "float32",
    enforce_eager: bool = False,
) -> dict[str, Any]:
    """hf vs vllm tokens/s on one workload, one weight sync's wall time, and greedy agreement after the sync.

    vLLM runs in its own interpreter (``find_vllm_python``): the same prompts, then a sync of weights perturbed
    here (seeded Gaussian noise of relative size ``noise``), then greedy decoding on both sides. Both sides run
    in ``dtype``: float32 agrees token for token; in bfloat16 (a GPU's default) the two sides' kernels round
    differently, so a near-tie can flip a greedy answer and the agreement measures that too.
    ``enforce_eager`` skips vLLM's compilation (faster start, slower decode).
    """
    import json
    import subprocess
    import tempfile

    import torch
    from safetensors.torch import save_file

    from arena.core.api.backend import ChatMessage, Segment
    from arena.core.backends.hf import HFBackend

    prompts = list(BENCH_PROMPTS) * repeat
    requests = [
        GenerationRequest(
            messages=(ChatMessage("user", text),), segments=(Segment(),), max_new_tokens=max_new_tokens, seed=i
        )
        for i, text in enumerate(prompts)
    ]
    hf = HFBackend(model, dtype=dtype)
    hf.generate(requests[:1])
    walls, generated = [], 0
    for _ in range(2):
        started = time.perf_counter()
        out = hf.generate(requests)
        walls.append(time.perf_counter() - started)
        generated = sum(len(c.token_ids) for row in out for c in row)
    result: dict[str, Any] = {
        "model": model,
        "dtype": dtype,
        "requests": len(requests),
        "max_new_tokens": max_new_tokens,
        "hf_tokens_per_s": round(generated / min(walls), 1),
    }
    python = find_vllm_python()
    if python is None:
        result["vllm"] = "not installed: `make vllm-venv` (CPU) or `pip install 'arena-rl[vllm]'` (GPU)"
        return result
    bench_cmd = [python, "-m", "arena.core.backends.vllm_backend", "bench", "--model", model, "--syncs", "1"]
    bench_cmd += ["--max-new-tokens", str(max_new_tokens), "--repeat", str(repeat), "--dtype", dtype]
    eager = ["--enforce-eager"] if enforce_eager else []
    bench_cmd += eager
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
        cmd += ["--dtype", dtype, *eager]
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


#: What ``trl`` says when TRL is not importable (the ``bench`` extra pins the release the comparison was built on).
TRL_HINT = "not installed (pip install 'arena-rl[bench]', i.e. trl==1.16.0, to compare with GRPOTrainer)"


def bench_train(
    model: str = "tiny",
    trials: int = 128,
    repeats: int = 3,
    micro_batch_tokens: int = 16384,
    group: int = 16,
    max_new_tokens: int = 64,
    kuhn_max_new_tokens: int | None = None,
) -> dict[str, Any]:
    """Policy-update tokens/s against a plain causal-LM forward and backward, and against TRL's ``GRPOTrainer``.

    Kuhn part (``ratio``): samples come from a real Kuhn rollout of ``model``; both sides see the same sequences
    in the same micro-batches (the trainer's token-budget cut) and take one AdamW step per pass. The plain side is
    ``model(input_ids, labels=...)``: what any trainer pays at least. ``kuhn_max_new_tokens`` caps the rollout's
    turn answers (default: the trial config's; reflections keep their plugin's budget).

    Single-turn part (``single_turn_*``, ``trl_*``): ``group`` completions for each of ``BENCH_PROMPTS`` sampled
    once, then one update per pass over exactly those sequences by our ``Trainer`` and by TRL's ``GRPOTrainer``
    (when ``trl`` is installed), each on its own fresh copy of the weights ``model`` had before any update here.
    """
    import copy

    import torch

    from arena.core.learn.experience import trial_samples
    from arena.core.learn.trainer import LossConfig, OptimConfig, Trainer

    seat = parse_seat(f"model:{model}")
    pool = BackendPool()
    backend = pool.get(seat)
    net = backend.model  # type: ignore[attr-defined]
    tokenizer = backend.tokenizer  # type: ignore[attr-defined]
    pad = int(getattr(tokenizer, "pad_token_id", 0) or 0)
    single = single_turn_samples(backend, group=group, max_new_tokens=max_new_tokens)
    pristine = copy.deepcopy(net)  # the weights both single-turn sides start from

    trial = TrialConfig(episodes=2)
    if kuhn_max_new_tokens is not None:
        trial = TrialConfig(episodes=2, prompt=PromptConfig(max_new_tokens=kuhn_max_new_tokens))
    engine = RolloutEngine(PluginSet(["reflection"]), trial, backends=pool)
    specs = [
        TrialSpec(trial_id=f"b{i}", arena_id="kuhn_poker", seats=(seat.text, KUHN_POOL[i % 3]), seed=i, episodes=2)
        for i in range(trials)
    ]
    samples = [s for t in engine.run(specs) for s in trial_samples(t, "bench", [seat.text])]
    samples = [attrs.evolve(s, advantage=1.0 if i % 2 else -1.0) for i, s in enumerate(samples)]
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
    result.update(
        bench_single_turn(
            pristine, tokenizer, single, repeats=repeats, micro_batch_tokens=micro_batch_tokens, pad_id=pad
        )
    )
    return result


def single_turn_samples(
    backend: Backend, group: int = 8, max_new_tokens: int = 48, prompts: Sequence[str] = BENCH_PROMPTS
) -> list[Sample]:
    """A GRPO-style single-turn batch: ``group`` completions (T = 1) of each of ``prompts``, as samples.

    Advantages alternate +1 / −0.5 inside each group: the loss and backward cost the same for any values, and a
    non-zero mean keeps the first pass's loss (−Σ A·tokens / N at ratio 1) away from 0, so the two trainers' first
    losses can be compared. Sample order is prompt-major, so consecutive ``group`` samples share a prompt, the
    layout GRPOTrainer expects of its generation batch.
    """
    from arena.core.api.backend import ChatMessage, Segment

    requests = [
        GenerationRequest(
            messages=(ChatMessage("user", text),),
            segments=(Segment(temperature=1.0),),
            max_new_tokens=max_new_tokens,
            seed=p * group + g,
        )
        for p, text in enumerate(prompts)
        for g in range(group)
    ]
    completions = [row[0] for row in backend.generate(requests)]
    samples: list[Sample] = []
    for i, (request, completion) in enumerate(zip(requests, completions, strict=True)):
        context = completion.prompt_token_ids or tuple(backend.prompt_ids(request))  # type: ignore[attr-defined]
        samples.append(
            Sample(
                learner="bench",
                trial_id=f"single-{i:04d}",
                episode=0,
                turn=0,
                agent="0",
                kind="action",
                context_ids=tuple(context),
                completion_ids=tuple(completion.token_ids),
                behaviour_logprobs=tuple(completion.logprobs),
                temperatures=tuple(completion.temperatures),
                completion_text=completion.text,
                group_id=f"prompt-{i // group}",
                advantage=1.0 if i % 2 else -0.5,
                meta={"finish_reason": completion.finish_reason},
            )
        )
    return [s for s in samples if s.completion_ids]


def bench_single_turn(
    model: Any,
    tokenizer: Any,
    samples: Sequence[Sample],
    repeats: int = 3,
    micro_batch_tokens: int = 16384,
    pad_id: int = 0,
    lr: float = 1e-6,
) -> dict[str, Any]:
    """Our ``Trainer.update`` and (if installed) TRL's ``GRPOTrainer`` policy update on the same single-turn batch.

    Each side trains its own deep copy of ``model`` (same weights, same dtype), with the same loss (PPO-clip 0.2,
    token mean over the batch, no KL), AdamW at ``lr``, gradient clipping at 1.0 and one optimizer step per pass
    over all samples, cut into the same number of micro-batches. One warm-up pass each, then ``repeats`` timed
    passes each, alternating (TRL, ours, TRL, ours...); seconds are the median pass (robust to another process
    taking the cores for a moment), every pass is listed.
    ``trl_ratio`` = TRL seconds / our seconds per pass (> 1: we are faster); ``trl_ratio_paired`` is the median
    of the per-pair ratios (TRL step k / our pass k, run back to back).
    """
    import copy
    import importlib.util

    from arena.core.learn.trainer import LossConfig, OptimConfig, Trainer

    samples = [s for s in samples if s.completion_ids]
    trainer = Trainer(
        copy.deepcopy(model), OptimConfig(lr=lr, micro_batch_tokens=micro_batch_tokens), LossConfig(), pad_id=pad_id
    )
    micro = len(list(trainer.micro_batches(samples)))
    first = trainer.update(samples)  # warm-up, from the pristine weights
    passes: list[int] = []
    walls: list[float] = []

    def our_pass() -> None:
        started = time.perf_counter()
        metrics = trainer.update(samples)
        walls.append(time.perf_counter() - started)
        passes.append(int(metrics["train/tokens"]))

    our_errors: list[Exception] = []

    def our_pass_between() -> None:
        try:
            our_pass()
        except Exception as error:  # ours is re-raised below, not reported as TRL's
            our_errors.append(error)
            raise

    trl: dict[str, Any] = {"trl_ratio": None, "trl": TRL_HINT}
    if importlib.util.find_spec("trl") is not None:
        try:
            # Our passes run between TRL's timed steps, so a load change on the machine hits both sides alike.
            trl = trl_grpo_update(
                copy.deepcopy(model),
                tokenizer,
                samples,
                repeats,
                micro,
                pad_id=pad_id,
                lr=lr,
                between_steps=our_pass_between,
            )
        except Exception as error:  # any TRL failure (API drift) is reported, not raised
            if our_errors:
                raise
            import trl as trl_module

            version = getattr(trl_module, "__version__", "?")
            message = f"GRPOTrainer failed under trl {version} ({type(error).__name__}: {error})"
            trl = {"trl_ratio": None, "trl_version": version, "trl": message}
    while len(walls) < repeats:  # no TRL, or it stopped early
        our_pass()
    ours = statistics.median(walls)
    completion_tokens = sum(len(s.completion_ids) for s in samples)
    result: dict[str, Any] = {
        "single_turn_samples": len(samples),
        "single_turn_prompt_tokens": sum(len(s.context_ids) for s in samples),
        "single_turn_completion_tokens": completion_tokens,
        "single_turn_tokens_per_pass": passes,
        "single_turn_micro_batches": micro,
        "single_turn_update_seconds": round(ours, 4),
        "single_turn_pass_seconds": [round(w, 4) for w in walls],
        "single_turn_tokens_per_s": round(completion_tokens / ours, 1) if ours else 0.0,
        "single_turn_first_loss": first.get("train/loss"),
    }
    result.update(trl)
    if "trl_seconds" in trl:
        result["trl_ratio"] = round(trl["trl_seconds"] / ours, 4) if ours else None
        # Each TRL step against our pass right after it: on a machine whose load changes, the steadier estimate.
        pairs = [t / o for t, o in zip(trl["trl_pass_seconds"], walls, strict=False) if o > 0]
        result["trl_ratio_paired"] = round(statistics.median(pairs), 4) if pairs else None
    return result


def trl_grpo_update(
    model: Any,
    tokenizer: Any,
    samples: Sequence[Sample],
    repeats: int,
    micro_batches: int = 1,
    pad_id: int = 0,
    lr: float = 1e-6,
    between_steps: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Time ``GRPOTrainer``'s policy update (loss, backward, clip, AdamW step) on ``samples``; generation excluded.

    ``trainer.train()`` runs its own loop for ``repeats + 1`` optimizer steps (the first is the warm-up); the only
    change is that its generate-and-score step returns the batch built here from the samples' token ids (prompts
    left-padded, completions right-padded, as TRL pads them; ``old_per_token_logps`` = the behaviour log-probs,
    advantages = the samples'), so both sides compute the same loss on the same tokens. A callback times each
    optimizer step from ``on_step_begin`` to ``on_step_end``: TRL's ``_prepare_inputs`` (shuffle, split),
    ``training_step`` per micro-batch (its loss with the fused LM head, backward), grad clipping, ``optimizer.step``,
    scheduler, ``zero_grad``. The completion tokens its loss saw are counted per step. ``between_steps`` runs
    after each timed step (outside the timing): the caller interleaves its own passes with TRL's.
    """
    import contextlib
    import sys
    import tempfile
    import warnings

    import torch
    import trl
    from datasets import Dataset
    from transformers import TrainerCallback
    from transformers.trainer_callback import PrinterCallback
    from transformers.utils import logging as hf_logging
    from trl import GRPOConfig, GRPOTrainer

    n = len(samples)
    groups: dict[str, int] = {}
    for s in samples:
        groups[s.group_id] = groups.get(s.group_id, 0) + 1
    group = min(groups.values())
    if any(v != group for v in groups.values()) or group < 2:
        raise ValueError(f"GRPOTrainer needs equal groups of ≥ 2 completions per prompt, got sizes {sorted(groups)}")
    # TRL cuts the batch into equal row counts: the fewest chunks ≥ ours that divide the batch.
    chunks = next(k for k in range(max(1, micro_batches), n + 1) if n % k == 0)
    device_batch = n // chunks

    prompt_width = max(len(s.context_ids) for s in samples)
    completion_width = max(len(s.completion_ids) for s in samples)
    prompt_ids = torch.full((n, prompt_width), pad_id, dtype=torch.long)
    prompt_mask = torch.zeros((n, prompt_width), dtype=torch.long)
    completion_ids = torch.full((n, completion_width), pad_id, dtype=torch.long)
    completion_mask = torch.zeros((n, completion_width), dtype=torch.long)
    old_logps = torch.zeros((n, completion_width), dtype=torch.float32)
    for row, s in enumerate(samples):
        c, k = len(s.context_ids), len(s.completion_ids)
        prompt_ids[row, prompt_width - c :] = torch.tensor(s.context_ids)
        prompt_mask[row, prompt_width - c :] = 1
        completion_ids[row, :k] = torch.tensor(s.completion_ids)
        completion_mask[row, :k] = 1
        old_logps[row, :k] = torch.tensor(s.behaviour_logprobs)
    advantages = torch.tensor([float(s.advantage) for s in samples], dtype=torch.float32)  # type: ignore[arg-type]

    class StepTimer(TrainerCallback):
        """Wall time and loss-visible completion tokens of each optimizer step."""

        def __init__(self) -> None:
            self.seconds: list[float] = []
            self.tokens: list[int] = []
            self.losses: list[float] = []
            self._start = 0.0

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.tokens.append(0)
            self.losses.append(0.0)
            self._start = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.seconds.append(time.perf_counter() - self._start)
            if between_steps is not None and len(self.seconds) > 1:  # the first step is TRL's warm-up
                between_steps()

    timer = StepTimer()

    def reward(completions: list[Any], **kwargs: Any) -> list[float | None]:
        """Never called: the batch arrives scored."""
        return [0.0] * len(completions)

    dataset = Dataset.from_dict({"prompt": [f"prompt {i}" for i in range(n // group)]})
    train_tokenizer = copy_tokenizer_left(tokenizer)
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        with tempfile.TemporaryDirectory() as out, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            config = GRPOConfig(
                output_dir=out,
                per_device_train_batch_size=device_batch,
                gradient_accumulation_steps=chunks,
                num_generations=group,
                max_completion_length=completion_width,
                max_steps=repeats + 1,
                learning_rate=lr,
                lr_scheduler_type="constant",
                warmup_steps=0,
                weight_decay=0.0,
                adam_beta1=0.9,
                adam_beta2=0.999,
                adam_epsilon=1e-8,
                optim="adamw_torch",
                max_grad_norm=1.0,
                beta=0.0,
                epsilon=0.2,
                loss_type="dapo",
                temperature=1.0,
                num_iterations=1,
                gradient_checkpointing=False,
                bf16=False,
                fp16=False,
                logging_strategy="no",
                save_strategy="no",
                report_to="none",
                disable_tqdm=True,
                seed=0,
            )
            grpo = GRPOTrainer(
                model=model,
                reward_funcs=reward,
                args=config,
                train_dataset=dataset,
                processing_class=train_tokenizer,
                callbacks=[timer],
            )
            device = grpo.accelerator.device
            batch: dict[str, Any] = {
                "prompt_ids": prompt_ids.to(device),
                "prompt_mask": prompt_mask.to(device),
                "completion_ids": completion_ids.to(device),
                "completion_mask": completion_mask.to(device),
                "advantages": advantages.to(device),
                "old_per_token_logps": old_logps.to(device),
                "num_items_in_batch": completion_mask.sum().to(device),
            }
            if not hasattr(grpo, "_generate_and_score_completions"):
                raise AttributeError("GRPOTrainer has no _generate_and_score_completions to hand the batch to")

            def scored_batch(inputs: Any) -> dict[str, Any]:
                return dict(batch)

            compute_loss = grpo.compute_loss

            def counting_loss(model: Any, inputs: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
                loss = compute_loss(model, inputs, *args, **kwargs)
                timer.tokens[-1] += int(inputs["completion_mask"].sum())
                timer.losses[-1] += float(loss.detach())
                return loss

            grpo._generate_and_score_completions = scored_batch  # type: ignore[method-assign]
            grpo.compute_loss = counting_loss  # type: ignore[method-assign]
            grpo.remove_callback(PrinterCallback)  # it prints the run summary on stdout, where --json goes
            with contextlib.redirect_stdout(sys.stderr):
                grpo.train()
    finally:
        hf_logging.set_verbosity(verbosity)
    if len(timer.seconds) != repeats + 1:
        raise RuntimeError(f"expected {repeats + 1} optimizer steps, timed {len(timer.seconds)}")
    seconds = statistics.median(timer.seconds[1:])
    tokens = int(completion_mask.sum())
    return {
        "trl_version": trl.__version__,
        "trl_seconds": round(seconds, 4),
        "trl_pass_seconds": [round(w, 4) for w in timer.seconds[1:]],
        "trl_tokens_per_s": round(tokens / seconds, 1) if seconds else 0.0,
        "trl_tokens_per_pass": timer.tokens[1:],
        "trl_first_loss": timer.losses[0],
        "trl_micro_batches": chunks,
        "trl_setup": (
            f"GRPOTrainer.train() for {repeats}+1 optimizer steps (first is warm-up), generation replaced by the "
            f"pre-built batch of {n} sequences ({n // group} prompts × {group}); timed on_step_begin→on_step_end: "
            f"_prepare_inputs (shuffle/split), {chunks} micro-batch(es) of {device_batch} rows (ours: {micro_batches} "
            "by token budget), loss (fused LM head, loss_type dapo = token mean, ε 0.2, β 0, old log-probs = "
            "behaviour), backward, clip 1.0, AdamW, scheduler; same weights, dtype "
            f"{next(model.parameters()).dtype}, no gradient checkpointing. Not matched: TRL pads every micro-batch "
            f"to the batch's longest prompt ({prompt_width}) and completion ({completion_width}); ours pads per "
            "micro-batch. Excluded: generation, rewards, logging."
        ),
    }


def copy_tokenizer_left(tokenizer: Any) -> Any:
    """A copy of ``tokenizer`` padding on the left (GRPOTrainer requires it; the caller's stays as it was)."""
    import copy

    out = copy.deepcopy(tokenizer)
    out.padding_side = "left"
    if out.pad_token is None:
        out.pad_token = out.eos_token
    return out
