"""The menu proof's numbers (SGE against GRPO by RL, issue 26): what each run's rollouts won, how many of its
groups carried a learning signal, and what its final policy plays on the recurring menus, exactly, over seeds.

    python -m tests.arenas.menu_proof runs/menu_proof [MORE_ROOTS ...] [--menus 5] [--baseline grpo sge]
    # any METHOD_sN inside; several roots are read as one (a run continued in a copy can sit beside its ablations)

Per run, from ``metrics.jsonl``: the groups played and the informative ones (``dynamic/groups_played``,
``dynamic/groups_informative``: a group whose rollouts did not all score alike, so that its advantages are not all
zero; DAPO's dynamic sampling counts every group it played, replaced ones included). From the rollout dumps
(``--dump-rollouts``), which hold only the groups the update kept (the informative ones, so their win rates are
conditional on that): the trained rollouts by SGE reflection kind (``none``, ``negative``, ``positive``; GRPO's are
all ``none``) with their win rates, and on rollouts shown a failed plan, how often they named it again. From the
last checkpoint and the starting model: ``core/models/smol/menu.measure`` on the recurring menus 0..N-1 (the run's
``task_pool``), teacher-forced and exact: success per rollout on the arena's own prompt at T 0.7 (GRPO's sampling
and the evaluation's), on SGE's strategy prompt with SGE's sampling (strategy at T 1.2, code at 0.7), and on SGE's
negative-reflection prompt; the plain prompt's per menu too. Per method the mean over seeds [Student-t 95%]; every
method minus each ``--baseline`` paired by seed (the same seeds draw the same menus): ``--baseline grpo sge`` gives
SGE and its ablations against GRPO and the ablations against SGE.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from arena.core.eval.episode_compare import method_of
from arena.core.learn.metrics import read_rollouts
from arena.plugins.sge import NEGATIVE_HEADER, POSITIVE_HEADER
from tests.arenas.doors_proof import fmt

PLAN = re.compile(r"<strategy>\s*Plan (\w+)")
MENU = re.compile(r"Menu (\d+):")
FAILED = re.compile(r"Plan (\w+) failed")


def reflection_kind(context: str) -> str:
    """Which of SGE's reflections a rollout's prompt carried: ``negative``, ``positive`` or ``none``."""
    if NEGATIVE_HEADER in context:
        return "negative"
    if POSITIVE_HEADER in context:
        return "positive"
    return "none"


def rollout_rates(run: Path) -> dict[str, float]:
    """Win rates of one run's trained rollouts by reflection kind, and the failed plan named again."""
    counts: dict[str, list[int]] = {}
    shown_failed = repeated = 0
    for _, sample in read_rollouts(run):
        if sample["kind"] != "action":
            continue
        context = sample["rollout_context_text"] or sample["context_text"]
        kind = reflection_kind(context)
        wins = counts.setdefault(kind, [0, 0])
        wins[0] += 1
        wins[1] += sample["return"] > 0
        if kind == "negative":
            failed = set(FAILED.findall(context))
            named = PLAN.search(sample["completion_text"])
            shown_failed += 1
            repeated += named is not None and named.group(1) in failed
    out = {f"rollouts_{k}": float(n) for k, (n, _) in counts.items()}
    out.update({f"win_{k}": w / n for k, (n, w) in counts.items() if n})
    out["rollouts"] = float(sum(n for n, _ in counts.values()))
    out["win"] = sum(w for _, w in counts.values()) / out["rollouts"] if out["rollouts"] else float("nan")
    if shown_failed:
        out["failed_named_again"] = repeated / shown_failed
    return out


def signal_groups(run: Path) -> dict[str, float]:
    """Groups played and informative over the run (dynamic sampling's counters, every round included)."""
    played = informative = 0.0
    for line in (run / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        played += float(row.get("dynamic/groups_played", 0.0))
        informative += float(row.get("dynamic/groups_informative", 0.0))
    return {"groups_played": played, "groups_informative": informative, "informative": informative / played}


def exact_success(model_dir: Path | str, menus: int) -> dict[str, Any]:
    """``measure`` on menus 0..menus-1: success per rollout by prompt and arm, with the per-menu values."""
    import torch
    from transformers import AutoTokenizer, LlamaForCausalLM

    from arena.core.models.smol.menu import NEGATIVE, collect_menu_prompts, measure

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = LlamaForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    result = measure(model, tokenizer, collect_menu_prompts(range(menus)))
    cells = {"plain": ("menu_grpo", "grpo"), "sge_prompt": ("menu_sge", "sge"), "reflection": (NEGATIVE, "sge")}
    out: dict[str, Any] = {}
    for name, (config, arm) in cells.items():
        out[name] = result[config]["arms"][arm]["success"]
        out[f"{name}_per_menu"] = result[config]["arms"][arm]["per_menu"]
    out["first_listed_share"] = result["menu_grpo"]["top_position"][0] / menus
    return out


def informative_share(per_menu: list[float], group_size: int = 8) -> float:
    """The share of groups that hold both a win and a loss, for one group per menu drawn uniformly: a group of
    ``group_size`` rollouts that each win with the menu's success ``s`` is informative with probability
    ``1 - s^n - (1 - s)^n``. What a run's ``groups informative`` is to be read against, before it updates."""
    n = group_size
    return sum(1 - s**n - (1 - s) ** n for s in per_menu) / len(per_menu)


def last_checkpoint(run: Path) -> Path:
    return sorted((run / "checkpoints").glob("step-*"))[-1] / "learners" / "agent"


def summary_cells(runs: dict[str, dict[int, dict[str, float]]], key: str, baselines: list[str]) -> list[str]:
    """One reading across methods: each method's mean over seeds, then every other method minus each baseline,
    paired by seed over the seeds both ran (at least two)."""
    cells = []
    for method, seeds in sorted(runs.items()):
        values = [row[key] for row in seeds.values() if key in row]
        if values:
            cells.append(f"{method} {fmt(values)}")
    for baseline in baselines:
        base = runs.get(baseline, {})
        for method, seeds in sorted(runs.items()):
            if method == baseline:
                continue
            shared = [s for s in seeds if s in base and key in seeds[s] and key in base[s]]
            if len(shared) >= 2:
                diff = fmt([seeds[s][key] - base[s][key] for s in shared], signed=True)
                cells.append(f"{method} − {baseline} {diff}")
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", type=Path, nargs="+", help="folders of METHOD_sN runs, read as one")
    parser.add_argument("--menus", type=int, default=5, help="the runs' task_pool: menus 0..N-1")
    parser.add_argument(
        "--baseline", nargs="+", default=["grpo"], help="methods every other method is paired against (by seed)"
    )
    parser.add_argument("--untrained", default=None, help="the starting model's directory (default: smollm2-menu)")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(2)
    from arena.core.models.smol.menu import build_smollm2_menu

    start = exact_success(args.untrained or build_smollm2_menu(), args.menus)
    print(
        f"starting model, menus 0..{args.menus - 1}: success per rollout, plain prompt at T 0.7 {start['plain']:.3f}, "
        f"SGE's prompt and sampling {start['sge_prompt']:.3f}, after a failed plan {start['reflection']:.3f}; "
        f"first-listed plan most likely on {start['first_listed_share']:.2f} of menus"
    )
    print(
        "groups of 8 informative before any update, exact: plain prompt at T 0.7 (GRPO) "
        f"{informative_share(start['plain_per_menu']):.4f}, SGE's prompt and sampling without reflection "
        f"{informative_share(start['sge_prompt_per_menu']):.4f}, all after a failed plan "
        f"{informative_share(start['reflection_per_menu']):.4f}"
    )
    runs: dict[str, dict[int, dict[str, float]]] = {}
    found = sorted(
        (p for root in args.roots for p in root.iterdir() if (p / "metrics.jsonl").is_file()), key=lambda p: p.name
    )
    names = [p.name for p in found]
    if len(set(names)) != len(names):
        parser.error(f"a run name appears in more than one root: {sorted({n for n in names if names.count(n) > 1})}")
    for run in found:
        method, seed = method_of(run), int(re.search(r"(\d+)$", run.name).group(1))  # type: ignore[union-attr]
        row = {**signal_groups(run), **rollout_rates(run)}
        final = exact_success(last_checkpoint(run), args.menus)
        row.update({k: v for k, v in final.items() if not k.endswith("per_menu")})
        runs.setdefault(method, {})[seed] = row
        print(f"{run.name}: " + ", ".join(f"{k} {v:.3f}" for k, v in sorted(row.items())))
        per_menu = " / ".join(f"{v:.2f}" for v in final["plain_per_menu"])
        print(f"  plain prompt, per menu 0..{args.menus - 1}: {per_menu}")
    keys = sorted({k for method in runs.values() for row in method.values() for k in row})
    print("\nmean over seeds [Student-t 95%], and paired by seed against", ", ".join(args.baseline))
    for key in keys:
        print(f"{key:<22} " + "; ".join(summary_cells(runs, key, args.baseline)))


if __name__ == "__main__":
    main()
