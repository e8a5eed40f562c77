"""Several processes train one model: the gradient rule (simulated ranks in threads) and `accelerate launch` end to end.

The fast tests run two "ranks" as threads whose collectives meet at a barrier (``ThreadDist``), through the real
``Trainer.update``: two ranks holding parts of a batch must make the update one process makes on the union. The
slow test launches ``accelerate launch --multi_gpu --num_processes 2`` on CPU (gloo) and compares the run with a
one-process run of the same config.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest
import torch

from arena.core.api.samples import Sample
from arena.core.learn.distributed import Dist, MinibatchShape, combine_gradients, in_order, merge_shapes
from arena.core.learn.trainer import LossConfig, OptimConfig, Trainer, token_weights
from tests.learning.test_trainer import params, sampled
from tests.toy_model import build_model, build_tokenizer


class ThreadDist(Dist):
    """Rank ``rank`` of ``world`` threads: every collective is a rendezvous at ``barrier`` on a shared slot list."""

    def __init__(self, rank: int, world: int, barrier: threading.Barrier, slots: list[Any]) -> None:
        super().__init__(rank, world)
        self.barrier_ = barrier
        self.slots = slots

    def _exchange(self, value: Any) -> list[Any]:
        self.slots[self.rank] = value
        self.barrier_.wait()
        out = list(self.slots)
        self.barrier_.wait()
        return out

    def gather(self, obj: Any) -> list[Any]:
        return [copy.deepcopy(o) for o in self._exchange(obj)]

    def all_reduce_(self, tensor: torch.Tensor, op: str = "sum") -> torch.Tensor:
        parts = self._exchange(tensor.clone())
        if op == "sum":
            # The rule the trainer relies on: the last two entries are the non-finite flag and the loss.
            total, _ = combine_gradients(parts, [0.0] * len(parts))
        else:
            total = torch.stack(parts).max(0).values
        tensor.copy_(total)
        return tensor

    def broadcast_(self, tensor: torch.Tensor, src: int = 0) -> torch.Tensor:
        tensor.copy_(self._exchange(tensor.clone())[src])
        return tensor

    def barrier(self) -> None:
        self._exchange(None)


def on_ranks(world: int, job: Callable[[Dist], Any]) -> list[Any]:
    """Run ``job(dist)`` on ``world`` threads, one per simulated rank; results by rank."""
    barrier = threading.Barrier(world, timeout=60)
    slots: list[Any] = [None] * world
    results: list[Any] = [None] * world
    errors: list[BaseException] = []

    def run(rank: int) -> None:
        try:
            results[rank] = job(ThreadDist(rank, world, barrier, slots))
        except BaseException as exc:  # surfaced below
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(rank,)) for rank in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


@pytest.fixture(scope="module")
def toy():
    tokenizer = build_tokenizer()
    return tokenizer, lambda seed=0: build_model(len(tokenizer), tokenizer.eos_token_id, tokenizer.pad_token_id, seed)


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Two simulated ranks share the process: one intra-op thread each keeps them from fighting over the cores."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def six(toy) -> list[Sample]:
    return sampled(toy, n=6)


def grads_after(trainer: Trainer, samples: Sequence[Sample]) -> torch.Tensor:
    """The gradient of the first optimizer step, caught just before the optimizer uses it."""
    seen: list[torch.Tensor] = []
    step = trainer.optimizer.step

    def spy(*args: Any, **kwargs: Any) -> Any:
        if not seen:
            stepped = trainer._stepped_parameters()  # the float32 master copies of a bf16 model
            seen.append(torch.cat([p.grad.flatten().clone() for p in stepped if p.grad is not None]))
        return step(*args, **kwargs)

    trainer.optimizer.step = spy
    trainer.update(samples)
    return seen[0]


@pytest.mark.parametrize(
    ("loss", "minibatches"),
    [
        (LossConfig(), 1),
        (LossConfig(aggregation="seq_mean_token_mean", kl_coef=0.1), 2),
    ],
)
def test_two_ranks_make_the_single_process_update_on_the_union(
    toy, six: list[Sample], loss: LossConfig, minibatches: int
) -> None:
    samples = six
    parts = [samples[:2], samples[2:]]  # unequal shares, different micro-batches (micro_batch_tokens below)
    # Adam divides by sqrt(v) + eps: with the default eps a weight whose gradient is ~1e-12 moves by ~lr whatever
    # its sign, so float summation order alone could move it differently. A larger eps keeps the comparison of
    # the weights about the rule (the gradients are compared directly too).
    optim = OptimConfig(lr=1e-3, eps=1e-4, minibatches=minibatches, micro_batch_tokens=48)
    # One process on the union, in the order the ranks' minibatches add up to: minibatch k of the union is every
    # rank's k-th part (each rank cuts its own samples into ``minibatches`` parts).
    cut = [[part[k * -(-len(part) // minibatches) : (k + 1) * -(-len(part) // minibatches)] for part in parts]
           for k in range(minibatches)]  # fmt: skip
    union = [s for k in range(minibatches) for part in cut[k] for s in part]
    single = Trainer(toy[1](), optim, loss)
    single_grad = grads_after(single, union)
    single.update(union)  # a second batch: optimizer state carries over too

    models = [toy[1](seed=rank) for rank in range(2)]  # built here: the init's global RNG is not thread-safe

    def job(dist: Dist) -> tuple[torch.Tensor, torch.Tensor, dict[str, float]]:
        trainer = Trainer(models[dist.rank], optim, loss, dist=dist)  # rank 1's own init is overwritten
        grad = grads_after(trainer, parts[dist.rank])
        metrics = trainer.update(parts[dist.rank])
        return grad, params(trainer.model), metrics

    (grad0, weights0, metrics0), (grad1, weights1, metrics1) = on_ranks(2, job)
    assert torch.equal(grad0, grad1) and torch.equal(weights0, weights1)  # one summed gradient everywhere
    assert torch.allclose(grad0, single_grad, atol=1e-6, rtol=1e-5)
    assert torch.allclose(weights0, params(single.model), atol=1e-6)
    assert metrics0 == metrics1
    assert metrics0["train/samples"] == 6 and metrics0["train/steps"] == 2 * minibatches


def test_two_bf16_ranks_sum_float32_gradients_into_the_same_master_weights(toy, six: list[Sample]) -> None:
    optim = OptimConfig(lr=1e-3, eps=1e-4, micro_batch_tokens=48)
    parts = [six[:2], six[2:]]
    single = Trainer(toy[1]().to(torch.bfloat16), optim, LossConfig())
    single_grad = grads_after(single, six)
    models = [toy[1](seed=rank).to(torch.bfloat16) for rank in range(2)]

    def job(dist: Dist) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        trainer = Trainer(models[dist.rank], optim, LossConfig(), dist=dist)  # masters made from rank 0's weights
        grad = grads_after(trainer, parts[dist.rank])
        assert trainer.master is not None
        return grad, torch.cat([p.detach().flatten() for p in trainer.master.parameters()]), params(trainer.model)

    (grad0, master0, weights0), (grad1, master1, weights1) = on_ranks(2, job)
    assert grad0.dtype == torch.float32
    assert torch.equal(grad0, grad1) and torch.equal(master0, master1) and torch.equal(weights0, weights1)
    # bf16 forward passes of other batch shapes differ a little from the single process's: same direction.
    assert float(torch.nn.functional.cosine_similarity(grad0, single_grad, dim=0)) > 0.99


def test_a_rank_without_samples_joins_every_step(toy, six: list[Sample]) -> None:
    samples = six[:4]
    optim = OptimConfig(lr=1e-3, minibatches=2)
    single = Trainer(toy[1](), optim, LossConfig())
    single.update(samples)

    models = [toy[1]() for _ in range(2)]

    def job(dist: Dist) -> tuple[torch.Tensor, dict[str, float]]:
        trainer = Trainer(models[dist.rank], optim, LossConfig(), dist=dist)
        metrics = trainer.update(samples if dist.rank == 1 else [])
        return params(trainer.model), metrics

    (w0, m0), (w1, m1) = on_ranks(2, job)
    assert torch.equal(w0, w1) and torch.allclose(w0, params(single.model), atol=1e-6)
    assert m0["train/steps"] == m1["train/steps"] == 2


def test_a_non_finite_loss_on_one_rank_skips_the_step_everywhere(toy, six: list[Sample]) -> None:
    good = six[:4]
    bad = [attrs.evolve(s, advantage=float("nan")) for s in six[4:]]
    before = params(toy[1]())

    models = [toy[1]() for _ in range(2)]

    def job(dist: Dist) -> tuple[torch.Tensor, dict[str, float]]:
        trainer = Trainer(models[dist.rank], OptimConfig(lr=1e-3), LossConfig(), dist=dist)
        metrics = trainer.update(good if dist.rank == 0 else bad)
        return params(trainer.model), metrics

    (w0, m0), (w1, m1) = on_ranks(2, job)
    assert torch.equal(w0, before) and torch.equal(w1, before)
    assert m0["train/skipped_steps"] == m1["train/skipped_steps"] == 1


def test_global_normaliser_makes_the_parts_add_up_to_the_union() -> None:
    a, b = [3, 5], [2, 7, 1]
    for aggregation in ("token_mean", "seq_mean_token_mean", "seq_sum"):
        shape = merge_shapes([[MinibatchShape.of(a, 0, 2)], [MinibatchShape.of(b, 0, 3)]])[0]
        parts = token_weights(a, aggregation, None, shape) + token_weights(b, aggregation, None, shape)
        assert parts == token_weights(a + b, aggregation, None)


def test_shard_and_in_order_restore_the_one_process_order() -> None:
    items = [f"g{i}" for i in range(7)]
    shards = [Dist(rank, 3).shard(items) for rank in range(3)]
    assert sorted(x for s in shards for x in s) == sorted(items) and shards[1] == ["g1", "g4"]
    assert in_order(shards, lambda x: x, items) == items
    with pytest.raises(ValueError):
        in_order([shards[0]], lambda x: x, items)


# -- accelerate launch, end to end ------------------------------------------------------------------------------

CONFIG = """
arena: kuhn_poker
seed: 5
iterations: 2
groups: 4
group_size: 2
opponents:
  - {{spec: conservative, weight: 0.5}}
  - {{spec: aggressive, weight: 0.5}}
learners:
  - name: agent
    model: {model}
    backend: hf
    plugins: [grpo]
    optim: {{lr: 1.0e-3, micro_batch_tokens: 2048}}
trial:
  episodes: 1
  invalid_action: {{policy: random}}
  prompt: {{max_new_tokens: 6}}
eval: {{games: 4, opponents: [intermediate]}}
checkpoint: {{every: 1, keep: 1}}
torch_threads: 1
"""


def launch(args: Sequence[str], processes: int) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONHASHSEED="0", OMP_NUM_THREADS="1")
    prefix: list[str] = [sys.executable, "-m"]
    if processes > 1:
        # ``--cpu`` with several processes wants mpirun; ``--multi_gpu`` without a GPU starts N gloo processes.
        accelerate = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_machines", "1"]
        prefix = [*accelerate, "--num_processes", str(processes), "--mixed_precision", "no", "--dynamo_backend", "no"]
        prefix += ["--main_process_port", str(29500 + os.getpid() % 1000), "-m"]
    return subprocess.Popen([*prefix, "arena.core.cli.main", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)  # fmt: skip


@pytest.mark.slow
def test_accelerate_launch_splits_the_groups_and_trains_one_model(tmp_path: Path, toy_dir: Path) -> None:
    config = tmp_path / "toy.yaml"
    config.write_text(CONFIG.format(model=toy_dir))
    t0 = time.perf_counter()
    two = launch(["train", "--population", str(config), "--out", str(tmp_path / "two"), "--dump-rollouts"], 2)
    one = launch(["train", "--population", str(config), "--out", str(tmp_path / "one"), "--dump-rollouts"], 1)
    _, err2 = two.communicate(timeout=300)
    _, err1 = one.communicate(timeout=300)
    assert two.returncode == 0, err2[-4000:]
    assert one.returncode == 0, err1[-4000:]
    assert time.perf_counter() - t0 < 240
    run2, run1 = tmp_path / "two", tmp_path / "one"

    # One metrics line per iteration (plus the evaluation before training), written by the main process only.
    lines = [json.loads(line) for line in (run2 / "metrics.jsonl").read_text().splitlines()]
    assert [m["iteration"] for m in lines] == [-1, 0, 1]
    assert all(m["processes"] == 2 for m in lines[1:])
    # Every group played by exactly one rank, rank r the groups r, r+2 ... of the iteration's matchups.
    for it in (0, 1):
        rows = [json.loads(line) for line in (run2 / "rollouts" / f"iter_{it:05d}.jsonl").read_text().splitlines()]
        ranks: dict[str, set[int]] = {}
        for row in rows:
            ranks.setdefault(row["group_id"], set()).add(row["rank"])
        assert len(ranks) == 4 and all(len(r) == 1 for r in ranks.values())
        assert {r for rs in ranks.values() for r in rs} == {0, 1}
        single = {json.loads(line)["group_id"] for line in (run1 / "rollouts" / f"iter_{it:05d}.jsonl").open()}
        assert set(ranks) == single
    # The same matches were recorded: the population (records, ratings) equals the one-process run's.
    assert json.loads((run2 / "population.json").read_text()) == json.loads((run1 / "population.json").read_text())
    # Identical weights on both ranks at the end (the run hashes every rank's weights and compares them).
    processes = json.loads((run2 / "processes.json").read_text())
    assert processes["world"] == 2 and len(set(processes["weight_digests"])) == 1
    assert not (run1 / "processes.json").exists()
