"""The run's ``torch_threads`` for as long as a run, an evaluation or a pass@k lasts, and no longer.

torch's intra-op thread count is one setting for the whole process. A run that set it and left it (``Run``,
``arena eval`` and ``arena passk`` called in-process, as notebooks and our tests do) slowed everything after it:
in the test suite, the tests with ``torch_threads: 1`` left the slow learning tests on one of two cores
(the MAGE-on-Kuhn test took 632 s instead of about 400).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def torch_threads(threads: int) -> Iterator[None]:
    """Run the block with ``threads`` intra-op threads (0: leave torch's setting), then restore the previous one."""
    if not threads:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)
