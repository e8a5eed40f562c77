"""A minimal free-text arena for the core tests: guess the seed's digit, answered as text rather than a move.

One agent, one step, a ``gymnasium.spaces.Text`` action; the adapter implements the optional free-text methods
(``parse_answer``, ``answer_format``, ``episode_details``), so the engine's free-text path runs without the coding
arena. Register it with ``register_guess_arena()`` (undo with ``arena.core.host.catalog.reset()``).
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from arena.core.api.arena import Move, ParseResult, SeatView
from arena.core.host import catalog

ARENA_ID = "guess_digit"


class GuessDigitEnv(AECEnv[str, np.ndarray, str]):
    metadata: ClassVar[dict[str, Any]] = {"render_modes": [], "name": "guess_digit_v0", "is_parallelizable": False}

    def __init__(self) -> None:
        self.possible_agents = ["player_0"]
        self.agents: list[str] = []
        self.target = 0
        self.guess: str | None = None
        self._obs_space = spaces.Box(0, 1, shape=(1,), dtype=np.int64)
        self._act_space = spaces.Text(max_length=64)
        self.arena_text_adapter = GuessAdapter()
        self.render_mode = None

    def observation_space(self, agent: str) -> spaces.Box:
        return self._obs_space

    def action_space(self, agent: str) -> spaces.Text:
        return self._act_space

    def observe(self, agent: str) -> np.ndarray:
        return np.zeros(1, dtype=np.int64)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self.target = int(seed or 0) % 10
        self.guess = None
        self.agents = list(self.possible_agents)
        self.agent_selection = "player_0"
        self.rewards = {"player_0": 0.0}
        self._cumulative_rewards = {"player_0": 0.0}
        self.terminations = {"player_0": False}
        self.truncations = {"player_0": False}
        self.infos: dict[str, dict[str, Any]] = {"player_0": {}}

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self.guess = str(action)
        self.rewards = {agent: 1.0 if self.guess == str(self.target) else 0.0}
        self.terminations = {agent: True}
        self._cumulative_rewards[agent] = 0.0
        self._accumulate_rewards()

    def arena_outcome(self, returns: dict[str, float], agent: str) -> str:
        return "win" if returns[agent] >= 1.0 else "loss"


class GuessAdapter:
    def rules(self, view: SeatView) -> str:
        return "Guess the hidden digit."

    def observation(self, view: SeatView) -> str:
        return "The digit is between 0 and 9."

    def legal_moves(self, view: SeatView) -> list[Move]:
        return []

    def action_name(self, view: SeatView, action: int) -> str:
        return str(action)

    def episode_summary(self, view: SeatView) -> str:
        env = view.env.unwrapped
        return f"The digit was {env.target}; you guessed {env.guess}."

    def answer_format(self, view: SeatView) -> str:
        return "Answer with one digit inside <answer>...</answer>."

    def parse_answer(self, view: SeatView, answer: str) -> ParseResult:
        match = re.search(r"<answer>\s*(\d)\s*</answer>", answer)
        if match is None:
            return ParseResult(action=None, error="no <answer> digit")
        return ParseResult(action=match.group(1), move=f"guess {match.group(1)}")

    def episode_details(self, view: SeatView) -> dict[str, Any]:
        env = view.env.unwrapped
        won = env.guess == str(env.target)
        return {"task_id": f"digit-{env.target}", "outcome_key": str(env.guess), "score": float(won)}


def register_guess_arena() -> None:
    catalog.arenas().registrar("tests")(ARENA_ID, GuessDigitEnv, description="test arena")


LETTERS_ID = "letters"
LETTER_POOL = "xkq"  # rare in the toy model's gibberish ("ix", "ka"; never q): mixed, imperfect groups


class LettersEnv(GuessDigitEnv):
    """A rubric-scored free-text task: write text containing given letters (one rubric per letter).

    Score = fraction of the seed's letters present in the answer; the critique names the missing ones. Random text
    from the toy model satisfies some rubrics by chance, so groups have mixed scores (HeRL and GOLF tests).
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": [], "name": "letters_v0", "is_parallelizable": False}

    def __init__(self) -> None:
        super().__init__()
        self.letters: tuple[str, ...] = ()
        self.arena_text_adapter = LettersAdapter()

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        super().reset(seed=seed, options=options)
        s = int(seed or 0)
        self.letters = tuple(LETTER_POOL[(s + k) % 3] for k in range(1 + s % 2))

    def satisfied(self) -> list[bool]:
        return [letter in (self.guess or "") for letter in self.letters]

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self.guess = str(action)
        met = self.satisfied()
        self.rewards = {agent: sum(met) / len(met)}
        self.terminations = {agent: True}
        self._cumulative_rewards[agent] = 0.0
        self._accumulate_rewards()


class LettersAdapter(GuessAdapter):
    def rules(self, view: SeatView) -> str:
        return "Write a short text."

    def observation(self, view: SeatView) -> str:
        return task_text(view.env.unwrapped)

    def answer_format(self, view: SeatView) -> str:
        return "Reply with the text only."

    def parse_answer(self, view: SeatView, answer: str) -> ParseResult:
        return ParseResult(action=answer.strip(), move="text")

    def episode_summary(self, view: SeatView) -> str:
        env = view.env.unwrapped
        missing = [f"Use the letter {x!r}." for x, ok in zip(env.letters, env.satisfied(), strict=True) if not ok]
        return "Unmet: " + " ".join(missing) if missing else "All constraints met."

    def episode_details(self, view: SeatView) -> dict[str, Any]:
        env = view.env.unwrapped
        met = env.satisfied()
        return {
            "task_id": "letters-" + "".join(env.letters),
            "score": sum(met) / len(met),
            "outcome_key": ",".join(str(i) for i, ok in enumerate(met) if ok),
            "task_text": task_text(env),
            "rubrics": [
                {"description": f"Use the letter {x!r}.", "satisfied": ok}
                for x, ok in zip(env.letters, met, strict=True)
            ],
            "critique": self.episode_summary(view),
        }


def task_text(env: LettersEnv) -> str:
    return "Write text that uses the letters " + ", ".join(repr(x) for x in env.letters) + "."


def register_letters_arena() -> None:
    catalog.arenas().registrar("tests")(LETTERS_ID, LettersEnv, description="test arena with rubrics")
