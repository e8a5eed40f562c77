"""SGE's menu on SmolLM2-135M-Instruct before any RL (docs/results.md, "SGE's menu on SmolLM2-135M-Instruct").

    OMP_NUM_THREADS=2 .venv/bin/python tests/arenas/menu_smollm2.py OUT [--form-only]
        [--reflection-choice first|uniform] [--menus N] [--show] [--no-untrained]

Builds ``smollm2-menu`` into ``OUT/model`` (core/models/smol/menu.py; ``--form-only``: the recipe without
``read_reflection``), unless it is there already, and writes ``OUT/measure.json``: the exact measurement
(``measure``) of the untrained SmolLM2 and of the built model on menus 0..N-1 (default 20, the configs' menus), and
the paired differences between the sampling arms (pass@8, success per rollout, and ``mixed@8``, the probability that
a group of 8 holds both a win and a loss, so that GRPO's advantages are not all zero; SGE − GRPO and SGE − all-hot,
mean over menus with a Student-t 95% interval). The sampled check of the same arms runs through the hf backend:
``python tests/arenas/menu_probe.py model:OUT/model``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import attrs
import numpy as np
from scipy import stats

from arena.core.models import smollm2
from arena.core.models.smol.menu import (
    NEGATIVE,
    MenuRecipe,
    build_smollm2_menu,
    collect_menu_prompts,
    measure,
)


def paired(a: list[float], b: list[float]) -> dict[str, float]:
    d = np.asarray(a) - np.asarray(b)
    half = float(stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("nan")
    return {
        "mean": round(float(d.mean()), 4),
        "low": round(float(d.mean()) - half, 4),
        "high": round(float(d.mean()) + half, 4),
    }


def differences(entry: dict[str, Any]) -> dict[str, Any]:
    arms = entry["arms"]
    out: dict[str, Any] = {}
    for metric in ("pass@8", "success", "mixed@8"):

        def per_menu(arm: str, metric: str = metric) -> list[float]:
            values = arms[arm]["per_menu"]
            if metric == "pass@8":
                return [1 - (1 - s) ** 8 for s in values]
            if metric == "mixed@8":  # a group of 8 holds a win and a loss: GRPO's advantage is not all zero
                return [1 - s**8 - (1 - s) ** 8 for s in values]
            return values

        out[metric] = {
            "sge-grpo": paired(per_menu("sge"), per_menu("grpo")),
            "sge-all_hot": paired(per_menu("sge"), per_menu("all_hot")),
        }
    return out


def show(label: str, result: dict[str, Any]) -> None:
    for config, entry in result.items():
        brief = {k: v for k, v in entry.items() if k != "arms"}
        arms = {arm: {k: v for k, v in a.items() if k != "per_menu"} for arm, a in entry["arms"].items()}
        for arm, a in entry["arms"].items():
            arms[arm]["mixed@8"] = round(sum(1 - s**8 - (1 - s) ** 8 for s in a["per_menu"]) / len(a["per_menu"]), 4)
        print(f"{label} {config}: {json.dumps(brief)}\n    arms {json.dumps(arms)}", flush=True)
        if config != NEGATIVE:
            print(f"    paired {json.dumps(differences(entry))}", flush=True)


def main() -> None:
    import torch
    from transformers import AutoTokenizer, LlamaForCausalLM

    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--form-only", action="store_true")
    parser.add_argument("--reflection-choice", choices=("first", "uniform"), default="first")
    parser.add_argument("--menus", type=int, default=20)
    parser.add_argument("--show", action="store_true", help="print OUT/measure.json again, measuring nothing")
    parser.add_argument("--no-untrained", action="store_true", help="measure the built model only")
    args = parser.parse_args()
    if args.show:
        saved = json.loads((args.out / "measure.json").read_text())
        for label in ("untrained", "built"):
            if label in saved:
                show(label, saved[label])
        return
    torch.set_num_threads(2)
    recipe = MenuRecipe(read_reflection=not args.form_only, reflection_choice=args.reflection_choice)
    prompts = collect_menu_prompts(range(args.menus))
    report: dict[str, Any] = {"recipe": attrs.asdict(recipe), "menus": args.menus}
    models = (("untrained", Path(smollm2.build_smollm2())), ("built", None))
    for label, path in models[1:] if args.no_untrained else models:
        if path is None:
            path = build_smollm2_menu(recipe=recipe, out_dir=args.out / "model")
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = LlamaForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
        report[label] = measure(model, tokenizer, prompts)
        show(label, report[label])
    report["paired"] = {c: differences(e) for c, e in report["built"].items() if c != NEGATIVE}
    (args.out / "measure.json").write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
