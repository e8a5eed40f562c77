"""Golden outputs: short seeded runs of shipped configs on the toy model, through the ``arena`` command.

The runs go through the command line, not through internal modules, so that a change of layout cannot change
what is being compared. Each run keeps every number the run wrote (metrics rows, evaluation results) except
wall-clock timings, which no two runs share.

Regenerate (only when a change of behaviour is intended, and say so in the commit):

    .venv/bin/python -m tests.golden.runs --write
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
GOLDEN = HERE / "golden.json"
# Keys that measure time or memory, not behaviour.
UNSTABLE = re.compile(r"(time|seconds|_s$|per_s|per_sec|throughput|wall|elapsed|memory_mb|rss|tokens_per)")

SMALL = [
    "groups=2",
    "group_size=2",
    "trial.prompt.max_new_tokens=8",
    "eval.every=0",
    "eval.games=2",
    "checkpoint.every=100",
]


def _learners(n: int, extra: list[str]) -> list[str]:
    out = []
    for i in range(n):
        out += [f"learners.{i}.model={{model}}", f"learners.{i}.optim.micro_batch_tokens=2048"]
    return out + extra


# name -> (config, overrides); {model} is the toy model's directory.
RUNS: dict[str, tuple[str, list[str]]] = {
    "kuhn_mage": ("kuhn_mage", [*SMALL, "iterations=2", *_learners(1, ["options.mage.max_new_tokens=8"])]),
    "kuhn_coevolution": (
        "kuhn_coevolution",
        [
            *SMALL,
            "iterations=2",
            "population.snapshot_every=1",
            *_learners(2, ["learners.0.options.mage.max_new_tokens=8", "learners.1.options.mage.max_new_tokens=8"]),
        ],
    ),
    "kuhn_sge_empo2_mage": (
        "kuhn_sge_empo2_mage",
        [
            *SMALL,
            "iterations=1",
            "task_pool=4",
            *_learners(2, ["learners.0.options.mage.max_new_tokens=8", "learners.1.options.mage.max_new_tokens=8"]),
        ],
    ),
    "text_maze_empo2": ("text_maze_empo2", [*SMALL, "iterations=2", "task_pool=4", *_learners(1, [])]),
}
EVAL_OF = "kuhn_mage"  # `arena eval` on this run's result


def _fix_overrides(overrides: list[str]) -> list[str]:
    # options.mage... for a single learner goes under learners.0
    return [o if not o.startswith("options.") else f"learners.0.{o}" for o in overrides]


def arena_command() -> list[str]:
    exe = Path(sys.executable).with_name("arena")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "arena.core.cli.main"]


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in sorted(value.items()) if not UNSTABLE.search(k)}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return value


def _run(args: list[str], cwd: Path) -> None:
    env = dict(os.environ, TQDM_DISABLE="1")
    proc = subprocess.run(arena_command() + args, cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(
            f"arena {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )


def produce(model_dir: Path, work: Path, names: list[str] | None = None) -> dict[str, Any]:
    """Run the golden runs into ``work`` and return what they wrote, cleaned of timings."""
    out: dict[str, Any] = {}
    work.mkdir(parents=True, exist_ok=True)
    for name in names or list(RUNS):
        config, overrides = RUNS[name]
        filled = [o.replace("{model}", str(model_dir)) for o in _fix_overrides(overrides)]
        run_dir = work / name
        _run(["train", "--population", config, *filled, "--out", str(run_dir), "report_to=none"], work)
        rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
        out[name] = {"metrics": _clean(rows)}
        if name == EVAL_OF:
            _run(["eval", str(run_dir), "--opponents", "all", "--games", "4", "--policy-samples", "2"], work)
            evals = sorted((run_dir / "eval").glob("*.json"))
            out[name]["eval"] = {p.name: _clean(json.loads(p.read_text())) for p in evals}
    # Paths name the temporary directory; what they point to is what matters.
    return json.loads(json.dumps(out).replace(str(work), "<work>"))


def build_toy(path: Path) -> Path:
    sys.path.insert(0, str(HERE.parent.parent))
    from tests.toy_model import build_model, build_tokenizer

    tokenizer = build_tokenizer()
    model = build_model(len(tokenizer), tokenizer.eos_token_id, tokenizer.pad_token_id)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {GOLDEN.name}")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = build_toy(Path(tmp) / "toy")
        result = produce(model, Path(tmp))
    text = json.dumps(result, indent=1, sort_keys=True) + "\n"
    if args.write:
        GOLDEN.write_text(text)
        print(f"wrote {GOLDEN}")
    else:
        print(text)


if __name__ == "__main__":
    main()
