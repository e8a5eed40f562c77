"""``arena train``: play groups of trials against a pool, turn them into samples, update, repeat.

One iteration: matchmaking (each group of ``group_size`` trials gets one opponent, drawn by weight, one seed
and one learner seat) → the rollout engine plays every trial at once → samples → ``compute_rewards`` terms →
returns → ``compute_advantages`` (the learner's estimator plugin) → ``normalize_advantages`` →
``training_view`` → ``Trainer.update`` → metrics line, rollout dump, checkpoint, evaluation.

Everything random is derived from ``seed`` and the iteration, so a CPU run is repeatable bit for bit and a
resumed run (after ``kill -9``) continues exactly: the checkpoint holds weights, optimizer, scheduler, RNG
states, plugin state and the iteration; ``metrics.jsonl`` is cut back to the checkpoint's iteration.
"""

from __future__ import annotations

import json
import math
import os
import random
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import structlog
import torch
import yaml
from tqdm import tqdm

from arena.core import checkpoint as ck
from arena.core.config import to_dict
from arena.core.engine import RolloutEngine
from arena.core.errors import ArenaError
from arena.core.experience import trial_samples
from arena.core.plugins import PluginSet, installed_plugins
from arena.core.records import TrialRecord, TrialSpec
from arena.core.samples import Sample
from arena.core.seats import BackendPool, parse_seat
from arena.core.seeding import derive_seed
from arena.core.train_config import LearnerConfig, TrainConfig
from arena.core.trainer import Trainer

log = structlog.get_logger("arena.train")


@attrs.frozen
class Matchup:
    group_id: str
    opponent: str
    seed: int
    learner_first: bool


def matchups(config: TrainConfig, iteration: int) -> list[Matchup]:
    """The iteration's groups: opponent by weight, a seed per group, the learner's seat."""
    rng = np.random.default_rng(derive_seed(config.seed, "matchups", iteration))
    weights = np.array([max(0.0, o.weight) for o in config.opponents], dtype=float)
    if weights.sum() <= 0:
        raise ArenaError("the opponent pool has no positive weight")
    weights /= weights.sum()
    out = []
    for g in range(config.groups):
        opponent = config.opponents[int(rng.choice(len(weights), p=weights))].spec
        first = {"first": True, "last": False}.get(config.learner_seat, bool(rng.integers(2) == 0))
        seed = int(derive_seed(config.seed, "group", iteration, g) % (2**31))
        out.append(Matchup(group_id=f"it{iteration:05d}-g{g:03d}", opponent=opponent, seed=seed, learner_first=first))
    return out


def trial_specs_for(config: TrainConfig, learner: LearnerConfig, groups: Sequence[Matchup]) -> list[TrialSpec]:
    specs = []
    for m in groups:
        seats = (learner.seat_spec, m.opponent) if m.learner_first else (m.opponent, learner.seat_spec)
        for k in range(config.group_size):
            specs.append(
                TrialSpec(
                    trial_id=f"{m.group_id}-t{k}",
                    arena_id=config.arena,
                    seats=seats,
                    seed=m.seed,
                    episodes=config.trial.episodes,
                    arena_kwargs=dict(config.arena_kwargs),
                    group_id=m.group_id,
                    early_stop_on_win=config.trial.early_stop_on_win,
                    meta={"opponent": m.opponent},
                )
            )
    return specs


def outcome_metrics(trials: Sequence[TrialRecord], seat_spec: str, prefix: str) -> dict[str, float]:
    """Mean return, win/draw/loss rates and invalid answers of the learner, overall and per opponent."""
    rows: dict[str, list[tuple[float, str, int]]] = {}
    for trial in trials:
        agents = list(trial.final.returns)
        for i, text in enumerate(trial.spec.seats):
            if text != seat_spec:
                continue
            opponent = ",".join(s for s in trial.spec.seats if s != seat_spec) or "self"
            agent = agents[i]
            invalid = sum(e.invalid_actions[agent] for e in trial.episodes)
            rows.setdefault(opponent, []).append((trial.final.returns[agent], trial.final.outcomes[agent], invalid))
    metrics: dict[str, float] = {}
    everything = [r for rs in rows.values() for r in rs]
    for name, rs in [("all", everything), *sorted(rows.items())]:
        if not rs:
            continue
        key = prefix if name == "all" else f"{prefix}/{name}"
        metrics[f"{key}/mean_return"] = float(np.mean([r[0] for r in rs]))
        metrics[f"{key}/win_rate"] = sum(r[1] == "win" for r in rs) / len(rs)
        if name == "all":
            metrics[f"{key}/draw_rate"] = sum(r[1] == "draw" for r in rs) / len(rs)
            metrics[f"{key}/invalid_per_trial"] = sum(r[2] for r in rs) / len(rs)
    return metrics


def _abs_advantage(sample: Sample) -> float:
    value = sample.advantage
    return abs(value) if isinstance(value, int | float) else abs(sum(value))


def sample_to_json(sample: Sample) -> dict[str, Any]:
    return {
        "kind": sample.kind,
        "context_text": sample.context_text,
        "rollout_context_text": sample.rollout_context_text
        if sample.rollout_context_text is not None
        else sample.context_text,
        "completion_text": sample.completion_text,
        "token_temperatures": list(sample.temperatures),
        "behaviour_logprobs": list(sample.behaviour_logprobs),
        "reward_terms": sample.reward_terms,
        "return": sample.ret,
        "advantage": sample.advantage,
        "group_id": sample.group_id,
        "anchor": sample.anchor,
        "opponent": sample.opponent,
        "episode": sample.episode,
        "turn": sample.turn,
        "loss": sample.loss,
        "trial_id": sample.trial_id,
    }


class Run:
    """One training run in ``out_dir``; ``Run.resume(dir)`` continues one."""

    def __init__(self, config: TrainConfig, out_dir: Path, dump_rollouts: bool = False, progress: bool | None = None):
        if len(config.learners) != 1:
            raise ArenaError(
                f"arena train takes one learner for now, the config has {len(config.learners)}; "
                "co-evolving learners come with the population manager"
            )
        self.config = config
        self.learner = config.learners[0]
        self.out_dir = Path(out_dir)
        self.dump_rollouts = dump_rollouts
        self.progress = progress
        if config.torch_threads:
            torch.set_num_threads(config.torch_threads)
        random.seed(config.seed)
        np.random.seed(config.seed % (2**32))
        torch.manual_seed(config.seed)
        self.plugins = PluginSet(self.learner.plugins)
        if not self.plugins.implements("compute_advantages"):
            raise ArenaError(
                f"learner {self.learner.name!r} enables no advantage estimator; add one of "
                "grpo, drgrpo, rloo, gigpo, rae, reinforce to its plugins"
            )
        self.pool = BackendPool()
        self.backend = self.pool.get(parse_seat(self.learner.seat_spec))
        model = getattr(self.backend, "model", None)
        if model is None:
            raise ArenaError(f"backend {self.backend.name!r} has no trainable model; train with the hf backend")
        tokenizer = getattr(self.backend, "tokenizer", None)
        pad_id = int(getattr(tokenizer, "pad_token_id", None) or 0)
        loss = self.learner.loss
        if loss.aggregation == "seq_sum" and loss.seq_sum_constant is None:
            # Dr.GRPO divides by a constant: the generation budget, not the batch's longest answer.
            loss = attrs.evolve(loss, seq_sum_constant=config.trial.prompt.max_new_tokens)
        self.trainer = Trainer(model, self.learner.optim, loss, pad_id=pad_id)
        self.engine = RolloutEngine(
            self.plugins, config.trial, backends=self.pool, max_live_trials=config.max_live_trials
        )
        self.iteration = 0
        self.writer: Any = None

    # -- files ----------------------------------------------------------------------------------------------

    def prepare_dir(self) -> None:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        with open(self.out_dir / "config.yaml", "w") as f:
            yaml.safe_dump(to_dict(self.config), f, sort_keys=False)
        plugins = {p.name: {"distribution": p.distribution, "version": p.version} for p in installed_plugins()}
        enabled = {name: plugins.get(name, {}) for name in self.learner.plugins}
        with open(self.out_dir / "plugins.json", "w") as f:
            json.dump({"enabled": enabled, "installed": plugins}, f, indent=2)
        try:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(str(self.out_dir / "tensorboard"))
        except Exception:  # tensorboard is optional
            self.writer = None

    def write_metrics(self, metrics: Mapping[str, Any]) -> None:
        with open(self.out_dir / "metrics.jsonl", "a") as f:
            f.write(json.dumps(metrics, sort_keys=True) + "\n")
        if self.writer is not None:
            for key, value in metrics.items():
                if isinstance(value, int | float) and key != "iteration" and math.isfinite(value):
                    self.writer.add_scalar(key, value, int(metrics["iteration"]))
            self.writer.flush()

    # -- checkpoints --------------------------------------------------------------------------------------

    def plugin_state(self) -> dict[str, Any]:
        states = {}
        for name in self.plugins.names:
            obj = self.plugins.pm.get_plugin(name)
            if obj is not None and hasattr(obj, "state_dict"):
                states[name] = obj.state_dict()
        return states

    def save(self) -> None:
        model = self.trainer.accelerator.unwrap_model(self.trainer.model)
        state = {
            "iteration": self.iteration,
            "trainer": self.trainer.state_dict(),
            "rng": ck.rng_state(),
            "plugins": self.plugin_state(),
        }
        tokenizer = getattr(self.backend, "tokenizer", None)

        def model_files(folder: Path) -> None:
            model.config.save_pretrained(folder)
            if getattr(model, "generation_config", None) is not None:
                model.generation_config.save_pretrained(folder)
            if tokenizer is not None:
                tokenizer.save_pretrained(folder)

        ck.save_checkpoint(
            self.out_dir,
            self.iteration,
            {self.learner.name: model.state_dict()},
            state,
            keep=self.config.checkpoint.keep,
            model_files={self.learner.name: model_files},
        )

    def load(self, path: Path) -> None:
        models, state = ck.load_checkpoint(path)
        model = self.trainer.accelerator.unwrap_model(self.trainer.model)
        model.load_state_dict(models[self.learner.name], strict=False)
        self.trainer.load_state_dict(state["trainer"])
        ck.set_rng_state(state["rng"])
        for name, plugin_state in state.get("plugins", {}).items():
            obj = self.plugins.pm.get_plugin(name)
            if obj is not None and hasattr(obj, "load_state_dict"):
                obj.load_state_dict(plugin_state)
        self.iteration = int(state["iteration"])
        metrics = self.out_dir / "metrics.jsonl"
        if metrics.exists():  # lines written after the checkpoint are replayed by the resumed run
            kept = [line for line in metrics.read_text().splitlines() if json.loads(line)["iteration"] < self.iteration]
            metrics.write_text("".join(line + "\n" for line in kept))

    # -- one iteration ------------------------------------------------------------------------------------

    def experience(self, trials: Sequence[TrialRecord]) -> list[Sample]:
        samples: list[Sample] = []
        for trial in trials:
            samples.extend(
                trial_samples(
                    trial, self.learner.name, [self.learner.seat_spec], self.learner.invalid_penalty, self.learner.gamma
                )
            )
        return samples

    def credit(self, trials: Sequence[TrialRecord], samples: list[Sample]) -> list[Sample]:
        """Reward terms from plugins, returns, advantages, normalisation, training view."""
        by_trial: dict[str, list[int]] = {}
        for i, s in enumerate(samples):
            by_trial.setdefault(s.trial_id, []).append(i)
        for trial in trials:
            indices = by_trial.get(trial.spec.trial_id, [])
            if not indices:
                continue
            local = [samples[i] for i in indices]
            for name, extra in self.plugins.call("compute_rewards", trial=trial, samples=local):
                for j, terms in extra.items():
                    current = dict(samples[indices[j]].reward_terms)
                    clash = set(current) & set(terms)
                    if clash:
                        raise ArenaError(f"plugin {name!r} sets reward term(s) {sorted(clash)} that already exist")
                    current.update(terms)
                    samples[indices[j]] = attrs.evolve(samples[indices[j]], reward_terms=current)
        options = self.learner.options
        returns = self.plugins.first("compute_returns", samples=samples, options=options)
        if returns is None:
            returns = [s.reward for s in samples]
        elif len(returns) != len(samples):
            raise ArenaError(f"compute_returns gave {len(returns)} returns for {len(samples)} samples")
        samples = [attrs.evolve(s, ret=float(r)) for s, r in zip(samples, returns, strict=True)]
        advantages = self.plugins.first("compute_advantages", samples=samples, options=options)
        normalized = self.plugins.first("normalize_advantages", samples=samples, advantages=advantages, options=options)
        if normalized is not None:
            advantages = normalized
        out = []
        for sample, advantage in zip(samples, advantages, strict=True):
            value = advantage if isinstance(advantage, int | float) else list(advantage)
            sample = attrs.evolve(sample, advantage=value)
            view = self.plugins.first("training_view", sample=sample)
            out.append(view if view is not None else sample)
        return out

    def evaluate(self, label: str) -> dict[str, float]:
        cfg = self.config.eval
        opponents = cfg.opponents or [o.spec for o in self.config.opponents]
        specs = []
        for opponent in opponents:
            for k in range(cfg.games):
                first = k % 2 == 0
                seats = (self.learner.seat_spec, opponent) if first else (opponent, self.learner.seat_spec)
                specs.append(
                    TrialSpec(
                        trial_id=f"eval-{label}-{opponent}-{k}",
                        arena_id=self.config.arena,
                        seats=seats,
                        seed=cfg.seed + k,
                        episodes=self.config.trial.episodes,
                        arena_kwargs=dict(self.config.arena_kwargs),
                        training=False,
                    )
                )
        trials = self.engine.run(specs)
        return outcome_metrics(trials, self.learner.seat_spec, "eval")

    def step(self) -> dict[str, Any]:
        it = self.iteration
        times: dict[str, float] = {}
        t0 = time.perf_counter()
        specs = trial_specs_for(self.config, self.learner, matchups(self.config, it))
        requests_before = self.engine.stats.requests
        trials = self.engine.run(specs)
        times["time/rollout"] = time.perf_counter() - t0
        samples = self.experience(trials)
        generated = sum(len(s.completion_ids) for s in samples)
        t1 = time.perf_counter()
        samples = self.credit(trials, samples)
        times["time/credit"] = time.perf_counter() - t1
        t2 = time.perf_counter()
        train_metrics = self.trainer.update(samples)
        times["time/update"] = time.perf_counter() - t2
        metrics: dict[str, Any] = {"iteration": it}
        metrics.update(outcome_metrics(trials, self.learner.seat_spec, "rollout"))
        metrics["rollout/samples"] = len(samples)
        metrics["rollout/llm_requests"] = self.engine.stats.requests - requests_before
        metrics["rollout/mean_reward"] = float(np.mean([s.reward for s in samples])) if samples else 0.0
        metrics["rollout/mean_advantage_abs"] = float(np.mean([_abs_advantage(s) for s in samples])) if samples else 0.0
        metrics.update({k: v for k, v in train_metrics.items() if k not in ("train/seconds", "train/tokens_per_s")})
        metrics["time/update_tokens_per_s"] = train_metrics.get("train/tokens_per_s", 0.0)
        metrics["time/rollout_tokens_per_s"] = generated / times["time/rollout"] if times["time/rollout"] else 0.0
        if self.dump_rollouts:
            folder = self.out_dir / "rollouts"
            folder.mkdir(exist_ok=True)
            with open(folder / f"iter_{it:05d}.jsonl", "w") as f:
                for sample in samples:
                    f.write(json.dumps(sample_to_json(sample)) + "\n")
        self.iteration += 1
        every = self.config.eval.every
        if (every and self.iteration % every == 0) or self.iteration == self.config.iterations:
            t3 = time.perf_counter()
            metrics.update(self.evaluate(f"it{self.iteration}"))
            times["time/eval"] = time.perf_counter() - t3
        metrics.update(times)
        return metrics

    def run(self, resume: bool = False) -> Path:
        self.prepare_dir()
        if resume:
            latest = ck.latest_checkpoint(self.out_dir)
            if latest is not None:
                self.load(latest)
        if self.iteration == 0:
            start = self.evaluate("it0")
            self.write_metrics({"iteration": -1, **start})
        bar = tqdm(
            total=self.config.iterations,
            initial=self.iteration,
            desc="train",
            unit="it",
            disable=None if self.progress is None else not self.progress,
        )
        try:
            while self.iteration < self.config.iterations:
                metrics = self.step()
                self.write_metrics(metrics)
                if self.iteration % self.config.checkpoint.every == 0 or self.iteration == self.config.iterations:
                    t = time.perf_counter()
                    self.save()
                    log.debug("checkpoint", iteration=self.iteration, seconds=round(time.perf_counter() - t, 3))
                log.info(
                    "iteration",
                    iteration=metrics["iteration"],
                    mean_return=round(metrics.get("rollout/mean_return", 0.0), 4),
                    win_rate=round(metrics.get("rollout/win_rate", 0.0), 4),
                    loss=round(metrics.get("train/loss", 0.0), 5),
                    seconds=round(sum(v for k, v in metrics.items() if k.startswith("time/") and "per_s" not in k), 2),
                )
                bar.update(1)
        finally:
            bar.close()
            if self.writer is not None:
                self.writer.close()
        return self.out_dir


def default_out_dir(config_name: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{Path(config_name).stem}-{stamp}-{os.getpid()}"
