"""``text_maze``: a single-agent text world of rooms, keys, locked doors and containers with a sparse reward.

In the spirit of ScienceWorld, only information gathered by exploring leads to the reward: the treasure lies in one
of two or three chests in a locked room, the other chests are trapped (opening one ends the episode with 0), and a
note somewhere in the house names the right chest. Keys of a colour open doors of that colour; drawers, cupboards
and crates may hide keys or the note. Reward 1.0 only for taking the treasure; a step limit truncates the episode.

Layouts are generated from a *layout id* (``generate_layout``); ``reset(seed)`` maps the seed to a layout id of the
env's split, so every tenth layout id is held out (``split="test"``) and never seen by ``split="train"``.

The command vocabulary is fixed (``COMMANDS``, the same ``Discrete(22)`` for every layout and size); the action
mask marks the commands that make sense in the current room. ``explorer_action`` is a scripted expert that uses
only what the player has observed; ``solve`` plays an episode with it (the oracle SAFARI's data construction needs),
and ``get_state``/``set_state`` copy and restore the whole env.
"""

from __future__ import annotations

import copy
import itertools
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

import attrs
import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from arena.core.api.arena import Move, SeatView

__all__ = [
    "CHESTS",
    "COLOURS",
    "COMMANDS",
    "DIRECTIONS",
    "HELD_OUT_EVERY",
    "SAFE_CONTAINERS",
    "SIZES",
    "Command",
    "Layout",
    "MazeState",
    "SizeSpec",
    "TextMazeAdapter",
    "TextMazeEnv",
    "TextMazeExplorer",
    "explorer_action",
    "generate_layout",
    "is_held_out",
    "iter_layouts",
    "layout_id_for",
    "note_before_chest",
    "solve",
]

COLOURS = ("red", "blue", "green", "yellow")
DIRECTIONS = ("north", "south", "east", "west")
_DELTA = {"north": (0, -1), "south": (0, 1), "east": (1, 0), "west": (-1, 0)}
_OPPOSITE = {"north": "south", "south": "north", "east": "west", "west": "east"}
SAFE_CONTAINERS = ("drawer", "cupboard", "crate")
CHESTS = ("gold chest", "silver chest", "bronze chest")
CONTAINERS = SAFE_CONTAINERS + CHESTS
ROOM_NAMES = (
    "kitchen",
    "hall",
    "library",
    "study",
    "cellar",
    "attic",
    "pantry",
    "gallery",
    "bedroom",
    "bathroom",
    "workshop",
    "chapel",
    "armoury",
    "greenhouse",
    "nursery",
    "ballroom",
)
HELD_OUT_EVERY = 10  # layout ids with id % 10 == 9 form the held-out (test) split
_GRID = 4  # rooms sit on cells of a 4x4 grid, so exits are geometrically consistent


@attrs.frozen
class Command:
    """One entry of the fixed vocabulary: ``verb`` (go, take_key, unlock, open, ...) and its ``arg``."""

    verb: str
    arg: str
    name: str
    aliases: tuple[str, ...] = ()


def _build_commands() -> tuple[Command, ...]:
    commands = [Command("go", d, f"go {d}", (d, d[0])) for d in DIRECTIONS]
    commands += [Command("look", "", "look", ("l",)), Command("inventory", "", "inventory", ("i", "inv"))]
    commands += [Command("take_key", c, f"take {c} key", (f"get {c} key",)) for c in COLOURS]
    commands += [Command("unlock", c, f"unlock {c} door", (f"open {c} door",)) for c in COLOURS]
    commands += [Command("open", x, f"open {x}", (f"search {x}",)) for x in CONTAINERS]
    commands += [Command("read", "note", "read note", ("read the note",))]
    commands += [Command("take_treasure", "treasure", "take treasure", ("take the treasure", "get treasure"))]
    return tuple(commands)


COMMANDS: tuple[Command, ...] = _build_commands()
ACTION_OF: dict[str, int] = {c.name: i for i, c in enumerate(COMMANDS)}


@attrs.frozen
class SizeSpec:
    """A difficulty preset: rooms, locked doors on the way to the treasure, chests, extra containers, the chance
    that a key or the note is hidden in a container, keys that open nothing, and the default step limit."""

    rooms: int
    locks: int
    chests: int
    containers: int
    hide: float
    decoy_keys: int
    max_steps: int


SIZES: dict[str, SizeSpec] = {
    "small": SizeSpec(rooms=4, locks=1, chests=2, containers=1, hide=0.0, decoy_keys=0, max_steps=30),
    "medium": SizeSpec(rooms=6, locks=2, chests=2, containers=2, hide=0.5, decoy_keys=1, max_steps=40),
    "large": SizeSpec(rooms=9, locks=3, chests=3, containers=3, hide=1.0, decoy_keys=1, max_steps=60),
}


@attrs.frozen
class Layout:
    """A generated house; never mutated. Room 0 is the start; ``vault`` holds the chests.

    ``exits[r]`` maps a direction to the neighbouring room; ``locks`` maps an edge (the sorted room pair) to the
    colour of its door; ``keys`` maps a colour to (room, container or ``None`` when lying in the open); ``note`` is
    (room, container or ``None``); ``containers`` maps each container present to its room.
    """

    layout_id: int
    size: str
    rooms: tuple[str, ...]
    exits: tuple[Mapping[str, int], ...]
    locks: Mapping[tuple[int, int], str]
    keys: Mapping[str, tuple[int, str | None]]
    containers: Mapping[str, int]
    note: tuple[int, str | None]
    vault: int
    treasure_chest: str

    @property
    def task_id(self) -> str:
        return f"{self.size}:{self.layout_id}"

    def lock_between(self, a: int, b: int) -> str | None:
        return self.locks.get((min(a, b), max(a, b)))

    def note_text(self) -> str:
        return f"The treasure is in the {self.treasure_chest}. The other chests are trapped."


@attrs.define
class MazeState:
    """What changes during an episode; ``known_edges`` is the player's map: (room, direction) → room walked to."""

    room: int = 0
    steps: int = 0
    inventory: list[str] = attrs.field(factory=list)
    unlocked: list[str] = attrs.field(factory=list)
    opened: list[str] = attrs.field(factory=list)
    note_read: bool = False
    visited: list[int] = attrs.field(factory=list)
    known_edges: dict[tuple[int, str], int] = attrs.field(factory=dict)
    milestones: list[str] = attrs.field(factory=list)
    last: str = ""
    trapped: str | None = None
    has_treasure: bool = False


# -- splits and generation --------------------------------------------------------------------------------------


def is_held_out(layout_id: int) -> bool:
    """True for the layout ids of the test split (every tenth id)."""
    return layout_id % HELD_OUT_EVERY == HELD_OUT_EVERY - 1


def layout_id_for(seed: int, split: str) -> int:
    """The layout id a reset seed selects: the seed-th id of the split (a bijection, so no two seeds collide).

    ``train``: ids with ``id % 10 != 9``; ``test``: ids with ``id % 10 == 9``; ``all``: the seed itself.
    """
    seed = int(seed) % (1 << 63)
    per_block = HELD_OUT_EVERY - 1
    if split == "train":
        return (seed // per_block) * HELD_OUT_EVERY + seed % per_block
    if split == "test":
        return seed * HELD_OUT_EVERY + HELD_OUT_EVERY - 1
    if split == "all":
        return seed
    raise ValueError(f"split must be 'train', 'test' or 'all', got {split!r}")


def _grow_tree(rng: np.random.Generator, n: int) -> tuple[list[tuple[int, int]], list[dict[str, int]]]:
    """``n`` rooms on grid cells joined by a random spanning tree of neighbouring cells."""
    start = (int(rng.integers(_GRID)), int(rng.integers(_GRID)))
    cells = [start]
    exits: list[dict[str, int]] = [{}]
    while len(cells) < n:
        options = []
        for index, (x, y) in enumerate(cells):
            for d in DIRECTIONS:
                nx, ny = x + _DELTA[d][0], y + _DELTA[d][1]
                if 0 <= nx < _GRID and 0 <= ny < _GRID and (nx, ny) not in cells:
                    options.append((index, d, (nx, ny)))
        index, d, cell = options[int(rng.integers(len(options)))]
        cells.append(cell)
        exits.append({_OPPOSITE[d]: index})
        exits[index][d] = len(cells) - 1
    return cells, exits


def _path_from_start(exits: list[dict[str, int]], goal: int) -> list[int]:
    parent = {0: -1}
    queue = deque([0])
    while queue:
        room = queue.popleft()
        for nxt in exits[room].values():
            if nxt not in parent:
                parent[nxt] = room
                queue.append(nxt)
    path = [goal]
    while path[-1] != 0:
        path.append(parent[path[-1]])
    return path[::-1]


def _reachable(exits: list[dict[str, int]], blocked: set[tuple[int, int]]) -> set[int]:
    seen = {0}
    queue = deque([0])
    while queue:
        room = queue.popleft()
        for nxt in exits[room].values():
            if nxt not in seen and (min(room, nxt), max(room, nxt)) not in blocked:
                seen.add(nxt)
                queue.append(nxt)
    return seen


def generate_layout(layout_id: int, size: str = "small") -> Layout:
    """The house of ``layout_id`` at ``size``; a pure function of both (numpy's seeded PCG64).

    The vault is the room farthest from the start; the locked doors lie on the path to it (the last one is the
    vault's own door); the key of each door lies in the part of the house that is reachable once the earlier
    doors are open, so the doors must be opened in order. The note lies in any room but the vault.
    """
    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}")
    spec = SIZES[size]
    rng = np.random.default_rng([int(layout_id) % (1 << 63), 7919, sorted(SIZES).index(size)])
    while True:  # re-draw the tree until the path to the farthest room has room for every lock
        _cells, exits = _grow_tree(rng, spec.rooms)
        depths = {r: len(_path_from_start(exits, r)) - 1 for r in range(spec.rooms)}
        deepest = max(depths.values())
        if deepest >= spec.locks:
            break
    vault = int(rng.choice(sorted(r for r, d in depths.items() if d == deepest)))
    path = _path_from_start(exits, vault)
    edges = [(min(a, b), max(a, b)) for a, b in itertools.pairwise(path)]
    others = sorted(int(i) for i in rng.choice(len(edges) - 1, size=spec.locks - 1, replace=False))
    lock_edges = [edges[i] for i in others] + [edges[-1]]
    colours = [str(c) for c in rng.permutation(COLOURS)]
    locks = {edge: colours[i] for i, edge in enumerate(lock_edges)}

    # Key i lies in the region that opens up after doors 0..i-1 (region 0: reachable from the start).
    key_rooms: dict[str, int] = {}
    opened_before: set[int] = set()
    for i, edge in enumerate(lock_edges):
        region = sorted(_reachable(exits, set(lock_edges[i:])) - opened_before)
        opened_before |= set(region)
        key_rooms[locks[edge]] = int(rng.choice(region))
    free_rooms = sorted(set(range(spec.rooms)) - {vault})
    for colour in colours[spec.locks : spec.locks + spec.decoy_keys]:
        key_rooms[colour] = int(rng.choice(free_rooms))
    note_room = int(rng.choice(free_rooms))

    # Hide items in containers of their room; left-over containers go to random rooms (empty decoys).
    spare = [str(c) for c in rng.permutation(SAFE_CONTAINERS)[: spec.containers]]
    containers: dict[str, int] = {}
    keys: dict[str, tuple[int, str | None]] = {}

    def hide(room: int) -> str | None:
        if rng.random() >= spec.hide:
            return None
        for name, where in containers.items():
            if where == room:
                return name
        if spare:
            name = spare.pop(0)
            containers[name] = room
            return name
        return None

    for colour in sorted(key_rooms, key=COLOURS.index):
        keys[colour] = (key_rooms[colour], hide(key_rooms[colour]))
    note = (note_room, hide(note_room))
    for name in spare:
        containers[name] = int(rng.choice(free_rooms))
    chests = sorted((str(c) for c in rng.choice(CHESTS, size=spec.chests, replace=False)), key=CHESTS.index)
    for chest in chests:
        containers[chest] = vault
    names = tuple(str(n) for n in rng.choice(ROOM_NAMES, size=spec.rooms, replace=False))
    return Layout(
        layout_id=int(layout_id),
        size=size,
        rooms=names,
        exits=tuple(dict(sorted(e.items(), key=lambda kv: DIRECTIONS.index(kv[0]))) for e in exits),
        locks=locks,
        keys=keys,
        containers=dict(sorted(containers.items(), key=lambda kv: CONTAINERS.index(kv[0]))),
        note=note,
        vault=vault,
        treasure_chest=str(rng.choice(chests)),
    )


# -- the environment --------------------------------------------------------------------------------------------


class TextMazeEnv(AECEnv[str, dict[str, np.ndarray], int | None]):
    """The maze as a one-agent PettingZoo AEC env (agent ``player_0``).

    Observation: ``{"observation": int64 vector (OBS_FIELDS), "action_mask": int8 vector over COMMANDS}``; the mask
    is also in ``infos[agent]["action_mask"]``. A masked-out command is accepted and wastes a step ("You can't do
    that here."); an id outside the vocabulary raises ``ValueError``. ``max_steps=None`` takes the size's default.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi"],
        "name": "arena_text_maze_v0",
        "is_parallelizable": False,
    }
    OBS_FIELDS: ClassVar[tuple[str, ...]] = (
        "room",
        *(f"exit_{d}" for d in DIRECTIONS),
        *(f"key_here_{c}" for c in COLOURS),
        *(f"holding_{c}" for c in COLOURS),
        *(f"container_{x.replace(' ', '_')}" for x in CONTAINERS),
        "note_here",
        "note_read",
        "known_chest",
        "treasure_here",
        "steps_left",
    )

    def __init__(
        self, split: str = "train", size: str = "small", max_steps: int | None = None, render_mode: str | None = None
    ) -> None:
        super().__init__()
        layout_id_for(0, split)  # validates the split
        if size not in SIZES:
            raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}")
        self.split = split
        self.size = size
        self.max_steps = int(max_steps if max_steps is not None else SIZES[size].max_steps)
        if self.max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {self.max_steps}")
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.render_mode = render_mode
        self.possible_agents = ["player_0"]
        self.agents: list[str] = []
        highs = np.array(
            [9 + 1]
            + [2 + len(COLOURS)] * len(DIRECTIONS)
            + [1] * (2 * len(COLOURS))
            + [2] * len(CONTAINERS)
            + [1, 1, len(CHESTS), 1, self.max_steps],
            dtype=np.int64,
        )
        n = len(COMMANDS)
        self._observation_spaces = {
            "player_0": spaces.Dict(
                {
                    "observation": spaces.Box(low=0, high=highs, dtype=np.int64),
                    "action_mask": spaces.Box(low=0, high=1, shape=(n,), dtype=np.int8),
                }
            )
        }
        self._action_spaces = {"player_0": spaces.Discrete(n)}
        self._seed_rng = np.random.default_rng()
        self.layout: Layout = generate_layout(layout_id_for(0, split), size)
        self.state = MazeState()
        self.arena_text_adapter = TextMazeAdapter()

    # -- PettingZoo API ---------------------------------------------------------------------------------------

    def observation_space(self, agent: str) -> spaces.Dict:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Discrete:
        return self._action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """A fresh episode on the layout of ``seed`` in this env's split (``None``: the next seed of the env's RNG)."""
        if seed is not None:
            self._seed_rng = np.random.default_rng(int(seed) % (1 << 63))
        else:
            seed = int(self._seed_rng.integers(1 << 62))
        self.layout = generate_layout(layout_id_for(seed, self.split), self.size)
        self.state = MazeState(visited=[0], last=f"You enter the {self.layout.rooms[0]}. Find the treasure.")
        self.agents = self.possible_agents[:]
        self.agent_selection = "player_0"
        self.rewards = {"player_0": 0.0}
        self._cumulative_rewards = {"player_0": 0.0}
        self.terminations = {"player_0": False}
        self.truncations = {"player_0": False}
        self.infos = {"player_0": {"action_mask": self.action_mask()}}

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        return {"observation": self._features(), "action_mask": self.action_mask()}

    def step(self, action: int | None) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if action is None or not 0 <= int(action) < len(COMMANDS):
            raise ValueError(f"action must be an int in [0, {len(COMMANDS)}), got {action!r}")
        self._cumulative_rewards[agent] = 0.0
        reward, done = self._apply(int(action))
        self.state.steps += 1
        self.rewards = {agent: reward}
        self.terminations = {agent: done}
        self.truncations = {agent: not done and self.state.steps >= self.max_steps}
        if self.truncations[agent]:
            self.state.last += f" You are out of time after {self.state.steps} steps."
        self.infos = {agent: {"action_mask": self.action_mask()}}
        self._accumulate_rewards()

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return describe(self)
        return None

    def close(self) -> None:
        return None

    # -- outcome and state copies -----------------------------------------------------------------------------

    @property
    def goal_reached(self) -> bool:
        return self.state.has_treasure

    def arena_outcome(self, returns: Mapping[str, float], agent: str) -> str:
        """Win iff the treasure was taken (the engine's hook for single-agent outcomes)."""
        return "win" if self.goal_reached else "loss"

    def get_state(self) -> dict[str, Any]:
        """A deep, picklable snapshot of everything that decides the future (layout, world, PettingZoo tables)."""
        return copy.deepcopy(
            {
                "split": self.split,
                "size": self.size,
                "max_steps": self.max_steps,
                "layout": self.layout,
                "state": self.state,
                "agents": self.agents,
                "agent_selection": getattr(self, "agent_selection", "player_0"),
                "rewards": getattr(self, "rewards", {}),
                "cumulative": getattr(self, "_cumulative_rewards", {}),
                "terminations": getattr(self, "terminations", {}),
                "truncations": getattr(self, "truncations", {}),
                "infos": getattr(self, "infos", {}),
                "seed_rng": self._seed_rng.bit_generator.state,
            }
        )

    def set_state(self, snapshot: Mapping[str, Any]) -> None:
        """Restore a ``get_state`` snapshot (copied, so one snapshot can be restored many times)."""
        snap = copy.deepcopy(dict(snapshot))
        if (snap["split"], snap["size"]) != (self.split, self.size):
            raise ValueError(
                f"a snapshot of a {snap['size']}/{snap['split']} maze cannot be restored into a "
                f"{self.size}/{self.split} one"
            )
        self.max_steps = snap["max_steps"]
        self.layout = snap["layout"]
        self.state = snap["state"]
        self.agents = snap["agents"]
        self.agent_selection = snap["agent_selection"]
        self.rewards = snap["rewards"]
        self._cumulative_rewards = snap["cumulative"]
        self.terminations = snap["terminations"]
        self.truncations = snap["truncations"]
        self.infos = snap["infos"]
        self._seed_rng = np.random.default_rng()
        self._seed_rng.bit_generator.state = snap["seed_rng"]

    # -- the world --------------------------------------------------------------------------------------------

    def _locked_exit(self, room: int, direction: str) -> str | None:
        """The colour of the still locked door through ``direction`` of ``room``, else ``None``."""
        colour = self.layout.lock_between(room, self.layout.exits[room][direction])
        return colour if colour is not None and colour not in self.state.unlocked else None

    def visible_keys(self) -> list[str]:
        s = self.state
        return [
            c
            for c, (room, box) in self.layout.keys.items()
            if room == s.room and c not in s.inventory and (box is None or box in s.opened)
        ]

    def note_visible(self) -> bool:
        room, box = self.layout.note
        return room == self.state.room and (box is None or box in self.state.opened)

    def treasure_visible(self) -> bool:
        s = self.state
        return s.room == self.layout.vault and self.layout.treasure_chest in s.opened and not s.has_treasure

    def containers_here(self) -> list[str]:
        return [x for x, room in self.layout.containers.items() if room == self.state.room]

    def locked_doors_here(self) -> dict[str, str]:
        """Direction → colour of the locked doors of the current room."""
        room = self.state.room
        return {d: c for d in self.layout.exits[room] if (c := self._locked_exit(room, d)) is not None}

    def known_chest(self) -> str | None:
        return self.layout.treasure_chest if self.state.note_read else None

    def action_mask(self) -> np.ndarray:
        """1 for the commands that make sense in the current room (a locked exit and an unlock without the key
        do make sense: trying them is how the player learns the door is locked)."""
        mask = np.zeros(len(COMMANDS), dtype=np.int8)
        if self.agents and (self.terminations.get("player_0") or self.truncations.get("player_0")):
            return mask
        exits = self.layout.exits[self.state.room]
        keys = self.visible_keys()
        locked = set(self.locked_doors_here().values())
        closed = [x for x in self.containers_here() if x not in self.state.opened]
        for i, cmd in enumerate(COMMANDS):
            ok = {
                "go": cmd.arg in exits,
                "look": True,
                "inventory": True,
                "take_key": cmd.arg in keys,
                "unlock": cmd.arg in locked,
                "open": cmd.arg in closed,
                "read": self.note_visible() and not self.state.note_read,
                "take_treasure": self.treasure_visible(),
            }[cmd.verb]
            mask[i] = int(ok)
        return mask

    def _features(self) -> np.ndarray:
        s, lay = self.state, self.layout
        exits = lay.exits[s.room]
        exit_codes = []
        for d in DIRECTIONS:
            colour = self._locked_exit(s.room, d) if d in exits else None
            exit_codes.append(0 if d not in exits else 1 if colour is None else 2 + COLOURS.index(colour))
        here = self.containers_here()
        chest = self.known_chest()
        values = (
            [s.room + 1]
            + exit_codes
            + [int(c in self.visible_keys()) for c in COLOURS]
            + [int(c in s.inventory) for c in COLOURS]
            + [0 if x not in here else 2 if x in s.opened else 1 for x in CONTAINERS]
            + [
                int(self.note_visible()),
                int(s.note_read),
                0 if chest is None else 1 + CHESTS.index(chest),
                int(self.treasure_visible()),
                max(0, self.max_steps - s.steps),
            ]
        )
        return np.asarray(values, dtype=np.int64)

    def _milestone(self, name: str) -> None:
        if name not in self.state.milestones:
            self.state.milestones.append(name)

    def _apply(self, action: int) -> tuple[float, bool]:
        """Carry out one command; set ``state.last``; return (reward, episode over)."""
        s, lay, cmd = self.state, self.layout, COMMANDS[action]
        if not self.action_mask()[action]:
            s.last = f"You can't {cmd.name} here."
            return 0.0, False
        if cmd.verb == "go":
            colour = self._locked_exit(s.room, cmd.arg)
            if colour is not None:
                s.last = f"The {colour} door to the {cmd.arg} is locked."
                return 0.0, False
            nxt = lay.exits[s.room][cmd.arg]
            s.known_edges[(s.room, cmd.arg)] = nxt
            s.known_edges[(nxt, _OPPOSITE[cmd.arg])] = s.room
            s.room = nxt
            if nxt not in s.visited:
                s.visited.append(nxt)
            s.last = f"You go {cmd.arg} to the {lay.rooms[nxt]}."
        elif cmd.verb == "look":
            s.last = "You look around."
        elif cmd.verb == "inventory":
            s.last = f"You carry: {_carried(s)}."
        elif cmd.verb == "take_key":
            s.inventory.append(cmd.arg)
            self._milestone(f"key:{cmd.arg}")
            s.last = f"You take the {cmd.arg} key."
        elif cmd.verb == "unlock":
            if cmd.arg not in s.inventory:
                s.last = f"The {cmd.arg} door stays locked: you need the {cmd.arg} key."
                return 0.0, False
            s.unlocked.append(cmd.arg)
            self._milestone(f"door:{cmd.arg}")
            s.last = f"You unlock the {cmd.arg} door with the {cmd.arg} key."
        elif cmd.verb == "open":
            s.opened.append(cmd.arg)
            if cmd.arg in CHESTS:
                if cmd.arg != lay.treasure_chest:
                    s.trapped = cmd.arg
                    self._milestone("trap")
                    s.last = f"You open the {cmd.arg}. A trap springs! The game is over."
                    return 0.0, True
                self._milestone("chest")
                s.last = f"You open the {cmd.arg}. The treasure is inside!"
            else:
                inside = [f"a {c} key" for c, (_, box) in lay.keys.items() if box == cmd.arg]
                inside += ["a note"] if lay.note[1] == cmd.arg else []
                contents = f"Inside: {', '.join(inside)}." if inside else "It is empty."
                s.last = f"You open the {cmd.arg}. {contents}"
        elif cmd.verb == "read":
            s.note_read = True
            self._milestone("note")
            s.last = f"The note says: '{lay.note_text()}'"
        elif cmd.verb == "take_treasure":
            s.has_treasure = True
            self._milestone("treasure")
            s.last = "You take the treasure. You win!"
            return 1.0, True
        return 0.0, False


def _carried(state: MazeState) -> str:
    items = [f"{c} key" for c in state.inventory] + (["the treasure"] if state.has_treasure else [])
    return ", ".join(items) or "nothing"


def _a(name: str) -> str:
    return f"an {name}" if name[0] in "aeiou" else f"a {name}"


def describe(env: TextMazeEnv) -> str:
    """The player's current view in a few short lines (room, exits, objects, inventory, memory, last result)."""
    s, lay = env.state, env.layout
    locked = env.locked_doors_here()
    exits = []
    for d in lay.exits[s.room]:
        known = s.known_edges.get((s.room, d))
        where = f" ({locked[d]} door, locked)" if d in locked else "" if known is None else f" ({lay.rooms[known]})"
        exits.append(d + where)
    seen = [_a(f"{c} key") for c in env.visible_keys()]
    for x in env.containers_here():
        if x not in s.opened:
            seen.append(f"a closed {x}")
        else:
            seen.append(f"an open {x}")
    if env.note_visible():
        seen.append("a note")
    if env.treasure_visible():
        seen.append("the treasure")
    lines = [
        f"Step {s.steps + 1} of {env.max_steps}. You are in the {lay.rooms[s.room]}.",
        f"Exits: {', '.join(exits)}.",
        f"You see: {', '.join(seen) or 'nothing of interest'}.",
        f"You carry: {_carried(s)}.",
    ]
    if s.note_read:
        lines.append(f"You remember the note: '{lay.note_text()}'")
    lines.append(f"Last: {s.last}")
    return "\n".join(lines)


# -- the text adapter -------------------------------------------------------------------------------------------


def _maze(view: SeatView) -> TextMazeEnv:
    env = getattr(view.env, "unwrapped", view.env)
    if not isinstance(env, TextMazeEnv):
        raise TypeError(f"the text maze adapter needs a TextMazeEnv, got {type(env).__name__}")
    return env


class TextMazeAdapter:
    """Short text for small models: the goal and commands once, then the room, objects, inventory and last result."""

    def rules(self, view: SeatView) -> str:
        env = _maze(view)
        return (
            "You explore a house to find a treasure. You score 1 only when you take the treasure; nothing else "
            "scores. The treasure is in one of the chests of a locked room; the other chests are trapped and "
            "opening one ends the game. A note somewhere says which chest is safe. A door opens with the key of "
            "its colour. Drawers, cupboards and crates may hide things.\n"
            f"You have {env.max_steps} steps. Commands: go north/south/east/west, take COLOUR key, "
            "unlock COLOUR door, open CONTAINER, read note, take treasure, look, inventory."
        )

    def observation(self, view: SeatView) -> str:
        return describe(_maze(view))

    def legal_moves(self, view: SeatView) -> list[Move]:
        mask = view.action_mask if view.action_mask is not None else _maze(view).action_mask()
        return [self._move(i) for i in np.flatnonzero(np.asarray(mask))]

    def all_moves(self, view: SeatView) -> list[Move]:
        """The whole vocabulary, so the parser can tell "illegal here" from "no command found"."""
        return [self._move(i) for i in range(len(COMMANDS))]

    @staticmethod
    def _move(action: int | np.integer[Any]) -> Move:
        cmd = COMMANDS[int(action)]
        return Move(int(action), cmd.name, cmd.aliases)

    def action_name(self, view: SeatView, action: int) -> str:
        return COMMANDS[action].name if 0 <= action < len(COMMANDS) else f"action {action}"

    def episode_summary(self, view: SeatView) -> str:
        env = _maze(view)
        s, lay = env.state, env.layout
        if s.has_treasure:
            outcome = f"You found the treasure in the {lay.treasure_chest} in {s.steps} steps."
        elif s.trapped is not None:
            outcome = f"You opened the trapped {s.trapped} after {s.steps} steps; the treasure was elsewhere."
        else:
            outcome = f"Time ran out after {s.steps} steps without the treasure."
        rooms = ", ".join(lay.rooms[r] for r in s.visited)
        found = [f"{c} key" for c in s.inventory]
        found += [f"{c} door unlocked" for c in s.unlocked]
        found += [f"the note ('{lay.note_text()}')"] if s.note_read else ["the note was not read"]
        visited = f"Rooms visited: {len(s.visited)} of {len(lay.rooms)} ({rooms})."
        return f"{outcome} {visited} Progress: {'; '.join(found)}."

    def episode_details(self, view: SeatView) -> dict[str, Any]:
        env = _maze(view)
        s = env.state
        return {
            "task_id": env.layout.task_id,
            "score": 1.0 if s.has_treasure else 0.0,
            "rooms_visited": len(s.visited),
            "steps": s.steps,
            "outcome_key": ",".join(sorted(s.milestones)),
            "note_before_chest": note_before_chest(s.milestones),
        }


def note_before_chest(milestones: Sequence[str]) -> bool | None:
    """Whether the note was read before the first chest was opened (``None``: no chest was opened).

    SAFARI's testbed measure (issue 26): an explorer reads the note first; a player imitating a demonstrator that
    knew the answer opens a chest without it. ``milestones`` are in the order they happened (``MazeState``)."""
    opened = [i for i, m in enumerate(milestones) if m in ("chest", "trap")]
    if not opened:
        return None
    return "note" in milestones[: opened[0]]


# -- the scripted expert ----------------------------------------------------------------------------------------


def _first_move(env: TextMazeEnv, is_goal: Any) -> str | None:
    """BFS over the player's known map (through doors that are not locked); the first step towards the nearest
    room where ``is_goal(room)`` returns a direction to take there, or that direction when already there."""
    s = env.state
    start = s.room
    first: dict[int, str | None] = {start: None}
    queue = deque([start])
    while queue:
        room = queue.popleft()
        goal = is_goal(room)
        if goal is not None:
            return goal if first[room] is None else first[room]
        for d in env.layout.exits[room]:
            nxt = s.known_edges.get((room, d))
            if nxt is None or nxt in first or env._locked_exit(room, d) is not None:
                continue
            first[nxt] = d if first[room] is None else first[room]
            queue.append(nxt)
    return None


def explorer_action(env: Any, read_notes: bool = True, hindsight: bool = False) -> int:
    """The explore-everything expert: a pure function of what the player has observed (its map of walked edges,
    visited rooms, inventory and the note), so it can act from any restored state.

    In order: take the treasure; take keys; read the note; open safe containers; open the chest the note names;
    unlock a locked door whose key it holds; walk to the nearest unexplored exit, locked door it can open, or the
    named chest. With ``read_notes=False`` it never reads the note and, with nothing left to explore, opens the
    first closed chest it knows of (a guess): the baseline that shows the note is needed.

    ``hindsight=True`` is the *hindsight-biased demonstrator* of SAFARI's testbed (issue 26): it is told the
    treasure's chest (what a demonstration written after the fact knows), never reads the note and walks to that
    chest as soon as its map reaches the locked room; otherwise it moves like the explorer. Every one of its lines
    succeeds, and none of them shows the note being read: a student imitating it cannot learn why a chest is right.
    """
    env = getattr(env, "unwrapped", env)
    s, lay = env.state, env.layout
    mask = env.action_mask()
    read_notes = read_notes and not hindsight
    target = lay.treasure_chest if hindsight else env.known_chest()

    def legal(name: str) -> int | None:
        action = ACTION_OF[name]
        return action if mask[action] else None

    candidates = ["take treasure", *(f"take {c} key" for c in env.visible_keys())]
    if read_notes and not s.note_read:
        candidates.append("read note")
    candidates += [f"open {x}" for x in env.containers_here() if x in SAFE_CONTAINERS]
    if target is not None:
        candidates.append(f"open {target}")
    candidates += [f"unlock {c} door" for c in env.locked_doors_here().values() if c in s.inventory]
    for name in candidates:
        action = legal(name)
        if action is not None:
            return action

    def chest_room(room: int) -> str | None:
        return "here" if target and lay.containers.get(target) == room and target not in s.opened else None

    def frontier(room: int) -> str | None:
        if room not in s.visited:
            return None
        for d in lay.exits[room]:
            colour = env._locked_exit(room, d)
            if colour is not None and colour in s.inventory:
                return "here"
            if colour is None and (room, d) not in s.known_edges:
                return d
        return None

    for goal in (chest_room, frontier):
        step = _first_move(env, goal)
        if step is not None and step != "here":
            return ACTION_OF[f"go {step}"]
    closed_chests = [x for x in CHESTS if lay.containers.get(x) == s.room and x not in s.opened]
    if closed_chests:  # nothing left to explore and no idea which chest: guess
        return ACTION_OF[f"open {closed_chests[0]}"]
    step = _first_move(env, lambda r: "here" if r == lay.vault and r != s.room else None)
    if step is not None and step != "here":
        return ACTION_OF[f"go {step}"]
    return ACTION_OF["look"]


def solve(env: Any, read_notes: bool = True, hindsight: bool = False) -> float:
    """Play the current episode of ``env`` to its end with ``explorer_action``; return the reward collected."""
    total = 0.0
    for _agent in env.agent_iter():
        _, reward, termination, truncation, _ = env.last()
        total += float(reward)
        action = None if termination or truncation else explorer_action(env, read_notes, hindsight)
        env.step(action)
    return total


class TextMazeExplorer:
    """``explorer_action`` as an ``Opponent`` (``act(view)``), e.g. for SAFARI's expert or a scripted seat."""

    name = "text_maze-explorer"

    def __init__(self, read_notes: bool = True, hindsight: bool = False) -> None:
        self.read_notes = read_notes
        self.hindsight = hindsight

    def act(self, view: SeatView) -> int:
        return explorer_action(view.env, read_notes=self.read_notes, hindsight=self.hindsight)


def iter_layouts(split: str, size: str, seeds: Iterable[int]) -> list[Layout]:
    """The layouts ``reset(seed)`` selects for each seed of ``seeds`` (for evaluation sets and tests)."""
    return [generate_layout(layout_id_for(seed, split), size) for seed in seeds]
