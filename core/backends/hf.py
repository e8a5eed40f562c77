"""The ``hf`` backend: batched sampling from a ``transformers`` causal LM, with exact behaviour log-probs.

Why a hand-written loop instead of ``model.generate``: every token must carry the log-prob of the distribution it
was *actually* drawn from (logits / T of its segment, after top-p), rows switch segments (temperature, top-p) at
their own moments, and the randomness of a row must not depend on what else is in the batch. So:

* all rows of all requests (``n`` rows per request) share one left-padded batch with an explicit attention mask,
  ``position_ids = cumsum(mask) - 1`` (so padding never shifts positions) and one KV cache;
* finished rows leave the batch (``index_select`` on the cache; padding columns that only they needed are trimmed),
  so a long answer does not make short ones pay;
* each row draws one uniform per step from a counter-based hash, splitmix64(row seed, step), computed in torch int64
  ops, and samples by inverse CDF — the same seed gives the same draws whatever the batch around it;
* the trainer shares ``backend.model`` itself, so weights never need copying (``sync_weights`` is a no-op);
* every token also records the entropy of the policy's own sampling distribution there (``Completion.entropies``).

Guided segments (``Segment.guide``, MENTOR): rows whose request has a guided segment are also fed, token for token,
to the guide's expert model, which keeps its own left-padded batch and KV cache over exactly those rows (experts
are loaded once per spec and cached on the backend; they must share the policy's tokenizer). At a position inside a
guided segment the row samples from ``p_mix = (1 - w) p_policy + w p_expert``, ``w = min(1, H_t / gamma)``, where

* ``p_policy`` and ``p_expert`` are each the distribution that model would sample from on its own at the segment's
  settings: logits / T, then truncated to *its own* top-p nucleus and renormalised (top-p = 1: no truncation). So
  with w = 0 a guided row samples the same distribution as an unguided one, and with w = 1 the expert's;
* ``H_t`` is the entropy of ``p_policy`` (the value recorded in ``Completion.entropies``);
* the token is drawn by inverse CDF over vocabulary order with the row's uniform, and the behaviour log-prob is
  ``log p_mix(token)``: the distribution actually sampled from. Guided segments need T > 0.

Rows without a guide, and every position outside a guided segment, are sampled exactly as without this feature.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import attrs
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache, PreTrainedModel, PreTrainedTokenizerBase

from arena.core.api.backend import ORACLE_PREFIX, Completion, GenerationRequest, Segment
from arena.core.api.errors import ArenaError
from arena.core.api.seeding import derive_seed
from arena.core.models import resolve_model
from arena.core.models.held import READOUT_FILE, load_held

# --- counter-based randomness -------------------------------------------------------------------------------------

_MASK64 = (1 << 64) - 1


def _signed(value: int) -> int:
    """A 64-bit constant as the int64 that torch stores (two's complement)."""
    value &= _MASK64
    return value - (1 << 64) if value >= 1 << 63 else value


_GAMMA = _signed(0x9E3779B97F4A7C15)
_MIX1 = _signed(0xBF58476D1CE4E5B9)
_MIX2 = _signed(0x94D049BB133111EB)


def _shr(x: torch.Tensor, bits: int) -> torch.Tensor:
    """Logical right shift of int64 (torch's ``>>`` is arithmetic, so mask off the sign extension)."""
    return (x >> bits) & ((1 << (64 - bits)) - 1)


def _mix64(z: torch.Tensor) -> torch.Tensor:
    """splitmix64's finaliser on int64 tensors; multiplication wraps modulo 2**64 like the uint64 original."""
    z = (z ^ _shr(z, 30)) * _MIX1
    z = (z ^ _shr(z, 27)) * _MIX2
    return z ^ _shr(z, 31)


def row_uniforms(row_keys: torch.Tensor, step: int) -> torch.Tensor:
    """One float64 uniform in [0, 1) per row for this step: splitmix64 output ``step`` of the stream ``row_key``.

    ``row_keys`` are already-mixed int64 seeds (see ``row_key``). Counter-based, so a row's draws depend only on its
    key and the step: not on batch size, batch order, or how many draws other rows made.
    """
    z = _mix64(row_keys + _signed((step + 1) * _GAMMA))
    return _shr(z, 11).to(torch.float64) * (1.0 / (1 << 53))


def row_key(seed: int) -> int:
    """Mix a 64-bit seed once, so nearby seeds (0, 1, 2 ...) give unrelated streams."""
    return int(_mix64(torch.tensor([_signed(seed)], dtype=torch.int64)).item())


# --- sampling -------------------------------------------------------------------------------------------------------


def sample_tokens(
    logits: torch.Tensor, temperatures: torch.Tensor, top_ps: torch.Tensor, uniforms: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sample one token per row; returns ``(token ids, behaviour log-probs)``.

    Row ``i`` uses ``logits[i] / temperatures[i]``; ``temperatures[i] == 0`` is greedy (argmax, and the recorded
    log-prob is ``log_softmax(logits)[token]`` at T = 1: the greedy distribution itself is a point mass with
    log-prob 0, which would tell the trainer nothing). With ``top_ps[i] < 1`` the distribution is truncated to the
    smallest set of most likely tokens whose mass reaches top-p (ties broken by token id) and renormalised; the
    recorded log-prob is under that truncated distribution. Sampling is inverse-CDF with ``uniforms[i]`` (float64)
    over vocabulary order (top-p = 1) or probability-sorted order (top-p < 1); no Python loop over rows or vocab.
    """
    logits = logits.float()
    rows, vocab = logits.shape
    greedy = temperatures <= 0
    scale = torch.where(greedy, torch.ones_like(temperatures), temperatures).to(logits.dtype)
    logp = torch.log_softmax(logits / scale.unsqueeze(-1), dim=-1)
    tokens = torch.empty(rows, dtype=torch.long, device=logits.device)
    logprobs = torch.empty(rows, dtype=torch.float64, device=logits.device)

    if bool(greedy.any()):
        idx = greedy.nonzero().squeeze(-1)
        picked = logits[idx].argmax(dim=-1)
        tokens[idx] = picked
        logprobs[idx] = logp[idx].gather(-1, picked.unsqueeze(-1)).squeeze(-1).double()

    plain = ~greedy & (top_ps >= 1.0)
    if bool(plain.any()):
        idx = plain.nonzero().squeeze(-1)
        row_logp = logp[idx]
        cdf = row_logp.double().exp().cumsum(dim=-1)
        target = (uniforms[idx] * cdf[:, -1]).unsqueeze(-1)
        picked = torch.searchsorted(cdf, target, right=True).clamp(max=vocab - 1)
        tokens[idx] = picked.squeeze(-1)
        logprobs[idx] = row_logp.gather(-1, picked).squeeze(-1).double()

    nucleus = ~greedy & (top_ps < 1.0)
    if bool(nucleus.any()):
        idx = nucleus.nonzero().squeeze(-1)
        sorted_logp, order = logp[idx].sort(dim=-1, descending=True, stable=True)
        probs = sorted_logp.double().exp()
        before = probs.cumsum(dim=-1) - probs  # mass of the strictly more likely tokens
        keep = before < top_ps[idx].double().unsqueeze(-1)
        keep[:, 0] = True
        kept_cdf = (probs * keep).cumsum(dim=-1)
        total = kept_cdf[:, -1]
        target = (uniforms[idx] * total).unsqueeze(-1)
        last_kept = (keep.sum(dim=-1, keepdim=True) - 1).clamp(min=0)
        pos = torch.minimum(torch.searchsorted(kept_cdf, target, right=True), last_kept)
        tokens[idx] = order.gather(-1, pos).squeeze(-1)
        logprobs[idx] = sorted_logp.gather(-1, pos).squeeze(-1).double() - total.log()
    return tokens, logprobs


def sampling_logprobs(logits: torch.Tensor, temperatures: torch.Tensor, top_ps: torch.Tensor) -> torch.Tensor:
    """``[rows, vocab]`` float64 log-probs of the distribution each row samples from in ``sample_tokens``.

    ``log_softmax(logits / T)`` (T = 1 for greedy rows, as their recorded log-prob), restricted to the top-p nucleus
    chosen by the same rule as ``sample_tokens`` and renormalised; ``-inf`` outside the nucleus.
    """
    logits = logits.float()
    greedy = temperatures <= 0
    scale = torch.where(greedy, torch.ones_like(temperatures), temperatures).to(logits.dtype)
    logp = torch.log_softmax(logits / scale.unsqueeze(-1), dim=-1).double()
    nucleus = ~greedy & (top_ps < 1.0)
    if bool(nucleus.any()):
        idx = nucleus.nonzero().squeeze(-1)
        sorted_logp, order = logp[idx].sort(dim=-1, descending=True, stable=True)
        probs = sorted_logp.exp()
        before = probs.cumsum(dim=-1) - probs
        keep_sorted = before < top_ps[idx].double().unsqueeze(-1)
        keep_sorted[:, 0] = True
        keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
        total = (probs * keep_sorted).sum(dim=-1, keepdim=True)
        logp[idx] = torch.where(keep, logp[idx] - total.log(), torch.full_like(logp[idx], -math.inf))
    return logp


def entropy_of(logp: torch.Tensor) -> torch.Tensor:
    """Entropy in nats of each row of a ``[rows, vocab]`` log-prob tensor (``-inf`` entries contribute 0)."""
    probs = logp.exp()
    return -torch.where(probs > 0, probs * logp, torch.zeros_like(logp)).sum(dim=-1)


def mixture_probs(
    policy_logp: torch.Tensor, expert_logp: torch.Tensor, gammas: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """MENTOR's token-level mixture: ``(p_mix [rows, vocab] float64, w [rows])``.

    ``w = min(1, H / gamma)`` with ``H`` the entropy of the policy's row; ``p_mix = (1 - w) p_policy + w p_expert``.
    Both inputs are sampling log-probs (``sampling_logprobs``) over the same vocabulary.
    """
    policy_logp, expert_logp = policy_logp.double(), expert_logp.double()
    weight = (entropy_of(policy_logp) / gammas.double()).clamp(min=0.0, max=1.0)
    w = weight.unsqueeze(-1)
    return (1.0 - w) * policy_logp.exp() + w * expert_logp.exp(), weight


def sample_from_probs(probs: torch.Tensor, uniforms: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Inverse-CDF draw over vocabulary order from ``[rows, vocab]`` probabilities: ``(tokens, log-probs)``.

    The log-prob is that of the drawn token under ``probs`` renormalised to sum 1 (it already does up to rounding).
    """
    probs = probs.double()
    vocab = probs.shape[-1]
    cdf = probs.cumsum(dim=-1)
    total = cdf[:, -1]
    target = (uniforms.double() * total).unsqueeze(-1)
    picked = torch.searchsorted(cdf, target, right=True).clamp(max=vocab - 1)
    # Rounding can leave the target at the very top of the CDF, past the last token with mass: step back to it.
    mass = probs.gather(-1, picked).squeeze(-1)
    if bool((mass <= 0).any()):
        last = vocab - 1 - (probs.flip(-1) > 0).double().argmax(dim=-1)
        picked = torch.where((mass <= 0).unsqueeze(-1), last.unsqueeze(-1), picked)
        mass = probs.gather(-1, picked).squeeze(-1)
    return picked.squeeze(-1), mass.log() - total.log()


# --- per-row bookkeeping --------------------------------------------------------------------------------------------


@attrs.define
class _Row:
    """One sample in flight: its tokens so far and where it is in its request's segment plan."""

    request: GenerationRequest
    prompt: list[int]
    key: int
    tokens: list[int] = attrs.field(factory=list)
    logprobs: list[float] = attrs.field(factory=list)
    temperatures: list[float] = attrs.field(factory=list)
    entropies: list[float] = attrs.field(factory=list)
    #: The expert spec of the request's guided segments (None: no segment is guided).
    expert: str | None = None
    #: An ``oracle:`` expert's answer as token ids (its ``Guide.target``) and the end-of-sequence id after it.
    oracle_ids: tuple[list[int], int] | None = None
    segment: int = 0
    segment_start: int = 0
    finish_reason: str | None = None

    @property
    def current(self) -> Segment:
        return self.request.segments[self.segment]

    @property
    def is_last_segment(self) -> bool:
        return self.segment == len(self.request.segments) - 1


@attrs.define
class _ExpertRun:
    """An expert following some rows of the batch: its own left-padded batch, attention mask and KV cache."""

    model: PreTrainedModel
    rows: list[int]
    cache: DynamicCache
    mask: torch.Tensor
    next_position: torch.Tensor
    logits: torch.Tensor


#: A probe for "same tokenizer": ids of this text must agree between policy and expert.
_TOKENIZER_PROBE = "The expert checks: <action>left</action> 0123456789 {}[]()!? Café naïve — 東京 🎲\n\tdone."


def _tail_tokens(stops: Sequence[str]) -> int:
    """How many trailing tokens surely cover a stop string: every token carries at least one byte, plus slack."""
    return max(len(s.encode("utf-8")) for s in stops) + 8


def _prefill(
    model: Any, prompts: Sequence[Sequence[int]], pad_id: int, device: Any
) -> tuple[torch.Tensor, DynamicCache, torch.Tensor, torch.Tensor]:
    """Run left-padded ``prompts`` through ``model`` once: the last position's logits, the KV cache, the attention
    mask and each row's next position id (the policy and every expert start their decoding from here)."""
    width = max(len(p) for p in prompts)
    input_ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for i, prompt in enumerate(prompts):
        input_ids[i, width - len(prompt) :] = torch.tensor(list(prompt), dtype=torch.long)
        mask[i, width - len(prompt) :] = 1
    input_ids, mask = input_ids.to(device), mask.to(device)
    positions = (mask.cumsum(dim=-1) - 1).clamp(min=0)
    cache = DynamicCache(config=model.config)
    logits = model(
        input_ids=input_ids,
        attention_mask=mask,
        position_ids=positions,
        past_key_values=cache,
        use_cache=True,
        logits_to_keep=1,
    ).logits[:, -1, :]
    return logits, cache, mask, positions[:, -1] + 1


class HFBackend:
    """Samples completions from a ``transformers`` causal LM; see the module docstring for how and why.

    ``model`` is a registered model name (``arena.core.models``), a local directory, a hub id, or an already loaded
    ``PreTrainedModel`` (then ``tokenizer`` should be given too; ``device``/``dtype`` only move or cast it when
    given). Strings default to cuda when available (bfloat16) else cpu (float32).
    """

    name = "hf"

    def __init__(
        self,
        model: str | PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase | None = None,
        device: str | None = None,
        dtype: str | torch.dtype | None = None,
    ) -> None:
        if isinstance(model, str):
            self.model_name = model
            path = resolve_model(model)
            local = Path(path).exists()
            gpu = int(os.environ.get("LOCAL_RANK", "0"))  # accelerate launch: this process's own GPU
            target = torch.device(device or (f"cuda:{gpu}" if torch.cuda.is_available() else "cpu"))
            torch_dtype = _as_dtype(dtype) or (torch.bfloat16 if target.type == "cuda" else torch.float32)
            try:
                loaded = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype, local_files_only=local)
            except (OSError, ValueError) as exc:  # no such repo, no network, not a model directory
                first = " ".join(str(exc).split("\n")[0].split())[:300]
                raise ArenaError(f"cannot load model {model!r} ({path}): {first}") from None
            self.model: PreTrainedModel = cast(Any, loaded).to(target)
            #: Masks of the entries the model directory marks as held (``arena.core.models.held``), if any.
            self.held_weights = load_held(path) if local else None
            #: Masks of the model's readout (``READOUT_FILE``): what ``optim.train: readout`` trains, if any.
            self.readout_weights = load_held(path, READOUT_FILE) if local else None
            if tokenizer is None:
                tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=local)
        else:
            self.model_name = str(getattr(model, "name_or_path", "") or type(model).__name__)
            self.model = model
            self.held_weights = None
            self.readout_weights = None
            if device is not None:
                self.model = cast(Any, self.model).to(torch.device(device))
            if dtype is not None:
                self.model = cast(Any, self.model).to(_as_dtype(dtype))
            if tokenizer is None:
                tokenizer = AutoTokenizer.from_pretrained(
                    self.model_name, local_files_only=Path(self.model_name).exists()
                )
        assert tokenizer is not None
        self.tokenizer: PreTrainedTokenizerBase = tokenizer
        #: Expert models of guided segments, loaded once per spec (``expert``/``add_expert``).
        self.experts: dict[str, PreTrainedModel] = {}
        self.model.eval()
        self.eos_ids = _eos_ids(self.model, self.tokenizer)
        pad = self.tokenizer.pad_token_id
        if pad is None:
            pad = min(self.eos_ids) if self.eos_ids else 0
        self.pad_id = int(pad)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def sync_weights(self, state: dict[str, torch.Tensor] | None = None) -> None:
        """No-op: the trainer updates ``self.model`` itself (the very same object), so there is nothing to copy.

        Kept so that trainers can call ``backend.sync_weights(...)`` on every backend alike (vLLM must copy).
        """

    # --- experts (guided segments) ---------------------------------------------------------------------------------

    def expert(self, spec: str) -> PreTrainedModel:
        """The expert model of ``spec``, loaded on first use onto the policy's device and dtype, then cached.

        ``spec`` is resolved like the backend's own model: ``model:NAME`` or ``NAME`` (a registered model, a local
        directory or a hub id); an ``@BACKEND`` suffix is ignored (the expert always runs here, next to the policy).
        Raises ``ArenaError`` when it cannot be loaded or does not share the policy's tokenizer.
        """
        cached = self.experts.get(spec)
        if cached is not None:
            return cached
        name = spec.removeprefix("model:").partition("@")[0]
        try:
            path = resolve_model(name)
            local = Path(path).exists()
            tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=local)
            dtype = next(self.model.parameters()).dtype
            loaded = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, local_files_only=local)
        except ArenaError:
            raise
        except Exception as error:
            raise ArenaError(f"cannot load the guide's expert model {spec!r}: {error}") from error
        return self.add_expert(spec, cast(Any, loaded).to(self.device), tokenizer)

    def _oracle_ids(self, request: GenerationRequest) -> tuple[list[int], int]:
        """The token ids of the ``oracle:`` guide's answer (``Guide.target``) and the end-of-sequence id."""
        targets = {s.guide.target for s in request.segments if s.guide is not None}
        if len(targets) != 1 or None in targets:
            raise ArenaError(
                "an oracle: guide needs its answer (Guide.target), which the rollout engine fills from the scripted "
                f"player; this request's guided segments carry {sorted(map(str, targets))}"
            )
        ids = list(self.tokenizer.encode(str(next(iter(targets))), add_special_tokens=False))
        return ids, int(min(self.eos_ids, default=self.pad_id))

    def add_expert(
        self, spec: str, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase | None = None
    ) -> PreTrainedModel:
        """Use an already loaded ``model`` as the expert of ``spec`` (tests; a model shared with something else).

        With ``tokenizer`` given it must match the policy's (``check_shared_tokenizer``); the model's vocabulary must
        cover the policy's tokenizer either way.
        """
        if tokenizer is not None:
            check_shared_tokenizer(self.tokenizer, tokenizer, spec)
        width = int(model.get_output_embeddings().weight.shape[0])
        if width < len(self.tokenizer):
            raise ArenaError(
                f"the guide's expert {spec!r} scores {width} tokens but the policy's tokenizer has "
                f"{len(self.tokenizer)}: they do not share a vocabulary"
            )
        model.eval()
        self.experts[spec] = model
        return model

    # --- prompts --------------------------------------------------------------------------------------------------

    def prompt_ids(self, request: GenerationRequest) -> list[int]:
        """The prompt token ids for ``request``: given ids, else the chat template (or newline-joined contents).

        An empty prompt becomes one BOS/EOS/pad token, since the first token must be predicted from something.
        """
        if request.prompt_token_ids is not None:
            ids = [int(i) for i in request.prompt_token_ids]
        elif getattr(self.tokenizer, "chat_template", None):
            conversation = [{"role": m.role, "content": m.content} for m in request.messages]
            # tokenize=False then encode: in transformers 5 tokenize=True returns a BatchEncoding, not a list.
            text = self.tokenizer.apply_chat_template(conversation, add_generation_prompt=True, tokenize=False)
            ids = list(self.tokenizer(str(text), add_special_tokens=False)["input_ids"])
        else:
            text = "\n".join(m.content for m in request.messages)
            ids = list(self.tokenizer(text)["input_ids"])
        if not ids:
            bos = self.tokenizer.bos_token_id
            ids = [int(bos) if bos is not None else self.pad_id]
        return ids

    def decode(self, token_ids: Sequence[int]) -> str:
        """Text of ``token_ids`` without special tokens; never raises (broken UTF-8 becomes U+FFFD)."""
        try:
            return str(self.tokenizer.decode(list(token_ids), skip_special_tokens=True))
        except Exception:
            pieces = []
            for token in token_ids:
                try:
                    pieces.append(str(self.tokenizer.decode([token], skip_special_tokens=True)))
                except Exception:
                    pieces.append("\ufffd")
            return "".join(pieces)

    # --- generation -------------------------------------------------------------------------------------------------

    @torch.inference_mode()
    def generate(self, requests: Sequence[GenerationRequest]) -> list[list[Completion]]:
        """``request.n`` completions per request, in order, all rows sampled in one batched loop."""
        for request in requests:
            spec = _request_expert(request)
            if spec is not None and not spec.startswith(ORACLE_PREFIX):
                self.expert(spec)  # load (and check) before any sampling starts
        rows: list[_Row] = []
        for position, request in enumerate(requests):
            prompt = self.prompt_ids(request)
            for k in range(request.n):
                seed = (
                    derive_seed(request.seed, k)
                    if request.seed is not None
                    else derive_seed("hf-position", position, k)
                )
                row = _Row(request=request, prompt=prompt, key=row_key(seed), expert=_request_expert(request))
                if row.expert is not None and row.expert.startswith(ORACLE_PREFIX):
                    row.oracle_ids = self._oracle_ids(request)
                while not row.is_last_segment and row.current.max_new_tokens == 0:
                    row.segment += 1  # a leading segment allowed zero tokens is skipped outright
                rows.append(row)
        if rows:
            self._run(rows)
        out: list[list[Completion]] = []
        it = iter(rows)
        for request in requests:
            completions = []
            for _ in range(request.n):
                row = next(it)
                completions.append(
                    Completion(
                        text=self.decode(row.tokens),
                        token_ids=tuple(row.tokens),
                        logprobs=tuple(row.logprobs),
                        temperatures=tuple(row.temperatures),
                        prompt_token_ids=tuple(row.prompt),
                        finish_reason=row.finish_reason or "length",
                        entropies=tuple(row.entropies),
                    )
                )
            out.append(completions)
        return out

    def _run(self, rows: list[_Row]) -> None:
        device = self.device
        keys = torch.tensor([r.key for r in rows], dtype=torch.int64, device=device)
        logits, cache, mask, next_position = _prefill(self.model, [r.prompt for r in rows], self.pad_id, device)
        active = list(range(len(rows)))
        experts = self._start_experts(rows)
        guided = bool(experts) or any(row.oracle_ids is not None for row in rows)
        settings = self._settings([rows[i] for i in active], device)
        step = 0
        while True:
            uniforms = row_uniforms(keys, step)
            tokens, logprobs = sample_tokens(logits, settings[0], settings[1], uniforms)
            policy_logp = sampling_logprobs(logits, settings[0], settings[1])
            entropy_list = entropy_of(policy_logp).tolist()
            if guided:
                self._guided_draws(rows, active, experts, logits, policy_logp, settings, uniforms, tokens, logprobs)
            token_list = tokens.tolist()
            logprob_list = logprobs.tolist()
            still: list[int] = []
            switched = False
            for j, i in enumerate(active):
                row = rows[i]
                segment = row.segment
                self._advance(row, token_list[j], logprob_list[j], entropy_list[j])
                switched = switched or row.segment != segment
                if row.finish_reason is None:
                    still.append(j)
            if not still:
                return
            if experts:
                # Feed every expert the tokens its rows just drew; rows that finished leave its batch.
                position = {i: j for j, i in enumerate(active)}
                experts = self._step_experts(experts, rows, tokens, position)
            if len(still) < len(active):
                keep = torch.tensor(still, dtype=torch.long, device=device)
                cache.batch_select_indices(keep)
                mask, tokens, next_position, keys = mask[keep], tokens[keep], next_position[keep], keys[keep]
                active = [active[j] for j in still]
                mask = _trim_padding(cache, mask)
                switched = True
            if switched:
                settings = self._settings([rows[i] for i in active], device)
            mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=-1)
            logits = self.model(
                input_ids=tokens.unsqueeze(-1),
                attention_mask=mask,
                position_ids=next_position.unsqueeze(-1),
                past_key_values=cache,
                use_cache=True,
            ).logits[:, -1, :]
            next_position = next_position + 1
            step += 1

    # --- guided segments ------------------------------------------------------------------------------------------

    def _start_experts(self, rows: Sequence[_Row]) -> list[_ExpertRun]:
        """Prefill each expert on the prompts of the rows it guides (one left-padded batch and cache per expert)."""
        device = self.device
        by_spec: dict[str, list[int]] = {}
        for i, row in enumerate(rows):
            if row.expert is not None and row.oracle_ids is None:
                by_spec.setdefault(row.expert, []).append(i)
        runs = []
        for spec, members in by_spec.items():
            model = self.experts[spec]
            logits, cache, mask, next_position = _prefill(model, [rows[i].prompt for i in members], self.pad_id, device)
            runs.append(_ExpertRun(model, list(members), cache, mask, next_position, logits))
        return runs

    @staticmethod
    def _guided_draws(
        rows: Sequence[_Row],
        active: Sequence[int],
        experts: Sequence[_ExpertRun],
        logits: torch.Tensor,
        policy_logp: torch.Tensor,
        settings: tuple[torch.Tensor, torch.Tensor],
        uniforms: torch.Tensor,
        tokens: torch.Tensor,
        logprobs: torch.Tensor,
    ) -> None:
        """Redraw, in place, the tokens (and log-probs) of the rows now in a guided segment from the mixture."""
        guided = [j for j, i in enumerate(active) if rows[i].current.guide is not None]
        if not guided:
            return
        where = {i: (run, k) for run in experts for k, i in enumerate(run.rows)}
        vocab = logits.shape[-1]
        expert_logits = torch.stack(
            [
                _oracle_logits(rows[active[j]], logits[j])
                if rows[active[j]].oracle_ids is not None
                else _fit_width(where[active[j]][0].logits[where[active[j]][1]], vocab)
                for j in guided
            ]
        )
        idx = torch.tensor(guided, dtype=torch.long, device=logits.device)
        expert_logp = sampling_logprobs(expert_logits, settings[0][idx], settings[1][idx])
        gammas = torch.tensor(
            [cast(Any, rows[active[j]].current.guide).gamma for j in guided], dtype=torch.float64, device=logits.device
        )
        probs, _ = mixture_probs(policy_logp[idx], expert_logp, gammas)
        picked, picked_logp = sample_from_probs(probs, uniforms[idx])
        tokens[idx] = picked
        logprobs[idx] = picked_logp.to(logprobs.dtype)

    def _step_experts(
        self, experts: list[_ExpertRun], rows: Sequence[_Row], tokens: torch.Tensor, position: dict[int, int]
    ) -> list[_ExpertRun]:
        """Feed each expert its rows' new tokens; rows that finished or have no guided segment left leave it."""
        remaining = []
        for run in experts:
            alive = [k for k, i in enumerate(run.rows) if rows[i].finish_reason is None and _guided_ahead(rows[i])]
            if not alive:
                continue
            if len(alive) < len(run.rows):
                keep = torch.tensor(alive, dtype=torch.long, device=run.mask.device)
                run.cache.batch_select_indices(keep)
                run.mask, run.next_position = run.mask[keep], run.next_position[keep]
                run.rows = [run.rows[k] for k in alive]
                run.mask = _trim_padding(run.cache, run.mask)
            feed = tokens[torch.tensor([position[i] for i in run.rows], dtype=torch.long, device=tokens.device)]
            run.mask = torch.cat([run.mask, run.mask.new_ones((run.mask.shape[0], 1))], dim=-1)
            run.logits = run.model(
                input_ids=feed.unsqueeze(-1),
                attention_mask=run.mask,
                position_ids=run.next_position.unsqueeze(-1),
                past_key_values=run.cache,
                use_cache=True,
            ).logits[:, -1, :]
            run.next_position = run.next_position + 1
            remaining.append(run)
        return remaining

    @staticmethod
    def _settings(rows: Sequence[_Row], device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        temperatures = torch.tensor([r.current.temperature for r in rows], dtype=torch.float32, device=device)
        top_ps = torch.tensor([r.current.top_p for r in rows], dtype=torch.float32, device=device)
        return temperatures, top_ps

    def _advance(self, row: _Row, token: int, logprob: float, entropy: float) -> None:
        """Record a sampled token, then decide whether the row switches segment or finishes."""
        segment = row.current
        row.tokens.append(token)
        row.logprobs.append(logprob)
        row.temperatures.append(float(segment.temperature))
        row.entropies.append(entropy)
        count = len(row.tokens)
        if token in self.eos_ids:
            row.finish_reason = "stop"
            return
        request_stops: tuple[str, ...] = tuple(getattr(row.request, "stop", ()) or ())
        if request_stops and self._ends_with(row.tokens, 0, request_stops):
            row.finish_reason = "stop"
            return
        if segment.stop and self._ends_with(row.tokens, row.segment_start, segment.stop):
            if row.is_last_segment:
                row.finish_reason = "stop"
                return
            self._next_segment(row)
        elif segment.max_new_tokens is not None and count - row.segment_start >= segment.max_new_tokens:
            if row.is_last_segment:
                row.finish_reason = "length"
                return
            self._next_segment(row)
        if count >= row.request.max_new_tokens:
            row.finish_reason = "length"

    @staticmethod
    def _next_segment(row: _Row) -> None:
        row.segment += 1
        row.segment_start = len(row.tokens)
        # A middle segment allowed zero tokens is skipped outright.
        while not row.is_last_segment and row.current.max_new_tokens == 0:
            row.segment += 1

    def _ends_with(self, tokens: list[int], start: int, stops: Sequence[str]) -> bool:
        """Whether the text of ``tokens[start:]`` ends with a stop string, decoding only the tail that can matter."""
        tail = tokens[max(start, len(tokens) - _tail_tokens(stops)) :]
        text = self.decode(tail)
        return any(text.endswith(s) for s in stops if s)


def _request_expert(request: GenerationRequest) -> str | None:
    """The expert spec of a request's guided segments; one expert per request, and guided segments need T > 0."""
    guides = [segment.guide for segment in request.segments if segment.guide is not None]
    if not guides:
        return None
    specs = {guide.expert for guide in guides}
    if len(specs) > 1:
        raise ArenaError(f"a request's guided segments must share one expert, got {sorted(specs)}")
    if any(segment.guide is not None and segment.temperature <= 0 for segment in request.segments):
        raise ArenaError("a guided segment needs a temperature > 0 (the mixture of two greedy choices is undefined)")
    return guides[0].expert


def _oracle_logits(row: _Row, policy_logits: torch.Tensor) -> torch.Tensor:
    """An ``oracle:`` expert's logits for ``row`` (see ``Guide``): a point mass on the next token of its answer
    while the guided segment's tokens so far follow it, on end of sequence once the answer is complete, and the
    policy's own logits once the row has left the answer (then ``p_mix`` is the policy's distribution)."""
    assert row.oracle_ids is not None
    target, eos = row.oracle_ids
    written = row.tokens[row.segment_start :]
    if written != target[: len(written)]:
        return policy_logits.float()
    nxt = target[len(written)] if len(written) < len(target) else eos
    point = torch.full_like(policy_logits, -math.inf, dtype=torch.float32)
    point[nxt] = 0.0
    return point


def _guided_ahead(row: _Row) -> bool:
    """Whether the row's current or a later segment is guided (the expert still needs to follow it)."""
    return any(segment.guide is not None for segment in row.request.segments[row.segment :])


def _fit_width(logits: torch.Tensor, vocab: int) -> torch.Tensor:
    """An expert's logits over the policy's ``vocab`` columns: extra columns (padding beyond the shared tokenizer)
    are dropped, missing ones get ``-inf``."""
    logits = logits.float()
    width = logits.shape[-1]
    if width >= vocab:
        return logits[..., :vocab]
    pad = logits.new_full((*logits.shape[:-1], vocab - width), -math.inf)
    return torch.cat([logits, pad], dim=-1)


def check_shared_tokenizer(policy: PreTrainedTokenizerBase, expert: PreTrainedTokenizerBase, spec: str = "") -> None:
    """Raise ``ArenaError`` unless ``expert`` has the policy's vocabulary size and encodes a probe text identically.

    Token-level mixing adds the two models' probabilities token id by token id, which only means something when
    the ids name the same strings.
    """
    name = f" {spec!r}" if spec else ""
    if len(policy) != len(expert):
        raise ArenaError(
            f"the guide's expert{name} does not share the policy's tokenizer: {len(expert)} tokens against "
            f"{len(policy)}; MENTOR mixes next-token distributions id by id, so it needs the same tokenizer"
        )
    ours = list(policy(_TOKENIZER_PROBE, add_special_tokens=False)["input_ids"])
    theirs = list(expert(_TOKENIZER_PROBE, add_special_tokens=False)["input_ids"])
    if ours != theirs:
        raise ArenaError(
            f"the guide's expert{name} does not share the policy's tokenizer: the same text encodes to different "
            "token ids; MENTOR mixes next-token distributions id by id, so it needs the same tokenizer"
        )


def _trim_padding(cache: DynamicCache, mask: torch.Tensor) -> torch.Tensor:
    """Drop leading columns that are padding for every remaining row (from the mask and, in place, the cache).

    Only plain full-attention ``DynamicLayer`` caches are trimmed; anything else (sliding windows, linear attention)
    keeps its columns, which is merely slower.
    """
    from transformers.cache_utils import DynamicLayer

    used = mask.any(dim=0).nonzero()
    trim = int(used[0].item()) if used.numel() else 0
    if trim == 0 or not all(type(layer) is DynamicLayer for layer in cache.layers):
        return mask
    for layer in cache.layers:
        keys, values = getattr(layer, "keys", None), getattr(layer, "values", None)
        if keys is None or values is None or keys.shape[-2] != mask.shape[-1]:
            return mask  # an unexpected layout: leave everything as it is (already-trimmed layers are none)
    for layer in cache.layers:
        layer_any = cast(Any, layer)
        layer_any.keys = layer_any.keys[..., trim:, :]
        layer_any.values = layer_any.values[..., trim:, :]
    return mask[:, trim:]


def _as_dtype(dtype: str | torch.dtype | None) -> torch.dtype | None:
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    value = getattr(torch, dtype.removeprefix("torch."), None)
    if not isinstance(value, torch.dtype):
        raise ValueError(f"unknown dtype {dtype!r}")
    return value


def _eos_ids(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> frozenset[int]:
    """End-of-sequence ids from the tokenizer and the model's generation config (chat models often list several)."""
    ids: set[int] = set()
    candidates: list[Any] = [tokenizer.eos_token_id]
    generation_config = getattr(model, "generation_config", None)
    if generation_config is not None:
        candidates.append(generation_config.eos_token_id)
    for value in candidates:
        if value is None:
            continue
        if isinstance(value, int):
            ids.add(value)
        else:
            ids.update(int(v) for v in value)
    return frozenset(ids)


def make_hf_backend(model: str, **options: Any) -> HFBackend:
    """Registry factory: ``factory(model=..., **options)`` with options ``tokenizer``, ``device``, ``dtype``."""
    return HFBackend(model, **options)


__all__ = [
    "HFBackend",
    "check_shared_tokenizer",
    "entropy_of",
    "make_hf_backend",
    "mixture_probs",
    "row_key",
    "row_uniforms",
    "sample_from_probs",
    "sample_tokens",
    "sampling_logprobs",
]
