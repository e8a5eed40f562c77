"""empo2: exploratory memory-augmented on- and off-policy optimisation (EMPO², Liu, Kim et al., "Exploratory
Memory-Augmented LLM Agent via Hybrid On- and Off-Policy Optimization", arXiv 2602.23008; code
microsoft/agent-lightning, ``contrib/recipes/envs``). [P] = the paper, [C] = the authors' code.

The policy writes itself one-line *tips* after its episodes, keeps them in a per-task memory, and in some
iterations explores with the tips retrieved into its prompts. Those rollouts are then trained either with the tips
in context (on-policy) or with the tips stripped from the context (off-policy), which distils what the tips made it
do into a policy that needs no memory at evaluation time.

1. **Modes** [P,C]. Each training iteration draws one mode for all its trials::

       u1, u2 ~ U[0,1) from derive_seed(run_seed, iteration)
       plain       if u1 ≥ p                 (p = 0.25: no memory; GRPO-like)
       memory_off  if u1 < p and u2 < q      (q = 2/3: tips in the prompt, trained without them)
       memory_on   otherwise                 (tips in the prompt, trained with them)

   ``iteration_mode(run_seed, iteration, p, q)`` is a pure function of ``TrialSpec.meta["iteration"]`` and
   ``meta["run_seed"]`` (set by the train loop; a spec without them draws as iteration 0 of run seed 0), so every
   trial of an iteration agrees and a resumed run draws the same modes. Evaluation trials (``training`` false)
   run ``plain`` unless ``eval_memory`` is set, then ``memory_on`` (see 3).

2. **Tips** [P]. After every episode of every trial (``reflect``; the engine also calls it after a trial's last
   episode), in all modes, each LLM seat is asked for a tip (``ReflectionRequest`` named ``tip``, extracted from
   ``<tip>…</tip>``, ``tip_max_new_tokens`` = 128 as [C]; a seat that did not answer in the episode is not
   asked): the prompt shows the seat's moves in the episode, the
   last state it saw, the environment's feedback (``EpisodeRecord.summaries``) and its return, and ends with
   ``tip_instruction``. The tip is made one line and cut to ``tip_max_words`` words. Tips are not trained unless
   ``train_tips`` (then they are ``reflection:tip`` samples credited like any reflection). In evaluation tips are
   only requested with ``eval_memory``.

3. **Memory** [P,C]. One store per task: the learner's seat spec, its agent (role), the arena, its kwargs and the
   trial seed (the run's task is its seed; the seat spec keeps two learners of a population apart). A store keeps
   the last ``max_memory`` = 1000 entries, de-duplicated by text (a text already stored is not added again; when
   full the oldest entry goes), as [C]. An entry is (key embedding, text, score = the seat's return in the
   episode). ``memory_entries`` decides what is stored per tip:

   * ``step`` (default, [C]): one entry per turn the seat took in the episode, keyed by that turn's observation,
     text = ``"<tip>; at that step you chose <move>; the episode's return was <R>"``;
   * ``episode``: one entry per tip, keyed by the last observation the seat saw in the episode, text = the tip.

   Keys embed the observation text rather than the whole prompt: the prompt begins with the rules, which are the
   same for every state, and the embedder reads only 256 tokens. Embeddings are all-MiniLM-L6-v2 (mean pooling,
   unit vectors; ``arena.core.models.embeddings``). Retrieval (``retrieve_memory``, memory modes only): embed the
   current
   observation, keep entries with cosine > ``retrieve_threshold`` = 0.5, sort by score (highest first; equal scores
   oldest first), take ``top_k`` = 10; they are shown as ``<tip>…</tip>`` lines under "Here are some memories you
   collected in your previous exploration:". Evaluation with ``eval_memory`` reads the training store of the
   same task (read-only) plus a scratch store of the evaluation trial itself, dropped when the trial ends, so
   evaluations never feed the training memory nor each other.

4. **Off-policy update** [P Table 3, C]. ``training_view``: an action sample of a ``memory_off`` trial whose
   prompt carries tips gets the context with the memory section (its header and every ``<tip>…</tip>`` line, and
   any other ``<tip>…</tip>`` span) removed, re-rendered with the learner's ``encode``; ``rollout_context_ids``/
   ``rollout_context_text`` keep the prompt it was sampled from, and the behaviour log-probs stay. The PPO ratio
   is therefore πθ(a | context without tips) / π_old(a | context with tips), also under
   ``loss.old_logprobs: recompute``: the view sets ``old_context="rollout"``, so the trainer's recompute of π_old
   runs in the prompt with the tips (before, it ran in the stripped one and the ratio started at 1: plain PPO
   instead of the distillation). The learner's loss should then be
   set as in the paper (these are ``LossConfig`` keys, ``arena.core.learn.trainer``)::

       loss: {clip_low: 0.2, clip_high: 0.3, dual_clip: 10.0, low_prob_mask: token, low_prob_threshold: -5.0}

   ``low_prob_mask: token`` drops the tokens whose behaviour log-prob is below −5 (paper); ``sequence`` drops the
   whole sample when any token is (code).

5. **Intrinsic novelty reward** [P] (``compute_rewards``, reward term ``novelty`` on each action sample).
   ``novelty: states`` (default, [P]): per task, a list of distinct states with visit counts; the state of a turn
   is its observation. A state whose cosine to every distinct state is below ``novelty_threshold`` = 0.9 is a new
   distinct state (n = 1); otherwise the most similar distinct state's count goes up by one and n is that count
   (the similar visits so far, this one included). States are visited in trial order: each turn's observation,
   then the state the episode ended in (the adapter's episode summary). r_int = ``novelty_coef`` · 1/n goes to
   the action that *reached* the state (the paper's r_int(s_{t+1})): the turn before it, the last turn for the
   final state; the first state of an episode is counted but credits no action. ``novelty: retrieval`` ([C]):
   r_int = coef · 1/(k + 1) with k the number of tips retrieved into the turn's prompt (coef · 1 when none), and
   0 in ``plain`` iterations. ``novelty: off`` adds nothing. In every mode the ``novelty`` term of a turn is the
   return of r_int from that turn to the end of its episode, discounted by the learner's ``gamma`` like the
   ``env`` term, so it flows into returns as any reward does. Before issue 22 each turn got the novelty of the
   state it acted *in*, with no return: the move that found a new room was not credited for it.
   ``novelty_coef`` = 1.0: the paper adds r_int to the environment reward unscaled; lower it when the arena's
   rewards are small next to it. The threshold is coarse for texts that share most of their words: on
   ``text_maze`` (small, seed 3) the 384 distinct observations of 16 random-play episodes form 10 distinct states
   at 0.9, 30 at 0.95, 69 at 0.97 and 131 at 0.98.

State: the training memory and the novelty states live in the plugin object and are checkpointed through
``state_dict``/``load_state_dict`` (JSON: texts and scores as lists, each store's key embeddings as one base64
string of float32, exact on resume). The entry point is the class (``arena.plugins.empo2:EMPO2``): each learner
that enables ``empo2`` gets an instance of its own and learners share no memory (within a learner the stores are
keyed by seat spec). When the trial's
``meta["learner_seat"]`` names the learner's seat, only that seat writes and reads tips; without it every LLM
seat of the learner's trials does, so a model opponent (a snapshot) writes and reads tips in stores of its own
seat spec.

Hooks: ``trial_start``, ``retrieve_memory``, ``reflect``, ``store_memory``, ``trial_end``, ``compute_rewards``,
``training_view``. It answers no advantage hook: enable an estimator beside it (``plugins: [grpo, empo2]``).

| setting | default | meaning |
| --- | --- | --- |
| ``p`` | ``0.25`` | probability that an iteration's rollouts use memory |
| ``q`` | ``2/3`` | probability that a memory iteration is trained off-policy (tips stripped) |
| ``max_memory`` | ``1000`` | entries kept per task (oldest dropped) |
| ``memory_entries`` | ``"step"`` | ``step`` (one entry per turn, [C]) or ``episode`` (one per tip) |
| ``retrieve_threshold`` | ``0.5`` | an entry is retrieved when its key's cosine to the observation exceeds this |
| ``top_k`` | ``10`` | at most this many tips per prompt, highest score first |
| ``tip_instruction`` | ``"Write one short tip …"`` | the last paragraph of the tip request |
| ``tip_max_words`` | ``100`` | a tip is cut to this many words |
| ``tip_max_new_tokens`` | ``128`` | generation budget of a tip |
| ``train_tips`` | ``false`` | train the tip generations as ``reflection:tip`` samples |
| ``novelty`` | ``"states"`` | ``states`` ([P]), ``retrieval`` ([C]) or ``off`` |
| ``novelty_threshold`` | ``0.9`` | cosine at or above which two states are the same distinct state |
| ``novelty_coef`` | ``1.0`` | scale of r_int |
| ``eval_memory`` | ``false`` | evaluation trials retrieve (and write) tips |
"""

from __future__ import annotations

import base64
import json
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeAlias

import attrs
import numpy as np

from arena.core import (
    ChatMessage,
    EpisodeRecord,
    MemoryItem,
    Reflection,
    ReflectionRequest,
    Sample,
    Segment,
    Step,
    TrialRecord,
    TrialSpec,
    Turn,
    derive_seed,
    hookimpl,
    read_settings,
    setting,
)

NAME = "empo2"
TIP_NAME = "tip"
TIP_TAG = "tip"
NOVELTY_TERM = "novelty"
MEMORY_SECTION = "Here are some memories you collected in your previous exploration:"
TIP_INSTRUCTION = "Write one short tip for your next episode, one line inside <tip>...</tip>."
MODES = ("plain", "memory_on", "memory_off")
STATE_VERSION = 1
#: Moves of the episode shown in the tip request (the most recent ones).
TIP_PROMPT_MOVES = 20
#: Trial modes remembered for ``training_view`` (trial id → mode), oldest forgotten first.
MODE_HISTORY = 65536

_unit = attrs.validators.and_(attrs.validators.ge(0.0), attrs.validators.le(1.0))
_cosine = attrs.validators.and_(attrs.validators.ge(-1.0), attrs.validators.le(1.0))
_at_least_1 = attrs.validators.ge(1)


@attrs.frozen
class Settings:
    """empo2's settings: ``options.empo2`` of a learner (checked when the run config loads)."""

    p: float = setting(0.25, "probability that an iteration's rollouts use memory", validator=_unit)
    q: float = setting(
        2.0 / 3.0, "probability that a memory iteration is trained off-policy (tips stripped)", validator=_unit
    )
    max_memory: int = setting(1000, "entries kept per task (oldest dropped)", validator=_at_least_1)
    memory_entries: Literal["step", "episode"] = setting(
        "step", "step (one entry per turn, [C]) or episode (one per tip)"
    )
    retrieve_threshold: float = setting(
        0.5, "an entry is retrieved when its key's cosine to the observation exceeds this", validator=_cosine
    )
    top_k: int = setting(10, "at most this many tips per prompt, highest score first", validator=_at_least_1)
    tip_instruction: str = setting(TIP_INSTRUCTION, "the last paragraph of the tip request")
    tip_max_words: int = setting(100, "a tip is cut to this many words", validator=_at_least_1)
    tip_max_new_tokens: int = setting(128, "generation budget of a tip", validator=_at_least_1)
    train_tips: bool = setting(False, "train the tip generations as reflection:tip samples")
    novelty: Literal["states", "retrieval", "off"] = setting("states", "states ([P]), retrieval ([C]) or off")
    novelty_threshold: float = setting(
        0.9, "cosine at or above which two states are the same distinct state", validator=_cosine
    )
    novelty_coef: float = setting(1.0, "scale of r_int")
    eval_memory: bool = setting(False, "evaluation trials retrieve (and write) tips")


#: A task's store: (seat spec, agent, arena id, arena kwargs as JSON, seed).
StoreKey = tuple[str, str, str, str, int]
Embed = Callable[[Sequence[str]], np.ndarray]


def settings(options: Mapping[str, Mapping[str, Any]] | None) -> Settings:
    """``options["empo2"]`` read into :class:`Settings`; unknown keys, wrong types and bad values raise."""
    return read_settings(options, NAME, Settings)


# --------------------------------------------------------------------------------------------------------------
# Modes
# --------------------------------------------------------------------------------------------------------------


def iteration_mode(run_seed: int, iteration: int, p: float = 0.25, q: float = 2.0 / 3.0) -> str:
    """``plain``, ``memory_on`` or ``memory_off`` for one training iteration (module docstring, item 1)."""
    u = np.random.default_rng(derive_seed(run_seed, iteration, NAME, "mode")).random(2)
    if u[0] >= p:
        return "plain"
    return "memory_off" if u[1] < q else "memory_on"


def trial_mode(trial: TrialSpec, opts: Settings) -> str:
    """The mode of a trial: its iteration's draw in training, ``plain`` or ``memory_on`` (``eval_memory``) else."""
    if not trial.training:
        return "memory_on" if opts.eval_memory else "plain"
    meta = trial.meta
    return iteration_mode(int(meta.get("run_seed", 0)), int(meta.get("iteration", 0)), opts.p, opts.q)


def takes_part(trial: TrialSpec, seat: int) -> bool:
    """Whether ``seat`` writes and reads tips: the learner's seat when ``meta["learner_seat"]`` names it (then a
    model opponent's prompts stay as they are), else every LLM seat."""
    learner_seat = trial.meta.get("learner_seat")
    return learner_seat is None or int(learner_seat) == seat


def store_key(trial: TrialSpec, seat: int, agent: str) -> StoreKey:
    kwargs = json.dumps(trial.arena_kwargs, sort_keys=True, default=str)
    return (trial.seats[seat], agent, trial.arena_id, kwargs, int(trial.seed))


def recurring_tasks(options: Mapping[str, Mapping[str, Any]] | None) -> list[str]:
    """The mechanisms ``options`` enable that need a task key to recur across iterations (``task_pool``), for
    the run set-up's warning (``arena.core.learn.task_recurrence``): the tip memory, read in memory iterations."""
    if settings(options).p == 0:
        return []
    return ["tip memory (per-task stores keyed by the trial seed) reaches only the trials of the same group"]


# --------------------------------------------------------------------------------------------------------------
# Stores
# --------------------------------------------------------------------------------------------------------------


def _pack(vectors: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(vectors, dtype="<f4").tobytes()).decode("ascii")


def _unpack(text: str, rows: int) -> np.ndarray:
    flat = np.frombuffer(base64.b64decode(text), dtype="<f4").astype(np.float32)
    return flat.reshape(rows, -1) if rows else np.zeros((0, 0), dtype=np.float32)


class TipStore:
    """The memory of one task: the last ``max_size`` entries (key vector, key text, text, score), texts unique."""

    def __init__(self, max_size: int = 1000) -> None:
        self.max_size = max_size
        self.texts: list[str] = []
        self.scores: list[float] = []
        self.key_texts: list[str] = []
        self._keys: list[np.ndarray] = []
        self._matrix: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.texts)

    def add(self, key: np.ndarray, key_text: str, text: str, score: float) -> bool:
        """Add an entry; False (nothing changes) when ``text`` is stored already. Drops the oldest beyond the size."""
        if text in self.texts:
            return False
        self.texts.append(text)
        self.scores.append(float(score))
        self.key_texts.append(key_text)
        self._keys.append(np.asarray(key, dtype=np.float32).reshape(-1))
        excess = len(self.texts) - self.max_size
        if excess > 0:
            del self.texts[:excess], self.scores[:excess], self.key_texts[:excess], self._keys[:excess]
        self._matrix = None
        return True

    @property
    def keys(self) -> np.ndarray:
        if self._matrix is None:
            self._matrix = np.stack(self._keys) if self._keys else np.zeros((0, 0), dtype=np.float32)
        return self._matrix

    def similar(self, query: np.ndarray, threshold: float) -> list[int]:
        """Indices of the entries whose key's cosine to ``query`` exceeds ``threshold``, oldest first."""
        if not self._keys:
            return []
        sims = self.keys @ np.asarray(query, dtype=np.float32).reshape(-1)
        return [int(i) for i in np.flatnonzero(sims > threshold)]

    def to_json(self) -> dict[str, Any]:
        return {
            "texts": list(self.texts),
            "scores": list(self.scores),
            "key_texts": list(self.key_texts),
            "keys": _pack(self.keys) if self._keys else "",
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], max_size: int) -> TipStore:
        store = cls(max_size)
        texts = [str(t) for t in data["texts"]]
        keys = _unpack(str(data["keys"]), len(texts)) if texts else np.zeros((0, 0), dtype=np.float32)
        for key, key_text, text, score in zip(keys, data["key_texts"], texts, data["scores"], strict=True):
            store.add(key, str(key_text), text, float(score))
        return store


def retrieve(stores: Sequence[TipStore], query: np.ndarray, threshold: float, top_k: int) -> list[tuple[str, float]]:
    """(text, score) of the entries similar to ``query`` over ``stores``: highest score first (equal scores in
    store order, oldest first), texts unique, at most ``top_k``."""
    found: list[tuple[str, float]] = []
    seen: set[str] = set()
    for store in stores:
        for i in store.similar(query, threshold):
            if store.texts[i] not in seen:
                seen.add(store.texts[i])
                found.append((store.texts[i], store.scores[i]))
    found.sort(key=lambda entry: -entry[1])
    return found[:top_k]


class NoveltyStates:
    """Distinct states of one task and how often each was visited (module docstring, item 5)."""

    def __init__(self) -> None:
        self.counts: list[int] = []
        self._states: list[np.ndarray] = []

    def __len__(self) -> int:
        return len(self.counts)

    def visit(self, state: np.ndarray, threshold: float) -> int:
        """Count a visit of ``state``; n, the similar visits so far including this one (1 for a new state)."""
        vector = np.asarray(state, dtype=np.float32).reshape(-1)
        if self._states:
            sims = np.stack(self._states) @ vector
            best = int(np.argmax(sims))
            if sims[best] >= threshold:
                self.counts[best] += 1
                return self.counts[best]
        self._states.append(vector)
        self.counts.append(1)
        return 1

    def to_json(self) -> dict[str, Any]:
        return {"counts": list(self.counts), "states": _pack(np.stack(self._states)) if self._states else ""}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> NoveltyStates:
        out = cls()
        out.counts = [int(c) for c in data["counts"]]
        if out.counts:
            out._states = list(_unpack(str(data["states"]), len(out.counts)))
        return out


# --------------------------------------------------------------------------------------------------------------
# Tips
# --------------------------------------------------------------------------------------------------------------

_TAGS = re.compile(rf"</?{TIP_TAG}>", flags=re.IGNORECASE)


def action_chains(samples: Sequence[Sample]) -> list[list[int]]:
    """Indices of the action samples of each (episode, agent), each in turn order, chains in trial order."""
    chains: dict[tuple[int, str], list[int]] = {}
    for i, s in enumerate(samples):
        if s.kind == "action":
            chains.setdefault((s.episode, s.agent), []).append(i)
    return [sorted(chains[key], key=lambda i: samples[i].turn) for key in sorted(chains)]


def novelty_terms(
    samples: Sequence[Sample], chains: Sequence[Sequence[int]], rewards: Mapping[int, float]
) -> dict[int, dict[str, float]]:
    """The ``novelty`` term of each action: the discounted sum of the r_int it and the later turns of its episode
    earned, like the core's ``env`` term (the episode's return discounted by the learner's ``gamma``, which
    ``Sample.meta["discount"]`` carries), so that an action that leads towards new states is credited for them."""
    out: dict[int, dict[str, float]] = {}
    for chain in chains:
        following = 0.0
        for i in reversed(chain):
            following = rewards.get(i, 0.0) + float(samples[i].meta.get("discount", 1.0)) * following
            out[i] = {NOVELTY_TERM: following}
    return out


def clean_tip(text: str, max_words: int) -> str:
    """One line, no ``<tip>`` tags, at most ``max_words`` words."""
    return " ".join(_TAGS.sub(" ", text).split()[:max_words])


def own_turns(episode: EpisodeRecord, agent: str) -> list[Step]:
    """The steps the seat answered as an LLM in ``episode``."""
    return [s for s in episode.steps if s.agent == agent and s.completion is not None]


def tip_prompt(trial: TrialSpec, episode: EpisodeRecord, agent: str, instruction: str) -> str:
    """What the policy sees when asked for a tip: its moves, the last state it saw, the feedback, the return."""
    turns = own_turns(episode, agent)
    parts = [f"You are {agent} in {trial.arena_id}. Episode {episode.index + 1} of {trial.episodes} just ended."]
    if turns:
        shown = turns[-TIP_PROMPT_MOVES:]
        earlier = f"({len(turns) - len(shown)} earlier moves) " if len(turns) > len(shown) else ""
        parts.append("Your moves in this episode: " + earlier + "; ".join(s.move for s in shown) + ".")
        if turns[-1].observation.strip():
            parts.append("The last state you saw:\n" + turns[-1].observation.strip())
    summary = episode.summaries.get(agent, "").strip()
    result = f"Result: {episode.outcomes.get(agent, '?')}, your return {episode.returns.get(agent, 0.0):+g}."
    parts.append(f"Outcome: {summary}\n{result}" if summary else f"Outcome: {result}")
    parts.append(instruction)
    return "\n\n".join(parts)


@attrs.frozen
class _PendingTip:
    """What a tip request was written from, kept until the tip arrives in ``store_memory``."""

    key: StoreKey
    key_texts: tuple[str, ...]
    moves: tuple[str, ...]
    score: float
    training: bool


# --------------------------------------------------------------------------------------------------------------
# The off-policy training view
# --------------------------------------------------------------------------------------------------------------

_SPAN = re.compile(rf"<{TIP_TAG}>.*?</{TIP_TAG}>", flags=re.IGNORECASE | re.DOTALL)
_LINES = rf"(?:\n<{TIP_TAG}>.*?</{TIP_TAG}>)+"
_BLOCK_FIRST = re.compile(rf"\A{re.escape(MEMORY_SECTION)}{_LINES}(?:\n\n)?", flags=re.IGNORECASE | re.DOTALL)
_BLOCK = re.compile(rf"(?:\n\n)?{re.escape(MEMORY_SECTION)}{_LINES}", flags=re.IGNORECASE | re.DOTALL)


def strip_tips_text(text: str) -> str:
    """``text`` without the memory section (header and tip lines, with the blank line that separated it) and
    without any other ``<tip>…</tip>`` span."""
    text = _BLOCK_FIRST.sub("", text)
    text = _BLOCK.sub("", text)
    return _SPAN.sub("", text)


def strip_tips(messages: Sequence[ChatMessage]) -> tuple[ChatMessage, ...] | None:
    """The messages with every tip removed; None when there was none."""
    out = []
    changed = False
    for message in messages:
        content = strip_tips_text(message.content)
        changed = changed or content != message.content
        out.append(attrs.evolve(message, content=content) if content != message.content else message)
    return tuple(out) if changed else None


def tips_in_prompt(text: str) -> int:
    """How many retrieved tips the memory section of a rendered prompt holds."""
    return sum(match.group(0).count(f"<{TIP_TAG}>") for match in _BLOCK.finditer(text))


# --------------------------------------------------------------------------------------------------------------
# The plugin
# --------------------------------------------------------------------------------------------------------------


class EMPO2:
    """The stateful plugin (one instance per learner, see the module docstring).

    ``embed(texts) -> (n, d)`` unit vectors; default: all-MiniLM-L6-v2 (``arena.core.models.embeddings``), loaded on
    first use. Tests inject a cheaper one.
    """

    #: The config check and ``arena plugins`` find the settings here (the entry point names the class).
    Settings: TypeAlias = Settings

    def __init__(self, embed: Embed | None = None) -> None:
        self._embed = embed
        self.memory: dict[StoreKey, TipStore] = {}
        self.states: dict[StoreKey, NoveltyStates] = {}
        self._eval_memory: dict[str, TipStore] = {}
        self._pending: dict[tuple[str, int, str], _PendingTip] = {}
        self._modes: OrderedDict[str, str] = OrderedDict()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self._embed is None:
            from arena.core import sentence_embedder

            self._embed = sentence_embedder().encode
        return np.asarray(self._embed(list(texts)), dtype=np.float32)

    def mode_of(self, trial_id: str) -> str | None:
        """The mode a trial of this process ran in (None: not seen)."""
        return self._modes.get(trial_id)

    def _store(self, key: StoreKey, max_size: int) -> TipStore:
        store = self.memory.get(key)
        if store is None:
            store = self.memory[key] = TipStore(max_size)
        store.max_size = max_size
        return store

    # -- trial phase -------------------------------------------------------------------------------------

    @hookimpl
    def trial_start(self, trial: TrialSpec) -> None:
        opts = settings(trial.options)
        self._modes[trial.trial_id] = trial_mode(trial, opts)
        self._modes.move_to_end(trial.trial_id)
        while len(self._modes) > MODE_HISTORY:
            self._modes.popitem(last=False)

    @hookimpl
    def retrieve_memory(self, turn: Turn) -> list[MemoryItem] | None:
        opts = settings(turn.trial.options)
        if trial_mode(turn.trial, opts) == "plain" or not takes_part(turn.trial, turn.seat):
            return None
        trial = turn.trial
        stores = []
        training_store = self.memory.get(store_key(trial, turn.seat, turn.agent))
        if training_store is not None:
            stores.append(training_store)
        if not trial.training and trial.trial_id in self._eval_memory:
            stores.append(self._eval_memory[trial.trial_id])
        if not any(len(s) for s in stores):
            return None
        (query,) = self.embed([turn.observation])
        found = retrieve(stores, query, opts.retrieve_threshold, opts.top_k)
        return [MemoryItem(text=t, section=MEMORY_SECTION, score=s, source=NAME, tag=TIP_TAG) for t, s in found]

    @hookimpl
    def reflect(self, trial: TrialSpec, episode: EpisodeRecord, agent: str, seat: int) -> ReflectionRequest | None:
        opts = settings(trial.options)
        if (not trial.training and not opts.eval_memory) or not takes_part(trial, seat):
            return None
        turns = own_turns(episode, agent)
        if not turns:  # the seat never answered in this episode: nothing to write a tip about
            return None
        if opts.memory_entries == "step":
            key_texts = tuple(s.observation for s in turns)
            moves = tuple(s.move for s in turns)
        else:
            key_texts, moves = (turns[-1].observation,), ("",)
        self._pending[(trial.trial_id, episode.index, agent)] = _PendingTip(
            key=store_key(trial, seat, agent),
            key_texts=key_texts,
            moves=moves,
            score=float(episode.returns.get(agent, 0.0)),
            training=trial.training,
        )
        return ReflectionRequest(
            name=TIP_NAME,
            messages=(ChatMessage("user", tip_prompt(trial, episode, agent, opts.tip_instruction)),),
            extract_tag=TIP_TAG,
            max_new_tokens=opts.tip_max_new_tokens,
            segments=(Segment(),),
            trained=opts.train_tips,
        )

    @hookimpl
    def store_memory(self, trial: TrialSpec, reflection: Reflection) -> None:
        if reflection.name != TIP_NAME:
            return
        pending = self._pending.pop((trial.trial_id, reflection.episode, reflection.agent), None)
        if pending is None:
            return
        opts = settings(trial.options)
        tip = clean_tip(reflection.content, opts.tip_max_words)
        if not tip or not pending.key_texts:
            return
        if pending.training:
            store = self._store(pending.key, opts.max_memory)
        else:
            store = self._eval_memory.setdefault(trial.trial_id, TipStore(opts.max_memory))
        vectors = self.embed(pending.key_texts)
        for vector, key_text, move in zip(vectors, pending.key_texts, pending.moves, strict=True):
            if opts.memory_entries == "step":
                text = f"{tip}; at that step you chose {move}; the episode's return was {pending.score:g}"
            else:
                text = tip
            store.add(vector, key_text, text, pending.score)

    @hookimpl
    def trial_end(self, trial: TrialRecord) -> None:
        trial_id = trial.spec.trial_id
        self._eval_memory.pop(trial_id, None)
        for key in [k for k in self._pending if k[0] == trial_id]:
            del self._pending[key]

    # -- learning ----------------------------------------------------------------------------------------

    @hookimpl
    def compute_rewards(self, trial: TrialRecord, samples: list[Sample]) -> dict[int, dict[str, float]] | None:
        opts = settings(trial.spec.options)
        if opts.novelty == "off":
            return None
        coef = opts.novelty_coef
        chains = action_chains(samples)
        if opts.novelty == "retrieval":
            plain = trial_mode(trial.spec, opts) == "plain"
            rewards = {
                i: 0.0 if plain else coef / (tips_in_prompt(samples[i].context_text) + 1)
                for chain in chains
                for i in chain
            }
            return novelty_terms(samples, chains, rewards)
        steps = {(s.episode, s.index, s.agent): s for e in trial.episodes for s in e.steps}
        episodes = {e.index: e for e in trial.episodes}
        # Per chain (one learner agent in one episode): the state each turn saw, then the state the episode ended
        # in (the adapter's summary: the observation after the last move is not recorded). Action k reached state
        # k + 1: its r_int is the novelty of that state. The first state was reached by no action: it is counted
        # as a visit and credited to nobody.
        visits: list[tuple[tuple[str, str, str, str, int], str, int | None]] = []
        for chain in chains:
            found = [steps.get((samples[i].episode, samples[i].turn, samples[i].agent)) for i in chain]
            if any(step is None for step in found):
                continue
            chain_steps = [step for step in found if step is not None]
            key = store_key(trial.spec, chain_steps[0].seat, chain_steps[0].agent)
            summary = episodes[samples[chain[0]].episode].summaries.get(chain_steps[0].agent, "").strip()
            reached: list[tuple[str, int | None]] = [(chain_steps[0].observation, None)]
            reached += [(step.observation, i) for step, i in zip(chain_steps[1:], chain, strict=False)]
            if summary:
                reached.append((summary, chain[-1]))
            visits += [(key, text, credited) for text, credited in reached]
        if not visits:
            return None
        vectors = self.embed([text for _, text, _ in visits])
        rewards = {i: 0.0 for chain in chains for i in chain}
        for (key, _, credited), vector in zip(visits, vectors, strict=True):
            n = self.states.setdefault(key, NoveltyStates()).visit(vector, opts.novelty_threshold)
            if credited is not None:
                rewards[credited] = coef / n
        return novelty_terms(samples, chains, rewards)

    @hookimpl
    def training_view(
        self, sample: Sample, encode: Callable[[Sequence[ChatMessage]], tuple[int, ...]]
    ) -> Sample | None:
        if sample.kind != "action" or self._modes.get(sample.trial_id) != "memory_off":
            return None
        stripped = strip_tips(sample.context_messages)
        if stripped is None:
            return None
        return attrs.evolve(
            sample,
            context_ids=tuple(int(t) for t in encode(stripped)),
            context_text="\n\n".join(m.content for m in stripped),
            context_messages=stripped,
            rollout_context_ids=sample.rollout_context_ids or sample.context_ids,
            rollout_context_text=sample.rollout_context_text or sample.context_text,
            # π_old of the off-policy ratio is the sampler's, tips in context, also when the trainer recomputes it.
            old_context="rollout",
            meta={**sample.meta, "empo2_mode": "memory_off"},
        )

    # -- checkpoint --------------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The training memory and the novelty states as JSON data (module docstring, "State")."""
        return {
            "version": STATE_VERSION,
            "memory": [
                {"key": list(key), "max_size": store.max_size, **store.to_json()}
                for key, store in sorted(self.memory.items())
            ],
            "novelty": [{"key": list(key), **states.to_json()} for key, states in sorted(self.states.items())],
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Replace the memory and the novelty states with those of ``state`` (from :meth:`state_dict`)."""
        if state.get("version") != STATE_VERSION:
            raise ValueError(f"EMPO² state version {state.get('version')!r}; this plugin reads {STATE_VERSION}")

        def key_of(raw: Sequence[Any]) -> StoreKey:
            seat, agent, arena, kwargs, seed = raw
            return (str(seat), str(agent), str(arena), str(kwargs), int(seed))

        self.memory = {
            key_of(entry["key"]): TipStore.from_json(entry, int(entry["max_size"])) for entry in state["memory"]
        }
        self.states = {key_of(entry["key"]): NoveltyStates.from_json(entry) for entry in state["novelty"]}
