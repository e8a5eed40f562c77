"""The ``arena`` command line.

Errors a user can cause (``ArenaError``) and I/O errors (``OSError``: a full disk, a permission; the path
and the cause) print one line, ``error: ...``, and exit with status 2; no traceback. Run with ``-v`` to see
tracebacks of unexpected failures.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from arena.core.api.errors import ArenaError
from arena.core.cli.logs import configure_logging
from arena.core.config.loader import load_config
from arena.core.host import catalog
from arena.core.host.plugins import check_plugin_options, installed_plugins, registration_manager

EXIT_USER_ERROR = 2


def _print_rows(rows: Sequence[Sequence[str]], header: Sequence[str]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    click.echo(line)
    click.echo("-" * len(line))
    for row in rows:
        click.echo("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--log-format", type=click.Choice(["auto", "pretty", "json"]), default="auto", show_default=True)
@click.option("-v", "--verbose", is_flag=True, help="Debug logs and full tracebacks.")
@click.pass_context
def cli(ctx: click.Context, log_format: str, verbose: bool) -> None:
    """arena: RL for LLM agents where exploration is the hard part."""
    import logging

    configure_logging(log_format, logging.DEBUG if verbose else logging.INFO)  # type: ignore[arg-type]
    ctx.obj = {"verbose": verbose}


def plugin_settings(name: str) -> list[dict[str, Any]] | None:
    """A plugin's settings (name, type, default, doc) from its ``Settings`` class; None when it declares none."""
    from arena.core.api.settings import describe_settings, settings_class
    from arena.core.host.plugins import installed_plugin

    try:
        cls = settings_class(installed_plugin(name))
    except Exception:  # a plugin that fails to load is reported through its "error" field already
        return None
    return describe_settings(cls) if cls is not None else None


@cli.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def plugins_cmd(as_json: bool) -> None:
    """List installed plugins: name, distribution, version, hooks (and, with --json, each one's settings and
    their defaults)."""
    infos = installed_plugins()
    if as_json:
        payload = [
            {
                "name": p.name,
                "distribution": p.distribution,
                "version": p.version,
                "module": p.module,
                "hooks": list(p.hooks),
                "error": p.error,
                "unmarked_hooks": list(p.unmarked),
                "settings": plugin_settings(p.name),
            }
            for p in infos
        ]
        click.echo(json.dumps(payload, indent=2))
        return
    rows = [
        (p.name, p.distribution, p.version, ", ".join(p.hooks) if not p.error else f"ERROR: {p.error}") for p in infos
    ]
    _print_rows(rows, ("name", "distribution", "version", "hooks"))
    for p in infos:
        for hook in p.unmarked:
            click.echo(
                f"warning: plugin {p.name!r} defines {hook!r} without @hookimpl, so it is never called", err=True
            )


@cli.command("check-arena")
@click.argument("arena_id")
@click.option(
    "--seat", "seats", multiple=True, help="Seat spec in seat order (default: model:scripted for every seat)."
)
@click.option("--episodes", default=5, show_default=True, help="Random episodes for the move checks.")
@click.option("--seed", default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def check_arena_cmd(arena_id: str, seats: tuple[str, ...], episodes: int, seed: int, as_json: bool) -> None:
    """Check an arena before training on it: PettingZoo's api_test, the first prompt of each LLM seat, every legal
    move's name through the parser, and names that shadow action ids or leak hidden information."""
    from arena.core.rollout.check import check_arena

    findings = check_arena(arena_id, seats, episodes=episodes, seed=seed)
    if as_json:
        click.echo(json.dumps([f.to_json() for f in findings], indent=2))
    else:
        for f in findings:
            click.echo(f"[{'ok' if f.ok else 'LOOK'}] {f.check}: {f.summary}")
            for line in f.details:
                click.echo("    " + line.replace("\n", "\n    "))
    if not all(f.ok for f in findings):
        raise SystemExit(1)


@cli.command("arenas")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def arenas_cmd(as_json: bool) -> None:
    """List arenas: id, API kind, number of players, source."""
    from arena.arenas import list_arenas

    infos = list_arenas()
    if as_json:
        click.echo(
            json.dumps(
                [
                    {
                        "id": a.arena_id,
                        "api": a.api,
                        "players": a.num_players,
                        "source": a.source,
                        "plugin": a.plugin,
                        "description": a.description,
                    }
                    for a in infos
                ],
                indent=2,
            )
        )
        return
    _print_rows(
        [(a.arena_id, a.api, str(a.num_players), a.source, a.description) for a in infos],
        ("id", "api", "players", "source", "description"),
    )


@cli.command("opponents")
@click.option("--arena", "arena_id", default=None, help="Only opponents that play this arena.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def opponents_cmd(arena_id: str | None, as_json: bool) -> None:
    """List programmatic opponents (seat specs other than model:...)."""
    if arena_id is not None:
        catalog.arenas().get(arena_id)  # unknown arena: one clear line
    rows = []
    for entry in catalog.opponents():
        supported = entry.meta.get("arenas")
        if arena_id is not None and supported is not None and arena_id not in supported:
            continue
        rows.append(
            {
                "id": entry.name,
                "arenas": sorted(supported) if supported is not None else None,
                "plugin": entry.plugin,
                "description": str(entry.meta.get("description", "")),
            }
        )
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    _print_rows(
        [(str(r["id"]), ", ".join(r["arenas"] or ["any"]), str(r["description"])) for r in rows],
        ("id", "arenas", "description"),
    )


@cli.command("play", context_settings={"ignore_unknown_options": False})
@click.argument("arena_id", required=False)
@click.argument("overrides", nargs=-1)
@click.option("--seat", "seats", multiple=True, help="A seat spec, in seat order (repeat for each seat).")
@click.option("--games", type=int, default=None, help="Number of games (trials). [default: 100]")
@click.option("--seed", type=int, default=None, help="Seed of game 0; game i uses seed+i. [default: 0]")
@click.option("--episodes", type=int, default=None, help="Episodes per trial, restarted from the same seed.")
@click.option("--plugin", "plugins", multiple=True, help="Enable a plugin (repeat); default: reflection.")
@click.option("--config", "config_path", type=click.Path(path_type=Path), default=None, help="A play config YAML.")
@click.option("--dump", type=click.Path(path_type=Path), default=None, help="Write every trial as JSON lines.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def play_cmd(
    arena_id: str | None,
    overrides: tuple[str, ...],
    seats: tuple[str, ...],
    games: int | None,
    seed: int | None,
    episodes: int | None,
    plugins: tuple[str, ...],
    config_path: Path | None,
    dump: Path | None,
    as_json: bool,
) -> None:
    """Play ARENA between the given seats and print a per-seat table.

    Extra KEY=VALUE arguments override config keys (e.g. trial.invalid_action.policy=retry).
    """
    from arena.core.config.trial import PlayConfig
    from arena.core.rollout.play import print_table, run_play

    if arena_id is not None and "=" in arena_id:
        overrides = (arena_id, *overrides)
        arena_id = None
    data: dict[str, Any] = {}
    if arena_id is not None:
        data["arena"] = arena_id
    if seats:
        data["seats"] = list(seats)
    if games is not None:
        data["games"] = games
    if seed is not None:
        data["seed"] = seed
    if plugins:
        data["plugins"] = list(plugins)
    if episodes is not None:
        data["trial"] = {"episodes": episodes}
    if config_path is None and "arena" not in data:
        raise ArenaError("name an arena (arena play ARENA --seat ...) or give --config FILE; see `arena arenas`")
    config = load_config(PlayConfig, config_path, overrides=overrides, data=data)
    check_plugin_options([("options.", config.plugins, config.options)], str(config_path or "<command line>"))
    catalog.arenas().get(config.arena)
    result = run_play(config, dump=dump)
    if as_json:
        click.echo(json.dumps(result, indent=2))
    else:
        print_table(result)


@cli.command("train")
@click.argument("overrides", nargs=-1)
@click.option("--population", "config_path", default=None, help="Run config: a YAML path or a shipped config name.")
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Run directory (default: runs/NAME-TIME).")
@click.option("--resume", type=click.Path(path_type=Path), default=None, help="Continue the run in this directory.")
@click.option("--dump-rollouts", is_flag=True, help="Write rollouts/iter_NNNNN.jsonl with every sample.")
@click.option("--overwrite", is_flag=True, help="Start over in an --out directory that already holds a run.")
def train_cmd(
    overrides: tuple[str, ...],
    config_path: str | None,
    out: Path | None,
    resume: Path | None,
    dump_rollouts: bool,
    overwrite: bool,
) -> None:
    """Train a population: learners against a pool of opponents (and each other).

    KEY=VALUE arguments override config keys. A fresh run into a directory that already holds one is refused
    unless --resume DIR (continue it) or --overwrite (start over)."""
    from arena.core.learn import rundir
    from arena.core.learn.run import Run, default_out_dir
    from arena.core.learn.run_config import TrainConfig

    if resume is not None:
        saved = resume / "config.yaml"
        if not saved.exists():
            raise ArenaError(f"{resume} is not a run directory (no config.yaml)")
        config = load_config(TrainConfig, saved, overrides=overrides)
        out_dir = resume
    elif config_path is not None:
        config = load_config(TrainConfig, config_path, overrides=overrides)
        out_dir = out or default_out_dir(config_path)
    else:
        raise ArenaError("give a run config (arena train --population CONFIG) or a run to continue (--resume DIR)")
    rundir.check_out_dir(out_dir)  # before the models load: a bad --out is one line, at once
    existing = rundir.holds_run(out_dir)
    if resume is None and existing and not overwrite:
        raise ArenaError(
            f"{out_dir} already holds a run ({', '.join(existing)}); continue it with --resume {out_dir}, "
            "or start over with --overwrite"
        )
    run = Run(config, out_dir, dump_rollouts=dump_rollouts)
    click.echo(str(run.run(resume=resume is not None, overwrite=overwrite)))
    _leave_process_group()


def _leave_process_group() -> None:
    """Under ``accelerate launch``: wait for every rank, then tear the process group down before the interpreter
    exits. Left to exit on its own, a rank's gloo threads were once still running at exit and the process aborted
    ("terminate called without an active exception", SIGABRT) after a finished run (CI, 2026-12-06)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


@cli.command("eval")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option(
    "--opponents",
    default="unseen",
    show_default=True,
    help="unseen (the config's held-out opponents), train (the pool), all, or a comma list of seat specs.",
)
@click.option("--games", type=int, default=200, show_default=True, help="Trials per opponent, half in each seat.")
@click.option("--learner", default=None, help="Learner to evaluate. [default: the config's first]")
@click.option("--checkpoint", type=click.Path(path_type=Path), default=None, help="Checkpoint dir. [default: latest]")
@click.option("--seed", type=int, default=None, help="Seed of the first deal. [default: the config's eval.seed]")
@click.option("--policy-samples", type=int, default=64, show_default=True, help="Kuhn: answers per info state.")
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Report directory. [default: RUN/eval]")
@click.option("--json", "as_json", is_flag=True, help="Print the whole result as one JSON object.")
def eval_cmd(
    run_dir: Path,
    opponents: str,
    games: int,
    learner: str | None,
    checkpoint: Path | None,
    seed: int | None,
    policy_samples: int,
    out: Path | None,
    as_json: bool,
) -> None:
    """Measure a trained RUN's checkpoint against opponents, above all ones it never met; write a report.

    Where the run's testbed has ceilings (docs/testbeds.md: RPS, Kuhn poker), the report shows them by episode
    (fixed, adaptive, informed) and the share of the adaptive headroom each opponent's numbers captured.

    A single-agent run (coding, text_maze: no opponents) is measured by pass@k on its evaluation tasks instead,
    as ``arena passk RUN`` does, with --games tasks and 8 samples each.
    """
    from arena.core.eval.eval_report import format_text, write_report
    from arena.core.eval.evaluation import evaluate_run, open_run

    info = open_run(run_dir, learner, checkpoint)
    if not info.config.opponents and not info.config.unseen:
        from arena.core.eval.passk import evaluate_run_tasks, format_passk

        result = evaluate_run_tasks(run_dir, games, 8, learner, checkpoint, first_seed=seed)
        click.echo(json.dumps(result, indent=2) if as_json else format_passk(result))
        return

    report = evaluate_run(
        run_dir,
        opponents=opponents,
        games=games,
        learner=learner,
        checkpoint=checkpoint,
        seed=seed,
        policy_samples=policy_samples,
    )
    paths = write_report(report, out if out is not None else run_dir / "eval")
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    click.echo(format_text(report))
    click.echo(f"\nreport: {paths['markdown']}")


def _key_values(items: Sequence[str], option: str) -> dict[str, Any]:
    """``KEY=VALUE`` options as a dict, each value read as YAML (``3`` an int, ``[1, 2]`` a list, ``null`` None)."""
    import yaml

    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.UsageError(f"{option} takes KEY=VALUE, got {item!r}")
        out[key.strip()] = yaml.safe_load(value)
    return out


@cli.command("passk")
@click.argument("target")
@click.option("--arena", "arena_id", default=None, help="Arena (for a model spec; a run uses its own).")
@click.option("--split", default=None, help="Task split, e.g. test (held-out). [default: the run's eval split]")
@click.option(
    "--arena-kwarg",
    "arena_kwargs",
    multiple=True,
    metavar="KEY=VALUE",
    help="An arena kwarg, the value read as YAML (suite=humaneval, tiers=[1,2]); repeatable; over the run's.",
)
@click.option("--tasks", type=int, default=50, show_default=True, help="Tasks (seeds) to evaluate.")
@click.option("--samples", type=int, default=8, show_default=True, help="Samples per task (n of pass@k).")
@click.option("--first-seed", type=int, default=None, help="Seed of the first task. [default: run's eval.seed or 0]")
@click.option("--plugin", "plugin_names", multiple=True, help="Plugins for a model spec (e.g. sge's strategy prompt).")
@click.option("--learner", default=None, help="Learner of a run. [default: the config's first]")
@click.option("--checkpoint", type=click.Path(path_type=Path), default=None, help="Checkpoint dir. [default: latest]")
@click.option("--initial", is_flag=True, help="Evaluate the run's starting model (same plugins), not its checkpoint.")
@click.option(
    "--model",
    "model_spec",
    default=None,
    help="With a run: evaluate this model spec (and --plugin) under the run's tasks and trial settings.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the whole result as one JSON object.")
def passk_cmd(
    target: str,
    arena_id: str | None,
    split: str | None,
    arena_kwargs: tuple[str, ...],
    tasks: int,
    samples: int,
    first_seed: int | None,
    plugin_names: tuple[str, ...],
    learner: str | None,
    checkpoint: Path | None,
    initial: bool,
    model_spec: str | None,
    as_json: bool,
) -> None:
    """pass@k of a single-agent policy: TARGET is a run directory or a model spec (model:tiny)."""
    from arena.core.eval.passk import evaluate_run_tasks, evaluate_tasks, format_passk
    from arena.core.host.plugins import PluginSet

    overrides = {**_key_values(arena_kwargs, "--arena-kwarg"), **({"split": split} if split else {})}
    if Path(target).is_dir():
        report = evaluate_run_tasks(
            Path(target),
            tasks,
            samples,
            learner,
            checkpoint,
            initial,
            first_seed,
            overrides,
            model=model_spec,
            model_plugins=plugin_names,
        )
    else:
        if arena_id is None:
            raise click.UsageError("--arena is needed when TARGET is a model spec")
        if model_spec is not None:
            raise click.UsageError("--model compares with a run: TARGET must be a run directory")
        report = evaluate_tasks(
            target,
            arena_id,
            overrides,
            tasks,
            samples,
            plugins=PluginSet(list(plugin_names)),
            first_seed=first_seed or 0,
        )
    click.echo(json.dumps(report, indent=2) if as_json else format_passk(report))


@cli.command("sft")
@click.argument("data", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option("--model", "model_spec", default="model:tiny", show_default=True, help="Model spec to fine-tune.")
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Directory of the fine-tuned model.")
@click.option("--epochs", type=int, default=2, show_default=True)
@click.option("--lr", type=float, default=1e-4, show_default=True)
@click.option("--batch-size", type=int, default=16, show_default=True, help="Examples per optimizer step.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the example order.")
def sft_cmd(data: Path, model_spec: str, out: Path, epochs: int, lr: float, batch_size: int, seed: int) -> None:
    """Supervised fine-tuning on a JSONL of {"messages", "answer"}; OUT loads as model:OUT."""
    from arena.core.learn.sft import SFTSettings, run_sft

    if epochs < 1 or batch_size < 1 or lr <= 0:
        raise click.UsageError("--epochs and --batch-size must be at least 1 and --lr positive")
    summary = run_sft(data, model_spec, out, SFTSettings(epochs=epochs, lr=lr, batch_size=batch_size, seed=seed))
    click.echo(
        f"sft: {summary['examples']} examples, {summary['steps']} steps, loss {summary['loss_first_epoch']:.3f} → "
        f"{summary['loss_last_epoch']:.3f} in {summary['seconds']:.1f}s; model at {out} (model:{out})"
    )


@cli.command("demos")
@click.argument("arena_name", metavar="ARENA")
@click.option("--out", type=click.Path(path_type=Path), required=True, help="JSONL file to write.")
@click.option("--split", type=click.Choice(["train", "test", "all"]), default="train", show_default=True)
@click.option("--tier", "tiers", type=int, multiple=True, help="Only tasks of this tier; repeatable.")
@click.option("--limit", type=int, default=None, help="Only the first N tasks of the split.")
@click.option("--plugin", "plugins", multiple=True, help="Plugins shaping the prompts, as in the run; repeatable.")
def demos_cmd(
    arena_name: str, out: Path, split: str, tiers: tuple[int, ...], limit: int | None, plugins: tuple[str, ...]
) -> None:
    """Real prompts of ARENA (instruct, coding) with each task's reference answer: SFT data for `arena sft`."""
    from arena.core.cli.reference_demos import collect_reference_demos, write_reference_demos

    if limit is not None and limit < 1:
        raise click.UsageError("--limit must be at least 1")
    demos = collect_reference_demos(arena_name, split, tiers or None, limit, plugins)
    write_reference_demos(demos, out)
    chars = sum(len(d["answer"]) for d in demos) / max(1, len(demos))
    click.echo(f"demos: {len(demos)} {arena_name} tasks ({split}), answers {chars:.0f} characters on average → {out}")


@cli.command("compare")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--metric", default="rollout/mean_return", show_default=True, help="Metric per iteration to compare.")
@click.option("--level", "levels", type=float, multiple=True, help="Reward level; repeatable. Rollouts to reach it.")
@click.option("--window", type=int, default=1, show_default=True, help="Trailing mean over this many iterations.")
@click.option("--plot", "plot_path", type=click.Path(path_type=Path), default=None, help="Write a PNG of the curves.")
@click.option("--by-method", is_flag=True, help="Group runs by method (plugin list) and summarise over their seeds.")
@click.option(
    "--by-episode",
    is_flag=True,
    help="From each run's `arena eval` report: value by episode against the pool and each unseen opponent, per "
    "method (the run directory's name less its seed: mage_s0 -> mage) over seeds, beside the ceilings.",
)
@click.option(
    "--baseline",
    default=None,
    metavar="METHOD",
    help="With --by-method (implied) or --by-episode: compare each method with this one, paired by seed (e.g. grpo).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def compare_cmd(
    run_dirs: tuple[Path, ...],
    metric: str,
    levels: tuple[float, ...],
    window: int,
    plot_path: Path | None,
    by_method: bool,
    by_episode: bool,
    baseline: str | None,
    as_json: bool,
) -> None:
    """Runs side by side: a metric against rollouts played, and the samples each needed to reach --level.

    With --by-method, one row per method over its seeds (one run per method and seed): held-out reward with
    Student-t intervals and, with --baseline, the per-seed paired difference from the baseline.

    With --by-episode, the meta-RL view: each method's evaluated value by episode of a trial, against the training
    pool and each opponent outside it, beside the testbed's fixed and adaptive ceilings, paired by seed.
    """
    if by_episode:
        from arena.core.eval.episode_compare import compare_by_episode, format_episode_table, plot_by_episode

        episode_view = compare_by_episode(run_dirs, baseline=baseline)
        if plot_path is not None:
            episode_view["plot"] = str(plot_by_episode(episode_view, plot_path))
        click.echo(json.dumps(episode_view, indent=2) if as_json else format_episode_table(episode_view))
        if plot_path is not None and not as_json:
            click.echo(f"plot: {plot_path}")
        return
    from arena.core.eval.compare import compare_runs, format_table, plot

    result = compare_runs(run_dirs, metric=metric, levels=levels, window=max(1, window))
    if by_method or baseline is not None:
        from arena.core.eval.method_compare import format_method_table, plot_methods, summarise_methods

        summary = summarise_methods(result["runs"], baseline=baseline, levels=levels)
        if plot_path is not None:
            summary["plot"] = str(
                plot_methods(summary, result["runs"], plot_path, metric=metric, window=max(1, window))
            )
        click.echo(json.dumps({"metric": metric, **summary}, indent=2) if as_json else format_method_table(summary))
        if plot_path is not None and not as_json:
            click.echo(f"plot: {plot_path}")
        return
    if plot_path is not None:
        result["plot"] = str(plot(result, plot_path))
    click.echo(json.dumps(result, indent=2) if as_json else format_table(result))
    if plot_path is not None and not as_json:
        click.echo(f"plot: {plot_path}")


@cli.command("report")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Output folder. [default: RUN/report]")
@click.option("--html", "as_html", is_flag=True, help="Write a self-contained HTML page instead of Markdown.")
@click.option("--json", "as_json", is_flag=True, help="Print the page and plot paths and the summary as JSON.")
def report_cmd(run_dir: Path, out: Path | None, as_html: bool, as_json: bool) -> None:
    """A page about a training RUN: learning curves, evaluations, win-rate matrix, ratings (PNG plots)."""
    from arena.core.eval.run_report import format_text, write_run_report

    result = write_run_report(run_dir, out, as_html=as_html)
    click.echo(json.dumps(result, indent=2) if as_json else format_text(result))


@cli.group("models", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def models_cmd(ctx: click.Context, as_json: bool) -> None:
    """List built-in models: name, parameters, where cached, whether built."""
    if ctx.invoked_subcommand is not None:
        return
    from arena.core.models.listing import list_models

    rows = list_models()
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    _print_rows(
        [
            (
                r["name"],
                f"{r['parameters']:,}" if r.get("parameters") else "-",
                r.get("default_backend", ""),
                {True: "yes", False: "no"}.get(r.get("built"), "-"),  # type: ignore[arg-type]
                r.get("path") or "-",
            )
            for r in rows
        ],
        ("name", "parameters", "backend", "built", "path"),
    )


@models_cmd.command("build")
@click.argument("name")
@click.option("--force", is_flag=True, help="Rebuild even if cached.")
def models_build_cmd(name: str, force: bool) -> None:
    """Build (or cache) a built-in model now instead of on first use."""
    from arena.core.models.listing import build_model

    path = build_model(name, force=force)
    click.echo(str(path))


def _add_plugin_commands() -> None:
    registration_manager().hook.register_commands(cli=cli)


def main(argv: Sequence[str] | None = None) -> int:
    verbose = "-v" in (argv if argv is not None else sys.argv[1:]) or "--verbose" in (argv or sys.argv[1:])
    try:
        _add_plugin_commands()
        cli.main(args=list(argv) if argv is not None else None, prog_name="arena", standalone_mode=False)
    except ArenaError as exc:
        if verbose:
            raise
        click.echo(f"error: {exc}", err=True)
        return EXIT_USER_ERROR
    except OSError as exc:  # a full disk, a permission, a vanished file: the path and the cause, one line
        if verbose:
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        click.echo(f"error: {where}{exc.strerror or ' '.join(str(exc).split())}", err=True)
        return EXIT_USER_ERROR
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    return 0


if __name__ == "__main__":
    sys.exit(main())


def console_main() -> None:
    """The ``arena`` console script."""
    sys.exit(main())
