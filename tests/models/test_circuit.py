"""The seeded copy circuit of the default ``tiny`` (since build v3): where its markers land, what it does before any
training, what SFT holds, and the listing drills that teach the rest of the network to trust it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest
import torch

from arena.core.api.backend import ChatMessage
from arena.core.api.errors import ArenaError
from arena.core.models.tiny.build import model_config
from arena.core.models.tiny.circuit import ACT, BIAS, IS_ID, PREV_ID, install_copy_circuit, marker_token_ids
from arena.core.models.tiny.demos import Demo, build_demos, demo_texts, drilled, move_vocabulary, with_listing
from arena.core.models.tiny.quality import legal_moves, prompt_ids
from arena.core.models.tiny.recipe import CopyCircuit, DemoCounts, SFTConfig, TinyRecipe
from arena.core.models.tiny.sft import TreeExample, train
from arena.core.models.tiny.tokenizer import train_tokenizer

COUNTS = DemoCounts(action=6, reflection=1, strategy=0, tip=0, tip_action=0, crops=0, drills=0, trials=16)


@pytest.fixture(scope="module")
def corpus() -> tuple[list[Demo], Any]:
    demos = build_demos(11, COUNTS)
    return demos, train_tokenizer(demo_texts(demos), vocab_size=2048, listing_ids_at_line_start=True)


DEFAULT_CIRCUIT = CopyCircuit(enabled=True)


def _fresh_model(tokenizer: Any, circuit: CopyCircuit | None = DEFAULT_CIRCUIT) -> tuple[Any, Any]:
    from transformers import LlamaForCausalLM

    recipe = attrs.evolve(TinyRecipe(), num_layers=2)
    torch.manual_seed(0)
    model = LlamaForCausalLM(model_config(recipe, tokenizer))
    seeded = install_copy_circuit(model, tokenizer, circuit) if circuit is not None else None
    return model.eval(), seeded


def test_only_listing_lines_yield_id_tokens(corpus: tuple[list[Demo], Any]) -> None:
    _, tokenizer = corpus
    id_tokens, _ = marker_token_ids(tokenizer)
    listing = tokenizer.encode("Legal moves:\n0: (0,0)\n12: liar\n", add_special_tokens=False)
    history = tokenizer.encode("- Step 2, player_1: (0,2)\nRound 1: you played rock\n", add_special_tokens=False)
    assert sum(t in id_tokens for t in listing) == 2
    assert not any(t in id_tokens for t in history), "an opponent's history line must not look like a listing"


def test_fresh_model_with_the_circuit_puts_its_move_mass_on_listed_moves(corpus: tuple[list[Demo], Any]) -> None:
    """Before any training: at ``<action>``, of the probability on the arena's move names, the listed ones hold
    nearly all of it; a fresh model without the circuit spreads it by chance."""
    demos, tokenizer = corpus
    actions = [d for d in demos if d.kind == "action"]
    action_id = tokenizer.encode("<action>", add_special_tokens=False)[0]
    names = {
        d.arena: {
            tokenizer.encode(m.name, add_special_tokens=False)[0]
            for x in actions
            for m in legal_moves(x.messages)
            if x.arena == d.arena
        }
        for d in actions
    }

    def listed_share(model: object) -> dict[str, float]:
        shares: dict[str, list[float]] = {}
        for demo in actions:
            listed = [tokenizer.encode(m.name, add_special_tokens=False)[0] for m in legal_moves(demo.messages)]
            if len(listed) == len(names[demo.arena]):
                continue  # every name is listed: nothing to tell apart
            ids = [*prompt_ids(tokenizer, demo.messages), action_id]
            with torch.no_grad():
                probs = torch.softmax(model(input_ids=torch.tensor([ids])).logits[0, -1].float(), -1)
            share = float(probs[listed].sum() / probs[sorted(names[demo.arena])].sum())
            shares.setdefault(demo.arena, []).append(share)
        return {arena: sum(v) / len(v) for arena, v in shares.items()}

    seeded, _ = _fresh_model(tokenizer)
    plain, _ = _fresh_model(tokenizer, circuit=None)
    with_circuit, without = listed_share(seeded), listed_share(plain)
    assert {"tic_tac_toe", "liars_dice", "text_maze"} <= set(with_circuit)
    for arena, share in with_circuit.items():
        assert share > 0.99, (arena, share, without[arena])
    assert min(without.values()) < 0.8, without


def test_previous_token_head_marks_exactly_the_listed_names(corpus: tuple[list[Demo], Any]) -> None:
    demos, tokenizer = corpus
    model, _ = _fresh_model(tokenizer)
    demo = next(
        d for d in demos if d.kind == "action" and d.arena == "tic_tac_toe" and "player_1: (" in d.messages[-1].content
    )
    ids = prompt_ids(tokenizer, demo.messages)
    with torch.no_grad():
        hidden = model(input_ids=torch.tensor([ids]), output_hidden_states=True).hidden_states[1][0]
    marked = {i for i in range(len(ids)) if hidden[i, model.config.hidden_size - PREV_ID] > 0.5}
    id_tokens, _ = marker_token_ids(tokenizer)
    after_ids = {i for i in range(1, len(ids)) if ids[i - 1] in id_tokens}
    assert marked == after_ids and len(marked) == len(legal_moves(demo.messages))


def test_sft_holds_the_circuit_and_trains_the_rest(corpus: tuple[list[Demo], Any]) -> None:
    demos, tokenizer = corpus
    model, seeded = _fresh_model(tokenizer)
    assert seeded.info["copy_heads"] == [0, 2] and seeded.info["copy_layer"] == 1
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    eos = int(tokenizer.eos_token_id)
    examples = [
        TreeExample(
            prefix=tuple(prompt_ids(tokenizer, d.messages)),
            branches=tuple((*tokenizer.encode(a, add_special_tokens=False), eos) for a in d.answers),
        )
        for d in demos[:12]
    ]
    train(model, examples, SFTConfig(epochs=1, warmup_steps=1, max_steps=3), seed=0, pad_id=eos, held=seeded.held)
    parameters = {name: p.detach() for name, p in model.named_parameters()}
    for name, mask in seeded.held.items():
        assert torch.equal(parameters[name][mask], before[name][mask]), name
    embed = "model.embed_tokens.weight"
    assert not torch.equal(parameters[embed][~seeded.held[embed]], before[embed][~seeded.held[embed]])
    hidden = model.config.hidden_size
    assert float(parameters[embed][0, hidden - BIAS]) == 1.0
    assert float(parameters[embed][marker_token_ids(tokenizer)[1], hidden - ACT]) == 1.0
    assert float(parameters[embed][marker_token_ids(tokenizer)[0][0], hidden - IS_ID]) == DEFAULT_CIRCUIT.id_marker


def test_circuit_refuses_a_model_it_cannot_fit(corpus: tuple[list[Demo], Any]) -> None:
    _, tokenizer = corpus
    with pytest.raises(ValueError, match="copy_layer"):
        _fresh_model(tokenizer, circuit=CopyCircuit(copy_layer=2))


def test_drills_list_a_random_subset_of_the_arena_moves_and_answer_from_it() -> None:
    import numpy as np

    demos = build_demos(5, attrs.evolve(COUNTS, drills=6), arenas=("tic_tac_toe", "liars_dice"))
    drills = [d for d in demos if d.kind == "action_drill"]
    assert len(drills) == 12
    for demo in drills:
        text = demo.messages[-1].content
        assert text.startswith("Current observation:")
        listed = [m.name for m in legal_moves(demo.messages)]
        assert 1 <= len(listed) <= 16 and sorted(
            a[len("<action>") : -len("</action>")] for a in demo.answers
        ) == sorted(listed)
    # The vocabulary is every listed (id, name) pair; a listing is rewritten in place.
    vocabulary = move_vocabulary([])
    assert vocabulary == []
    demo = next(d for d in demos if d.kind == "action")
    rewritten = with_listing(demo.messages, [(4, "(1,1)"), (8, "(2,2)")])
    assert rewritten[-1].content.endswith("Legal moves:\n4: (1,1)\n8: (2,2)")
    again = drilled(demo.messages, [(4, "(1,1)"), (8, "(2,2)")], np.random.default_rng(0))
    assert {m.name for m in legal_moves(again)} <= {"(1,1)", "(2,2)"}


def test_default_tiny_has_the_circuit_and_the_v2_recipe_still_builds(tmp_path: Path) -> None:
    """The default recipe seeds the circuit, adds drills and splits ``ID: `` at line starts only; the v2 recipe
    (``without_copy_circuit``) has none of it, and builds through the same code, but not into the default cache."""
    from arena.core.models.tiny import build as tiny

    default, v2 = TinyRecipe(), TinyRecipe.without_copy_circuit()
    assert default.circuit.enabled and default.demos.drills == 80 and default.per_arena_demos["text_maze"].drills == 40
    assert not v2.circuit.enabled and v2.demos.drills == 0 and v2.per_arena_demos["text_maze"].drills == 0
    quick = TinyRecipe.quick(2)
    assert quick.circuit.enabled
    with pytest.raises(ArenaError, match="out_dir"):
        tiny.build_tiny(seed=0, recipe=quick)  # the default cache directory belongs to the default tiny
    path = tiny.build_tiny(tmp_path / "m", seed=0, recipe=quick)
    report = json.loads((path / "build_report.json").read_text())
    assert report["circuit"]["copy_heads"] == [0, 2] and report["circuit"]["copy_layer"] == 1
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    id_tokens, _ = marker_token_ids(tokenizer)
    assert not any(t in id_tokens for t in tokenizer.encode("- Step 2, player_1: (0,2)", add_special_tokens=False))
    # The build marks the circuit's entries as held, so RL keeps them too (arena.core.models.held).
    from arena.core.models.held import load_held

    held = load_held(path)
    # All but the memory circuit's readout (the embeddings' MEM entries), which SFT holds and RL learns; from v7
    # ``<action>``'s own MEM entries stay held in RL too (a shared bias at the position the readout reads).
    circuit = report["circuit"]
    rows = -(-report["vocab_size"] // 64) * 64  # the embedding is padded to a multiple of 64
    assert circuit["rl_released_weights"] == (rows - 1) * quick.memory.mem_dims > 0
    assert held is not None
    # From v8 RL also holds the query of layer 0's second head, which writes PREV_OPP after the warm start.
    assert circuit["recall_marker_head"] == 1 and circuit["marker_held_weights"] == 64 * quick.hidden_size
    expected = circuit["held_weights"] - circuit["rl_released_weights"] + circuit["marker_held_weights"]
    assert sum(int(m.sum()) for m in held.values()) == expected
    plain = attrs.evolve(quick, circuit=v2.circuit)
    assert load_held(tiny.build_tiny(tmp_path / "plain", seed=0, recipe=plain)) is None


def _rps_history_prompt(learner_seat: int, opponent: str) -> tuple[ChatMessage, ...]:
    """The engine's episode-3 action prompt of a 3-episode, 1-round RPS trial against ``opponent``, with MAGE's
    ``history_only`` memory (the transcripts of episodes 1 and 2)."""
    return _rps_action_prompts(learner_seat, opponent)[-1]


def _rps_action_prompts(learner_seat: int, opponent: str) -> list[tuple[ChatMessage, ...]]:
    """The engine's action prompts of episodes 1, 2 and 3 of that trial."""
    from arena.core.api.records import TrialSpec
    from arena.core.backends.scripted import ScriptedBackend
    from arena.core.config.trial import PromptConfig, TrialConfig
    from arena.core.host.plugins import PluginSet
    from arena.core.rollout.engine import RolloutEngine
    from arena.core.rollout.seats import BackendPool

    captured: list[Any] = []

    def responder(request: Any, rng: Any) -> str:
        captured.append(request)
        return "<action>rock</action>"

    pool = BackendPool()
    pool.add("scripted", "scripted", ScriptedBackend(responder=responder))
    seats = ("model:scripted", opponent) if learner_seat == 0 else (opponent, "model:scripted")
    spec = TrialSpec(
        trial_id="t",
        arena_id="rock_paper_scissors",
        seats=seats,
        seed=3,
        episodes=3,
        options={"mage": {"memory": "history_only", "max_new_tokens": 24}},
        training=False,
        arena_kwargs={"rounds": 1},
    )
    config = TrialConfig(prompt=PromptConfig(max_new_tokens=24), episodes=3, early_stop_on_win=False)
    RolloutEngine(PluginSet(["mage"]), config, backends=pool).run([spec])
    action_prompts = [r for r in captured if r.purpose == "action"]
    assert len(action_prompts) == 3
    return [tuple(r.messages) for r in action_prompts]


@pytest.mark.parametrize("learner_seat", [0, 1])
def test_memory_circuit_recalls_the_opponents_earlier_moves_at_action(
    corpus: tuple[list[Demo], Any], learner_seat: int
) -> None:
    """Before any training, at ``<action>`` of episode 3 the recall head attends to the opponent's moves of the two
    earlier episodes (not the seat's own, not the listing), and what it writes into MEM tells the three moves
    apart; the embeddings read nothing there, so it shifts no move's logit by itself."""
    from arena.core.models.tiny.circuit import opponent_prefix_ids
    from arena.core.models.tiny.recipe import MemoryCircuit

    _, tokenizer = corpus
    assert opponent_prefix_ids(tokenizer), "the demonstrations' transcripts give 'player_1: ' tokens"
    from transformers import LlamaForCausalLM

    recipe = attrs.evolve(TinyRecipe(), num_layers=2)
    torch.manual_seed(0)
    model = LlamaForCausalLM(model_config(recipe, tokenizer))
    model.config._attn_implementation = "eager"
    seeded = install_copy_circuit(model, tokenizer, recipe.circuit, MemoryCircuit())
    model.eval()
    mem = seeded.info["reserved_coordinates"]["mem"]
    head = seeded.info["recall_head"]
    action = tokenizer.encode("<action>", add_special_tokens=False)
    recalled = {}
    for opponent, move in (("rps-rock", "rock"), ("rps-paper", "paper"), ("rps-scissors", "scissors")):
        ids = [*prompt_ids(tokenizer, _rps_history_prompt(learner_seat, opponent)), *action]
        move_id = tokenizer.encode(move, add_special_tokens=False)
        assert len(move_id) == 1
        with torch.no_grad():
            out = model(input_ids=torch.tensor([ids]), output_hidden_states=True, output_attentions=True)
        weights = out.attentions[recipe.circuit.copy_layer][0, head, -1]
        prefixes = set(opponent_prefix_ids(tokenizer))
        on_opponent = [i for i in range(1, len(ids)) if ids[i - 1] in prefixes]
        assert len(on_opponent) == 2 and all(ids[i] == move_id[0] for i in on_opponent), opponent
        assert float(weights[on_opponent].sum()) > 0.8, (opponent, float(weights[on_opponent].sum()))
        recalled[move] = out.hidden_states[recipe.circuit.copy_layer + 1][0, -1, mem]
    embed = model.model.embed_tokens.weight.detach()
    assert float(embed[:, mem].abs().max()) == 0.0
    for a, b in (("rock", "paper"), ("rock", "scissors"), ("paper", "scissors")):
        cosine = float(torch.nn.functional.cosine_similarity(recalled[a], recalled[b], dim=0))
        assert cosine < 0, (a, b, cosine)  # centred on the listing: the three point away from each other
    # Relative to the listed moves' mean, the three recalled codes nearly cancel (exactly, if the recall head put
    # all its weight on the opponent's moves), which is what lets a linear readout extend to an unseen type.
    total = recalled["rock"] + recalled["paper"] + recalled["scissors"]
    assert float(total.norm()) < 0.3 * min(float(v.norm()) for v in recalled.values())
    readout = model.model.norm.weight.detach()[mem]
    assert torch.all(readout == recipe.circuit.logit_gain * MemoryCircuit().readout_gain)


@pytest.mark.parametrize("learner_seat", [0, 1])
def test_the_recall_marker_survives_prefix_embeddings_that_grew(
    corpus: tuple[list[Demo], Any], learner_seat: int
) -> None:
    """The warm start trains every embedding's free coordinates; a prefix token whose embedding grows has a smaller
    normalised BIAS, so a smaller previous-token key. v7's shared previous-token head (an attention logit of ~177 for
    a margin of 12) then attends to the move itself, PREV_OPP stays 0 and nothing is recalled: what happened to every
    seat-0 prompt of one machine's v7 build (prefix rms 0.079 against 0.068 for the move; docs/models.md, v8).
    Here the opponents' prefix tokens get free coordinates twice as large (rms about 1.12 times the move's): the
    v7 head recalls nothing, v8's own marker head (``separate_recall_marker``) still finds the opponent's moves."""
    from transformers import LlamaForCausalLM

    from arena.core.models.tiny.circuit import opponent_prefix_ids, reserved_coordinates, separate_recall_marker
    from arena.core.models.tiny.recipe import MemoryCircuit

    _, tokenizer = corpus
    recipe = attrs.evolve(TinyRecipe(), num_layers=2)
    action = tokenizer.encode("<action>", add_special_tokens=False)
    prefixes = opponent_prefix_ids(tokenizer)
    ids = [*prompt_ids(tokenizer, _rps_history_prompt(learner_seat, "rps-paper")), *action]
    on_opponent = [i for i in range(1, len(ids)) if ids[i - 1] in set(prefixes)]
    recalled = {}
    for own_head in (False, True):
        torch.manual_seed(0)
        model = LlamaForCausalLM(model_config(recipe, tokenizer))
        model.config._attn_implementation = "eager"
        seeded = install_copy_circuit(model, tokenizer, recipe.circuit, MemoryCircuit())
        reserved = reserved_coordinates(recipe.hidden_size, MemoryCircuit())
        taken = {c for v in reserved.values() for c in (v if isinstance(v, list) else [v])}
        free = [c for c in range(recipe.hidden_size) if c not in taken]
        with torch.no_grad():
            grown = model.model.embed_tokens.weight[prefixes]
            grown[:, free] *= 2.0
            model.model.embed_tokens.weight[prefixes] = grown
        if own_head:
            memory = MemoryCircuit()
            far = (memory.marker_far_weight, memory.marker_far_pairs)
            masks = separate_recall_marker(model, seeded.info, recipe.circuit, memory.marker_margin, *far)
            assert set(masks) == {f"model.layers.0.self_attn.{w}_proj.weight" for w in "qk"}
        with torch.no_grad():
            out = model.eval()(input_ids=torch.tensor([ids]), output_attentions=True)
        weights = out.attentions[recipe.circuit.copy_layer][0, seeded.info["recall_head"], -1]
        recalled[own_head] = float(weights[on_opponent].sum())
    assert recalled[False] < 0.2, recalled  # v7's shared head: the marker is lost
    assert recalled[True] > 0.7, recalled  # v8: the opponent's two earlier moves (0.83 with no growth)


@pytest.mark.slow
def test_the_built_tiny_recalls_the_opponents_move_and_its_choices_stay_untrained(model_cache: None) -> None:
    """On the real build (after the warm start, not a fresh model): at ``<action>`` of episodes 2 and 3 the recall
    head attends to the opponent's earlier moves, MEM there is mostly the recalled move's own code (not a code every
    opponent shares), and nothing maps it to a choice yet.

    This is the test that would have caught v6: its warm start had eroded the recall to 0.11-0.25 of the head's
    attention, so MEM was mostly one shared vector (shared norm 1.7 against 0.6 per opponent), and RL on it
    learned a bias ("never rock") instead of a counter (docs/results.md, "Hidden types on tiny v7").
    """
    import json as _json

    from transformers import AutoModelForCausalLM, AutoTokenizer

    from arena.core.models import resolve_model
    from arena.core.models.held import READOUT_FILE, load_held
    from arena.core.models.tiny.circuit import opponent_prefix_ids

    path = Path(resolve_model("tiny"))
    info = _json.loads((path / "build_report.json").read_text())["circuit"]
    mem, head = info["reserved_coordinates"]["mem"], info["recall_head"]
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, attn_implementation="eager").eval()
    readout = load_held(path, READOUT_FILE)
    assert readout is not None, "v7 marks the readout"
    (mask,) = readout.values()
    assert not bool(mask[info["action_token"]].any()), "<action>'s own MEM entries are no readout (a shared bias)"
    assert int(mask.sum()) == (mask.shape[0] - 1) * len(mem)
    action = tokenizer.encode("<action>", add_special_tokens=False)
    prefixes = set(opponent_prefix_ids(tokenizer))
    moves = {m: tokenizer.encode(m, add_special_tokens=False)[0] for m in ("rock", "paper", "scissors")}
    counter = {"rock": "paper", "paper": "scissors", "scissors": "rock"}
    win_probability = {1: [], 2: [], 3: []}
    for seat in (0, 1):
        recalled: dict[int, list[torch.Tensor]] = {2: [], 3: []}
        for move in ("rock", "paper", "scissors"):
            for episode, messages in enumerate(_rps_action_prompts(seat, f"rps-{move}"), start=1):
                ids = [*prompt_ids(tokenizer, messages), *action]
                with torch.no_grad():
                    out = model(input_ids=torch.tensor([ids]), output_hidden_states=True, output_attentions=True)
                logits = out.logits[0, -1, list(moves.values())]
                win_probability[episode].append(float(torch.softmax(logits, 0)[list(moves).index(counter[move])]))
                if episode == 1:
                    continue
                on_opponent = [i for i in range(1, len(ids)) if ids[i - 1] in prefixes]
                weight = float(out.attentions[info["copy_layer"]][0, head, -1][on_opponent].sum())
                # v8 measures 1.0 in both seats; v7 0.91 / 0.63 on the machine it was measured on, 0.01 in seat 0 on
                # an AVX-512 machine's build (its marker lost: docs/models.md, v8); v6 0.11-0.25.
                assert weight > 0.8, (seat, move, episode, weight)
                recalled[episode].append(out.hidden_states[info["copy_layer"] + 1][0, -1, mem])
        for episode, codes in recalled.items():
            shared = sum(codes) / 3
            own = min(float((c - shared).norm()) for c in codes)
            # v8: seat 0 own 3.22 against shared 0.31-0.40, seat 1 3.15 against 0.27-0.36; v7: seat 0 2.84 against
            # 0.38, seat 1 1.96 against 1.56 (on the machine it was measured on); v6: 0.6 against 1.7.
            assert own > 1.1 * float(shared.norm()), (seat, episode, own, float(shared.norm()))
    # Untrained choices: the counter of the opponent's move is played about as often in every episode (~1/3);
    # v8 gives 0.333 / 0.385 / 0.388, v7 0.333 / 0.377 / 0.378 (the sharper recall nudges later layers a little).
    by_episode = {k: sum(v) / len(v) for k, v in win_probability.items()}
    assert all(0.25 < p < 0.45 for p in by_episode.values()), by_episode
