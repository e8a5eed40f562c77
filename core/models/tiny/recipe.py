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
            demos=attrs.evolve(base.demos, drills=0),
            per_arena_demos={arena: attrs.evolve(c, drills=0) for arena, c in base.per_arena_demos.items()},
        )

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
