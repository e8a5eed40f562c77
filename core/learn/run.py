"""``arena train``: play groups of trials against a pool, turn them into samples, update, repeat.

One iteration: matchmaking by the population (``arena.populations``: for every learner, groups of
``group_size`` trials, each group one opponent from the pool, one seed and one learner seat) → each learner's
rollout engine plays all of its trials at once → ``match_end`` (ratings, opponent statistics) → samples →
``compute_rewards`` terms → with ``dynamic_sampling`` (DAPO), extra rounds of fresh groups until ``groups`` of them
have a reward spread, the rest dropped from training (``arena.core.learn.dynamic_sampling``) → ``augment_group`` (HeRL,
GOLF: extra generations batched across groups, scored by the arena) → ``compute_returns`` →
``compute_advantages`` (the learner's estimator plugin) → ``normalize_advantages`` → ``training_view`` →
``Trainer.update`` → ``evolve_population`` (snapshots join the pool) → metrics line, ``population.json``, rollout
dump, checkpoint, evaluation.

Everything random is derived from ``seed`` and the iteration, so a CPU run is repeatable bit for bit and a
resumed run (after ``kill -9``) continues exactly: the checkpoint holds weights, optimizer, scheduler, RNG
states, plugin state and the iteration; ``metrics.jsonl`` is cut back to the checkpoint's iteration.

Under ``accelerate launch`` with N processes each plays every N-th group and trains on its own samples; the
trials are gathered so that the population and the metrics see all of them in one order, the trainer sums the
gradients once per step, and only the main process writes the run directory (``arena.core.learn.distributed``,
docs/training.md "Several GPUs or nodes").
"""

from __future__ import annotations

import functools
import json
import os
import random
import shutil
import time
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import structlog
import torch
import yaml
from tqdm import tqdm

from arena.core.api.augment import Augmentation, GroupTask, ScoredAnswer, augmentable_groups
from arena.core.api.backend import ChatMessage, Completion, GenerationRequest
from arena.core.api.errors import ArenaError, ConfigError
from arena.core.api.records import TrialRecord, TrialSpec
from arena.core.api.samples import Sample
from arena.core.api.seeding import derive_seed
from arena.core.config.loader import to_dict
from arena.core.host import catalog
from arena.core.host.plugins import PluginSet, installed_plugins
from arena.core.learn import checkpoint as ck
from arena.core.learn import dynamic_sampling as ds
from arena.core.learn import rundir
from arena.core.learn.distributed import Dist, in_order
from arena.core.learn.experience import trial_samples
from arena.core.learn.metrics import IterationLine, LearnerTally, Recorder, generated_tokens, sample_to_json
from arena.core.learn.rescoring import score_answer
from arena.core.learn.run_config import LearnerConfig, TrainConfig
from arena.core.learn.threads import torch_threads
from arena.core.learn.trainer import Trainer
from arena.core.models.held import READOUT_FILE, hold_all_but, save_held
from arena.core.rollout.engine import RolloutEngine
from arena.core.rollout.seats import BackendPool, parse_seat
from arena.populations import Matchup, Population, seated

log = structlog.get_logger("arena.train")


def trial_specs_for(
    config: TrainConfig,
    learner: Learner,
    groups: Sequence[Matchup],
    iteration: int = 0,
    learner_specs: Collection[str] = (),
) -> list[TrialSpec]:
    """``group_size`` trials per matchup: same seed, same opponent, the learner in the matchup's seat.

    ``learner_specs`` are the seat specs of every learner of the run: ``meta["trained_seats"]`` lists the seats
    they hold, and the engine's ``early_stop_on_win`` stops a trial only when all of them won (never, for two
    co-evolving learners).

    ``meta`` carries the iteration and the run seed (EMPO² draws its per-iteration memory mode from them),
    ``group_index``, the trial's position in its group (MENTOR guides the second half of every group), and
    ``max_new_tokens``, the answer budget (the ``overlong`` plugin's default L_max).
    """
    specs = []
    for m in groups:
        # The learner alone in a single-agent arena; else in the matchup's seat, the pool members around it.
        seats = m.seats(learner.seat_spec)
        # Three or more seats: the players by name, which the population rates as one ranked game.
        names = {"seat_names": list(m.seat_names())} if m.others else {}
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
                    meta={
                        "learner": learner.name,
                        "opponent": m.opponent or None,
                        "learner_seat": m.learner_index if m.opponent_spec else 0,
                        "trained_seats": [
                            i for i, text in enumerate(seats) if text == learner.seat_spec or text in learner_specs
                        ],
                        "group_index": k,
                        "group_size": config.group_size,
                        "iteration": iteration,
                        "run_seed": config.seed,
                        "max_new_tokens": config.trial.prompt.max_new_tokens,
                        **names,
                    },
                    options=dict(learner.config.options),
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
            opponent = trial.spec.meta.get("opponent") or ",".join(s for s in trial.spec.seats if s != seat_spec)
            opponent = opponent or "self"
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


def _score(task: GroupTask, request: GenerationRequest, completion: Completion) -> ScoredAnswer:
    verdict = score_answer(task.arena_id, task.arena_kwargs, task.seed, completion.text)
    return ScoredAnswer(
        completion=completion,
        messages=tuple(request.messages),
        reward=verdict.reward,
        details=verdict.details,
        feedback=verdict.feedback,
    )


class Learner:
    """One learner of the population: its config, plugins, generation backend, trainer and rollout engine.

    Its seat spec is unique to it (``model:tiny#agent@hf``) even when two learners start from the same model, so
    the backend pool keeps one model object per learner and every trial knows which learner sat where.
    """

    def __init__(self, config: LearnerConfig, run: TrainConfig, pool: BackendPool) -> None:
        self.config = config
        self.name = config.name
        self.plugins = PluginSet(config.plugins)
        if config.unused_options:
            log.warning(
                "learner: options for plugins it does not enable are ignored",
                learner=config.name,
                sections=config.unused_options,
                plugins=list(config.plugins),
            )
        if not self.plugins.implements("compute_advantages"):
            raise ArenaError(
                f"learner {config.name!r} enables no advantage estimator; add one of "
                "grpo, drgrpo, rloo, gigpo, rae, reinforce, mage to its plugins"
            )
        backend_name, model_name = BackendPool.resolve(parse_seat(config.seat_spec))
        factory = catalog.backends().get(backend_name).factory
        self.backend = factory(model=model_name, **pool.options.get(backend_name, {}))
        unique = f"{model_name}#{config.name}"
        pool.add(backend_name, unique, self.backend)
        self.seat_spec = f"model:{unique}@{backend_name}"
        model = getattr(self.backend, "model", None)
        if not isinstance(model, torch.nn.Module):  # vLLM's ``model`` is the model's name
            model = None
        #: Whether generation runs on a separate engine (vLLM) that needs the weights after every update.
        self.needs_sync = model is None
        if model is None:
            # Generation on an engine that holds its own copy of the weights (vLLM): train an hf copy of the same
            # model and push its weights to the engine after every update.
            if not hasattr(self.backend, "sync_weights"):
                raise ArenaError(
                    f"learner {config.name!r}: backend {self.backend.name!r} neither exposes a trainable model "
                    "nor accepts new weights (sync_weights); train with the hf or vllm backend"
                )
            trainable = catalog.backends().get("hf").factory(model=model_name, **pool.options.get("hf", {}))
            model = trainable.model
            self.tokenizer = getattr(trainable, "tokenizer", None)
            held = getattr(trainable, "held_weights", None)
            readout = getattr(trainable, "readout_weights", None)
        else:
            self.tokenizer = getattr(self.backend, "tokenizer", None)
            held = getattr(self.backend, "held_weights", None)
            readout = getattr(self.backend, "readout_weights", None)
        #: Masks of the entries the model marks as held (saved with every copy of the model this run writes).
        self.held_weights: dict[str, torch.Tensor] | None = held
        #: Masks of the model's readout (saved with every copy too, so a resumed or further run can train it).
        self.readout_weights: dict[str, torch.Tensor] | None = readout
        if config.optim.train == "readout":
            if not readout:
                raise ConfigError(
                    f"learner {config.name!r}: optim.train is 'readout' but model {model_name!r} marks no readout "
                    f"({READOUT_FILE}; tiny builds from v6 on write one)"
                )
            # Everything but the readout is held; the model's own held entries stay held inside it too.
            held = hold_all_but(model, readout, held if config.optim.hold_marked_weights else None)
        pad_id = int(getattr(self.tokenizer, "pad_token_id", None) or 0)
        loss = config.loss
        if loss.aggregation == "seq_sum" and loss.seq_sum_constant is None:
            # Dr.GRPO divides by a constant: the generation budget, not the batch's longest answer.
            loss = attrs.evolve(loss, seq_sum_constant=run.trial.prompt.max_new_tokens)
        self.trainer = Trainer(model, config.optim, loss, pad_id=pad_id, held=held, readout=readout)
        if self.trainer.hold is not None:
            log.info(
                "learner: holding the weights its model marks", learner=config.name, entries=self.trainer.hold.entries
            )
        if self.trainer.readout_step is not None:
            log.info(
                "learner: scaling the readout's steps",
                learner=config.name,
                entries=self.trainer.readout_step.entries,
                factor=config.optim.readout_lr_scale,
            )
        if self.plugins.implements("shape_token_advantages"):
            options = config.options

            def shape(batch: Sequence[Sample], advantages: Any, entropy: Any, mask: Any) -> Any:
                return self.plugins.first(
                    "shape_token_advantages",
                    samples=batch,
                    advantages=advantages,
                    entropy=entropy,
                    mask=mask,
                    options=options,
                )

            self.trainer.shape_token_advantages = shape
        self.engine = RolloutEngine(self.plugins, run.trial, backends=pool, max_live_trials=run.max_live_trials)

    @property
    def model(self) -> Any:
        return self.trainer.accelerator.unwrap_model(self.trainer.model)

    def save_model(self, folder: Path) -> None:
        """Weights, config and tokenizer: a directory that loads as ``model:FOLDER``."""
        model = self.model
        model.save_pretrained(folder)
        if self.tokenizer is not None:
            self.tokenizer.save_pretrained(folder)
        if self.held_weights:
            save_held(folder, self.held_weights)
        if self.readout_weights:
            save_held(folder, self.readout_weights, READOUT_FILE)

    def write_model_files(self, folder: Path) -> None:
        """Everything but the weights (the checkpoint writes those itself)."""
        self.model.config.save_pretrained(folder)
        if getattr(self.model, "generation_config", None) is not None:
            self.model.generation_config.save_pretrained(folder)
        if self.tokenizer is not None:
            self.tokenizer.save_pretrained(folder)
        if self.held_weights:
            save_held(folder, self.held_weights)
        if self.readout_weights:
            save_held(folder, self.readout_weights, READOUT_FILE)

    def encode(self, messages: Sequence[ChatMessage]) -> tuple[int, ...]:
        """Token ids of ``messages`` rendered as the backend renders a rollout's prompt (for ``training_view``)."""
        prompt_ids = getattr(self.backend, "prompt_ids", None)
        if prompt_ids is None:
            raise ArenaError(f"backend {self.backend.name!r} cannot render prompts (no prompt_ids) for training_view")
        return tuple(int(t) for t in prompt_ids(GenerationRequest(messages=tuple(messages))))

    def plugin_state(self) -> dict[str, Any]:
        return self.plugins.state_dict()

    def load_plugin_state(self, states: Mapping[str, Any]) -> None:
        self.plugins.load_state_dict(states)


@attrs.define
class LearnerBatch:
    """One learner's experience of one iteration on this process, as ``Run.step``'s phases pass it on.

    ``trials`` are this process's (their samples train here; after DAPO's resampling, those of the kept
    groups), ``everything`` every process's in matchup order (the population and the outcome metrics see
    them), ``samples`` what the last phase made of them, ``tally`` what the phases cost and produced.
    """

    learner: Learner
    trials: list[TrialRecord]
    everything: list[TrialRecord]
    samples: list[Sample] = attrs.field(factory=list)
    tally: LearnerTally = attrs.field(factory=LearnerTally)

    def has_work(self, dist: Dist) -> bool:
        """Whether augment and credit run: a process may hold no group when ``groups`` < processes."""
        return bool(self.samples) or dist.world == 1


class Run:
    """One training run in ``out_dir``: the population's learners, its opponent pool and ratings.

    ``Run(config, dir).run(resume=True)`` continues from the newest checkpoint in ``dir``.
    """

    def __init__(self, config: TrainConfig, out_dir: Path, dump_rollouts: bool = False, progress: bool | None = None):
        names = [learner.name for learner in config.learners]
        if len(set(names)) != len(names):
            raise ArenaError(f"learner names must be unique, got {names}")
        self.config = config
        self.out_dir = Path(out_dir)
        self.dump_rollouts = dump_rollouts
        self.progress = progress
        # One warning line when a per-task mechanism (SGE's reflection, EMPO²'s memory) can never meet its task.
        from arena.core.learn.task_recurrence import warn_unreachable

        warn_unreachable(config, log)
        random.seed(config.seed)
        np.random.seed(config.seed % (2**32))
        torch.manual_seed(config.seed)
        env = catalog.make_arena(config.arena, **config.arena_kwargs)
        #: The arena's seats (three-player Kuhn poker: 3); matchmaking fills every seat beyond two from the pool.
        self.players = len(env.possible_agents)
        env.close()
        if not config.opponents and not config.population.learners_as_opponents and self.players != 1:
            raise ArenaError(
                f"arena {config.arena!r} has {self.players} seats but the config lists no opponents; "
                "`opponents: []` is for single-agent arenas (coding, text_maze)"
            )
        self.pool = BackendPool(config.backend_options)
        self.learners = [Learner(learner, config, self.pool) for learner in config.learners]
        #: The processes of an ``accelerate launch`` run (``Dist()``: one process): each plays its share of the
        #: groups; all see every trial; only the main process writes the run directory.
        self.dist: Dist = self.learners[0].trainer.dist
        if self.dist.world > 1:  # a default run directory is named after the pid: take the main process's
            self.out_dir = Path(self.dist.gather(str(self.out_dir))[0])
        self.population = Population(
            config.population,
            learners=[(learner.name, learner.seat_spec) for learner in self.learners],
            opponents=[(o.spec, o.weight) for o in config.opponents],
            seed=config.seed,
            task_pool=config.task_pool,
            players=self.players,
        )
        self.iteration = 0
        #: metrics.jsonl, the trackers and the rollout dumps (the main process writes them).
        self.recorder = Recorder(self.out_dir, self.dist)
        #: Per learner, the distinct (task, outcome) pairs its training rollouts reached so far: SGE's Figure-11
        #: exploration measure, from the arena's ``episode_details`` (``task_id``, ``outcome_key``).
        self.outcomes_seen: dict[str, set[tuple[str, str]]] = {learner.name: set() for learner in self.learners}

    @property
    def learner(self) -> Learner:
        """The first learner (the only one in single-learner runs)."""
        return self.learners[0]

    def _key(self, learner: Learner, key: str) -> str:
        """Metric names: plain for one learner, ``NAME/...`` when several learners share the run."""
        return key if len(self.learners) == 1 else f"{learner.name}/{key}"

    # -- files ----------------------------------------------------------------------------------------------

    def prepare_dir(self) -> None:
        if not self.dist.is_main:
            self.dist.barrier()  # the other processes wait for the directory
            return
        self.out_dir.mkdir(parents=True, exist_ok=True)
        with open(self.out_dir / "config.yaml", "w") as f:
            yaml.safe_dump(to_dict(self.config), f, sort_keys=False)
        plugins = {p.name: {"distribution": p.distribution, "version": p.version} for p in installed_plugins()}
        enabled = {
            learner.name: {name: plugins.get(name, {}) for name in learner.config.plugins} for learner in self.learners
        }
        with open(self.out_dir / "plugins.json", "w") as f:
            json.dump({"enabled": enabled, "installed": plugins}, f, indent=2)
        # config.report_to's trackers (core/learn/trackers.py): tensorboard by default
        self.recorder.open(self.config.report_to, to_dict(self.config))
        self.dist.barrier()

    def write_population(self) -> None:
        """``population.json``: members, sampling weights and ratings now (the checkpoint has the full state)."""
        if not self.dist.is_main:
            return
        path = self.out_dir / "population.json"
        tmp = path.with_suffix(".json.tmp")
        summary = {"iteration": self.iteration, **self.population.summary(), "ratings": self.population.ratings_table()}
        tmp.write_text(json.dumps(summary, indent=2, default=str))
        os.replace(tmp, path)

    # -- checkpoints --------------------------------------------------------------------------------------

    def save(self) -> None:
        """Checkpoint (written by the main process; every process must call this: per-rank state is gathered).

        With several processes the plugin state of each learner and the RNG states are also kept per rank
        (``ranks``): plugins fed by a rank's own trials (SGE, EMPO², MENTOR, RAE) hold per-rank state.
        """
        per_rank = self.dist.gather(
            {
                "plugins": {learner.name: learner.plugin_state() for learner in self.learners},
                "rng": ck.rng_state(),
            }
        )
        if not self.dist.is_main:
            self.dist.barrier()
            return
        state = {
            "iteration": self.iteration,
            "learners": {
                learner.name: {"trainer": learner.trainer.state_dict(), "plugins": learner.plugin_state()}
                for learner in self.learners
            },
            "population": self.population.state_dict(),
            "rng": ck.rng_state(),
            "outcomes_seen": {name: sorted(map(list, seen)) for name, seen in self.outcomes_seen.items()},
        }
        if self.dist.world > 1:
            state["ranks"] = per_rank
        ck.save_checkpoint(
            self.out_dir,
            self.iteration,
            {learner.name: learner.model.state_dict() for learner in self.learners},
            rundir.portable(state, self.out_dir),  # snapshot paths relative to the run: a moved run resumes
            keep=self.config.checkpoint.keep,
            model_files={learner.name: learner.write_model_files for learner in self.learners},
        )
        self.dist.barrier()

    #: Top-level keys every checkpoint of a run has; one without them is damaged.
    STATE_KEYS = ("iteration", "learners", "population", "rng")

    def load(self, path: Path, contents: tuple[dict[str, Any], dict[str, Any]] | None = None) -> None:
        """Restore the run from checkpoint ``path`` (``contents``: what ``ck.load_checkpoint`` already read).

        Raises ``ck.DamagedCheckpoint`` when the checkpoint does not fit this run: no weights or state for a
        learner, weights or optimizer state of another shape (``resume`` then tries the next older one).
        """
        try:
            models, state = contents if contents is not None else ck.load_checkpoint(path, self.STATE_KEYS)
        except ck.CheckpointFormatError as exc:
            raise ArenaError(str(exc)) from None
        state = rundir.localize(state, self.out_dir)
        saved = state["learners"] if isinstance(state["learners"], dict) else {}
        for learner in self.learners:
            if learner.name not in models:
                raise ck.DamagedCheckpoint(path, f"no weights for learner {learner.name!r}")
            if not isinstance(saved.get(learner.name), dict) or "trainer" not in saved[learner.name]:
                raise ck.DamagedCheckpoint(path, f"state.json has no trainer state for learner {learner.name!r}")
        try:
            self._restore(models, state)
        except (KeyError, ValueError, TypeError, IndexError, RuntimeError) as exc:
            reason = " ".join(str(exc).split())[:200]
            raise ck.DamagedCheckpoint(path, f"does not restore ({type(exc).__name__}: {reason})") from None

    def _restore(self, models: Mapping[str, Any], state: dict[str, Any]) -> None:
        ranks = state.get("ranks") or []
        mine = ranks[self.dist.rank] if len(ranks) == self.dist.world else None
        if ranks and mine is None:
            log.warning("checkpoint of a run with another process count: every process resumes rank 0's "
                        "plugin and RNG state", saved=len(ranks), now=self.dist.world)  # fmt: skip
        for learner in self.learners:
            learner.model.load_state_dict(models[learner.name], strict=False)
            saved = state["learners"][learner.name]
            learner.trainer.load_state_dict(saved["trainer"])
            plugins = mine["plugins"].get(learner.name, {}) if mine is not None else saved.get("plugins", {})
            learner.load_plugin_state(plugins)
        for learner in self.learners:
            if learner.needs_sync:
                learner.backend.sync_weights(learner.model.state_dict())
        self.population.load_state_dict(state["population"])
        for name, pairs in state.get("outcomes_seen", {}).items():
            self.outcomes_seen[name] = {(str(a), str(b)) for a, b in pairs}
        ck.set_rng_state(mine["rng"] if mine is not None else state["rng"])
        self.iteration = int(state["iteration"])
        if self.dist.is_main:  # lines written after the checkpoint are replayed by the resumed run
            rundir.cut_metrics(self.out_dir / "metrics.jsonl", self.iteration)

    def resume(self) -> Path | None:
        """Continue from the newest intact checkpoint; returns it (None: no checkpoint yet, start over).

        Damaged newer checkpoints are skipped, said in one log line (which, why, and which one is used), and set
        aside as ``step-N.damaged`` (kept, never deleted). With checkpoints but none intact: one ``ArenaError``,
        and nothing is moved.
        ``metrics.jsonl`` is cut back to the resumed iteration in every case.
        """
        damaged: list[ck.DamagedCheckpoint] = []
        moved: list[str] = []
        used = None
        for candidate in reversed(ck.checkpoint_dirs(self.out_dir)):
            try:
                contents = ck.load_checkpoint(candidate, self.STATE_KEYS)
                self.load(candidate, contents)
            except ck.DamagedCheckpoint as exc:
                damaged.append(exc)
                continue
            used = candidate
            break
        if damaged and used is None:  # nothing to resume from: stop, and leave every file as it is
            raise ArenaError(
                f"no intact checkpoint in {self.out_dir / ck.CHECKPOINTS}: {ck.describe_damage(damaged)}; "
                "nothing was changed (start over with --overwrite, or repair one of them)"
            )
        if self.dist.is_main:
            # The resumed run re-reaches the damaged steps and would replace them: set them aside first.
            moved = [ck.set_aside(d.path).name for d in damaged]
            if used is None:
                rundir.cut_metrics(self.out_dir / "metrics.jsonl", 0)
        if damaged:
            log.warning(
                f"checkpoint: {ck.describe_damage(damaged)}; resuming from {used.name if used else None}",
                damaged=[d.path.name for d in damaged],
                kept_as=moved or None,
                using=used.name if used else None,
            )
        elif used is not None and ck.is_legacy(used):
            log.info(f"checkpoint: {used.name} has no manifest (older arena): checked without checksums")
        return used

    def snapshot(self, learner_name: str) -> str:
        """Freeze ``learner_name``'s current weights into ``snapshots/`` and return the seat spec that plays them."""
        learner = next(x for x in self.learners if x.name == learner_name)
        folder = self.out_dir / "snapshots" / f"{learner_name}-it{self.iteration:05d}"
        if self.dist.is_main and not (folder / "config.json").is_file():  # a resumed run re-reaches it
            tmp = folder.with_name(folder.name + ".tmp")
            if tmp.exists():
                shutil.rmtree(tmp)
            try:
                learner.save_model(tmp)
                os.replace(tmp, folder)
            except BaseException:  # a full disk or a kill: no half-written snapshot left behind
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        self.dist.barrier()  # the other processes load the snapshot as an opponent
        backend = parse_seat(learner.seat_spec).backend
        return f"model:{folder.resolve()}" + (f"@{backend}" if backend else "")

    # -- one iteration ------------------------------------------------------------------------------------

    def experience(self, learner: Learner, trials: Sequence[TrialRecord]) -> list[Sample]:
        samples: list[Sample] = []
        for trial in trials:
            samples.extend(
                trial_samples(
                    trial, learner.name, [learner.seat_spec], learner.config.invalid_penalty, learner.config.gamma
                )
            )
        opponents = {t.spec.trial_id: t.spec.meta.get("opponent") for t in trials}
        # Samples name the opponent by its pool member name (a snapshot's name, not its directory).
        return [attrs.evolve(s, opponent=opponents.get(s.trial_id) or s.opponent) for s in samples]

    def rewarded(self, learner: Learner, trials: Sequence[TrialRecord], samples: list[Sample]) -> list[Sample]:
        """``samples`` with the reward terms of the ``compute_rewards`` plugins added, trial by trial."""
        samples = list(samples)
        plugins = learner.plugins
        by_trial: dict[str, list[int]] = {}
        for i, s in enumerate(samples):
            by_trial.setdefault(s.trial_id, []).append(i)
        for trial in trials:
            indices = by_trial.get(trial.spec.trial_id, [])
            if not indices:
                continue
            local = [samples[i] for i in indices]
            for extra in plugins.call("compute_rewards", trial=trial, samples=local):
                for j, terms in extra.items():
                    current = dict(samples[indices[j]].reward_terms)
                    clash = set(current) & set(terms)
                    if clash:
                        owners = ", ".join(plugins.implements("compute_rewards"))
                        raise ArenaError(
                            f"reward term(s) {sorted(clash)} set twice (by the core or one of the plugins "
                            f"implementing compute_rewards: {owners})"
                        )
                    current.update(terms)
                    samples[indices[j]] = attrs.evolve(samples[indices[j]], reward_terms=current)
        return samples

    def resample(
        self,
        learner: Learner,
        trials: Sequence[TrialRecord],
        everything: Sequence[TrialRecord],
        samples: Sequence[Sample],
    ) -> tuple[list[TrialRecord], list[TrialRecord], list[Sample], dict[str, float]]:
        """DAPO's dynamic sampling (``dynamic_sampling``; ``arena.core.learn.dynamic_sampling``) for one learner.

        While fewer than ``groups`` of the played groups are informative and rounds remain, play that many fresh
        matchups (seeded by run seed, iteration and round). ``trials`` and ``samples`` are this process's,
        ``everything`` every process's trials; with several processes the informative groups of all processes
        decide, so every process plays the same rounds and keeps the same groups. Returns every trial played (all
        processes: ratings, rollout metrics), this process's trials and rewarded samples of the kept groups, and
        this process's cost of the extra rounds plus the ``dynamic/...`` metrics.
        """
        cfg = self.config.dynamic_sampling
        trials, everything, samples = list(trials), list(everything), list(samples)
        extra: dict[str, float] = {"rollout_seconds": 0.0, "requests": 0.0, "generated": 0.0}
        rounds = 0
        while True:
            informative = ds.informative_groups(ds.group_rewards(samples, cfg.reward_terms), cfg.min_std)
            if self.dist.world > 1:
                informative = [g for part in self.dist.gather(informative) for g in part]
            missing = self.config.groups - len(informative)
            if missing <= 0 or rounds >= cfg.max_rounds:
                break
            rounds += 1
            matchups = ds.extra_matchups(
                self.population, learner.name, self.iteration, rounds, missing, self.config.learner_seat
            )
            more, more_everywhere, played = self.play(learner, matchups)
            new = self.experience(learner, more)
            extra["rollout_seconds"] += played["rollout_seconds"]
            extra["requests"] += played["requests"]
            extra["generated"] += sum(len(s.completion_ids) for s in new)
            trials.extend(more)
            everything.extend(more_everywhere)
            samples.extend(self.rewarded(learner, more, new))
        groups = list(dict.fromkeys(t.spec.group_id or t.spec.trial_id for t in everything))
        kept = set(ds.keep_groups(groups, informative, self.config.groups))
        summary = ds.RoundsSummary(rounds, len(groups), len(informative), len(kept))
        kept_trials = [t for t in trials if (t.spec.group_id or t.spec.trial_id) in kept]
        return everything, kept_trials, [s for s in samples if s.group_id in kept], {**extra, **summary.metrics()}

    def credit(self, learner: Learner, trials: Sequence[TrialRecord], samples: list[Sample]) -> list[Sample]:
        """Returns, advantages, normalisation, training view of rewarded (and augmented) samples."""
        plugins = learner.plugins
        options = learner.config.options
        returns = plugins.first("compute_returns", samples=samples, options=options)
        if returns is None:
            returns = [s.reward for s in samples]
        elif len(returns) != len(samples):
            raise ArenaError(f"compute_returns gave {len(returns)} returns for {len(samples)} samples")
        samples = [attrs.evolve(s, ret=float(r)) for s, r in zip(samples, returns, strict=True)]
        advantages = plugins.first("compute_advantages", samples=samples, options=options)
        normalized = plugins.first("normalize_advantages", samples=samples, advantages=advantages, options=options)
        if normalized is not None:
            advantages = normalized
        out = []
        for sample, advantage in zip(samples, advantages, strict=True):
            value = advantage if isinstance(advantage, int | float) else list(advantage)
            sample = attrs.evolve(sample, advantage=value)
            view = plugins.first("training_view", sample=sample, encode=learner.encode)
            out.append(view if view is not None else sample)
        return out

    def augment(
        self, learner: Learner, trials: Sequence[TrialRecord], samples: list[Sample]
    ) -> tuple[list[Sample], dict[str, float]]:
        """``augment_group`` for every single-answer group: plan, generate all requests in one batch, score, finish.

        Returns the samples (the groups' slots replaced, the extra samples appended) and the ``augment/...``
        metrics with their ``time/augment...`` timings.
        """
        t0 = time.perf_counter()
        specs = {t.spec.trial_id: t.spec for t in trials}
        groups, multi_turn = augmentable_groups(samples)
        plans: list[tuple[tuple[str, int], str, Augmentation, GroupTask]] = []
        for key, indices in groups.items():
            spec = specs[samples[indices[0]].trial_id]
            task = GroupTask(
                arena_id=spec.arena_id,
                arena_kwargs=dict(spec.arena_kwargs),
                seed=spec.seed,
                group_id=key[0],
                episode=key[1],
                iteration=self.iteration,
                max_new_tokens=self.config.trial.prompt.max_new_tokens,
            )
            group = tuple(samples[i] for i in indices)
            for plan in learner.plugins.call("augment_group", group=group, task=task, options=learner.config.options):
                plans.append((key, plan.source or "augment", plan, task))
        requests: list[GenerationRequest] = []
        for key, name, plan, _ in plans:
            for i, request in enumerate(plan.requests):
                if request.seed is None:  # repeatable whatever else is in the batch
                    request = attrs.evolve(
                        request, seed=derive_seed(self.config.seed, self.iteration, key, name, i) % (2**31)
                    )
                requests.append(request)
        t1 = time.perf_counter()
        completions = learner.backend.generate(requests) if requests else []
        t2 = time.perf_counter()
        jobs = []
        position = 0
        for _, _, plan, task in plans:
            for request in plan.requests:
                for completion in completions[position]:
                    jobs.append((task, request, completion))
                position += 1
        with ThreadPoolExecutor(max_workers=2) as pool:  # the coding sandbox waits on subprocesses
            scored = list(pool.map(lambda job: _score(*job), jobs))
        t3 = time.perf_counter()
        metrics: dict[str, float] = {"augment/multi_turn_groups_skipped": float(multi_turn)}
        current = {key: tuple(samples[i] for i in indices) for key, indices in groups.items()}
        extra: list[Sample] = []
        cursor = 0
        for key, name, plan, _ in plans:
            answers = []
            for request in plan.requests:
                answers.append(tuple(scored[cursor : cursor + request.n]))
                cursor += request.n
            result = plan.finish(current[key], tuple(answers))
            current[key] = tuple(result.group)
            extra.extend(result.extra)
            for stat, value in result.stats.items():
                metrics[f"augment/{name}/{stat}"] = metrics.get(f"augment/{name}/{stat}", 0.0) + float(value)
            if result.warnings:
                metrics[f"augment/{name}/warnings"] = metrics.get(f"augment/{name}/warnings", 0.0) + len(
                    result.warnings
                )
                log.warning("augment_group", plugin=name, group=key[0], warnings=list(result.warnings))
        out = list(samples)
        for key, indices in groups.items():
            group = current[key]
            if len(group) != len(indices):
                raise ArenaError(
                    f"augment_group must keep the group's {len(indices)} slots (group {key[0]!r} came back with "
                    f"{len(group)}); put new samples in AugmentResult.extra"
                )
            for i, sample in zip(indices, group, strict=True):
                out[i] = sample
        out.extend(extra)
        metrics.update(
            {
                "augment/groups": float(len({p[0] for p in plans})),
                "augment/generations": float(len(jobs)),
                "augment/extra_samples": float(len(extra)),
                "time/augment_generate": t2 - t1,
                "time/augment_score": t3 - t2,
                "time/augment": time.perf_counter() - t0,
            }
        )
        return out, metrics

    def count_outcomes(self, learner: Learner, trials: Sequence[TrialRecord]) -> dict[str, float]:
        """Distinct (task, outcome) pairs reached, this iteration and so far (arenas with ``episode_details``)."""
        now: set[tuple[str, str]] = set()
        for trial in trials:
            for episode in trial.episodes:
                for details in episode.details.values():
                    if "outcome_key" in details:
                        now.add((str(details.get("task_id", trial.spec.seed)), str(details["outcome_key"])))
        if not now:
            return {}
        seen = self.outcomes_seen[learner.name]
        seen |= now
        key = functools.partial(self._key, learner)
        return {key("rollout/distinct_outcomes"): float(len(now)), key("explore/distinct_outcomes"): float(len(seen))}

    def evaluate(self, label: str) -> dict[str, float]:
        """Outcome metrics on the fixed evaluation seeds (split across processes like the training groups)."""
        cfg = self.config.eval
        opponents: list[str | None] = list(cfg.opponents or [o.spec for o in self.config.opponents])
        if not opponents:
            opponents = [None]  # a single-agent arena: the learner alone on held-out seeds
        arena_kwargs = {**self.config.arena_kwargs, **cfg.arena_kwargs}
        metrics: dict[str, float] = {}
        for learner in self.learners:
            specs = []
            for opponent in opponents:
                for k in range(cfg.games):
                    if opponent is None:
                        seats: tuple[str, ...] = (learner.seat_spec,)
                    else:  # the learner's seat rotates; the opponent holds every other seat
                        seats = seated(learner.seat_spec, [opponent] * (self.players - 1), k % self.players)
                    specs.append(
                        TrialSpec(
                            trial_id=f"eval-{label}-{learner.name}-{opponent or 'solo'}-{k}",
                            arena_id=self.config.arena,
                            seats=seats,
                            seed=cfg.seed + k,
                            episodes=self.config.trial.episodes,
                            arena_kwargs=dict(arena_kwargs),
                            training=False,
                            meta={"opponent": opponent},
                            options=dict(learner.config.options),
                        )
                    )
            trials = learner.engine.run(self.dist.shard(specs))
            if self.dist.world > 1:  # each process plays its share; the metrics are of all of them, in order
                trials = in_order(self.dist.gather(trials), lambda t: t.spec.trial_id, [s.trial_id for s in specs])
            prefix = self._key(learner, "eval")
            metrics.update(outcome_metrics(trials, learner.seat_spec, prefix))
        return metrics

    def play(
        self, learner: Learner, matchups: Sequence[Matchup]
    ) -> tuple[list[TrialRecord], list[TrialRecord], dict[str, float]]:
        """Play ``matchups``: this process's share of the groups (all of them with one process).

        Returns this process's trials (its samples are trained here), every trial of every process in matchup
        order (the population records them, ``match_end`` sees them, outcome metrics count them: the same on
        every rank), and this process's rollout seconds and LLM requests.
        """
        t0 = time.perf_counter()
        requests_before = learner.engine.stats.requests
        mine = self.dist.shard(matchups)  # whole groups: group-relative advantages stay local and exact
        live = [other.seat_spec for other in self.learners]
        trials = learner.engine.run(trial_specs_for(self.config, learner, mine, self.iteration, live))
        seconds = time.perf_counter() - t0
        everything = trials
        if self.dist.world > 1:
            order = [s.trial_id for s in trial_specs_for(self.config, learner, matchups, self.iteration, live)]
            everything = in_order(self.dist.gather(trials), lambda t: t.spec.trial_id, order)
        for trial in everything:
            self.population.record(trial)
            learner.plugins.call("match_end", trial=trial)
        requests = learner.engine.stats.requests - requests_before
        return trials, everything, {"rollout_seconds": seconds, "requests": requests}

    # The phases of ``step``, in its order. Each takes the learner's batch and moves it on; what a phase costs
    # and produces goes to the batch's tally, and only ``IterationLine`` makes metrics out of it.

    def matchups_by_learner(self) -> list[tuple[Learner, list[Matchup]]]:
        """The iteration's matchups (the first learner whose plugins answer ``select_matchups``, else the
        population's matchmaking), split by learner; a learner without a matchup sits the iteration out."""
        chosen = None
        for learner in self.learners:
            chosen = learner.plugins.first("select_matchups", population=self.population, iteration=self.iteration)
            if chosen is not None:
                break
        if chosen is None:
            chosen = self.population.matchups(self.iteration, self.config.groups, self.config.learner_seat)
        by_learner = [(learner, [m for m in chosen if m.learner == learner.name]) for learner in self.learners]
        return [(learner, mine) for learner, mine in by_learner if mine]

    def play_matchups(self, learner: Learner, matchups: Sequence[Matchup]) -> LearnerBatch:
        """Play: this process's share of the groups (``play``); the batch starts from its trials."""
        trials, everything, played = self.play(learner, matchups)
        batch = LearnerBatch(learner, trials, everything)
        batch.tally.played(played)
        return batch

    def collect_experience(self, batch: LearnerBatch) -> None:
        """Experience: the learner's turns of this process's trials as samples."""
        batch.samples = self.experience(batch.learner, batch.trials)
        batch.tally.generated += generated_tokens(batch.samples)

    def add_rewards(self, batch: LearnerBatch) -> None:
        """Rewards: the ``compute_rewards`` terms; with ``dynamic_sampling`` (DAPO) fresh groups are then played
        until ``groups`` of them have a reward spread, and only those are kept (``resample``)."""
        with batch.tally.timing("credit"):
            batch.samples = self.rewarded(batch.learner, batch.trials, batch.samples)
        if self.config.dynamic_sampling.enabled:
            batch.everything, batch.trials, batch.samples, extra = self.resample(
                batch.learner, batch.trials, batch.everything, batch.samples
            )
            batch.tally.resampled(extra)

    def augment_groups(self, batch: LearnerBatch) -> None:
        """Augment: ``augment_group`` plugins (HeRL, GOLF) revise groups and add samples (``augment``)."""
        if not batch.has_work(self.dist) or not batch.learner.plugins.implements("augment_group"):
            return
        with batch.tally.timing("credit"):  # the credit phase's time has always included augmenting
            batch.samples, batch.tally.augment = self.augment(batch.learner, batch.trials, batch.samples)

    def assign_credit(self, batch: LearnerBatch) -> None:
        """Credit: returns, advantages, their normalisation and the training view (``credit``)."""
        with batch.tally.timing("credit"):  # timed even when skipped: every process has the entry
            if batch.has_work(self.dist):
                batch.samples = self.credit(batch.learner, batch.trials, batch.samples)

    def update_policy(self, batch: LearnerBatch) -> dict[str, float]:
        """Update: ``Trainer.update`` on the batch's samples (every process calls it, with or without samples),
        then the new weights to a generation backend that keeps its own copy. Returns the trainer's metrics."""
        learner = batch.learner
        with batch.tally.timing("update"):
            train = learner.trainer.update(batch.samples)
        if learner.needs_sync:
            with batch.tally.timing("weight_sync"):
                learner.backend.sync_weights(learner.model.state_dict())
        return train

    def rollout_metrics(self, batch: LearnerBatch) -> dict[str, float]:
        """Outcome metrics of every process's trials of the batch, and the distinct outcomes reached."""
        key = functools.partial(self._key, batch.learner)
        outcomes = outcome_metrics(batch.everything, batch.learner.seat_spec, key("rollout"))
        return {**outcomes, **self.count_outcomes(batch.learner, batch.everything)}

    def rollout_rows(self, batch: LearnerBatch) -> list[dict[str, Any]]:
        """The batch's samples of every process as rows of the rollout dump (none unless ``dump_rollouts``)."""
        if not self.dump_rollouts:
            return []
        rows = [{**sample_to_json(sample), "rank": self.dist.rank} for sample in batch.samples]
        return [row for part in self.dist.gather(rows) for row in part]

    def evolve(self) -> dict[str, Any]:
        """Evolve: snapshots join the pool (``Population.evolve``), then the plugins' ``evolve_population``.
        Returns the ratings and the pool's size for the metrics line."""
        added = self.population.evolve(self.iteration, self.snapshot)
        for learner in self.learners:
            learner.plugins.call("evolve_population", population=self.population, iteration=self.iteration)
        if added:
            log.info("population: snapshots joined the pool", members=[m.name for m in added])
        metrics: dict[str, Any] = {}
        for row in self.population.ratings_table():
            metrics[f"rating/{row['name']}/elo"] = row["elo"]
            metrics[f"rating/{row['name']}/openskill"] = row["conservative"]
        metrics["population/members"] = len(self.population.pool.members)
        return metrics

    def evaluate_when_due(self, line: IterationLine) -> None:
        """Evaluate on the fixed seeds every ``eval.every`` iterations and after the last one."""
        every = self.config.eval.every
        if (every and self.iteration % every == 0) or self.iteration == self.config.iterations:
            with line.timing("time/eval"):
                line.evaluation = self.evaluate(f"it{self.iteration}")

    def step(self) -> dict[str, Any]:
        """One iteration; returns its metrics line (``_run`` writes it).

        Each learner in turn plays, and trains on what it played; then the rollout dump is written, the
        population evolves and the evaluation runs when due. The phases run in this order whatever the plugins
        do, so random numbers are drawn in one order and a run repeats bit for bit. With several processes every
        process runs every phase (they gather inside), on its own share of the groups.
        """
        line = IterationLine(self.iteration, self.dist)
        rollouts: list[dict[str, Any]] = []
        for learner, matchups in self.matchups_by_learner():
            batch = self.play_matchups(learner, matchups)
            self.collect_experience(batch)
            self.add_rewards(batch)
            self.augment_groups(batch)
            self.assign_credit(batch)
            train = self.update_policy(batch)
            key = functools.partial(self._key, learner)
            line.add_learner(key, batch.tally, batch.samples, self.rollout_metrics(batch), train)
            rollouts.extend(self.rollout_rows(batch))
        if self.dump_rollouts:  # before the population changes, as the iteration's record of what it played
            self.recorder.rollouts(self.iteration, rollouts)
        self.iteration += 1  # snapshots and evaluation are named after the iterations done
        line.population = self.evolve()
        self.evaluate_when_due(line)
        return line.finish()

    def check_processes(self) -> None:
        """Several processes: every rank must hold the same weights; ``processes.json`` records their digests.

        The ranks start from rank 0's weights and make the same steps with the same summed gradients, so any
        difference is a bug (raised as an error rather than written as a silently divergent checkpoint).
        """
        digests = {learner.name: self.dist.gather(learner.trainer.parameter_digest()) for learner in self.learners}
        if self.dist.is_main:
            summary = {
                "world": self.dist.world,
                "iteration": self.iteration,
                "weight_digests": digests[self.learner.name],
                "learners": digests,
            }
            (self.out_dir / "processes.json").write_text(json.dumps(summary, indent=2))
        diverged = sorted(name for name, values in digests.items() if len(set(values)) != 1)
        if diverged:
            raise ArenaError(f"the processes' weights of learner(s) {diverged} differ; see processes.json")

    def run(self, resume: bool = False, overwrite: bool = False) -> Path:
        """Train to ``config.iterations``; ``resume`` continues the run in ``out_dir``, ``overwrite`` starts it over.

        The main process holds the run directory's lock throughout (``rundir.RunLock``: a second writer is
        refused). A fresh run into a directory that holds a run is refused unless ``overwrite``. A failed write
        (full disk, permissions) ends the run with one ``ArenaError`` naming the path and the cause.
        """
        lock = None

        def refuse_reuse() -> list[str]:
            existing = rundir.holds_run(self.out_dir)
            if existing and not resume and not overwrite:
                raise ArenaError(
                    f"{self.out_dir} already holds a run ({', '.join(existing)}); continue it with --resume "
                    f"{self.out_dir}, or start over with --overwrite"
                )
            return existing

        rundir.check_out_dir(self.out_dir)
        refuse_reuse()  # every process, before the main one takes the lock
        # ... and before any process writes: without this barrier the main process could write config.yaml
        # before a slower one checked, and that one would refuse the run it belongs to.
        self.dist.barrier()
        if self.dist.is_main:
            lock = rundir.RunLock(self.out_dir)
        try:
            existing = refuse_reuse() if self.dist.is_main else []  # again: a writer may have finished meanwhile
            if existing and overwrite and not resume:
                rundir.clear_run(self.out_dir)
                log.info("run: --overwrite: the old run's files were removed", out=str(self.out_dir))
            with torch_threads(self.config.torch_threads):  # the run's setting, restored when it ends
                return self._run(resume)
        except OSError as exc:
            where = exc.filename or self.out_dir
            raise ArenaError(f"cannot write {where}: {ck.io_cause(exc)}; the run stopped") from None
        finally:
            if lock is not None:
                lock.release()

    def _run(self, resume: bool) -> Path:
        self.prepare_dir()
        if resume:
            self.resume()
        if self.iteration == 0:
            start = self.evaluate("it0")
            self.recorder.metrics({"iteration": -1, **start})
        bar = tqdm(
            total=self.config.iterations,
            initial=self.iteration,
            desc="train",
            unit="it",
            disable=(None if self.progress is None else not self.progress) if self.dist.is_main else True,
        )
        try:
            while self.iteration < self.config.iterations:
                metrics = self.step()
                self.recorder.metrics(metrics)
                self.write_population()
                if self.iteration % self.config.checkpoint.every == 0 or self.iteration == self.config.iterations:
                    t = time.perf_counter()
                    self.save()
                    log.debug("checkpoint", iteration=self.iteration, seconds=round(time.perf_counter() - t, 3))
                for learner in self.learners if self.dist.is_main else ():
                    key = functools.partial(self._key, learner)
                    log.info(
                        "iteration",
                        iteration=metrics["iteration"],
                        learner=learner.name,
                        mean_return=round(metrics.get(key("rollout/mean_return"), 0.0), 4),
                        win_rate=round(metrics.get(key("rollout/win_rate"), 0.0), 4),
                        loss=round(metrics.get(key("train/loss"), 0.0), 5),
                        seconds=round(
                            sum(v for k, v in metrics.items() if "time/" in k and "per_s" not in k and key("") in k), 2
                        ),
                    )
                bar.update(1)
            if self.dist.world > 1:
                self.check_processes()
        finally:
            bar.close()
            self.recorder.close()
        return self.out_dir


def default_out_dir(config_name: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{Path(config_name).stem}-{stamp}-{os.getpid()}"
