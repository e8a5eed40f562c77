"""Does a SAFARI student act on the note it read? An exact, counterfactual probe of the chest choice (issue 26).

    python -m tests.arenas.safari_chest_probe model:runs/safari_proof/explorer_s0/sft [MORE MODELS] --layouts 50

On held-out small layouts the scripted explorer plays up to the decision where it opens the chest the note named
(the note read, the player in the vault). At that state the model's prompt is built exactly as the engine builds it
(SAFARI's ``Game.prompt``), and the probability of each ``<action>open CHEST</action>`` answer is read by teacher
forcing (temperature 1), renormalised over the chests in the room. Then the same prompt with the note's chest
swapped for the other chest ("You remember the note: 'The treasure is in the silver chest …'"). A model that acts
on the note follows the swap; one that ignores it keeps its choice. Prints, per model: P(the chest the note names)
on the real prompts and on the swapped ones, and how much of the answer's mass the two chest answers hold.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np
import torch

from arena.arenas.text_maze import ACTION_OF, CHESTS, TextMazeEnv, explorer_action
from arena.core.api.backend import GenerationRequest
from arena.core.backends.hf import HFBackend
from arena.plugins.safari import Game, answer_of


def chest_states(layouts: int) -> list[tuple[Any, str, list[str]]]:
    """(prompt messages, the note's chest, the chests in the room) at the explorer's chest decision per layout."""
    game = Game("text_maze", {"size": "small", "split": "test"}, 0, [])
    env = TextMazeEnv(size="small", split="test")
    states = []
    for seed in range(layouts):
        cursor = game.start(env, seed, {})
        while not cursor.done:
            view = game.view(cursor)
            action = explorer_action(env)
            turn = game.turn(cursor, view)
            if action == ACTION_OF[f"open {env.layout.treasure_chest}"]:
                assert env.state.note_read
                chests = [
                    m.name.removeprefix("open ") for m in turn.legal_moves if m.name.removeprefix("open ") in CHESTS
                ]
                states.append((game.prompt(turn), env.layout.treasure_chest, chests))
                break
            game.apply(cursor, turn, action, {})
    return states


def answer_logprob(backend: HFBackend, messages: Any, answer: str) -> float:
    prompt = backend.prompt_ids(GenerationRequest(messages=messages))
    target = list(backend.tokenizer.encode(answer, add_special_tokens=False))
    ids = torch.tensor([prompt + target])
    with torch.no_grad():
        logits = backend.model(input_ids=ids).logits[0, len(prompt) - 1 : -1].double()
    logp = torch.log_softmax(logits, dim=-1)
    return float(logp.gather(-1, torch.tensor(target).unsqueeze(-1)).sum())


def swap_note(messages: Any, named: str, other: str) -> Any:
    """The messages with the note's chest replaced by ``other`` wherever the note is quoted."""
    import attrs

    old, new = f"The treasure is in the {named}.", f"The treasure is in the {other}."
    swapped = tuple(attrs.evolve(m, content=m.content.replace(old, new)) for m in messages)
    assert any(new in m.content for m in swapped), "the note's text was not in the prompt"
    return swapped


def probe(model: str, states: list[tuple[Any, str, list[str]]]) -> dict[str, Any]:
    backend = HFBackend(model.removeprefix("model:"))
    follow, follow_swapped, mass = [], [], []
    for messages, named, chests in states:
        other = next(c for c in chests if c != named)
        for prompt, target, sink in (
            (messages, named, follow),
            (swap_note(messages, named, other), other, follow_swapped),
        ):
            logps = {c: answer_logprob(backend, prompt, answer_of(f"open {c}")) for c in chests}
            probs = np.exp(np.array(list(logps.values())))
            sink.append(float(np.exp(logps[target]) / probs.sum()))
            if sink is follow:
                mass.append(float(probs.sum()))
    return {
        "model": model,
        "states": len(states),
        "P(the chest the note names)": float(np.mean(follow)),
        "P(the chest the swapped note names)": float(np.mean(follow_swapped)),
        "mass of the chest answers": float(np.mean(mass)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--layouts", type=int, default=50)
    args = parser.parse_args()
    states = chest_states(args.layouts)
    for model in args.models:
        print(json.dumps(probe(model, states)), flush=True)


if __name__ == "__main__":
    main()
