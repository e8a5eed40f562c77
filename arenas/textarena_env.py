"""TextArena's games as arenas: one PettingZoo AEC env around any TextArena env id (``textarena:TicTacToe-v0``).

TextArena (``pip install 'arena-rl[textarena]'``, 0.7.4) is what SPIRAL, UnstableBaselines and OpenEnv build on: its
games speak text both ways, so the adapter passes the game's own text through instead of rendering a board.

- **Observation.** TextArena keeps a message queue per player (the game's rules, boards, the other players'
  actions, admin notes such as "attempted an invalid move") and empties a player's queue when it reads it. The env
  drains every queue after every step into one transcript per player, so nothing is lost between turns; the
  adapter shows the rules (TextArena's ``PROMPT`` messages) as the rules and the rest as the observation, tagged
  ``[GAME]`` / ``[Player 1]`` as TextArena's own ``LLMObservationWrapper`` does. The PettingZoo observation is a
  counter (the number of messages this seat has received) because the text itself does not fit a gymnasium space.
- **Actions** are TextArena's bracketed strings (``[4]``, ``[bet]``, ``[Offer: 2 Wood -> 1 Ore]``) in a ``Text``
  space. The env builds the ``-raw`` variant of an id, without TextArena's default wrappers (0.7.4's ``make``
  applies them: an ``LLMObservationWrapper`` that would give every message twice and an ``ActionFormattingWrapper``
  that would bracket any text), and brackets an unbracketed action itself, as that wrapper does.
- **Invalid moves.** Where the game lists the moves available now (TicTacToe's "Available Moves", Kuhn poker's
  "available actions"), the adapter's ``parse_answer`` lets the engine's lenient parser pick one of them, each
  move's bare words counting as its name (``<action>4</action>``, "I bet."); otherwise it takes the answer's
  ``<action>…</action>``, else its last ``[...]``. An answer with no action, or with one the game does not list,
  is an invalid answer: the engine's
  ``invalid_action`` policy decides (retry with a note, or forfeit; ``random`` forfeits too, as in every free-text
  arena). A move the game itself rejects goes to TextArena's own handling: the player is told why and moves again,
  ``error_allowance`` times (TextArena's default, 1), then loses the game.
- **Rewards** come from TextArena's ``close()`` when the game ends (+1 / -1 / 0 in most games), as the episode's
  return.
"""

from __future__ import annotations

import importlib.util
import re
import string
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import attrs
import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from arena.core.api.arena import Move, ParseResult, SeatView
from arena.core.api.errors import ArenaError
from arena.core.rollout.text_adapter import parse_action

__all__ = [
    "TextArenaAdapter",
    "TextArenaEnv",
    "TextArenaGame",
    "available_moves",
    "find_action",
    "textarena_games",
]

MAX_ACTION_CHARS = 2000
_LISTED_BASE = 1_000_000
# "Available Moves: '[0]', '[1]'" (TicTacToe), "Your available actions are: '[check]', '[bet]'" (Kuhn poker), and the
# like: the game's own list of what the player may do now. The last such line of a transcript is the current one.
_AVAILABLE_LINE = re.compile(r"(?:available|valid|legal)\s+(?:moves|actions)[^:\n]*:([^\n]*)", re.IGNORECASE)
_BRACKETED = re.compile(r"\[[^\[\]\n]{1,200}\]")
_ACTION_TAG = re.compile(r"<\s*action\s*>(.*?)(?:<\s*/\s*action\s*>|$)", re.IGNORECASE | re.DOTALL)
# "# TicTacToe [2 Player]", "# Poker [2-15 Players]": the registry module's header above each game's registrations.
_HEADER = re.compile(r"^#\s*(.+?)\s*\[(\d+)(?:\s*-\s*(\d+))?\s+Players?\]\s*$")
_REGISTRATION = re.compile(r'^register(?:_with_versions)?\(\s*id\s*=\s*"([^"]+)"')
_PLAYERS_KWARG = re.compile(r"\b(?:default_)?num_players\s*=\s*(\d+)")


@attrs.frozen
class TextArenaGame:
    """One TextArena env id and its player count, read from TextArena's registry module without importing it."""

    env_id: str
    min_players: int
    max_players: int

    @property
    def arena_id(self) -> str:
        return f"textarena:{self.env_id}"


def textarena_games() -> list[TextArenaGame]:
    """Every game id TextArena registers (not its ``-raw``/``-train`` variants), with its number of players.

    Read from the text of ``textarena/envs/__init__.py`` rather than by importing textarena, which takes seconds
    (it imports nltk and openai) and would slow down every ``arena`` command; the registry's header comments
    ("# TicTacToe [2 Player]") give the player counts. [] when textarena is not installed.
    """
    spec = importlib.util.find_spec("textarena")
    if spec is None or not spec.submodule_search_locations:
        return []
    registry = Path(next(iter(spec.submodule_search_locations))) / "envs" / "__init__.py"
    if not registry.is_file():
        return []
    games: list[TextArenaGame] = []
    low, high = 2, 2
    for line in registry.read_text(encoding="utf-8").splitlines():
        header = _HEADER.match(line.strip())
        if header:
            low = int(header.group(2))
            high = int(header.group(3) or header.group(2))
            continue
        registration = _REGISTRATION.match(line.strip())
        if not registration:
            continue
        env_id = registration.group(1)
        if env_id.endswith(("-raw", "-train")):
            continue
        fixed = _PLAYERS_KWARG.search(line)
        if fixed:  # PublicGoodsGame-v0 fixes num_players=3, MarketEntryGame-v0 defaults to 4
            games.append(TextArenaGame(env_id, int(fixed.group(1)), max(high, int(fixed.group(1)))))
        else:
            games.append(TextArenaGame(env_id, low, high))
    return games


def available_moves(text: str) -> list[str]:
    """The bracketed moves of the last "available moves" line of ``text`` (the game's current list), or []."""
    lines = _AVAILABLE_LINE.findall(text)
    for listing in reversed(lines):
        moves = _BRACKETED.findall(listing)
        if moves:
            return moves
    return []


def find_action(answer: str) -> str | None:
    """The action an answer gives: inside its last ``<action>`` tag, else its last ``[...]``; bracketed.

    ``<action>4</action>`` becomes ``[4]`` (TextArena's ``ActionFormattingWrapper`` brackets an action the same way);
    ``None`` when the answer names nothing.
    """
    if not isinstance(answer, str):
        return None
    tagged = [t.strip() for t in _ACTION_TAG.findall(answer) if t.strip()]
    text = tagged[-1] if tagged else answer
    bracketed = _BRACKETED.findall(text)
    if bracketed:
        return bracketed[-1].strip()
    if tagged:
        inner = text.strip().strip("'\"`").strip()
        return f"[{inner}]" if inner and len(inner) <= 200 and "\n" not in inner else None
    return None


class TextArenaEnv(AECEnv[str, np.ndarray, str]):
    """A PettingZoo AEC env around one TextArena game; seats ``player_0`` … are TextArena's player ids 0 ….

    ``players`` defaults to the game's smallest player count; ``error_allowance`` is how many rejected moves in a
    row TextArena lets a player resubmit before it loses (TextArena's default, 1); other keyword arguments go to
    the TextArena env's constructor (``max_rounds``, ``num_rounds``, …).
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": [], "name": "textarena_v0", "is_parallelizable": False}

    def __init__(self, game: TextArenaGame, players: int | None = None, error_allowance: int = 1, **env_kwargs: Any):
        super().__init__()
        n = game.min_players if players is None else int(players)
        if not game.min_players <= n <= game.max_players:
            span = (
                str(game.min_players)
                if game.min_players == game.max_players
                else (f"{game.min_players}-{game.max_players}")
            )
            raise ArenaError(f"arena {game.arena_id!r} is played by {span} players, not players={players}")
        if error_allowance < 0:
            raise ArenaError(f"arena {game.arena_id!r}: error_allowance must be >= 0, got {error_allowance}")
        self.game = game
        self.num_players = n
        self.error_allowance = int(error_allowance)
        self.env_kwargs = dict(env_kwargs)
        self.possible_agents = [f"player_{i}" for i in range(n)]
        self.agents: list[str] = []
        self.render_mode = None
        self.arena_text_adapter = TextArenaAdapter()
        self._observation_space = spaces.Box(low=0, high=np.iinfo(np.int64).max, shape=(1,), dtype=np.int64)
        self._action_space = spaces.Text(max_length=MAX_ACTION_CHARS, min_length=0, charset=string.printable)
        self._ta_env: Any = None  # built on the first reset: some TextArena games load word lists when built
        self.transcripts: dict[str, list[tuple[int, str, str]]] = {a: [] for a in self.possible_agents}
        self.game_info: dict[int, dict[str, Any]] = {}
        self.final_rewards: dict[str, float] = {}
        self.rewards: dict[str, float] = {}
        self._cumulative_rewards: dict[str, float] = {}
        self.terminations: dict[str, bool] = {}
        self.truncations: dict[str, bool] = {}
        self.infos: dict[str, dict[str, Any]] = {}
        self.agent_selection = self.possible_agents[0]

    # -- PettingZoo API -------------------------------------------------------------------------------------

    def observation_space(self, agent: str) -> spaces.Box:
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Text:
        return self._action_space

    def observe(self, agent: str) -> np.ndarray:
        return np.array([len(self.transcripts[agent])], dtype=np.int64)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        if self._ta_env is None:
            self._ta_env = _make_raw(self.game, self.env_kwargs)
        self._ta_env.reset(num_players=self.num_players, seed=seed)
        state = getattr(self._ta_env, "state", None)
        if state is not None and hasattr(state, "error_allowance"):
            state.error_allowance = self.error_allowance
        self.transcripts = {a: [] for a in self.possible_agents}
        self.game_info, self.final_rewards = {}, {}
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self._drain()
        self.agent_selection = self._current_agent()

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        text = action if isinstance(action, str) else "" if action is None else str(action)
        text = text.strip()[:MAX_ACTION_CHARS]
        if "[" not in text and "]" not in text:
            text = f"[{text}]"
        done, step_info = self._ta_env.step(action=text)
        self._drain()
        self._cumulative_rewards[agent] = 0.0
        self.rewards = {a: 0.0 for a in self.agents}
        if done:
            rewards, game_info = self._ta_env.close()
            self.game_info = dict(game_info or {})
            self.final_rewards = {a: float((rewards or {}).get(i, 0.0)) for i, a in enumerate(self.possible_agents)}
            self.rewards = dict(self.final_rewards)
            self.terminations = {a: True for a in self.agents}
            self.infos = {a: {"reason": self.game_info.get(i, {}).get("reason", "")} for i, a in enumerate(self.agents)}
        else:
            self.infos = {a: dict(step_info or {}) if a == agent else {} for a in self.agents}
            self.agent_selection = self._current_agent()
        self._accumulate_rewards()

    def render(self) -> None:
        return None

    def close(self) -> None:
        return None

    # -- TextArena plumbing ---------------------------------------------------------------------------------

    def _current_agent(self) -> str:
        return self.possible_agents[int(self._ta_env.state.current_player_id)]

    def _drain(self) -> None:
        """Move every player's queued messages into the transcripts (TextArena hands a queue over only once)."""
        queues = self._ta_env.state.observations
        for pid, agent in enumerate(self.possible_agents):
            for sender, message, kind in queues.get(pid, []):
                self.transcripts[agent].append((int(sender), str(message), getattr(kind, "name", str(kind))))
            queues[pid] = []

    def role(self, sender: int) -> str:
        roles = getattr(self._ta_env.state, "role_mapping", None) or {}
        return str(roles.get(sender, "GAME" if sender < 0 else f"Player {sender}"))


def _make_raw(game: TextArenaGame, env_kwargs: dict[str, Any]) -> Any:
    """TextArena's env without its default wrappers (the ``-raw`` registration), or one clear error."""
    try:
        import textarena as ta
    except ImportError as exc:
        raise ArenaError(
            f"arena {game.arena_id!r} needs TextArena: pip install 'arena-rl[textarena]' (textarena==0.7.4)"
        ) from exc
    raw_id = f"{game.env_id}-raw"
    try:
        return ta.make(raw_id if raw_id in ta.envs.registration.ENV_REGISTRY else game.env_id, **env_kwargs)
    except TypeError as exc:
        raise ArenaError(f"arena {game.arena_id!r}: TextArena rejected arena_kwargs {env_kwargs}: {exc}") from exc


class TextArenaAdapter:
    """Text for a TextArena seat: the game's own words, and its bracketed actions parsed out of free text."""

    def _env(self, view: SeatView) -> TextArenaEnv:
        return view.env.unwrapped

    def _messages(self, view: SeatView) -> Sequence[tuple[int, str, str]]:
        return self._env(view).transcripts.get(view.agent, [])

    def rules(self, view: SeatView) -> str:
        env = self._env(view)
        prompts = [text for _, text, kind in self._messages(view) if kind == "PROMPT"]
        head = f"This is TextArena's {env.game.env_id} ({env.num_players} players); you are {env.role(view.seat)}."
        return "\n".join([head, *prompts]).strip()

    def observation(self, view: SeatView) -> str:
        env = self._env(view)
        lines = [f"[{env.role(sender)}] {text}" for sender, text, kind in self._messages(view) if kind != "PROMPT"]
        return "\n".join(lines) if lines else "(nothing yet)"

    def legal_moves(self, view: SeatView) -> list[Any]:
        return []  # free text: the game lists its moves in the observation, parse_answer reads the answer

    def action_name(self, view: SeatView, action: Any) -> str:
        return str(action)  # TextArena itself shows every player's action to everyone

    def answer_format(self, view: SeatView) -> str:
        listed = available_moves(self.observation(view))
        example = listed[0] if listed else "[your move]"
        return (
            f"Give your move in square brackets, exactly as the game asks, inside <action>...</action>, "
            f"for example <action>{example}</action>."
        )

    def parse_answer(self, view: SeatView, answer: str) -> ParseResult:
        listed = available_moves(self.observation(view))
        if listed:
            # The game lists its moves: the engine's lenient parser, with each move's bare words as an alias
            # ("<action>4</action>", "I bet."), picks one. Ids far above any count, so that a bare number is
            # read as a move's words, never as a position in the list.
            moves = [Move(_LISTED_BASE + i, m, (m.strip("[] "),)) for i, m in enumerate(listed)]
            parsed = parse_action(answer, moves)
            if parsed.valid:
                chosen = listed[int(parsed.action) - _LISTED_BASE]
                return ParseResult(action=chosen, move=chosen)
        action = find_action(answer)
        if action is None:
            return ParseResult(action=None, error="no [move] in the answer")
        if listed:
            shown = ", ".join(listed[:12]) + (" …" if len(listed) > 12 else "")
            return ParseResult(action=None, move=action, error=f"{action} is not an available move ({shown})")
        return ParseResult(action=action, move=action)

    def episode_summary(self, view: SeatView) -> str:
        env = self._env(view)
        reward = env.final_rewards.get(view.agent)
        reason = str(env.game_info.get(view.seat, {}).get("reason", "")).strip()
        if reward is None:
            return "The game is over." + (f" {reason}" if reason else "")
        return f"The game is over. {reason} Your reward: {reward:+g}.".replace("  ", " ")

    def episode_details(self, view: SeatView) -> dict[str, Any]:
        env = self._env(view)
        info = env.game_info.get(view.seat, {})
        return {
            "score": env.final_rewards.get(view.agent),
            "outcome_key": str(info.get("reason", "")),
            "invalid_move": bool(info.get("invalid_move", False)),
            "turns": int(info.get("turn_count", 0) or 0),
        }


class TextArenaRandom:
    """A seat that plays a uniformly random move among those the game lists now (``[Accept]``-style tokens of the
    rules when the game lists none), so any listed TextArena game has a baseline opponent without a model."""

    def __init__(self, seed: int) -> None:
        self.name = "textarena-random"
        self._rng = np.random.default_rng(seed)

    def act(self, view: SeatView) -> Any:
        adapter = TextArenaAdapter()
        moves = available_moves(adapter.observation(view))
        if not moves:
            moves = sorted(set(re.findall(r"'(\[[A-Za-z][A-Za-z ]{0,30}\])'", adapter.rules(view))))
        if not moves:
            game = view.env.unwrapped.game.arena_id
            raise ArenaError(f"textarena-random: {game} lists no moves to choose from; seat a model there instead")
        return moves[int(self._rng.integers(len(moves)))]
