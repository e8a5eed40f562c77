"""Proof of learning on `tiny` against MAGE's Kuhn pool, on fixed evaluation seeds.

GRPO raises the mean return. The test runs a shorter version of `configs/kuhn_grpo.yaml` (same pool, model,
estimator and learning rate). The evaluations before and after training play the same deals against the same
opponents, so the difference is the policy's. Measured on 2 CPU cores (docs/training.md): -0.31 before, -0.16
after 20 iterations; the untrained model plays each legal move about half the time, and training moves it
towards the pool's best card-independent reply (bet and call, -0.12 without invalid answers).

MAGE, in a short run, wins more first episodes and plays episode 3 no worse than episode 1
(``test_mage_on_tiny_does_not_lose_ground_within_a_trial``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import attrs
import pytest

from arena.core.api.records import TrialRecord
from arena.core.config.loader import load_config
from arena.core.eval.evaluation import kuhn_winnable, open_run, play
from arena.core.eval.stats import learner_agent
from arena.core.learn.run import Run
from arena.core.learn.run_config import TrainConfig
from arena.core.rollout.seats import BackendPool

# 30, not 20: on tiny v6 (the memory circuit) 20 iterations gained +0.099 (2026-12-03), a hair under the bar below;
# 30 gained +0.133 in 85 s here.
ITERATIONS = 30


@pytest.mark.slow
def test_grpo_on_tiny_beats_its_starting_point(tmp_path: Path, model_cache: None) -> None:
    config = load_config(TrainConfig, "kuhn_grpo", overrides=[f"iterations={ITERATIONS}", "eval.every=0"])
    run_dir = Run(config, tmp_path / "run", progress=False).run()
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    before, after = metrics[0], metrics[-1]
    assert before["iteration"] == -1 and after["iteration"] == ITERATIONS - 1
    assert config.eval.games * len(config.eval.opponents) == 900
    gain = after["eval/mean_return"] - before["eval/mean_return"]
    print(f"eval mean return {before['eval/mean_return']:+.3f} -> {after['eval/mean_return']:+.3f}")
    # 900 paired games (same deals before and after) with returns in [-2, 2]: a gain of 0.1 is well beyond noise.
    assert gain > 0.1, (before, after)


MAGE_OVERRIDES = [
    "iterations=7",
    "eval.every=0",
    "trial.early_stop_on_win=false",  # every episode is trained, after wins too (docs/results.md)
    "learners.0.options.mage.memory=history_only",
    "learners.0.optim.minibatches=8",
    "learners.0.optim.epochs=2",
]
MAGE_GAMES = 100  # trials per training opponent, on the run's evaluation deals


def episode_wins(trials: dict[str, list[TrialRecord]], seat_spec: str, episode: int) -> list[bool]:
    """Whether the learner won ``episode`` of each trial, opponent by opponent in trial order."""
    return [
        trial.episodes[episode].outcomes[learner_agent(trial, seat_spec)] == "win"
        for opponent_trials in trials.values()
        for trial in opponent_trials
    ]


@attrs.frozen
class EpisodeCounts:
    """First- and third-episode wins of a trained run on its evaluation deals, beside the untrained model's."""

    first: list[bool]
    third: list[bool]
    untrained_first: list[bool]
    winnable: int
    untrained_third: list[bool] = attrs.field(factory=list)

    @property
    def discordant(self) -> int:
        """Trials won in exactly one of episodes 1 and 3."""
        return sum(a != b for a, b in zip(self.first, self.third, strict=True))

    @property
    def discordant_first(self) -> int:
        """Deals won in episode 1 by exactly one of the trained and the untrained model."""
        return sum(a != b for a, b in zip(self.first, self.untrained_first, strict=True))

    @property
    def discordant_third(self) -> int:
        """Deals won in episode 3 by exactly one of the trained and the untrained model."""
        return sum(a != b for a, b in zip(self.third, self.untrained_third, strict=True))


def episode_counts(config: TrainConfig, run_dir: Path, games: int) -> EpisodeCounts:
    """Play ``games`` trials per training opponent on the run's evaluation deals, trained and untrained."""
    trained = open_run(run_dir)
    untrained = attrs.evolve(trained, seat_spec="model:tiny@hf", state={})
    opponents = [entry.spec for entry in config.opponents]
    after = play(trained, opponents, games, config.eval.seed, BackendPool(), progress=False)
    before = play(untrained, opponents, games, config.eval.seed, BackendPool(), progress=False)
    ceilings = [kuhn_winnable(after[o], trained.seat_spec, o) for o in opponents]
    return EpisodeCounts(
        first=episode_wins(after, trained.seat_spec, 0),
        third=episode_wins(after, trained.seat_spec, 2),
        untrained_first=episode_wins(before, untrained.seat_spec, 0),
        winnable=sum(c["k"] for c in ceilings if c),
        untrained_third=episode_wins(before, untrained.seat_spec, 2),
    )


@pytest.mark.slow
# 267 s alone on 2 cores here at 7 iterations (351-649 s at 10); a CI machine took more than 1200 s at 10 (2026-12-02),
# so the limit is wide.
@pytest.mark.timeout(2700)
def test_mage_on_tiny_does_not_lose_ground_within_a_trial(tmp_path: Path, model_cache: None) -> None:
    """Seven MAGE iterations on the Kuhn pool (about 3 minutes on 2 cores), then 100 trials of 3 episodes per training
    opponent on the run's evaluation deals, beside the untrained model on the same deals.

    Against these deterministic styles a fixed policy can win every winnable deal (docs/evaluation.md), so a
    policy that has learned the pool wins its winnable deals in episode 1 already and episode 3 cannot do better;
    what it must not do is play later episodes worse, which MAGE with early stopping does (docs/results.md).
    Measured with seeds 0 and 1 on the first v4 build: episode-1 wins 163 and 169 of 300 (winnable 178, untrained
    132); episode 3 won one and four fewer, inside the noise bound below. On a v5 build (2026-12-03): 128 -> 157,
    episode 3 161, 24 discordant pairs, 351 s. On a build whose demonstrations had drifted with the opponent
    catalogue (docs/models.md, v5) it failed: 128 -> 109. On v6 (the memory circuit, 2026-12-03): 145 -> 172,
    episode 3 171, 13 discordant pairs. On v7 with its memory readout trained like every weight it failed on CI
    (2026-12-04): 132 -> 120; with the readout held, as the config now says (``readout_lr_scale: 0``), 132 -> 156,
    episode 3 159, 25 discordant pairs, 408 s here.

    On v8 (2026-12-05, the opponent's moves marked in both seats) the premise above stopped holding: the run wins
    more later episodes instead of more first ones. Wins by episode 1 / 3, untrained -> trained, on the same deals:
    146 / 154 -> 149 / 168 (winnable 178); episode 1 changed on 3 deals, episode 3 on 14, all 14 for the trained
    model; 386 s here. The test used to ask for 15 more first-episode wins; it now asks what training should give
    whichever episode the gain lands in: more wins in the trial's last episode than the untrained model, beyond
    paired noise and near the ceiling, with episode 1 no worse than before training and episode 3 no worse than
    episode 1 (docs/results.md, "MAGE on Kuhn poker on tiny v8").

    Cut from 10 iterations to 7 (2026-12-05) to keep `make test` inside its 30 minutes on CI: 146 / 154 -> 154 / 169,
    8 discordant first-episode pairs, 267 s here (341 s at 10).
    """
    config = load_config(TrainConfig, "kuhn_mage", overrides=MAGE_OVERRIDES)
    run_dir = Run(config, tmp_path / "run", progress=False).run()
    counts = episode_counts(config, run_dir, MAGE_GAMES)
    first, third, untrained_first = sum(counts.first), sum(counts.third), sum(counts.untrained_first)
    untrained_third = sum(counts.untrained_third)
    print(f"wins by episode 1 / 3: untrained {untrained_first} / {untrained_third} -> trained {first} / {third}; "
          f"winnable {counts.winnable}; discordant pairs {counts.discordant} (episodes 1, 3), "
          f"{counts.discordant_first} (episode 1, untrained and trained)")  # fmt: skip
    # Training wins more of the trial's last episodes on the same deals, beyond paired noise (about sqrt(discordant)
    # when nothing changed), and comes close to the ceiling there.
    gain = third - untrained_third
    assert gain > 2 * math.sqrt(counts.discordant_third) and third >= 0.85 * counts.winnable, (untrained_third, third)
    # Episode 1 is no worse than the untrained model's beyond sampling noise (paired, as below).
    assert first >= untrained_first - 2 * math.sqrt(counts.discordant_first), (untrained_first, first)
    # Episode 3 is no worse than episode 1 beyond sampling noise: on paired outcomes the difference of the two
    # counts has a standard deviation of about sqrt(discordant pairs) when both episodes are played equally well.
    assert third >= first - 2 * math.sqrt(counts.discordant), (first, third, counts.discordant)
