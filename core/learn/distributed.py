"""Several processes (``accelerate launch``): who plays what, and the few collectives the run and the trainer use.

A run started by ``accelerate launch --num_processes N`` is N copies of the same program. They share the work of an
iteration: process ``rank`` plays ``matchups[rank::N]`` (whole groups, so group-relative advantages stay exact and
local), then every process receives every finished trial (``gather``) so that the population, the ratings and
the metrics see all trials in the same order everywhere. The trainer combines the gradients itself, once per
optimizer step (``all_reduce_``), instead of DDP's per-backward all-reduce, because ranks hold different numbers of
samples and micro-batches.

``Dist`` is the single-process no-op when ``world == 1``: nothing is gathered or reduced, so a one-process run
does exactly what it did before this module existed. Tests substitute a subclass whose collectives run between
threads (``tests/learning/test_multiprocess.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

import attrs
import torch

T = TypeVar("T")


class Dist:
    """The process group as the run sees it: ``rank``, ``world`` and the collectives the run and trainer need."""

    def __init__(self, rank: int = 0, world: int = 1, device: torch.device | str = "cpu") -> None:
        self.rank = rank
        self.world = world
        self.device = torch.device(device)

    @classmethod
    def of(cls, accelerator: Any) -> Dist:
        """The group of ``accelerator`` (an ``accelerate.Accelerator`` or its state)."""
        return cls(int(accelerator.process_index), int(accelerator.num_processes), accelerator.device)

    @property
    def is_main(self) -> bool:
        """The process that writes the run directory (metrics, checkpoints, population, dumps)."""
        return self.rank == 0

    def shard(self, items: Sequence[T]) -> list[T]:
        """This process's share of ``items``: every ``world``-th one starting at ``rank``."""
        return list(items[self.rank :: self.world])

    # -- collectives: every rank must call them in the same order ------------------------------------------------

    def gather(self, obj: T) -> list[T]:
        """``obj`` of every rank, by rank (pickled; for records and small dicts, not for tensors of weights)."""
        if self.world == 1:
            return [obj]
        from accelerate.utils import gather_object

        return list(gather_object([obj]))

    def all_reduce_(self, tensor: torch.Tensor, op: str = "sum") -> torch.Tensor:
        """Reduce ``tensor`` in place across ranks (``sum`` or ``max``) and return it."""
        if self.world > 1:
            reduce_op = torch.distributed.ReduceOp.SUM if op == "sum" else torch.distributed.ReduceOp.MAX
            torch.distributed.all_reduce(tensor, op=reduce_op)
        return tensor

    def broadcast_(self, tensor: torch.Tensor, src: int = 0) -> torch.Tensor:
        """Overwrite ``tensor`` on every rank with rank ``src``'s and return it."""
        if self.world > 1:
            torch.distributed.broadcast(tensor, src=src)
        return tensor

    def barrier(self) -> None:
        """Wait until every rank got here (the main process wrote files the others read, or the run ends)."""
        if self.world > 1:
            torch.distributed.barrier()


def in_order(per_rank: Sequence[Sequence[T]], key: Callable[[T], Hashable], order: Sequence[Hashable]) -> list[T]:
    """Items gathered from every rank, put back in ``order`` (the order one process would have produced them).

    Every item's ``key`` must appear in ``order`` exactly once across ranks.
    """
    position = {k: i for i, k in enumerate(order)}
    items = [item for part in per_rank for item in part]
    if len(items) != len(position) or {key(item) for item in items} != set(position):
        raise ValueError(f"gathered {len(items)} items do not match the {len(position)} expected keys")
    return sorted(items, key=lambda item: position[key(item)])


@attrs.frozen
class MinibatchShape:
    """What a minibatch's aggregation weights depend on, summed (or maxed) over the ranks that hold its parts.

    ``tokens``: completion tokens of its token-level samples (not DPO); ``sequences``: how many such samples;
    ``longest``: the longest such completion; ``pairs``: its DPO pairs; ``samples``: all its samples.
    """

    tokens: int = 0
    sequences: int = 0
    longest: int = 0
    pairs: int = 0
    samples: int = 0

    @classmethod
    def of(cls, lengths: Sequence[int], pairs: int, samples: int) -> MinibatchShape:
        """The shape of one rank's part: ``lengths`` of its token-level completions."""
        return cls(sum(lengths), len(lengths), max(lengths, default=0), pairs, samples)

    def merge(self, other: MinibatchShape) -> MinibatchShape:
        return MinibatchShape(
            self.tokens + other.tokens,
            self.sequences + other.sequences,
            max(self.longest, other.longest),
            self.pairs + other.pairs,
            self.samples + other.samples,
        )


def merge_shapes(per_rank: Sequence[Sequence[MinibatchShape]]) -> list[MinibatchShape]:
    """Minibatch ``k`` of the union is the union of every rank's minibatch ``k``."""
    counts = {len(shapes) for shapes in per_rank}
    if len(counts) != 1:
        raise ValueError(f"ranks cut their samples into different numbers of minibatches: {sorted(counts)}")
    merged = [MinibatchShape() for _ in per_rank[0]]
    for shapes in per_rank:
        merged = [a.merge(b) for a, b in zip(merged, shapes, strict=True)]
    return merged


def combine_gradients(flat: Sequence[torch.Tensor], bad: Sequence[float]) -> tuple[torch.Tensor, bool]:
    """The gradient of the union and whether to step, from every rank's flat gradient and non-finite flag.

    Each rank's gradient is of its own samples' share of the loss, with weights normalised over the union (see
    ``MinibatchShape``), so the union's gradient is their sum; a single rank with a non-finite loss cancels the
    step everywhere. This is what ``Dist.all_reduce_`` computes on ``[*gradient, bad]`` in one collective.
    """
    total = torch.stack(list(flat)).sum(0)
    return total, sum(bad) == 0
