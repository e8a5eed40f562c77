"""What a SmolLM2 policy plays on the hidden-types testbed, exactly, by opponent and episode (docs/results.md,
"Hidden types with SmolLM2-135M-Instruct, trained").

    OMP_NUM_THREADS=2 .venv/bin/python tests/arenas/rps_smollm2_probe.py MODEL_DIR [MODEL_DIR ...] [--seeds N]
    .venv/bin/python tests/arenas/rps_smollm2_probe.py --rollouts RUN [RUN ...]

For each model directory (``smollm2-rps``'s cache directory, or a run's ``checkpoints/step-K/learners/agent``), the
teacher-forced probability of each move's canonical answer (``core/models/smol/rps.py``, ``measure``) on the
prompts of ``rps_types_smollm2_mage`` (MAGE's ``history_only`` memory) on held-out trials (seeds 0..N-1, both seats)
against all three types, by episode. The question it answers is whether a trained policy reads its memory: a policy
that does plays scissors after seeing paper and paper after seeing rock, so its move shares differ between the
opponents from episode 2 on; a fixed policy plays the same in every cell.

``--rollouts`` reads runs trained with ``--dump-rollouts`` instead: per iteration, the moves played, the share of
(group, episode) cells whose advantages were not all equal, i.e. that gave the update a direction (a policy that
always plays one move against an always-one-move opponent gets the same reward in every trial of a group), and from
episode 2 on the moves played against each opponent (a policy that reads its memory plays the counters there).

``--decode`` asks whether the model's state at the decision holds what its memory shows, whatever it then plays:
for each layer, a linear probe (multinomial logistic regression) on the residual stream at the position that
predicts the move reads the opponent's type from the prompts of episodes 2-3, scored by leave-one-seed-out
accuracy (chance 1/3). A policy can only learn to counter what it saw from what that state carries.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from arena.core.models.smol.rps import (
    CONFIGS,
    EVAL_SEEDS,
    MOVES,
    TYPES,
    RpsPrompt,
    answer,
    collect_rps_prompts,
    encode,
    measure,
    winning_move,
)
from arena.core.models.tiny.quality import prompt_ids


def rollout_table(run: Path) -> None:
    """Per iteration of ``run``: moves played (rock / paper / scissors / other), the cells with a signal and the
    moves against each opponent from episode 2 on; then how often the last four iterations played the counter."""
    print(f"\n{run}\niteration  rock  paper  scissors  other  cells with a signal  episodes 2+: r/p/s by opponent")
    paths = sorted((run / "rollouts").glob("iter_*.jsonl"))
    last: list[tuple[dict, str]] = []
    for index, path in enumerate(paths):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        actions = [r for r in rows if r["kind"] == "action"]
        moves = [next((m for m in MOVES if r["completion_text"] == f"<action>{m}</action>"), "other") for r in actions]
        cells: dict[tuple[str, int], set[float]] = {}
        for r in actions:
            cells.setdefault((r["group_id"], r["episode"]), set()).add(round(r["advantage"], 6))
        signal = sum(len(v) > 1 for v in cells.values())
        counts = "  ".join(f"{moves.count(m):>{len(m)}}" for m in (*MOVES, "other"))
        print(f"{int(path.stem.split('_')[1]):>9}  {counts}  {signal} of {len(cells)}  {countered(actions, moves)}")
        if index >= len(paths) - 4:
            last.extend(zip(actions, moves, strict=True))
    for name, episodes in (("episode 1", (0,)), ("episodes 2+", (1, 2))):
        played = [(r, m) for r, m in last if r["episode"] in episodes and r.get("opponent")]
        hits = sum(m == winning_move(str(r["opponent"])) for r, m in played)
        print(f"last {min(4, len(paths))} iterations, {name}: the opponent's counter played {hits} of {len(played)}")


def countered(actions: list[dict], moves: list[str]) -> str:
    """From episode 2 on, the moves played against each opponent (r/p/s counts): a policy that reads its memory
    plays that opponent's counter (paper against always-rock, scissors against always-paper) more there than
    elsewhere; a fixed one plays the same against every opponent."""
    by_opponent: dict[str, list[str]] = {}
    for row, move in zip(actions, moves, strict=True):
        if row["episode"] >= 1 and row.get("opponent"):
            by_opponent.setdefault(str(row["opponent"]), []).append(move)
    return "  ".join(
        f"{name.removeprefix('rps-')} {'/'.join(str(played.count(m)) for m in MOVES)}"
        for name, played in sorted(by_opponent.items())
    )


def restatement(prompt: RpsPrompt) -> str:
    """What a policy that restates its memory would write before its move: from episode 2 on the opponent's move
    (an always-one-move type plays what its name says), in episode 1 that nothing is known yet."""
    if prompt.episode == 1:
        return "First episode. "
    return f"They played {prompt.opponent.removeprefix('rps-')}. "


def decision(model: Any, tokenizer: Any, prompt: RpsPrompt, restate: bool = False) -> tuple[Any, Any]:
    """At the position that predicts the move's token (the last one the three moves' answers share, ``<action>``):
    the residual stream of every layer (embeddings first, the final norm's output last) and the logits of the three
    moves' first tokens. With ``restate`` the answer opens with ``restatement(prompt)``, teacher-forced: the state
    of a model that wrote out what its memory shows just before it chose."""
    import torch

    if restate:
        head = prompt_ids(tokenizer, prompt.messages)
        text = restatement(prompt)
        answers = [head + tokenizer(text + answer(m), add_special_tokens=False)["input_ids"] for m in MOVES]
    else:
        answers = [encode(tokenizer, prompt, move)[0] for move in MOVES]
    split = next(i for i in range(min(map(len, answers))) if len({a[i] for a in answers}) > 1)
    with torch.no_grad():
        out = model(input_ids=torch.tensor([answers[0][:split]]), output_hidden_states=True)
    states = torch.stack([h[0, -1].float() for h in out.hidden_states])
    return states, out.logits[0, -1, [a[split] for a in answers]].float()


def fit_softmax(x: Any, labels: Any, classes: int, l2: float) -> tuple[Any, Any]:
    """Weights and bias of a multinomial logistic regression with an L2 penalty, fitted by L-BFGS."""
    import torch

    weight = torch.zeros(x.shape[1], classes, requires_grad=True)
    bias = torch.zeros(classes, requires_grad=True)
    optimizer = torch.optim.LBFGS([weight, bias], max_iter=200)

    def closure() -> Any:
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(x @ weight + bias, labels) + l2 * weight.pow(2).sum()
        loss.backward()
        return loss

    optimizer.step(closure)
    return weight.detach(), bias.detach()


def probe_accuracy(features: Any, labels: Any, folds: Any, l2: float = 1.0) -> float:
    """Leave-one-fold-out accuracy of a multinomial logistic regression on standardized ``features``."""
    right = 0
    for fold in folds.unique():
        train, test = folds != fold, folds == fold
        mean, std = features[train].mean(0), features[train].std(0) + 1e-6
        weight, bias = fit_softmax((features[train] - mean) / std, labels[train], int(labels.max()) + 1, l2)
        right += int(((((features[test] - mean) / std) @ weight + bias).argmax(1) == labels[test]).sum())
    return right / len(labels)


def decode_table(path: Path, seeds: int) -> dict[str, float]:
    """Per layer, how well a linear probe reads the opponent's type at the decision (episodes 2-3)."""
    import torch
    from transformers import AutoTokenizer, LlamaForCausalLM

    seeds_of: dict[int, int] = {}
    prompts = []
    for seed in range(seeds):  # one seed at a time, to know each prompt's trial seed (the probe's folds)
        for prompt in collect_rps_prompts([seed], TYPES, configs=CONFIGS[:1]):
            if prompt.episode >= 2:
                seeds_of[len(prompts)] = seed
                prompts.append(prompt)
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = LlamaForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    states = torch.stack([decision(model, tokenizer, p)[0] for p in prompts])  # prompts x layers x width
    labels = torch.tensor([TYPES.index(p.opponent) for p in prompts])
    folds = torch.tensor([seeds_of[i] for i in range(len(prompts))])
    accuracy = {str(layer): probe_accuracy(states[:, layer], labels, folds) for layer in range(states.shape[1])}
    print(f"\n{path}  ({len(prompts)} prompts of episodes 2-3, {seeds} trial seeds; chance 0.333)")
    print("layer  " + "  ".join(f"{k:>5}" for k in accuracy))
    print("acc    " + "  ".join(f"{v:5.2f}" for v in accuracy.values()))
    return accuracy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+", type=Path)
    parser.add_argument("--rollouts", action="store_true", help="the arguments are runs: read their rollout dumps")
    parser.add_argument("--decode", action="store_true", help="linear probes of the opponent's type, per layer")
    parser.add_argument("--seeds", type=int, default=len(EVAL_SEEDS), help="held-out trial seeds 0..N-1")
    parser.add_argument("--json", type=Path, help="also write the measurement here")
    args = parser.parse_args()
    if args.rollouts:
        for run in args.models:
            rollout_table(run)
        return

    import torch
    from transformers import AutoTokenizer, LlamaForCausalLM

    torch.set_num_threads(2)
    if args.decode:
        decoded = {str(path): decode_table(path, args.seeds) for path in args.models}
        if args.json:
            args.json.write_text(json.dumps(decoded, indent=2) + "\n")
        return
    prompts = collect_rps_prompts(range(args.seeds), TYPES, configs=CONFIGS[:1])
    out = {}
    for path in args.models:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = LlamaForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
        result = measure(model, tokenizer, prompts)[CONFIGS[0]]
        out[str(path)] = result
        print(f"\n{path}  ({len(prompts)} prompts)")
        print("opponent       ep  form   win    " + "  ".join(f"{m:>8}" for m in MOVES))
        for opponent in TYPES:
            for episode, cell in result[opponent].items():
                shares = "  ".join(f"{cell['move_share'][m]:8.3f}" for m in MOVES)
                print(f"{opponent:<14} {episode:>2}  {cell['form']:.3f}  {cell['win']:.3f}  {shares}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
