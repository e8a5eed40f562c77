"""The recipe of the ``tiny`` build: sizes, demonstration counts and SFT settings (plain data, no torch import).

Kept apart from the build code so that listing models (``arena models``) and registering them cost nothing.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class DemoCounts:
    """How many demonstrations of each kind per arena (prompts, not answers)."""

    action: int = 120
    #: About half are ``mage``'s reflection prompts, half the plain ``reflection`` plugin's (``demos``).
    reflection: int = 24
    strategy: int = 20
    tip: int = 10
    tip_action: int = 12
    #: Plain action prompts that also appear cut short (``action_crop``, training only).
    crops: int = 120
    #: Cropped action prompts whose listing is a random subset of the arena's moves (``action_drill``, training).
    drills: int = 0
    #: Trials per arena, spread over its opponents and both seats (arenas with few opponents get more each).
    trials: int = 160


@attrs.frozen
class SFTConfig:
    """Optimiser and schedule of the supervised warm start (``max_steps`` cuts the plan short, for tests)."""

    epochs: int = 8
    lr: float = 3e-3
    min_lr_ratio: float = 0.05
    warmup_steps: int = 50
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.98)
    grad_clip: float = 1.0
    token_budget: int = 2048
    max_steps: int | None = None


@attrs.frozen
class CopyCircuit:
    """The "copy a move from the list" circuit seeded into a fresh ``tiny`` (``arena.core.models.tiny.circuit``).

    Scores are attention-logit margins in nats; gains are weight values. On in the default recipe (build v3);
    ``TinyRecipe.without_copy_circuit()`` is the v2 recipe, for comparison.
    """

    enabled: bool = True
    #: Embedding value of the marker coordinates (BIAS, ACT); other coordinates start at std 0.02.
    marker: float = 1.0
    #: IS_ID's value relative to ``marker``: small, so an ``ID: `` token's norm (and key) stays close to the rest.
    id_marker: float = 0.25
    #: Attention-logit margin of the previous-token head for distance 1 over distances 0 and 2.
    prev_margin: float = 12.0
    #: Rotary pairs the previous-token head's score uses, counted from the fastest (the slow ones cannot tell
    #: distance 1 from 0 or 2 and only add a common offset).
    prev_pairs: int = 16
    #: What the previous-token head writes into ``PREV_ID`` (relative to ``marker``).
    prev_gain: float = 1.0
    #: Attention logit the copy head gives a ``PREV_ID`` position at ``<action>``, over any other position.
    copy_score: float = 12.0
    #: Rotary pairs the copy head's score uses, counted from the slowest.
    copy_pairs: int = 8
    #: Hold the embedding coordinates the copy heads read and write at their random initial values.
    hold_identity_code: bool = True
    #: The layer of the copy heads (layer 0 is the previous-token layer).
    copy_layer: int = 1
    #: Gain of the copy head's output (identity projection); larger means a bigger logit boost for listed names.
    copy_gain: float = 4.0
    #: Initial weight of the final RMSNorm. With tied embeddings of std 0.02 the logits of a fresh model span well
    #: under a nat whatever the residual holds, so the copied names could not stand out without it.
    logit_gain: float = 8.0


@attrs.frozen
class MemoryCircuit:
    """The "what did the opponent play before" circuit seeded beside the copy circuit (build v6).

    Adapting within a trial needs the opponent's earlier moves at the answer position. The copy circuit's layer-0
    previous-token head gets a second channel that marks each token following an opponent's step prefix (``- Step 2,
    player_1: `` in MAGE's history and reflection transcripts); one more query head of the copy layer attends from
    ``<action>`` to the marked tokens and writes their identity into ``mem_dims`` reserved coordinates that no token
    embedding reads. So the model *knows* the opponent's earlier moves where it answers, but nothing maps them to a
    choice: the embeddings' entries on those coordinates start at zero and are held during the warm start (whose
    answers are uniform over the legal moves) and set free for RL, which has to learn what to play against them.
    """

    enabled: bool = True
    #: Reserved coordinates the recalled move identity is written to (a slice of the copied identity code).
    mem_dims: int = 32
    #: The opponent-prefix marker's embedding value relative to ``CopyCircuit.marker`` (as ``id_marker``).
    opp_marker: float = 0.25
    #: Attention-logit margin the recall head gives a marked position at ``<action>``.
    recall_score: float = 12.0
    #: Rotary pairs of the recall score: the slowest (position-free over a trial); the copy heads take those before.
    recall_pairs: int = 4
    #: Gain of the recall head's output into the memory coordinates. Copy head 0 writes the same coordinates of the
    #: listed moves' mean with the opposite sign, so MEM holds the recalled move *relative to the options*: the
    #: three RPS moves' codes sum to zero, and a linear readout trained against two opponent types extends to the
    #: third (docs/models.md, v6).
    recall_gain: float = 3.0
    #: The final norm's weight on MEM, times ``CopyCircuit.logit_gain``. After the warm start the residual at
    #: ``<action>`` is about 200 times MEM's size there (rms 19 against 0.09 per coordinate: measured), so at the
    #: plain gain one RL step moved the readout about 1/50 as far as a move's bias; MEM is not scaled in the
    #: residual itself, where a larger MEM drowned the copy layer's MLP and broke the answers.
    readout_gain: float = 300.0
    #: Factor on the recall head's query after the warm start (``circuit.sharpen_recall``): the warm start erodes
    #: the recall's score (attention on the opponent's move 0.11-0.25 on v6); 4x gives 0.85 (build v7, measured).
    recall_sharpen: float = 4.0
    #: Build v8: after the warm start, PREV_OPP is written by a previous-token head of its own (layer 0, head 1) whose
    #: score weighs the fast rotary pairs, with this margin (nats) over distances 0 and 2
    #: (``circuit.separate_recall_marker``); 0 keeps v7's shared head, whose score the warm start could break for
    #: some prefix tokens (on one machine's v7 build: every seat-0 prompt, so nothing was recalled there).
    marker_margin: float = 36.0
    #: The marker head's far-position term (``circuit.separate_recall_marker``): this many slower rotary pairs, of
    #: total weight ``marker_far_weight`` times the fast pairs', less a constant that cancels them at distance 1.
    marker_far_weight: float = 2.0
    marker_far_pairs: int = 12


@attrs.frozen
class TinyRecipe:
    """Everything that decides the built bytes besides the seed (sizes chosen to build in minutes on 2 cores)."""

    hidden_size: int = 256
    intermediate_size: int = 512
    num_layers: int = 4
    num_heads: int = 4
    num_kv_heads: int = 2
    vocab_size: int = 4096
    max_position_embeddings: int = 4096
    threads: int = 2
    #: 80 listing drills per arena (40 in the maze) teach the network to trust the copy circuit.
    demos: DemoCounts = attrs.field(factory=lambda: DemoCounts(drills=80))
    eval_demos: DemoCounts = attrs.field(
        factory=lambda: DemoCounts(
            action=40, reflection=6, strategy=10, tip=6, tip_action=8, crops=0, drills=0, trials=120
        )
    )
    #: Arenas whose prompts are long (text_maze: a room description per step) get fewer demonstrations. The
    #: coding arena has none: a model this size does not learn to write Python from a few hundred functions
    #: within the build budget (measured: 0 of 40 held-out answers compiled; docs/models.md).
    per_arena_demos: dict[str, DemoCounts] = attrs.field(
        factory=lambda: {
            "text_maze": DemoCounts(
                action=60, reflection=8, strategy=10, tip=6, tip_action=8, crops=80, drills=40, trials=80
            ),
        }
    )
    per_arena_eval_demos: dict[str, DemoCounts] = attrs.field(
        factory=lambda: {
            "text_maze": DemoCounts(
                action=30, reflection=4, strategy=6, tip=4, tip_action=4, crops=0, drills=0, trials=60
            ),
        }
    )
    sft: SFTConfig = attrs.field(factory=SFTConfig)
    circuit: CopyCircuit = attrs.field(factory=CopyCircuit)
    memory: MemoryCircuit = attrs.field(factory=MemoryCircuit)
    #: Raise (and cache nothing) when the gate fails. Off by default: the gate is measured and recorded in
    #: ``build_report.json`` on every build, but a failing arena must not make ``model:tiny`` unusable.
    enforce_gate: bool = False

    @classmethod
    def without_copy_circuit(cls) -> TinyRecipe:
        """The v2 recipe (no circuit, no listing drills, ``ID: `` split anywhere; below the 95% gate in three
        arenas, docs/models.md) on today's demonstrations. Build it with ``build_tiny(out_dir, recipe=...)``:
        the cache belongs to the default."""
        base = cls()
        return attrs.evolve(
            base,
            circuit=CopyCircuit(enabled=False),
            memory=MemoryCircuit(enabled=False),
            demos=attrs.evolve(base.demos, drills=0),
            per_arena_demos={arena: attrs.evolve(c, drills=0) for arena, c in base.per_arena_demos.items()},
        )

    @classmethod
    def without_memory_circuit(cls) -> TinyRecipe:
        """The v5 recipe: the copy circuit without the memory circuit (build with an ``out_dir``, as above)."""
        return attrs.evolve(cls(), memory=MemoryCircuit(enabled=False))

    @classmethod
    def quick(cls, steps: int = 4) -> TinyRecipe:
        """A few-second build with the same code path (tests of determinism and plumbing)."""
        return cls(
            num_layers=2,
            demos=DemoCounts(action=4, reflection=2, strategy=1, tip=1, tip_action=1, crops=2, drills=0, trials=12),
            eval_demos=DemoCounts(action=0, reflection=0, strategy=0, tip=0, tip_action=0, crops=0, drills=0, trials=0),
            per_arena_demos={},
            per_arena_eval_demos={},
            sft=SFTConfig(epochs=1, warmup_steps=1, max_steps=steps, token_budget=2048),
        )
