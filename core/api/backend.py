"""The generation backend protocol: a batch of requests in, sampled completions with log-probs out.

Every backend (``scripted`` here; ``hf`` and ``vllm`` as they land) implements ``Backend.generate``. The rollout
engine calls it once per tick with every pending request of every live trial, so a backend should batch them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import attrs

from arena.core.api.errors import ArenaError


@attrs.frozen
class ChatMessage:
    role: str
    content: str


#: An expert spec with this prefix names a scripted player, not a model (see ``Guide``).
ORACLE_PREFIX = "oracle:"


@attrs.frozen
class Guide:
    """Token-level guidance of a segment by an expert model (MENTOR, arXiv 2510.04140).

    At each position of a guided segment the backend samples from
    ``p_mix = (1 - w) * p_policy + w * p_expert`` with ``w = min(1, H_t / gamma)``, where ``H_t`` is the policy's
    next-token entropy there. ``expert`` is a model spec the backend can load (``model:tiny``, a registered name,
    a local checkpoint directory or a hub id); it must share the policy's tokenizer. ``gamma`` (> 0) is the
    entropy at which the expert takes over completely.

    An *oracle* expert (``expert="oracle:OPPONENT"``, e.g. ``oracle:text_maze-explorer``) is a scripted player
    rather than a model: the rollout engine asks it for its move in the seat's state and fills ``target`` with
    the answer it would give (``<action>MOVE</action>``). The backend then takes ``p_expert`` as a point mass on
    the next token of ``target``'s tokenization while the segment's text so far follows it, on the end of
    sequence once it is complete, and as the policy's own distribution once the text has left it (an oracle has
    no opinion off its line). It shares every tokenizer by construction.
    """

    expert: str
    gamma: float
    target: str | None = None

    def __attrs_post_init__(self) -> None:
        if not self.expert:
            raise ValueError("a Guide needs an expert model spec")
        if not self.gamma > 0:
            raise ValueError(f"a Guide needs gamma > 0, got {self.gamma}")

    @property
    def oracle(self) -> str | None:
        """The scripted player's spec of an ``oracle:`` expert, else None."""
        return self.expert.removeprefix(ORACLE_PREFIX) if self.expert.startswith(ORACLE_PREFIX) else None


@attrs.frozen
class Segment:
    """One stretch of a completion sampled with its own settings.

    A segment ends when its text ends with one of ``stop`` (the stop string is kept) or after
    ``max_new_tokens`` tokens; the next segment then continues the same completion. The last segment runs
    until the request's ``max_new_tokens`` or the end-of-sequence token. SGE uses two: the strategy at
    T = 1.2 until ``</strategy>``, then the rest at T = 0.7.

    ``guide`` (None: plain sampling from the policy) mixes an expert's next-token distribution into this
    segment's sampling (see ``Guide``); the behaviour log-prob of a guided token is then its log-prob under the
    mixture it was drawn from. Only the ``hf`` backend samples guided segments; the others raise ``ArenaError``.
    """

    temperature: float = 1.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    max_new_tokens: int | None = None
    guide: Guide | None = None


@attrs.frozen
class GenerationRequest:
    """A prompt (chat messages or token ids) and how to sample from it.

    ``stop`` ends the whole completion (on top of the last segment's stop strings); ``seed`` makes the
    sampling of this request repeatable independently of what else is in the batch, where the backend can.
    ``purpose`` says what the text is for ("action", "reflection", "tip", ...), for logs and metrics.
    """

    messages: tuple[ChatMessage, ...] = ()
    prompt_token_ids: tuple[int, ...] | None = None
    segments: tuple[Segment, ...] = (Segment(),)
    max_new_tokens: int = 256
    n: int = 1
    seed: int | None = None
    purpose: str = "action"

    def __attrs_post_init__(self) -> None:
        if not self.messages and self.prompt_token_ids is None:
            raise ValueError("a GenerationRequest needs messages or prompt_token_ids")
        if not self.segments:
            raise ValueError("a GenerationRequest needs at least one segment")
        if self.n < 1 or self.max_new_tokens < 1:
            raise ValueError("n and max_new_tokens must be positive")


@attrs.frozen
class Completion:
    """One sampled continuation.

    ``logprobs[i]`` is the behaviour log-prob of ``token_ids[i]`` under the distribution it was sampled from
    (logits divided by ``temperatures[i]``, after top-p); the trainer recomputes with the same temperatures. In a
    guided segment (``Segment.guide``) that distribution is the policy/expert mixture.

    ``entropies[i]`` (empty when the backend does not measure it) is the entropy in nats of the policy's own
    next-token distribution at position ``i``, the one it samples from on its own (logits / T, after top-p; at
    T = 0 the T = 1 distribution, as for the greedy log-prob). MENTOR derives its threshold γ from it.
    """

    text: str
    token_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    temperatures: tuple[float, ...]
    prompt_token_ids: tuple[int, ...] = ()
    finish_reason: str = "stop"
    entropies: tuple[float, ...] = ()


def reject_guided(requests: Sequence[GenerationRequest], backend: str) -> None:
    """Raise ``ArenaError`` if a request has a guided segment: backends other than ``hf`` cannot sample one."""
    for request in requests:
        for segment in request.segments:
            if segment.guide is not None:
                raise ArenaError(
                    f"MENTOR's guided sampling runs in the hf backend; the {backend} backend cannot mix the expert "
                    f"{segment.guide.expert!r} into its sampling. Run the learner with model:NAME@hf, or drop the "
                    "mentor plugin."
                )


@runtime_checkable
class Backend(Protocol):
    """Turns a batch of requests into ``request.n`` completions each, in request order."""

    name: str

    def generate(self, requests: Sequence[GenerationRequest]) -> list[list[Completion]]: ...
