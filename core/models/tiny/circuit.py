"""The hand-set "copy a move from the list" circuit written into a fresh ``tiny`` before its supervised warm start.

Why: answering an arena prompt legally means copying one of the move names listed at its end (``Legal moves:``
then ``ID: NAME`` lines). The tokenizer makes every move name one token, the same in the listing and in
``<action>NAME</action>``, so the skill is a one-token copy. A freshly initialised model does not find it within
the build's step budget: it learns move *priors* instead, which miss whenever the legal set changes (v2 put 0.60
of its probability on listed tic-tac-toe cells when the listing was a random subset; a model trained on nothing
but such drills needed about 880 steps to reach 0.93). So this recipe writes the mechanism in, holds it fixed,
and lets SFT teach the rest of the network to use it (docs/models.md has the measurements of every step).

Part of the default recipe since build v3 (``TinyRecipe.without_copy_circuit()`` is v2). Its weights are held
during SFT, and the build stores their masks (``held_weights.safetensors``) so that RL holds them too: set free,
one AdamW step at lr 1e-4 could flip the model's answers (``arena.core.models.held``, docs/models.md).

Four reserved coordinates of the residual stream (the last ones of the hidden size):

``BIAS``
    a constant in every token's embedding, so queries and keys can be position-only.
``IS_ID``
    set (small) in the embedding of the listing's ``ID: `` tokens; the tokenizer keeps ``\\d+: `` at a line start
    as one token, so an opponent's history line (``player_1: (0,2)``) does not look like a listing line.
``PREV_ID``
    written by the previous-token head: "the token before me was an ``ID: `` token", true exactly at the listed
    move names.
``ACT``
    set in the embedding of ``<action>``, the token after which the move name is predicted.

Layer 0 belongs to the circuit: head 0's query and key read ``BIAS`` with rotary phases set so the score peaks at
relative distance 1; its value reads ``IS_ID`` and its output writes ``PREV_ID``. The layer's other heads and its
MLP write nothing, so the residual stream the copy heads read keeps the scale of the embeddings. Layer
``copy_layer`` (1), one query head per key-value group: the query reads ``ACT``, the key reads ``PREV_ID`` on the
slowest rotary pairs (nearly position-free), so at ``<action>`` the heads attend to the listed names; value and
output copy disjoint slices of the token-identity coordinates, so through the tied embeddings the listed names'
logits go up. The final norm starts at ``logit_gain`` so that this can show in the logits of a fresh model. Which
listed move to pick is left to the rest of the network (trained uniform over the legal moves).

The memory circuit (``MemoryCircuit``, build v6) adds three reserved coordinates and ``mem_dims`` more:
``IS_OPP`` in the embedding of the tokens that end an opponent's step prefix (``- Step 2, player_1: ``), a second
value channel of the previous-token head writing ``PREV_OPP`` at the move that follows, and a recall head in the
copy layer (the second query head of kv group 0, so it reads the copy head's values) whose query reads ``ACT`` and
whose key reads ``PREV_OPP`` on the slowest rotary pairs (the copy heads move to the ones before). It writes the
attended moves' identity code, minus the listed moves' mean that copy head 0 reads, into ``MEM``; no embedding
reads ``MEM`` until RL trains the readout (the embeddings' ``MEM`` entries, held at zero during SFT), and the
final norm weighs ``MEM`` by ``readout_gain`` so that the readout can move as fast as a move's bias. From build v8,
after the warm start, ``PREV_OPP`` is written by a previous-token head of its own (layer 0, head 1), scored so that a
prefix token whose embedding the warm start grew still gets its mark (``separate_recall_marker``).

SFT holds the circuit's weights, the writes into the reserved coordinates and (``hold_identity_code``) the copied
embedding coordinates at their starting values (``SeededCircuit.held``); everything else trains from its seeded
random initialisation. The architecture is a stock ``LlamaForCausalLM``, so the hf and vLLM backends load it
unchanged; the project's trainer keeps the held entries (``OptimConfig.hold_marked_weights``).
"""

from __future__ import annotations

import math
import re
from typing import Any

import attrs
import torch

from arena.core.models.tiny.recipe import CopyCircuit, MemoryCircuit

#: Tokens the listing uses for move ids (``"3: "``); the tokenizer's pre-split keeps them whole.
ID_TOKEN = re.compile(r"\d+: ")
#: Tokens that end an opponent's step prefix in a transcript (``- Step 2, player_1: ``, ``, player_0: ``), the move
#: following as its own token; the seat's own steps read ``you (player_0): `` and do not match.
OPPONENT_PREFIX = re.compile(r"(?:^|[^(])player_\d+: $")
ACTION_TAG = "<action>"


#: Offsets (from the end of the hidden size) of the reserved residual coordinates.
BIAS, IS_ID, PREV_ID, ACT = 1, 2, 3, 4
RESERVED = 4
#: The memory circuit's (``MemoryCircuit``), after the copy circuit's: the opponent-prefix marker, "the token before
#: me was one", and the first of ``mem_dims`` coordinates holding the recalled move.
IS_OPP, PREV_OPP, MEM = 5, 6, 7


def _rope_inv_freq(config: Any) -> torch.Tensor:
    head_dim = config.head_dim
    base = float(config.rope_parameters["rope_theta"])
    return 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))


def opponent_prefix_ids(tokenizer: Any) -> list[int]:
    """The ids of the tokens that end an opponent's step prefix (``OPPONENT_PREFIX``)."""
    vocab = tokenizer.get_vocab()
    return sorted(
        index for token, index in vocab.items() if OPPONENT_PREFIX.search(tokenizer.convert_tokens_to_string([token]))
    )


def reserved_coordinates(hidden: int, memory: MemoryCircuit | None) -> dict[str, Any]:
    """Where each reserved coordinate lies: the copy circuit's four, and the memory circuit's when it is on."""
    coords: dict[str, Any] = {
        "bias": hidden - BIAS,
        "is_id": hidden - IS_ID,
        "prev_id": hidden - PREV_ID,
        "act": hidden - ACT,
    }
    if memory is not None and memory.enabled:
        coords["is_opp"], coords["prev_opp"] = hidden - IS_OPP, hidden - PREV_OPP
        coords["mem"] = [hidden - MEM - j for j in range(memory.mem_dims)]
    return coords


def marker_token_ids(tokenizer: Any) -> tuple[list[int], int]:
    """The ids of the listing's ``ID: `` tokens and of ``<action>`` (which must be a single token)."""
    vocab = tokenizer.get_vocab()
    id_tokens = sorted(
        index for token, index in vocab.items() if ID_TOKEN.fullmatch(tokenizer.convert_tokens_to_string([token]))
    )
    action = tokenizer.encode(ACTION_TAG, add_special_tokens=False)
    if len(action) != 1 or not id_tokens:
        raise ValueError("the copy circuit needs '<action>' as one token and 'N: ' listing tokens in the vocabulary")
    return id_tokens, int(action[0])


@attrs.frozen
class SeededCircuit:
    """What ``install_copy_circuit`` set: a summary for the build report, and the entries SFT must hold fixed.

    ``held`` maps parameter names to boolean masks of the same shape: the circuit's own weights and the writes
    into the reserved coordinates. Left free, the warm start repurposes the circuit within its first few dozen
    steps (measured: both copy heads ended up attending to newlines) before the rest of the network learns to
    read it; held, the rest of the network learns around it. ``rl_released`` marks held entries that RL may train
    (``rl_held``): the memory circuit's readout, which the warm start must not set.
    """

    info: dict[str, Any]
    held: dict[str, torch.Tensor]
    rl_released: dict[str, torch.Tensor] = attrs.field(factory=dict)


@torch.no_grad()
def install_copy_circuit(
    model: Any, tokenizer: Any, circuit: CopyCircuit, memory: MemoryCircuit | None = None
) -> SeededCircuit:
    """Write the circuit (and the memory circuit, when given and enabled) into a fresh ``LlamaForCausalLM`` in place."""
    config = model.config
    hidden, head_dim = config.hidden_size, config.head_dim
    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads
    if head_dim % 2 or not 0 < circuit.copy_layer < config.num_hidden_layers or not config.tie_word_embeddings:
        raise ValueError(
            "the copy circuit needs an even head_dim, tied embeddings and copy_layer between 1 and the last layer"
        )
    memory = memory if memory is not None and memory.enabled else None
    group = heads // kv_heads
    if memory is not None and (group < 2 or memory.mem_dims > head_dim):
        raise ValueError("the memory circuit needs two query heads per kv group and mem_dims <= head_dim")
    coords = reserved_coordinates(hidden, memory)
    bias, is_id, prev_id, act = coords["bias"], coords["is_id"], coords["prev_id"], coords["act"]
    reserved = [bias, is_id, prev_id, act]
    if memory is not None:
        reserved += [coords["is_opp"], coords["prev_opp"], *coords["mem"]]
    identity = [c for c in range(hidden) if c not in reserved]
    id_tokens, action_id = marker_token_ids(tokenizer)
    opponent_tokens = opponent_prefix_ids(tokenizer) if memory is not None else []
    if memory is not None and not opponent_tokens:
        raise ValueError("the memory circuit needs opponent step-prefix tokens ('player_1: ') in the vocabulary")
    half = head_dim // 2
    inv_freq = _rope_inv_freq(config)
    names = {id(parameter): name for name, parameter in model.named_parameters()}
    held: dict[str, torch.Tensor] = {}

    def hold(parameter: torch.Tensor, index: Any) -> None:
        mask = held.setdefault(names[id(parameter)], torch.zeros_like(parameter, dtype=torch.bool))
        mask[index] = True

    id_marker = circuit.marker * circuit.id_marker
    opp_marker = circuit.marker * memory.opp_marker if memory is not None else 0.0
    embed = model.model.embed_tokens.weight
    embed[:, reserved] = 0.0
    embed[:, bias] = circuit.marker
    embed[id_tokens, is_id] = id_marker
    embed[action_id, act] = circuit.marker
    if memory is not None:
        embed[opponent_tokens, coords["is_opp"]] = opp_marker
    hold(embed, (slice(None), reserved))

    # Nothing but the circuit writes into or reads from the reserved coordinates at the start: a constant BIAS
    # of size ``marker`` read by random weights would swamp the token identities in the residual stream.
    for layer in model.model.layers:
        attention, mlp = layer.self_attn, layer.mlp
        for projection in (attention.q_proj, attention.k_proj, attention.v_proj, mlp.gate_proj, mlp.up_proj):
            projection.weight[:, reserved] = 0.0
        attention.o_proj.weight[reserved, :] = 0.0
        mlp.down_proj.weight[reserved, :] = 0.0
        hold(attention.o_proj.weight, (reserved, slice(None)))
        hold(mlp.down_proj.weight, (reserved, slice(None)))

    # After RMSNorm a marker coordinate is worth about marker / rms(embedding); an ``ID: `` token carries a second
    # marker, so its normalised BIAS is a little smaller and its key gets IS_ID added back to match every other key.
    noise = len(identity) * config.initializer_range**2
    rms = math.sqrt((circuit.marker**2 + noise) / hidden)
    rms_id = math.sqrt((circuit.marker**2 + id_marker**2 + noise) / hidden)
    normed_marker = circuit.marker / rms
    scale = 1.0 / math.sqrt(head_dim)

    # Layer 0 is the circuit's own: its only output is the previous-token head (query head 0, kv head 0),
    # IS_ID → PREV_ID (and IS_OPP → PREV_OPP for the memory circuit, the same attention on a second value channel).
    # Its other heads and its MLP write nothing, so the residual stream that the copy heads read keeps the scale of
    # the embeddings (a free first layer grew it about 500-fold during SFT and drowned the markers).
    first_layer = model.model.layers[0]
    first = first_layer.self_attn
    # cos((Δ-1)θ) summed over pairs: margin over Δ ∈ {0, 2} is Σ (1 - cos θ).
    fast = inv_freq[: circuit.prev_pairs]
    gap = float((1.0 - torch.cos(fast)).sum())
    amplitude = math.sqrt(circuit.prev_margin / (gap * scale)) / normed_marker
    q = first.q_proj.weight[0:head_dim]
    k = first.k_proj.weight[0:head_dim]
    v = first.v_proj.weight[0:head_dim]
    q.zero_()
    k.zero_()
    v.zero_()
    n = circuit.prev_pairs
    q[:n, bias] = amplitude
    compensated = [(bias, amplitude), (is_id, amplitude * (rms_id / rms - 1.0) * circuit.marker / id_marker)]
    if memory is not None:
        rms_opp = math.sqrt((circuit.marker**2 + opp_marker**2 + noise) / hidden)
        compensated.append((coords["is_opp"], amplitude * (rms_opp / rms - 1.0) * circuit.marker / opp_marker))
    for coordinate, weight in compensated:
        k[:n, coordinate] = weight * torch.cos(fast).float()
        k[half : half + n, coordinate] = weight * torch.sin(fast).float()
    v[0, is_id] = rms / id_marker
    first.o_proj.weight.zero_()
    first.o_proj.weight[prev_id, 0] = circuit.prev_gain * circuit.marker
    if memory is not None:
        v[1, coords["is_opp"]] = rms / opp_marker
        first.o_proj.weight[coords["prev_opp"], 1] = circuit.prev_gain * circuit.marker
    first_layer.mlp.down_proj.weight.zero_()
    for projection in (first.q_proj, first.k_proj, first.v_proj):
        hold(projection.weight, slice(0, head_dim))
    hold(first.o_proj.weight, slice(None))
    hold(first_layer.mlp.down_proj.weight, slice(None))

    # Layer ``copy_layer``, one query head per kv group: copy heads (query ACT, key PREV_ID) whose value/output
    # pairs are disjoint slices of the token-identity coordinates. The scores use the slowest rotary pairs (nearly
    # position-free); with the memory circuit the very slowest go to its recall head, whose marked moves lie
    # hundreds of tokens back, and the copy heads take the ones just faster (the listing is near ``<action>``).
    recall_pairs = list(range(half - memory.recall_pairs, half)) if memory is not None else []
    copy_end = half - len(recall_pairs)
    pairs = list(range(copy_end - circuit.copy_pairs, copy_end))
    copy_amplitude = math.sqrt(circuit.copy_score / (len(pairs) * scale)) / normed_marker
    attention = model.model.layers[circuit.copy_layer].self_attn
    copy_heads: list[int] = []
    copied: list[int] = []
    for kv in range(kv_heads):
        columns = identity[kv * head_dim : (kv + 1) * head_dim]
        copied.extend(columns)
        head = kv * group
        rows = slice(head * head_dim, (head + 1) * head_dim)
        kv_rows = slice(kv * head_dim, (kv + 1) * head_dim)
        attention.q_proj.weight[rows] = 0.0
        attention.k_proj.weight[kv_rows] = 0.0
        attention.v_proj.weight[kv_rows] = 0.0
        attention.o_proj.weight[:, rows] = 0.0
        for p in pairs:
            attention.q_proj.weight[head * head_dim + p, act] = copy_amplitude
            attention.k_proj.weight[kv * head_dim + p, prev_id] = copy_amplitude / circuit.prev_gain
        for j, coordinate in enumerate(columns):
            attention.v_proj.weight[kv * head_dim + j, coordinate] = 1.0
            attention.o_proj.weight[coordinate, head * head_dim + j] = circuit.copy_gain
        hold(attention.q_proj.weight, rows)
        hold(attention.k_proj.weight, kv_rows)
        hold(attention.v_proj.weight, kv_rows)
        hold(attention.o_proj.weight, (slice(None), rows))
        copy_heads.append(head)
    recall_head = None
    if memory is not None:
        # The recall head: the second query head of kv group 0, so it reads the same values (the identity code of
        # the attended token, clean at this depth) through its own query, ACT on the recall pairs, where kv head 0's
        # key carries PREV_OPP. It writes the first ``mem_dims`` value coordinates into MEM, which no embedding reads.
        recall_head = 1
        rows = slice(recall_head * head_dim, (recall_head + 1) * head_dim)
        recall_amplitude = math.sqrt(memory.recall_score / (len(recall_pairs) * scale)) / normed_marker
        attention.q_proj.weight[rows] = 0.0
        attention.o_proj.weight[:, rows] = 0.0
        for p in recall_pairs:
            attention.q_proj.weight[recall_head * head_dim + p, act] = recall_amplitude
            attention.k_proj.weight[p, coords["prev_opp"]] = recall_amplitude / circuit.prev_gain
        for j, coordinate in enumerate(coords["mem"]):
            attention.o_proj.weight[coordinate, recall_head * head_dim + j] = memory.recall_gain
            # Copy head 0 reads the same value coordinates, averaged over the listed moves: subtracted, MEM is the
            # recalled move relative to the options (centred over the listing; columns held with the copy head's).
            attention.o_proj.weight[coordinate, copy_heads[0] * head_dim + j] = -memory.recall_gain
        hold(attention.q_proj.weight, rows)
        hold(attention.o_proj.weight, (slice(None), rows))
    if circuit.hold_identity_code:
        # Every token keeps its random initial vector in the copied coordinates: a fixed code in which names stay
        # apart. Trained freely, the embeddings of interchangeable moves converge (tic-tac-toe cells reached a mean
        # cosine of 0.53 there), and copying one listed cell lifted its unlisted neighbours with it.
        hold(embed, (slice(None), copied))
    model.model.norm.weight.fill_(circuit.logit_gain)
    if memory is not None:
        model.model.norm.weight[coords["mem"]] = circuit.logit_gain * memory.readout_gain
    info: dict[str, Any] = {
        "reserved_coordinates": {"bias": bias, "is_id": is_id, "prev_id": prev_id, "act": act},
        "id_tokens": len(id_tokens),
        "action_token": action_id,
        "copy_layer": circuit.copy_layer,
        "copy_heads": copy_heads,
        "held_weights": int(sum(int(mask.sum()) for mask in held.values())),
    }
    if memory is not None:
        info["reserved_coordinates"].update(
            {"is_opp": coords["is_opp"], "prev_opp": coords["prev_opp"], "mem": coords["mem"]}
        )
        info["opponent_prefix_tokens"] = len(opponent_tokens)
        info["recall_head"] = recall_head
    released = _rl_released(names, embed, coords, action_id) if memory is not None else {}
    info["rl_released_weights"] = int(sum(int(mask.sum()) for mask in released.values()))
    return SeededCircuit(info=info, held=held, rl_released=released)


def _rl_released(
    names: dict[int, str], embed: torch.Tensor, coords: dict[str, Any], action_id: int
) -> dict[str, torch.Tensor]:
    """The embeddings' MEM entries: held (at zero) during the warm start, whose answers are uniform over the legal
    moves, so that the recalled moves map to no choice; free during RL, which learns what to play against them.

    All but ``<action>``'s own: its MEM entries are added to MEM at the very position the readout reads, so set free
    they are a bias in MEM space that every recalled move shares. Measured on v6 (docs/results.md, "Hidden types on
    tiny v7"): a shared term is where "never rock" goes against the always-rock / always-paper pool, and the
    readout's extension to the unseen always-scissors (rock) is lost. Held at zero, MEM at ``<action>`` is the
    recall alone, and the readout stays linear in the recalled move's centred code.
    """
    mask = torch.zeros_like(embed, dtype=torch.bool)
    mask[:, coords["mem"]] = True
    mask[action_id, :] = False
    return {names[id(embed)]: mask}


def sharpen_recall(model: Any, info: dict[str, Any], gain: float) -> None:
    """Scale the recall head's query by ``gain`` (after the warm start; ``MemoryCircuit.recall_sharpen``).

    Why: the warm start trains the layer norms and the embeddings' free coordinates, which the recall's score reads
    through; on the v6 build the recall head's attention at ``<action>`` on the opponent's earlier move fell from
    0.86 (fresh) to 0.11-0.25, so MEM was mostly a code shared by every opponent. Scaling the held query restores
    the margin (0.85 at 3x, measured) without touching anything the warm start trained.
    """
    head = info["recall_head"]
    head_dim = model.config.head_dim
    attention = model.model.layers[info["copy_layer"]].self_attn
    with torch.no_grad():
        attention.q_proj.weight[head * head_dim : (head + 1) * head_dim] *= gain


def separate_recall_marker(
    model: Any, info: dict[str, Any], circuit: CopyCircuit, margin: float, far_weight: float, far_pairs: int
) -> dict[str, Any]:
    """Move the PREV_OPP channel to a previous-token head of its own, scored to survive the warm start (build v8).

    Why: the previous-token head (layer 0, head 0) scores distance 1 through ``circuit.prev_pairs`` rotary pairs at
    equal weight, an attention logit of about 177 at distance 1 for a margin of 12 over distances 0 and 2. The key
    is the token's normalised BIAS, so it scales with 1 / rms of the token's embedding, which the warm start trains:
    a key 7% smaller than the query token's own loses the margin, and the head attends to itself. Measured on a v7
    build made on an AVX-512 machine: the embedding of ``- Step 2, player_1: `` (the opponent's prefix whenever the
    learner sits in seat 0) grew to rms 0.079 against 0.068 for the move after it, the head put 1.0 of its attention
    on the move itself, PREV_OPP there was 0, and the recall head found nothing in seat 0 (0.01 of its attention on
    the opponent's move; seat 1: 1.0). RL then adapted in seat 1 only (docs/results.md, "Hidden types on tiny v8").

    Head 1 of layer 0 (kv group 0: the same keys and values) gets a query that weighs each of the same pairs by
    1 − cos θ, so the fast pairs that tell distance 1 from 0 and 2 carry the score: a margin of ``margin`` over
    distances 0 and 2 at 3.4 times less score at distance 1, so a key up to 29% smaller than the query token's own
    still wins (equal weights tolerate 7%). Weighed so, distant positions come within 12% of distance 1's score,
    so ``far_pairs`` slower pairs with the same distance-1 phase, less a constant on the slowest pair, add about 0 at
    distances 0..2 and a negative score far away (``far_weight`` times the fast pairs' weight). Measured on the
    prompts of 85 demonstrations of every arena on this machine's v7 weights (164 positions after an opponent's
    prefix): v7's head missed 48 of them and marked 29 others; this head with the fast weighting alone missed 0 and
    marked 8 others, with weights sqrt(1 − cos θ) missed 10 and marked 0, with the far term missed 0 and marked 0.
    A content term (IS_OPP in the key) was tried too and dropped: it pulled positions onto distant prefixes.
    The head's output writes PREV_OPP from the value's IS_OPP channel, and head 0 stops writing it; head 0's
    PREV_ID (the copy circuit, which SFT trained around) is untouched, and so is its score (its query is zero on
    the key entries added here). Done after the warm start, like ``sharpen_recall``: during it nothing reads MEM,
    so the warm start is v7's. Returns the masks of the entries it set, to hold in RL.
    """
    config = model.config
    head_dim = config.head_dim
    coords = info["reserved_coordinates"]
    bias, prev_opp = coords["bias"], coords["prev_opp"]
    inv_freq = _rope_inv_freq(config)
    # Each pair's share of the margin over distances 0 and 2 is 1 − cos θ; head 1 weighs the pairs by it.
    weights = 1.0 - torch.cos(inv_freq[: circuit.prev_pairs])
    # Head 0's query is ``amplitude`` on each pair, for a margin of ``prev_margin`` (its gap is the weights' sum);
    # the margin is bilinear in query and key, so these per-pair factors give ``margin``.
    factors = weights * (margin / circuit.prev_margin) * float(weights.sum()) / float((weights * weights).sum())
    first = model.model.layers[0].self_attn
    with torch.no_grad():
        q = first.q_proj.weight
        amplitude = q[0, bias].clone()
        rows = slice(head_dim, 2 * head_dim)
        q[rows] = 0.0
        for i, factor in enumerate(factors.tolist()):
            q[head_dim + i, bias] = amplitude * factor
        # Far positions: the next ``far_pairs`` (slower) pairs with the same distance-1 phase, less a constant on
        # the slowest pair (its rotation over 1024 positions is under 0.14 rad), sum to about 0 at distances 0..2 and
        # below 0 far away, so they push distant tokens down without taking any of the margin.
        k = first.k_proj.weight
        half = head_dim // 2
        far = range(circuit.prev_pairs, circuit.prev_pairs + far_pairs)
        each = far_weight * float(factors.sum()) / far_pairs
        for j in far:
            theta = float(inv_freq[j])
            k[j, bias] = amplitude * math.cos(theta)
            k[half + j, bias] = amplitude * math.sin(theta)
            q[head_dim + j, bias] = amplitude * each
        k[half - 1, bias] = amplitude
        q[head_dim + half - 1, bias] = -amplitude * each * far_pairs
        o = first.o_proj.weight
        gain = o[prev_opp, 1].clone()
        o[prev_opp, :] = 0.0
        o[prev_opp, head_dim + 1] = gain
    q_mask = torch.zeros_like(first.q_proj.weight, dtype=torch.bool)
    q_mask[rows] = True
    k_mask = torch.zeros_like(first.k_proj.weight, dtype=torch.bool)
    k_mask[[*far, *(half + j for j in far), half - 1], bias] = True
    names = {id(parameter): name for name, parameter in model.named_parameters()}
    return {names[id(first.q_proj.weight)]: q_mask, names[id(first.k_proj.weight)]: k_mask}


def rl_held(seeded: SeededCircuit) -> dict[str, torch.Tensor]:
    """The masks RL keeps: what SFT held, less ``seeded.rl_released``."""
    out = {}
    for name, mask in seeded.held.items():
        released = seeded.rl_released.get(name)
        out[name] = mask & ~released if released is not None else mask
    return out
