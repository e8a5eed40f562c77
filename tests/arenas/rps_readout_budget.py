"""How many updates a readout on SmolLM2's own decision state needs before it counters the type it saw: a floor
under the RL budget of the hidden-types testbed on a real model (issue 24, item 5; docs/results.md, "Hidden types
with SmolLM2-135M-Instruct, trained").

    OMP_NUM_THREADS=2 .venv/bin/python -m tests.arenas.rps_readout_budget MODEL_DIR [--lrs 1e-3 3e-3] [--sims 20]
        [--center] [--restate] [--kl 0.2]

The model's last hidden state (after the final norm) at the decision and its logits for the three moves' first
tokens are read once, on the prompts of ``rps_types_smollm2_mage`` against all three types (episodes 1-3, both
seats, held-out trial seeds). What trains is a linear correction of those three logits (3 × 576 weights and 3
biases, from zero) by the runs' own update at the runs' sample size: each iteration one group of 4 trials against
each type, every episode's move sampled at T 1, reward +1 / 0 / −1 (win / draw / loss), advantages centred within
each (group, episode) cell, Adam over 2 minibatches. This is the easiest form of the runs' problem: the features
already carry the type (``rps_smollm2_probe.py --decode`` reads it at 0.92-0.99 in the last 15 layers) and nothing
else moves. So the iterations it needs are a floor for the real update's, which must also leave the rest of the
policy in place.

``--center`` removes the mean state (the readout sees only what differs between prompts); ``--restate`` reads the
state after the answer has restated the memory (``They played rock.``, teacher-forced), as a build that taught
SmolLM2 to write it would; ``--kl`` adds the KL to the starting policy that the learner's ``loss.kl_coef`` adds.

Per step size, over simulated seeds: the iterations until the expected share of the opponent's counter from
episode 2 on reaches 0.5 and 0.9, and how many simulations first collapsed (one move ≥ 0.9 of episode 1's play).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import Any

from arena.core.models.smol.rps import CONFIGS, TYPES, collect_rps_prompts
from tests.arenas.rps_smollm2_probe import decision

#: The runs' sample per iteration: one group against each type, 4 trials of 3 episodes.
GROUP_SIZE = 4
EPISODES = (1, 2, 3)
MINIBATCHES = 2


def decision_features(path: Path, seeds: int, restate: bool = False) -> dict[str, Any]:
    """Per prompt: the final-norm state at the decision, the three moves' first-token logits, type and episode;
    with ``restate``, read after a teacher-forced restatement of the memory (``rps_smollm2_probe.restatement``)."""
    import torch
    from transformers import AutoTokenizer, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(path)
    model = LlamaForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    prompts = collect_rps_prompts(range(seeds), TYPES, configs=CONFIGS[:1])
    read = [decision(model, tokenizer, prompt, restate) for prompt in prompts]
    return {
        "states": torch.stack([states[-1] for states, _ in read]),
        "logits": torch.stack([logits for _, logits in read]),
        "types": torch.tensor([TYPES.index(p.opponent) for p in prompts]),
        "episodes": torch.tensor([p.episode for p in prompts]),
    }


def payoff(moves: Any, types: Any) -> Any:
    """+1 for the type's counter, 0 for its own move, −1 for the move it beats (moves and types as indices)."""
    return ((moves - types) % 3 == 1).float() - ((types - moves) % 3 == 1).float()


def simulate(
    features: dict[str, Any], lr: float, iterations: int, seed: int, kl: float = 0.0
) -> dict[str, float | None]:
    """One simulated run: the first iteration (1-based) at which each threshold was met, or None, and the counter
    share from episode 2 on after the last iteration (``final``). ``kl`` weighs
    the exact KL(policy || starting policy) on the minibatch's prompts, added to the loss (the learner's
    ``loss.kl_coef`` estimates the same term from the sampled tokens)."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    states, base = features["states"], features["logits"]
    types, episodes = features["types"], features["episodes"]
    pools = {(t, e): torch.nonzero((types == t) & (episodes == e)).flatten() for t in range(3) for e in EPISODES}
    later = episodes >= 2
    counters = (types + 1) % 3
    weight = torch.zeros(states.shape[1], 3, requires_grad=True)
    bias = torch.zeros(3, requires_grad=True)
    optimizer = torch.optim.Adam([weight, bias], lr=lr)
    found: dict[str, float | None] = {"counter 0.5": None, "counter 0.9": None, "collapsed": None}
    for iteration in range(1, iterations + 1):
        picks, cells = [], []
        for t in range(3):
            for _ in range(GROUP_SIZE):
                for e in EPISODES:
                    pool = pools[(t, e)]
                    picks.append(int(pool[torch.randint(len(pool), (1,), generator=generator)]))
                    cells.append(t * 10 + e)
        index, cell = torch.tensor(picks), torch.tensor(cells)
        with torch.no_grad():
            policy = torch.softmax(base[index] + states[index] @ weight + bias, dim=-1)
            moves = torch.multinomial(policy, 1, generator=generator).flatten()
            reward = payoff(moves, types[index])
            advantage = reward.clone()
            for c in cell.unique():
                advantage[cell == c] -= reward[cell == c].mean()
        for part in torch.randperm(len(index), generator=generator).chunk(MINIBATCHES):
            logp = torch.log_softmax(base[index[part]] + states[index[part]] @ weight + bias, dim=-1)
            loss = -(advantage[part] * logp.gather(1, moves[part, None]).flatten()).mean()
            if kl:
                start = torch.log_softmax(base[index[part]], dim=-1)
                loss = loss + kl * (logp.exp() * (logp - start)).sum(-1).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            policy = torch.softmax(base + states @ weight + bias, dim=-1)
            share = float(policy[later].gather(1, counters[later, None]).mean())
            first = float(policy[episodes == 1].mean(0).max())
        for name, met in (("counter 0.5", share >= 0.5), ("counter 0.9", share >= 0.9), ("collapsed", first >= 0.9)):
            if met and found[name] is None:
                found[name] = iteration
    found["final"] = share
    return found


def summary(runs: list[dict[str, float | None]], name: str, iterations: int) -> str:
    hits = [r[name] for r in runs if r[name] is not None]
    if not hits:
        return f"none of {len(runs)} by {iterations}"
    return f"{len(hits)} of {len(runs)}, median {statistics.median(hits):.0f} (range {min(hits)}-{max(hits)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--lrs", type=float, nargs="+", default=[3e-4, 1e-3, 3e-3, 1e-2])
    parser.add_argument("--sims", type=int, default=20)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=8, help="held-out trial seeds of the prompts")
    parser.add_argument(
        "--center", action="store_true", help="subtract the mean state: the readout sees only what differs"
    )
    parser.add_argument(
        "--restate", action="store_true", help="read the state after a restatement of the memory, teacher-forced"
    )
    parser.add_argument("--kl", type=float, default=0.0, help="weight of KL(policy || starting policy) in the loss")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(2)
    features = decision_features(args.model, args.seeds, args.restate)
    start = torch.softmax(features["logits"], dim=-1)
    later = features["episodes"] >= 2
    share = float(start[later].gather(1, ((features["types"][later] + 1) % 3)[:, None]).mean())
    print(f"\n{args.model}: {len(features['types'])} prompts; counter share from episode 2 on, untrained: {share:.3f}")
    states = features["states"][later]
    means = torch.stack([states[features["types"][later] == t].mean(0) for t in range(3)])
    print(
        f"decision state from episode 2 on: |mean| {float(states.mean(0).norm()):.1f}, spread of the type means "
        f"about it {float((means - states.mean(0)).norm(dim=1).mean()):.2f}, "
        f"within a type {float((states - means[features['types'][later]]).norm(dim=1).mean()):.2f}"
    )
    if args.center:
        features["states"] = features["states"] - features["states"].mean(0)
        print("centred: the readout sees each state minus the mean state")
    if args.kl:
        print(f"loss + {args.kl:g} KL(policy || starting policy)")
    print(
        "lr        counter share 0.5 reached           counter share 0.9 reached           collapsed first  "
        f"share after {args.iterations}"
    )
    for lr in args.lrs:
        runs = [simulate(features, lr, args.iterations, seed, args.kl) for seed in range(args.sims)]
        collapsed_first = sum(
            r["collapsed"] is not None and (r["counter 0.9"] is None or r["collapsed"] < r["counter 0.9"]) for r in runs
        )
        print(
            f"{lr:<8g}  {summary(runs, 'counter 0.5', args.iterations):<34}  "
            f"{summary(runs, 'counter 0.9', args.iterations):<34}  {f'{collapsed_first} of {len(runs)}':<15}  "
            f"{statistics.mean(float(r['final'] or 0.0) for r in runs):.3f}"
        )


if __name__ == "__main__":
    main()
