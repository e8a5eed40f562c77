"""The sge plugin: the strategy prompt and its two sampling segments, the reflection draws and their frequencies,
the per-task FIFO buffers (feedback, visibility by iteration, state round trip), whole trials through the engine
with the scripted backend, and exact behaviour log-probs at SGE's per-token temperatures with the hf backend."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np
import pytest
import torch

from arena.core.api.arena import Move
from arena.core.api.backend import Completion, GenerationRequest, Segment
from arena.core.api.errors import ConfigError
from arena.core.api.records import EpisodeRecord, Step, TrialRecord, TrialSpec, Turn
from arena.core.backends.scripted import legal_moves_in_prompt
from arena.core.host.plugins import PluginSet
from arena.core.learn.experience import trial_samples
from arena.core.learn.logprobs import policy_logprobs
from arena.plugins import sge

from ..core.helpers import play, specs

T_S, T_A = 1.2, 0.7
MOVES = (Move(0, "Check"), Move(1, "Bet"))
NEG_ONLY = {"p_negative": 1.0, "p_positive": 0.0}
PLAIN = "First write a short strategy inside <strategy>...</strategy>, then your move."


def spec(
    trial_id: str = "t0",
    seed: int = 5,
    training: bool = True,
    options: dict[str, Any] | None = None,
    seats: tuple[str, ...] = ("model:scripted", "random"),
    **meta: Any,
) -> TrialSpec:
    return TrialSpec(
        trial_id=trial_id,
        arena_id="kuhn_poker",
        seats=seats,
        seed=seed,
        training=training,
        meta=dict(meta),
        options={"sge": options} if options is not None else {},
    )


def turn(trial: TrialSpec, step: int = 0, seat: int = 0, legal: Sequence[Move] = MOVES) -> Turn:
    return Turn(
        trial=trial,
        episode=0,
        step=step,
        agent=f"player_{seat}",
        seat=seat,
        rules="rules",
        observation="obs",
        legal_moves=tuple(legal),
        history=(),
        earlier_episodes=(),
        reflections=(),
    )


def llm_step(answer: str, index: int = 0, seat: int = 0) -> Step:
    completion = Completion(text=answer, token_ids=(1,), logprobs=(0.0,), temperatures=(T_A,))
    return Step(
        episode=0,
        index=index,
        agent=f"player_{seat}",
        seat=seat,
        action=0,
        move="Check",
        answer=answer,
        completion=completion,
    )


def record(
    trial: TrialSpec, strategies: Sequence[str], outcome: str = "loss", feedback: str = "", seat: int = 0
) -> TrialRecord:
    """A one-episode trial in which the seat wrote ``strategies`` (one turn each) against a programmatic seat."""
    agent, other = f"player_{seat}", f"player_{1 - seat}"
    steps: list[Step] = []
    for i, text in enumerate(strategies):
        steps.append(llm_step(f"<strategy>{text}</strategy>\n<action>Check</action>", index=2 * i, seat=seat))
        steps.append(Step(episode=0, index=2 * i + 1, agent=other, seat=1 - seat, action=1, move="Bet"))
    other_outcome = {"win": "loss", "loss": "win", "draw": "draw"}[outcome]
    episode = EpisodeRecord(
        trial_id=trial.trial_id,
        index=0,
        seed=trial.seed,
        steps=tuple(steps),
        returns={agent: 1.0 if outcome == "win" else -1.0, other: 0.0},
        outcomes={agent: outcome, other: other_outcome},
        invalid_actions={agent: 0, other: 0},
        summaries={agent: feedback} if feedback else {},
    )
    return TrialRecord(spec=trial, episodes=(episode,), reflections=())


def key(seed: int = 5, seat: int = 0, learner: str = "") -> sge.TaskKey:
    return (learner, "kuhn_poker", seed, seat, ("model:scripted", "random")[seat])


def fill(plugin: sge.SGE, failed: int, successful: int, seed: int = 5, **options: Any) -> None:
    for i in range(failed):
        plugin.trial_end(record(spec(f"f{i}", seed, options=options or None), [f"fail plan {i}"], "loss", f"fb {i}"))
    for i in range(successful):
        plugin.trial_end(record(spec(f"s{i}", seed, options=options or None), [f"good plan {i}"], "win"))


# --------------------------------------------------------------------------------------------------------------
# The strategy prompt and the sampling plan
# --------------------------------------------------------------------------------------------------------------


def test_plan_has_the_strategy_segment_then_the_action_segment() -> None:
    plan = sge.SGE().pre_action(turn(spec()))
    assert plan.segments == (
        Segment(temperature=T_S, top_p=1.0, stop=("</strategy>",), max_new_tokens=96),
        Segment(temperature=T_A, top_p=1.0),
    )
    assert plan.instructions == PLAIN
    assert plan.max_new_tokens is None  # the engine's budget for the whole answer
    assert plan.source == "sge" and plan.meta == {"reflection": "none"}


def test_free_text_arenas_ask_for_code() -> None:
    plan = sge.SGE().pre_action(turn(spec(), legal=()))
    assert plan.instructions == "First write a short strategy inside <strategy>...</strategy>, then your code."


def test_settings_change_the_plan() -> None:
    options = {"strategy_temperature": 1.5, "action_temperature": 0.5, "top_p": 0.9, "strategy_max_tokens": 40}
    plan = sge.SGE().pre_action(turn(spec(options={**options, "instruction": "Plan in <strategy>."})))
    assert plan.segments == (
        Segment(temperature=1.5, top_p=0.9, stop=("</strategy>",), max_new_tokens=40),
        Segment(temperature=0.5, top_p=0.9),
    )
    assert plan.instructions == "Plan in <strategy>."
    plan = sge.SGE().pre_action(turn(spec(options={"mixed_temperature": False})))
    assert plan.segments == (Segment(temperature=T_A, top_p=1.0),)


@pytest.mark.parametrize(
    "options",
    [
        {"p_negative": 0.8, "p_positive": 0.3},
        {"p_negative": -0.1},
        {"buffer_size": 0},
        {"top_p": 0.0},
        {"strategy_max_tokens": 0},
        {"T_s": 1.2},
        {"reflection": "yes"},
    ],
)
def test_bad_settings_are_errors(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="sge"):
        sge.settings({"sge": options})


def test_strategy_extraction() -> None:
    assert sge.extract_strategy("x <strategy> bet high \n</strategy><action>Bet</action>") == "bet high"
    assert sge.extract_strategy("<strategy>a</strategy> <strategy>b</strategy>") == "a"
    assert sge.extract_strategy("<strategy>cut off by the budget <action>Bet</action>") == ""
    assert sge.extract_strategy("<action>Bet</action>") == ""


# --------------------------------------------------------------------------------------------------------------
# Buffers
# --------------------------------------------------------------------------------------------------------------


def test_buffers_are_fifo_per_task_and_outcome() -> None:
    plugin = sge.SGE()
    fill(plugin, failed=40, successful=3)
    failed, successful = plugin.sequences(key(5, 0, ""))
    assert len(failed) == 32
    # The 8 oldest are gone, the rest are in the order they ended.
    assert [s.strategies for s in failed] == [(f"fail plan {i}",) for i in range(8, 40)]
    assert [s.feedback for s in failed][:2] == ["fb 8", "fb 9"]
    assert [s.strategies for s in successful] == [(f"good plan {i}",) for i in range(3)]
    # Another seed is another task; a smaller buffer_size keeps fewer.
    plugin.trial_end(record(spec("x", seed=6, options={"buffer_size": 2}), ["p"], "loss"))
    assert len(plugin.sequences(key(6, 0, ""))[0]) == 1
    fill(plugin, failed=5, successful=0, seed=6, buffer_size=2)
    assert [s.strategies for s in plugin.sequences(key(6, 0, ""))[0]] == [("fail plan 3",), ("fail plan 4",)]


def test_sequences_hold_every_turn_in_order_and_keys_include_learner_and_seat() -> None:
    plugin = sge.SGE()
    trial = spec("a", learner="L1")
    plugin.trial_end(record(trial, ["open low", "", "then raise"], "loss", feedback="you lost 2 chips"))
    plugin.trial_end(record(spec("b", learner="L1"), ["as seat one"], "win", seat=1))
    (seq,) = plugin.sequences(key(5, 0, "L1"))[0]
    assert seq.strategies == ("open low", "", "then raise")
    assert seq.feedback == "you lost 2 chips" and seq.trial_id == "a" and seq.episode == 0
    assert plugin.sequences(key(5, 1, "L1"))[1][0].strategies == ("as seat one",)
    assert plugin.sequences(key(5, 0, "")) == ([], [])
    # An LLM opponent (another spec) in the same seat and task keeps its own buffers.
    plugin.trial_end(record(spec("d", learner="L1", seats=("random", "model:snapshot")), ["theirs"], "win", seat=1))
    assert plugin.sequences(key(5, 1, "L1"))[1][0].strategies == ("as seat one",)
    assert plugin.sequences(("L1", "kuhn_poker", 5, 1, "model:snapshot"))[1][0].strategies == ("theirs",)
    # An episode without any strategy is not stored.
    plugin.trial_end(record(spec("c", learner="L1"), ["", ""], "loss"))
    assert len(plugin.sequences(key(5, 0, "L1"))[0]) == 1


def test_evaluation_trials_neither_fill_nor_read_the_buffers() -> None:
    plugin = sge.SGE()
    plugin.trial_end(record(spec("e", training=False), ["eval plan"], "loss"))
    assert plugin.state_dict()["buffers"] == []
    fill(plugin, failed=3, successful=3, p_negative=0.5, p_positive=0.5)
    plans = [plugin.pre_action(turn(spec(f"e{i}", training=False, options=NEG_ONLY))) for i in range(50)]
    assert all(p.instructions == PLAIN and p.meta == {"reflection": "none"} for p in plans)
    # The same trials in training do reflect (p_negative 1).
    plans = [plugin.pre_action(turn(spec(f"e{i}", options=NEG_ONLY))) for i in range(50)]
    assert all(p.meta["reflection"] == "negative" for p in plans)


def test_reflection_off_is_the_plain_prompt_and_no_buffers() -> None:
    plugin = sge.SGE()
    fill(plugin, failed=2, successful=0, reflection=False)
    assert plugin.state_dict()["buffers"] == []
    fill(plugin, failed=2, successful=0)
    plan = plugin.pre_action(turn(spec("r", options={**NEG_ONLY, "reflection": False})))
    assert plan.instructions == PLAIN and plan.meta == {"reflection": "none"}


# --------------------------------------------------------------------------------------------------------------
# Reflection prompts and draws
# --------------------------------------------------------------------------------------------------------------


def test_negative_reflection_shows_the_failed_sequence_and_its_feedback() -> None:
    plugin = sge.SGE()
    plugin.trial_end(record(spec("old"), ["always check", "fold to a bet"], "loss", "FAILED test_add: 2 != 3"))
    plan = plugin.pre_action(turn(spec("new", options={"p_negative": 1.0, "p_positive": 0.0})))
    assert plan.meta == {"reflection": "negative", "reflection_source": {"trial_id": "old", "episode": 0, "index": 0}}
    assert plan.instructions == (
        "An earlier attempt at this task failed. The strategies you wrote in it, step by step:\n"
        "- Step 1: always check\n- Step 2: fold to a bet\n\n"
        "Feedback from the environment on that attempt:\nFAILED test_add: 2 != 3\n\n"
        "Critique those strategies: inside <strategy>...</strategy>, say in a few words why they failed, then write "
        "a different, better strategy.\n\n" + PLAIN
    )


def test_positive_reflection_shows_the_successful_sequence() -> None:
    plugin = sge.SGE()
    plugin.trial_end(record(spec("old"), ["bet with the king"], "win", "You won."))
    plan = plugin.pre_action(turn(spec("new", options={"p_negative": 0.0, "p_positive": 1.0})))
    assert plan.meta["reflection"] == "positive"
    assert plan.instructions == (
        "An earlier attempt at this task succeeded. The strategies you wrote in it, step by step:\n"
        "- Step 1: bet with the king\n\n"
        "Write a new strategy inside <strategy>...</strategy>, inspired by those.\n\n" + PLAIN
    )


def test_long_sequences_and_feedback_are_cut() -> None:
    plugin = sge.SGE()
    plugin.trial_end(record(spec("old"), ["x" * 500] * 3, "loss", "y" * 500))
    options = {**NEG_ONLY, "reflection_max_chars": 100}
    text = plugin.pre_action(turn(spec("new", options=options))).instructions
    sequence, feedback = text.split("\n\n")[0].split("\n", 1)[1], text.split("\n\n")[1].split("\n", 1)[1]
    assert len(sequence) == 100 and sequence.endswith("…")
    assert len(feedback) == 100 and feedback.endswith("…")


def test_draw_frequencies_match_p_negative_and_p_positive() -> None:
    plugin = sge.SGE()
    fill(plugin, failed=5, successful=4)
    n = 4000
    kinds: Counter[str] = Counter()
    entries: Counter[tuple[str, int]] = Counter()
    for i in range(n):
        plan = plugin.pre_action(turn(spec(f"g{i // 8}-t{i % 8}")))
        kinds[plan.meta["reflection"]] += 1
        if plan.meta["reflection"] != "none":
            entries[(plan.meta["reflection"], plan.meta["reflection_source"]["index"])] += 1
    # Binomial standard errors: 0.0068 for 0.25, 0.0047 for 0.1 at n = 4000; tolerances are about 3.5 of them.
    assert abs(kinds["negative"] / n - 0.25) < 0.024
    assert abs(kinds["positive"] / n - 0.10) < 0.017
    # The entry is uniform over the buffer: each of the 5 failed entries gets about 1/5 of the negative draws.
    for index in range(5):
        assert abs(entries[("negative", index)] / kinds["negative"] - 0.2) < 0.05
    for index in range(4):
        assert abs(entries[("positive", index)] / kinds["positive"] - 0.25) < 0.07


def test_empty_failed_buffer_does_not_shift_the_positive_rate() -> None:
    plugin = sge.SGE()
    fill(plugin, failed=0, successful=2)
    n = 3000
    kinds = Counter(plugin.pre_action(turn(spec(f"t{i}"))).meta["reflection"] for i in range(n))
    assert kinds["negative"] == 0
    assert abs(kinds["positive"] / n - 0.10) < 0.02


def test_draw_is_fixed_by_the_seeds() -> None:
    # The draw reads the trial's seed, id and seat only: two fresh plugins with the same buffers agree exactly.
    a, b = sge.SGE(), sge.SGE()
    fill(a, 3, 3)
    fill(b, 3, 3)
    first = [a.pre_action(turn(spec(f"t{i}"))).instructions for i in range(200)]
    second = [b.pre_action(turn(spec(f"t{i}"))).instructions for i in range(200)]
    assert first == second
    assert len(set(first)) > 3  # several different reflections were drawn
    # Per seat: the other seat of the same trials draws independently.
    other = [b.pre_action(turn(spec(f"t{i}"), seat=1)).meta["reflection"] for i in range(200)]
    assert other != [b.pre_action(turn(spec(f"t{i}"))).meta["reflection"] for i in range(200)]


def test_every_turn_of_a_rollout_shows_the_same_reflection() -> None:
    plugin = sge.SGE()
    fill(plugin, failed=6, successful=6)
    trial = spec("r1", options={"p_negative": 0.5, "p_positive": 0.5})
    first = plugin.pre_action(turn(trial, step=0))
    # A trial of the same task ending meanwhile (no iteration: visible at once) does not change this rollout's draw.
    fill(plugin, failed=30, successful=30)
    assert all(plugin.pre_action(turn(trial, step=k)) == first for k in (2, 4, 6))
    # After the trial ends the draw is forgotten.
    plugin.trial_end(record(trial, [], "loss"))
    assert plugin._draws == {}


def test_sequences_of_an_iteration_are_visible_from_the_next_iteration_on() -> None:
    plugin = sge.SGE()
    options = NEG_ONLY
    plugin.trial_end(record(spec("i0-a", iteration=0, options=options), ["iteration zero"], "loss"))
    # A rollout of the same iteration does not see it, whatever the order the engine ran them in.
    assert plugin.pre_action(turn(spec("i0-b", iteration=0, options=options))).meta["reflection"] == "none"
    assert len(plugin.pending) == 1
    plan = plugin.pre_action(turn(spec("i1-a", iteration=1, options=options)))
    assert plan.meta["reflection"] == "negative" and "iteration zero" in plan.instructions
    assert plugin.pending == []


def test_pending_sequences_commit_in_a_fixed_order() -> None:
    ends = [("g0-t1", "b"), ("g0-t0", "a"), ("g0-t2", "c")]
    orders = []
    for permutation in (ends, ends[::-1]):
        plugin = sge.SGE()
        for trial_id, text in permutation:
            plugin.trial_end(record(spec(trial_id, iteration=3), [text], "loss"))
        plugin.commit(before=4)
        orders.append([s.strategies[0] for s in plugin.sequences(key(5, 0, ""))[0]])
    assert orders == [["a", "b", "c"], ["a", "b", "c"]]


def test_state_round_trip_continues_the_buffers() -> None:
    plugin = sge.SGE()
    fill(plugin, failed=4, successful=2)
    plugin.trial_end(record(spec("later", learner="L", iteration=7), ["pending plan"], "win", seat=1))
    state = json.loads(json.dumps(plugin.state_dict()))
    restored = sge.SGE()
    restored.load_state_dict(state)
    assert restored.state_dict() == plugin.state_dict()
    assert restored.sequences(key(5, 0, "")) == plugin.sequences(key(5, 0, ""))
    assert restored.pending == plugin.pending
    draws = [plugin.pre_action(turn(spec(f"t{i}"))).instructions for i in range(100)]
    assert [restored.pre_action(turn(spec(f"t{i}"))).instructions for i in range(100)] == draws
    with pytest.raises(ValueError, match="version"):
        restored.load_state_dict({"version": 99})


def test_the_entry_point_is_the_class_and_learners_share_no_buffer() -> None:
    plugins = PluginSet(["sge", "grpo"])
    assert plugins.implements("pre_action") == ["sge"] and plugins.implements("trial_end") == ["sge"]
    assert plugins.implements("compute_advantages") == ["grpo"]
    mine, theirs = plugins.plugin("sge"), PluginSet(["sge"]).plugin("sge")
    assert isinstance(mine, sge.SGE) and mine is not theirs
    mine.failed[key()] = [sge.StrategySequence(("fold early",))]
    assert plugins.state_dict()["sge"] == mine.state_dict() != theirs.state_dict()
    assert theirs.sequences(key()) == ([], [])


# --------------------------------------------------------------------------------------------------------------
# Through the engine
# --------------------------------------------------------------------------------------------------------------


class Recorder:
    """A scripted responder that writes a strategy and a legal move and keeps every request it saw."""

    def __init__(self) -> None:
        self.requests: list[GenerationRequest] = []

    def __call__(self, request: GenerationRequest, rng: np.random.Generator) -> str:
        self.requests.append(request)
        moves = legal_moves_in_prompt(request)
        move = moves[int(rng.integers(len(moves)))]
        return f"<strategy>plan {int(rng.integers(1000))}: play {move}</strategy>\n<action>{move}</action>"


def test_engine_samples_with_the_plan_and_fills_the_buffers() -> None:
    plugin = sge.SGE()
    recorder = Recorder()
    options = {"sge": {"p_negative": 0.5, "p_positive": 0.5}}
    trials = [attrs.evolve(s, options=options) for s in specs(8)]
    # Seeds 0..7 are 8 tasks; play them twice so the second round can reflect on the first.
    records, _, _ = play(trials, plugins=["sge"], extra={"sge": plugin}, responder=recorder)
    assert recorder.requests and all(r.purpose == "action" for r in recorder.requests)
    for request in recorder.requests:
        assert request.segments == (
            Segment(temperature=T_S, stop=("</strategy>",), max_new_tokens=96),
            Segment(temperature=T_A),
        )
        assert PLAIN in request.messages[-1].content
        assert "An earlier attempt" not in request.messages[-1].content  # nothing in the buffers yet
    stored = sum(len(b["failed"]) + len(b["successful"]) for b in plugin.state_dict()["buffers"])
    assert stored == 8
    wins = sum(r.final.outcomes["player_0"] == "win" for r in records)
    assert sum(len(b["successful"]) for b in plugin.state_dict()["buffers"]) == wins
    recorder.requests.clear()
    again = [attrs.evolve(s, trial_id=f"again-{s.trial_id}") for s in trials]
    play(again, plugins=["sge"], extra={"sge": plugin}, responder=recorder)
    prompts = [r.messages[-1].content for r in recorder.requests]
    assert any("An earlier attempt at this task" in p for p in prompts)
    assert any("plan " in p.split("step by step:")[-1] for p in prompts if "step by step:" in p)


def test_samples_carry_t_s_on_exactly_the_strategy_tokens_and_the_drawn_reflection() -> None:
    plugin = sge.SGE()
    trials = [attrs.evolve(s, options={"sge": {"p_negative": 1.0, "p_positive": 0.0}}) for s in specs(4)]
    records, _, _ = play(trials, plugins=["sge"], extra={"sge": plugin}, responder=Recorder())
    again = [attrs.evolve(s, trial_id=f"again-{s.trial_id}") for s in trials]
    records, _, _ = play(again, plugins=["sge"], extra={"sge": plugin}, responder=Recorder())
    samples = [s for r in records for s in trial_samples(r, "L", ["model:scripted"])]
    assert samples
    for sample in samples:
        text = sample.completion_text
        strategy_bytes = len(text[: text.index("</strategy>") + len("</strategy>")].encode())
        assert sample.temperatures == (T_S,) * strategy_bytes + (T_A,) * (len(sample.completion_ids) - strategy_bytes)
        assert sample.meta["plans"]["sge"]["reflection"] in ("negative", "none")
    assert any(s.meta["plans"]["sge"]["reflection"] == "negative" for s in samples)


# --------------------------------------------------------------------------------------------------------------
# Behaviour log-probs at the per-token temperatures (hf backend, toy model)
# --------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def toy() -> Any:
    from ..toy_model import build_model, build_tokenizer

    tokenizer = build_tokenizer()
    model = build_model(len(tokenizer), tokenizer.eos_token_id, tokenizer.pad_token_id)
    return model, tokenizer


def test_recomputed_logprobs_match_behaviour_at_sge_temperatures(toy: Any) -> None:
    from arena.core.backends.hf import HFBackend
    from arena.core.config.trial import PromptConfig, TrialConfig
    from arena.core.rollout.engine import RolloutEngine
    from arena.core.rollout.seats import BackendPool

    model, tokenizer = toy
    backend = HFBackend(model, tokenizer)
    pool = BackendPool()
    pool.add("hf", "toy", backend)
    budget = 8
    options = {"sge": {"strategy_max_tokens": budget}}
    seat = "model:toy@hf"
    trial_specs = [
        TrialSpec(trial_id=f"t{i}", arena_id="kuhn_poker", seats=(seat, "random"), seed=i, options=options)
        for i in range(4)
    ]
    config = TrialConfig(prompt=PromptConfig(max_new_tokens=20))
    engine = RolloutEngine(PluginSet(["sge"], extra={"sge": sge.SGE()}), config, backends=pool)
    samples = [s for t in engine.run(trial_specs) for s in trial_samples(t, "L", [seat])]
    assert samples
    for s in samples:
        # T_s on the strategy tokens: through the token that completes "</strategy>", or the segment's budget.
        strategy = next(
            (k for k in range(1, budget + 1) if "</strategy>" in backend.decode(s.completion_ids[:k])), budget
        )
        strategy = min(strategy, len(s.completion_ids))
        assert s.temperatures == (T_S,) * strategy + (T_A,) * (len(s.completion_ids) - strategy)
    assert any(T_A in s.temperatures for s in samples)  # the action segment was reached
    with torch.no_grad():
        logp, _, mask = policy_logprobs(
            model,
            [s.context_ids for s in samples],
            [s.completion_ids for s in samples],
            [s.temperatures for s in samples],
            pad_id=backend.pad_id,
        )
    worst = 0.0
    for row, s in enumerate(samples):
        n = len(s.completion_ids)
        behaviour = torch.tensor(s.behaviour_logprobs, dtype=torch.float64)
        worst = max(worst, (logp[row, :n].double() - behaviour).abs().max().item())
        assert bool((mask[row, :n] == 1).all())
    assert worst < 1e-4, worst
    # And at a single temperature they would not match: the per-token temperatures matter.
    with torch.no_grad():
        flat, _, _ = policy_logprobs(
            model,
            [s.context_ids for s in samples],
            [s.completion_ids for s in samples],
            [(1.0,) * len(s.completion_ids) for s in samples],
            pad_id=backend.pad_id,
        )
    off = max(
        (flat[row, : len(s.completion_ids)].double() - torch.tensor(s.behaviour_logprobs, dtype=torch.float64))
        .abs()
        .max()
        .item()
        for row, s in enumerate(samples)
    )
    assert off > 1e-2
