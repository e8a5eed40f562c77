"""arena-guess: a number-guessing arena with readable text, a scripted opponent and a memory plugin.

The game: the ``hider`` hides a whole number from 1 to ``numbers``; the ``guesser`` then has ``guesses`` tries,
and after each wrong one is told whether the number is higher or lower. Found: guesser +1, hider -1; not found:
guesser -1, hider +1. Seats in order: ``guesser`` (seat 0), ``hider`` (seat 1); the hider moves first.

What this module shows a plugin author (docs/plugins.md explains each):

* ``GuessEnv``: a plain PettingZoo AEC env with an action mask; it passes ``pettingzoo.test.api_test``.
* ``GuessAdapter``: the text the model reads. Each seat sees only its own secrets, ``action_name`` names the
  hider's move "hides a number" from any view (it is shown to every seat), and the move names are
  "guess 3" / "hide 3", never bare digits (a digit name would shadow the parser's action-id fallback).
* ``GuessBot``: a scripted opponent for either seat, registered with ``register_opponents``.
* ``retrieve_memory``: from the second episode of a trial on, the guesser's prompt lists what earlier episodes
  showed ("in episode 1 the number was higher than 5"), read from ``EpisodeRecord.details`` (the adapter's
  ``episode_details``). It runs only when the plugin is enabled (``--plugin guess``); the arena and the opponent
  are there as soon as the package is installed.

Only ``arena.core`` and third-party libraries are imported.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs
import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from arena.core import ArenaError, MemoryItem, Move, Opponent, SeatView, Turn, hookimpl, read_settings, setting

NAME = "guess"  # the entry-point name: plugin settings live under options.guess
ARENA_ID = "guess"
GUESSER, HIDER = "guesser", "hider"
HIGHER, LOWER, CORRECT = "higher", "lower", "correct"


# -- the environment: nothing here knows about arena ------------------------------------------------------------


class GuessEnv(AECEnv):
    """Action ``k`` means the number ``k`` (to hide, or to guess); action 0 is never legal, so the action ids the
    prompt lists and the numbers agree (a model answering a bare "3" means 3 either way).

    Observation of each agent: ``{"observation": int64 [secret, low, high, guesses_left], "action_mask"}``;
    ``secret`` is 0 for the guesser (it never sees it), ``low..high`` the range the answers so far allow.
    """

    metadata: ClassVar[dict[str, Any]] = {"name": "guess_v0", "render_modes": [], "is_parallelizable": False}

    def __init__(self, numbers: int = 10, guesses: int = 3) -> None:
        super().__init__()
        if int(numbers) < 2 or int(guesses) < 1:
            # An ArenaError is printed as one line by the CLI (a bad arena_kwargs value is the user's to fix).
            raise ArenaError(f"arena 'guess' needs numbers >= 2 and guesses >= 1, got {numbers} and {guesses}")
        self.numbers, self.max_guesses = int(numbers), int(guesses)
        self.possible_agents = [GUESSER, HIDER]
        top = max(self.numbers, self.max_guesses)
        self._obs_space = spaces.Dict(
            {
                "observation": spaces.Box(0, top, shape=(4,), dtype=np.int64),
                "action_mask": spaces.Box(0, 1, shape=(self.numbers + 1,), dtype=np.int8),
            }
        )
        self._act_space = spaces.Discrete(self.numbers + 1)
        self.render_mode = None
        self.secret: int | None = None
        self.history: list[tuple[int, str]] = []  # (guess, answer) in order

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self._obs_space

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self._act_space

    def bounds(self) -> tuple[int, int]:
        """The range of numbers the answers so far allow (public knowledge)."""
        low, high = 1, self.numbers
        for guess, answer in self.history:
            if answer == HIGHER:
                low = max(low, guess + 1)
            elif answer == LOWER:
                high = min(high, guess - 1)
        return low, high

    def action_mask(self, agent: str) -> np.ndarray:
        mask = np.zeros(self.numbers + 1, dtype=np.int8)
        if agent in self.agents and agent == self.agent_selection and not self.terminations[agent]:
            mask[1:] = 1  # only the seat to move has legal moves
            if agent == GUESSER:
                for guess, _ in self.history:
                    mask[guess] = 0  # no number guessed twice
        return mask

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        low, high = self.bounds()
        secret = self.secret if agent == HIDER and self.secret is not None else 0
        left = self.max_guesses - len(self.history)
        return {
            "observation": np.array([secret, low, high, left], dtype=np.int64),
            "action_mask": self.action_mask(agent),
        }

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self.agents = self.possible_agents[:]
        self.secret = None
        self.history = []
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self.agent_selection = HIDER

    def step(self, action: int | None) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0
        self.rewards = {a: 0.0 for a in self.agents}
        number = int(action)  # type: ignore[arg-type]
        if agent == HIDER:
            self.secret = number
            self.agent_selection = GUESSER
        else:
            assert self.secret is not None
            answer = CORRECT if number == self.secret else HIGHER if self.secret > number else LOWER
            self.history.append((number, answer))
            if answer == CORRECT or len(self.history) == self.max_guesses:
                won = answer == CORRECT
                self.rewards = {GUESSER: 1.0 if won else -1.0, HIDER: -1.0 if won else 1.0}
                self.terminations = {a: True for a in self.agents}
        self._accumulate_rewards()

    def render(self) -> None:
        return None

    def close(self) -> None:
        return None

    @property
    def found(self) -> bool:
        return bool(self.history) and self.history[-1][1] == CORRECT


def make_guess_env(**kwargs: Any) -> GuessEnv:
    """The factory ``register_arenas`` registers: ``kwargs`` are the config's ``arena_kwargs``."""
    env = GuessEnv(**kwargs)
    env.arena_text_adapter = GuessAdapter()  # how arena finds the text: env.unwrapped.arena_text_adapter
    return env


# -- the text the model reads ----------------------------------------------------------------------------------


def _env(view: SeatView) -> GuessEnv:
    return view.env.unwrapped  # type: ignore[no-any-return]


def _answers(history: list[tuple[int, str]]) -> str:
    said = {HIGHER: "the number is higher", LOWER: "the number is lower", CORRECT: "correct"}
    return ", ".join(f"{guess} ({said[answer]})" for guess, answer in history) or "none yet"


class GuessAdapter:
    """``arena.core.TextAdapter`` for ``GuessEnv``, plus the optional ``episode_details``."""

    def rules(self, view: SeatView) -> str:
        env = _env(view)
        game = (
            f"Number guessing. The hider hides a whole number from 1 to {env.numbers}; the guesser has "
            f"{env.max_guesses} guesses and after each wrong one is told whether the number is higher or lower. "
            "If the guesser finds the number the guesser wins (+1), otherwise the hider wins (+1)."
        )
        role = "You are the guesser." if view.agent == GUESSER else "You are the hider: choose the number to hide."
        return f"{game} {role}"

    def observation(self, view: SeatView) -> str:
        env = _env(view)
        low, high = env.bounds()
        left = env.max_guesses - len(env.history)
        if view.agent == HIDER:  # only the hider's text ever contains the secret
            if env.secret is None:
                return "You have not hidden a number yet."
            return f"You hid {env.secret}. The guesser's guesses: {_answers(env.history)}."
        return (
            f"Your guesses so far: {_answers(env.history)}. The number is between {low} and {high}. "
            f"Guesses left: {left}."
        )

    def legal_moves(self, view: SeatView) -> list[Move]:
        verb = "hide" if view.agent == HIDER else "guess"
        # Names such as "guess 3", never a bare "3": the parser reads a name before it reads a bare integer as an
        # action id, so a digit name that differs from its id takes that id away from the model.
        return [Move(a, f"{verb} {a}", (f"{verb} number {a}",)) for a in view.legal_actions()]

    def action_name(self, view: SeatView, action: int) -> str:
        # Called with the *acting* seat's view and shown to every seat, so it must not depend on the view: the
        # hider's move is named by the phase of the game (no number hidden yet), never by the number itself.
        if _env(view).secret is None:
            return "hides a number"
        return f"guess {action}"

    def episode_summary(self, view: SeatView) -> str:
        env = _env(view)
        if view.agent == HIDER:
            verdict = "found it: you lose" if env.found else "did not find it: you win"
            return f"You hid {env.secret}; the guesser {verdict}. Guesses: {_answers(env.history)}."
        if env.found:
            return f"You found the number with guess {len(env.history)} of {env.max_guesses}: you win."
        # The secret is not revealed: the next episode of the trial may hide the same number.
        tried = _answers(env.history)
        return f"You did not find the number in {env.max_guesses} guesses: you lose. Your guesses: {tried}."

    def episode_details(self, view: SeatView) -> dict[str, Any]:
        """JSON facts per LLM seat, stored in ``EpisodeRecord.details[agent]``: what this seat may know."""
        env = _env(view)
        key = "found" if env.found else "missed"
        if view.agent == HIDER:
            return {"hidden": env.secret, "found": env.found, "outcome_key": key}
        return {"guesses": [list(g) for g in env.history], "found": env.found, "outcome_key": key}


# -- a scripted opponent -----------------------------------------------------------------------------------------


class GuessBot:
    """As the hider: one number per trial (seeded, or ``guess-bot:K``), the same in every episode. As the
    guesser: the middle of the range its own observation allows. It reads only its ``SeatView``."""

    def __init__(self, seed: int, hide: int | None = None) -> None:
        self.name = "guess-bot" if hide is None else f"guess-bot:{hide}"
        self.rng = np.random.default_rng(seed)
        self.hide = hide
        self.hidden: int | None = None  # kept for the whole trial

    def act(self, view: SeatView) -> int:
        legal = view.legal_actions()
        if view.agent == HIDER:
            if self.hide is not None:
                if self.hide not in legal:
                    raise ArenaError(f"{self.name} cannot hide {self.hide}: this arena's numbers are 1 to {len(legal)}")
                return self.hide
            if self.hidden is None or self.hidden not in legal:
                self.hidden = int(self.rng.choice(legal))
            return self.hidden
        _, low, high, _ = (int(x) for x in view.observation["observation"])
        middle = (low + high) // 2
        return min(legal, key=lambda a: (abs(a - middle), a))


def guess_bot(arena_id: str, arg: str | None, seed: int) -> Opponent:
    """The factory: ``guess-bot`` or ``guess-bot:K`` (always hide K). Created per seat per trial, seeded."""
    if arg is None:
        return GuessBot(seed)
    if not arg.isdigit() or int(arg) < 1:
        raise ArenaError(f"guess-bot:{arg}: the argument is the number to hide, e.g. guess-bot:7")
    return GuessBot(seed, int(arg))


# -- the plugin -----------------------------------------------------------------------------------------------


@attrs.frozen
class Settings:
    """guess's settings: ``options.guess`` (``arena play guess ... options.guess.max_facts=3``)."""

    max_facts: int = setting(8, "at most this many facts in a prompt, the latest ones", attrs.validators.ge(1))
    header: str = setting("What earlier episodes of this trial showed:", "the header line of the facts")


@hookimpl
def register_arenas(register: Any) -> None:
    register(
        "guess", make_guess_env, description="Guess the hidden number (default 1-10, 3 guesses)", source="arena-guess"
    )


@hookimpl
def register_opponents(register: Any) -> None:
    register(
        "guess-bot",
        guess_bot,
        arenas=("guess",),
        description="hides one number per trial (guess-bot:K hides K); guesses the middle of the range",
    )


@hookimpl
def retrieve_memory(turn: Turn) -> list[MemoryItem] | None:
    if turn.trial.arena_id != ARENA_ID:
        return None
    opts = read_settings(turn.trial.options, NAME, Settings)
    facts = []
    for episode in turn.earlier_episodes:
        # details[agent] holds only this seat's own facts (the adapter's episode_details for this seat).
        for guess, answer in episode.details.get(turn.agent, {}).get("guesses", []):
            relation = "" if answer == CORRECT else f"{answer} than "
            facts.append(f"in episode {episode.index + 1} the number was {relation}{guess}")
    if not facts:
        return None
    # Equal scores keep this order (the prompt sorts by score, stably).
    return [MemoryItem(text=fact, section=opts.header, source=NAME) for fact in facts[-opts.max_facts :]]
