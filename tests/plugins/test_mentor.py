"""MENTOR: the mixture sampler (hand-made distributions and a toy policy/expert pair in the hf backend), the
positive-only mixed advantage, the α schedule and switch-off, γ from the previous batch, and the guided-request
errors of the other backends."""

from __future__ import annotations

import importlib
import math
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from transformers import AutoTokenizer, PreTrainedTokenizerFast, Qwen2ForCausalLM

from arena.core.api.backend import ChatMessage, Completion, GenerationRequest, Guide, Segment
from arena.core.api.errors import ArenaError, ConfigError
from arena.core.api.records import EpisodeRecord, Step, TrialRecord, TrialSpec, Turn
from arena.core.api.samples import Sample
from arena.core.backends.hf import (
    HFBackend,
    check_shared_tokenizer,
    entropy_of,
    mixture_probs,
    row_uniforms,
    sample_from_probs,
    sample_tokens,
    sampling_logprobs,
)
from arena.core.backends.scripted import ScriptedBackend
from arena.core.learn.advantages import group_normalized
from arena.plugins import mentor
from arena.plugins.mentor import Mentor, alpha_at, gamma_from, mentor_advantages

from ..toy_model import build_model, build_tokenizer


def chi2_critical(dof: int, z: float = 3.0902) -> float:
    """The χ² quantile at p = 0.001 (z: the normal's 0.999 quantile) by Wilson–Hilferty (2% high at dof 2, closer
    above).

    A correct sampler fails about once in a thousand seeds; the seeds here are fixed, so the tests are deterministic.
    """
    return dof * (1 - 2 / (9 * dof) + z * math.sqrt(2 / (9 * dof))) ** 3


def chi_square(counts: np.ndarray, probs: np.ndarray, min_expected: float = 5.0) -> tuple[float, int]:
    """χ² statistic and degrees of freedom; cells expected below ``min_expected`` are pooled into one."""
    n = counts.sum()
    expected = probs * n
    big = expected >= min_expected
    obs = list(counts[big]) + ([counts[~big].sum()] if (~big).any() else [])
    exp = list(expected[big]) + ([expected[~big].sum()] if (~big).any() else [])
    stat = sum((o - e) ** 2 / e for o, e in zip(obs, exp, strict=True) if e > 0)
    return float(stat), len(obs) - 1


# --------------------------------------------------------------------------------------------------------------
# The mixture on hand-made distributions
# --------------------------------------------------------------------------------------------------------------

POLICY = [0.5, 0.3, 0.2]
EXPERT = [0.1, 0.1, 0.8]


def _logp(p: list[float]) -> torch.Tensor:
    return torch.tensor([p], dtype=torch.float64).log()


def test_mixture_probs_by_hand() -> None:
    h = -sum(p * math.log(p) for p in POLICY)  # 1.0297 nats
    for gamma in (2.0, 1.5, 0.5):
        w = min(1.0, h / gamma)
        probs, weight = mixture_probs(_logp(POLICY), _logp(EXPERT), torch.tensor([gamma]))
        expected = [(1 - w) * a + w * b for a, b in zip(POLICY, EXPERT, strict=True)]
        assert weight.item() == pytest.approx(w, abs=1e-12)
        assert probs[0].tolist() == pytest.approx(expected, abs=1e-12)
    assert entropy_of(_logp(POLICY)).item() == pytest.approx(h, abs=1e-12)


def test_mixture_sampling_frequencies_and_logprobs() -> None:
    gamma = 2.0
    probs, _ = mixture_probs(
        _logp(POLICY).repeat(20000, 1), _logp(EXPERT).repeat(20000, 1), torch.full((20000,), gamma)
    )
    uniforms = row_uniforms(torch.arange(20000, dtype=torch.int64) * 7919 + 13, 0)
    tokens, logprobs = sample_from_probs(probs, uniforms)
    p_mix = probs[0].numpy()
    counts = np.bincount(tokens.numpy(), minlength=3)
    stat, dof = chi_square(counts, p_mix)
    assert dof == 2 and stat < chi2_critical(dof), (counts, p_mix)
    assert torch.allclose(logprobs, torch.tensor(np.log(p_mix))[tokens], atol=1e-12)
    # Against a different distribution (the policy alone) the same draws fail the test: the check has teeth.
    stat_policy, _ = chi_square(counts, np.array(POLICY))
    assert stat_policy > 10 * chi2_critical(2)


def test_sample_from_probs_never_picks_a_zero_mass_token() -> None:
    probs = torch.tensor([[0.0, 0.5, 0.0, 0.5, 0.0]] * 3, dtype=torch.float64)
    tokens, logprobs = sample_from_probs(probs, torch.tensor([0.0, 0.4999999, 1.0 - 1e-17], dtype=torch.float64))
    assert tokens.tolist() == [1, 1, 3]
    assert logprobs.tolist() == pytest.approx([math.log(0.5)] * 3)


def test_sampling_logprobs_agree_with_sample_tokens() -> None:
    """The distribution ``sampling_logprobs`` describes is the one ``sample_tokens`` draws from (T, top-p)."""
    torch.manual_seed(0)
    logits = torch.randn(4, 50) * 3
    temperatures = torch.tensor([1.0, 0.7, 1.3, 0.0])
    top_ps = torch.tensor([1.0, 0.8, 0.5, 1.0])
    logp = sampling_logprobs(logits, temperatures, top_ps)
    assert torch.allclose(logp.exp().sum(dim=-1), torch.ones(4, dtype=torch.float64), atol=1e-9)
    assert torch.isinf(logp[2]).sum() > 0  # the nucleus at top-p 0.5 drops tokens
    for step in range(40):
        tokens, logprobs = sample_tokens(logits, temperatures, top_ps, row_uniforms(torch.arange(4) + 99, step))
        assert torch.allclose(logprobs.double(), logp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1), atol=1e-5)


def test_check_shared_tokenizer(tiny_tokenizer: PreTrainedTokenizerFast) -> None:
    check_shared_tokenizer(tiny_tokenizer, build_tokenizer())

    class Shifted:
        def __len__(self) -> int:
            return len(tiny_tokenizer)

        def __call__(self, text: str, add_special_tokens: bool = False) -> dict[str, list[int]]:
            return {"input_ids": [i + 1 for i in tiny_tokenizer(text, add_special_tokens=False)["input_ids"]]}

    class Smaller(Shifted):
        def __len__(self) -> int:
            return len(tiny_tokenizer) - 1

    with pytest.raises(ArenaError, match="different token ids"):
        check_shared_tokenizer(tiny_tokenizer, Shifted(), "x")
    with pytest.raises(ArenaError, match="does not share the policy's tokenizer"):
        check_shared_tokenizer(tiny_tokenizer, Smaller(), "x")


# --------------------------------------------------------------------------------------------------------------
# Guided sampling in the hf backend (toy policy and toy expert)
# --------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_tokenizer() -> PreTrainedTokenizerFast:
    return build_tokenizer()


@pytest.fixture(scope="module")
def policy_model(tiny_tokenizer: PreTrainedTokenizerFast) -> Qwen2ForCausalLM:
    return build_model(len(tiny_tokenizer), tiny_tokenizer.eos_token_id, tiny_tokenizer.pad_token_id, seed=0)


@pytest.fixture(scope="module")
def expert_dir(tmp_path_factory: pytest.TempPathFactory, tiny_tokenizer: PreTrainedTokenizerFast) -> Path:
    """A different toy model with the same tokenizer, saved as a checkpoint directory (the spec is its path)."""
    folder = tmp_path_factory.mktemp("expert")
    build_model(len(tiny_tokenizer), tiny_tokenizer.eos_token_id, tiny_tokenizer.pad_token_id, seed=1).save_pretrained(
        folder
    )
    tiny_tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def backend(policy_model: Qwen2ForCausalLM, expert_dir: Path) -> HFBackend:
    """The policy with the tokenizer as a checkpoint loads it (as a run loads both policy and expert)."""
    hf = HFBackend(policy_model, AutoTokenizer.from_pretrained(expert_dir, local_files_only=True))
    hf.expert(str(expert_dir))
    return hf


def ask(text: str, segments: tuple[Segment, ...], **kw: Any) -> GenerationRequest:
    return GenerationRequest(messages=(ChatMessage("user", text),), segments=segments, **kw)


def step_distributions(
    backend: HFBackend, expert: torch.nn.Module, c: Completion, temperature: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Policy and expert log-probs (float64, at ``temperature``) that predicted each completion token, no cache."""
    ids = torch.tensor([list(c.prompt_token_ids) + list(c.token_ids)])
    start = len(c.prompt_token_ids) - 1
    with torch.no_grad():
        out = []
        for model in (backend.model, expert):
            logits = model(input_ids=ids).logits[0, start : start + len(c.token_ids)].double()
            out.append(torch.log_softmax(logits / temperature, dim=-1))
    return out[0], out[1]


def test_expert_is_loaded_once_and_checked(
    backend: HFBackend, expert_dir: Path, tmp_path: Path, policy_model: Qwen2ForCausalLM
) -> None:
    assert backend.expert(str(expert_dir)) is backend.expert(str(expert_dir))
    # The in-memory toy tokenizer and the same tokenizer reloaded from a Qwen2 checkpoint (a Qwen2Tokenizer, which
    # splits digits one by one) give different ids for "0123": the check catches it.
    other = HFBackend(policy_model, build_tokenizer())
    with pytest.raises(ArenaError, match="encodes to different token ids"):
        other.expert(str(expert_dir))
    assert not other.experts
    assert backend.expert(f"model:{expert_dir}@hf") is not None  # model: prefix and @backend suffix accepted
    with pytest.raises(ArenaError, match=r"unknown model .*missing.*no such directory"):
        backend.expert(str(tmp_path / "missing"))


def test_guided_logprobs_are_the_mixture_and_entropies_the_policys(backend: HFBackend, expert_dir: Path) -> None:
    gamma, temperature = 3.0, 1.0
    guided = (Segment(temperature=temperature, guide=Guide(str(expert_dir), gamma)),)
    requests = [ask(p, guided, max_new_tokens=12, n=2, seed=5 + i) for i, p in enumerate(["hi", "the card is high"])]
    expert = backend.expert(str(expert_dir))
    for c in [c for group in backend.generate(requests) for c in group]:
        assert len(c.entropies) == len(c.token_ids) == len(c.logprobs)
        policy_logp, expert_logp = step_distributions(backend, expert, c, temperature)
        h = entropy_of(policy_logp)
        assert torch.allclose(torch.tensor(c.entropies, dtype=torch.float64), h, atol=1e-4)
        w = (h / gamma).clamp(max=1.0).unsqueeze(-1)
        p_mix = (1 - w) * policy_logp.exp() + w * expert_logp.exp()
        token = torch.tensor(c.token_ids).unsqueeze(-1)
        expected = p_mix.gather(-1, token).squeeze(-1).log()
        assert torch.allclose(torch.tensor(c.logprobs, dtype=torch.float64), expected, atol=1e-4)
        # ... and not the policy's own log-probs (the expert really takes part).
        assert not torch.allclose(
            torch.tensor(c.logprobs, dtype=torch.float64), policy_logp.gather(-1, token).squeeze(-1), atol=1e-3
        )


def test_guided_first_token_frequencies_match_the_mixture(backend: HFBackend, expert_dir: Path) -> None:
    gamma, temperature, n = 2.0, 0.8, 2000
    guided = (Segment(temperature=temperature, guide=Guide(str(expert_dir), gamma)),)
    prompt = tuple(backend.tokenizer("legal moves: left right", add_special_tokens=False)["input_ids"])
    request = GenerationRequest(prompt_token_ids=prompt, segments=guided, max_new_tokens=1, n=n, seed=123)
    out = backend.generate([request])[0]
    c0 = out[0]
    policy_logp, expert_logp = step_distributions(backend, backend.expert(str(expert_dir)), c0, temperature)
    p_mix, _ = mixture_probs(policy_logp[:1], expert_logp[:1], torch.tensor([gamma]))
    probs = p_mix[0].numpy()
    counts = np.bincount([c.token_ids[0] for c in out], minlength=len(probs))
    stat, dof = chi_square(counts, probs)
    assert dof >= 5 and stat < chi2_critical(dof), (stat, dof)
    for c in out[:50]:
        assert c.logprobs[0] == pytest.approx(math.log(probs[c.token_ids[0]]), abs=1e-4)
    # The same draws are far from the policy's own distribution.
    stat_policy, _ = chi_square(counts, policy_logp[0].exp().numpy())
    assert stat_policy > 3 * chi2_critical(dof)


def test_unguided_rows_unchanged_and_guidance_only_in_its_segment(backend: HFBackend, expert_dir: Path) -> None:
    plain = ask("the strategy is to bluff", (Segment(temperature=1.0),), max_new_tokens=10, n=2, seed=7)
    alone = backend.generate([plain])[0]
    guide = Guide(str(expert_dir), 0.5)
    two = (Segment(temperature=1.0, max_new_tokens=4), Segment(temperature=1.0, guide=guide))
    mixed_batch = backend.generate(
        [
            ask("hi", (Segment(temperature=1.0, guide=guide),), max_new_tokens=8),
            plain,
            ask("ok go", two, max_new_tokens=10, seed=3),
        ]
    )
    for got, want in zip(mixed_batch[1], alone, strict=True):  # a guided neighbour changes nothing for this row
        assert got.token_ids == want.token_ids  # (log-probs up to the float noise of other padding)
        assert got.logprobs == pytest.approx(want.logprobs, abs=1e-4)
        assert got.entropies == pytest.approx(want.entropies, abs=1e-4)
    c = mixed_batch[2][0]
    assert len(c.token_ids) > 4
    policy_logp, expert_logp = step_distributions(backend, backend.expert(str(expert_dir)), c, 1.0)
    token = torch.tensor(c.token_ids).unsqueeze(-1)
    own = policy_logp.gather(-1, token).squeeze(-1)
    h = entropy_of(policy_logp)
    w = (h / 0.5).clamp(max=1.0).unsqueeze(-1)
    mix = ((1 - w) * policy_logp.exp() + w * expert_logp.exp()).gather(-1, token).squeeze(-1).log()
    got = torch.tensor(c.logprobs, dtype=torch.float64)
    assert torch.allclose(got[:4], own[:4], atol=1e-4)  # the unguided first segment: the policy alone
    assert torch.allclose(got[4:], mix[4:], atol=1e-4)  # the guided second segment (the expert followed along)


def test_guided_segment_needs_a_temperature(backend: HFBackend, expert_dir: Path) -> None:
    with pytest.raises(ArenaError, match="temperature > 0"):
        backend.generate([ask("hi", (Segment(temperature=0.0, guide=Guide(str(expert_dir), 1.5)),))])


def test_other_backends_refuse_guided_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    request = ask("hi", (Segment(guide=Guide("model:tiny", 1.5)),))
    with pytest.raises(ArenaError, match="MENTOR's guided sampling runs in the hf backend"):
        ScriptedBackend().generate([request])
    # vLLM: the refusal comes before any engine work, so where vLLM is absent a stand-in module is enough. The
    # backend module imported on top of it is removed again afterwards, so no other test can pick it up.
    if importlib.util.find_spec("vllm") is None:
        fake = types.ModuleType("vllm")
        fake.__version__ = "0.32.0"  # type: ignore[attr-defined]
        fake.LLM = fake.SamplingParams = object  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "vllm", fake)
    name = "arena.core.backends.vllm_backend"
    package = importlib.import_module("arena.core.backends")
    original = sys.modules.pop(name, None)
    try:
        module = importlib.import_module(name)
        vllm_backend = object.__new__(module.VLLMBackend)
        with pytest.raises(ArenaError, match="MENTOR's guided sampling runs in the hf backend; the vllm backend"):
            vllm_backend.generate([request])
    finally:
        sys.modules.pop(name, None)
        if original is not None:
            sys.modules[name] = original
            package.vllm_backend = original  # type: ignore[attr-defined]
        elif hasattr(package, "vllm_backend"):
            delattr(package, "vllm_backend")


# --------------------------------------------------------------------------------------------------------------
# α, γ and the plan
# --------------------------------------------------------------------------------------------------------------


def test_alpha_cosine_schedule() -> None:
    assert alpha_at(0) == 1.0
    assert alpha_at(30) == pytest.approx(0.5 * (1 + math.sqrt(0.5)))  # 0.853553...
    assert alpha_at(60) == pytest.approx(0.5)
    assert alpha_at(90) == pytest.approx(0.146446609, abs=1e-8)
    assert alpha_at(119) == pytest.approx(0.5 * (1 + math.cos(math.pi * 119 / 120)))
    assert alpha_at(120) == 0.0 and alpha_at(500) == 0.0
    assert [round(alpha_at(k, 2.0, 4), 6) for k in range(6)] == [2.0, 1.707107, 1.0, 0.292893, 0.0, 0.0]


def test_gamma_from_percentile_and_floor() -> None:
    assert gamma_from([0.0, 1.0, 2.0, 3.0, 4.0]) == pytest.approx(3.8)  # p95 by linear interpolation
    assert gamma_from([0.1, 0.2, 0.3]) == 1.5  # floored
    assert gamma_from([]) == 1.5  # no entropies reported: the floor
    assert gamma_from([0.0, 1.0, 2.0, 3.0, 4.0], floor=1.0, percentile=50.0) == 2.0


OPTS = {"mentor": {"expert": "model:tiny", "decay_iterations": 4}}


def spec(iteration: int, group_index: int, group: str = "g0", learner: str = "agent", **kw: Any) -> TrialSpec:
    meta = {"iteration": iteration, "group_index": group_index, "learner": learner, "learner_seat": 0}
    return TrialSpec(
        trial_id=f"{learner}-{group}-{iteration}-{group_index}",
        arena_id="kuhn_poker",
        seats=("model:tiny#agent@hf", "random"),
        seed=1,
        group_id=f"{group}-{iteration}",
        meta=meta,
        options=kw.pop("options", OPTS),
        **kw,
    )


def turn(trial: TrialSpec) -> Turn:
    return Turn(trial, 0, 0, "player_0", 0, "", "", (), (), (), ())


def record(
    trial: TrialSpec, entropies: tuple[float, ...], opponent_entropies: tuple[float, ...] = (9.0,)
) -> TrialRecord:
    """A finished trial whose learner's completion reported ``entropies`` (the opponent's seat others)."""
    mine = Completion(
        "x", tuple(range(len(entropies))), (0.0,) * len(entropies), (1.0,) * len(entropies), entropies=entropies
    )
    theirs = Completion("y", (1,), (0.0,), (1.0,), entropies=opponent_entropies)
    steps = (Step(0, 0, "player_0", 0, 0, "a", completion=mine), Step(0, 1, "player_1", 1, 0, "b", completion=theirs))
    episode = EpisodeRecord(trial.trial_id, 0, trial.seed, steps, {"player_0": 1.0}, {"player_0": "win"}, {})
    return TrialRecord(trial, (episode,), ())


def test_plans_first_iteration_unguided_then_gamma_from_on_policy_tokens() -> None:
    plugin = Mentor()
    plans = [plugin.pre_action(turn(spec(0, k))) for k in range(8)]
    assert all(p is not None and p.segments is None for p in plans)  # iteration 0: nothing guided
    assert [p.meta["mixed"] for p in plans if p] == [False] * 4 + [True] * 4
    assert all(p.meta["guided"] is False and p.meta["gamma"] is None and p.meta["alpha"] == 1.0 for p in plans if p)
    # Iteration 0 ends: on-policy trials report entropies 0..4 (p95 = 3.8); mixed ones huge values that must not count.
    for k in range(8):
        plugin.trial_end(record(spec(0, k), {0: (0.0, 1.0, 2.0), 1: (3.0, 4.0)}.get(k, ()) if k < 4 else (50.0,)))
    plan = plugin.pre_action(turn(spec(1, 5)))
    assert plan is not None and plan.segments is not None
    (segment,) = plan.segments
    assert segment.guide is not None
    assert segment.guide.expert == "model:tiny" and segment.guide.gamma == pytest.approx(3.8)
    assert segment.temperature == 1.0 and segment.top_p == 1.0
    assert plan.meta == {
        "mixed": True,
        "guided": True,
        "gamma": pytest.approx(3.8),
        "alpha": pytest.approx(0.853553, abs=1e-6),
        "iteration": 1,
        "group_index": 5,
    }
    assert plugin.pre_action(turn(spec(1, 2))).segments is None
    # Another learner has no previous batch of its own: unguided.
    assert plugin.pre_action(turn(spec(1, 5, learner="other"))).segments is None
    # Low entropies: γ is floored at 1.5.
    for k in range(4):
        plugin.trial_end(record(spec(1, k), (0.1, 0.2)))
    assert plugin.pre_action(turn(spec(2, 6))).segments[0].guide.gamma == 1.5


def test_no_mixed_rollouts_after_decay_and_group_size_checks() -> None:
    plugin = Mentor()
    for k in range(4):
        plugin.trial_end(record(spec(2, k), (2.0,)))
    assert plugin.pre_action(turn(spec(3, 7))).meta["guided"] is True
    for iteration in (4, 5, 40):
        plans = [plugin.pre_action(turn(spec(iteration, k))) for k in range(8)]
        assert all(p is not None and p.segments is None and not p.meta["mixed"] for p in plans)
        assert all(p.meta["alpha"] == 0.0 for p in plans if p)
    with pytest.raises(ConfigError, match="set group_size to 8"):
        plugin.pre_action(turn(spec(0, 8)))
    with pytest.raises(ConfigError, match="expert"):
        plugin.pre_action(turn(spec(0, 0, options={"mentor": {}})))
    with pytest.raises(ConfigError, match=r"unknown key 'options\.mentor\.gama'"):
        plugin.pre_action(turn(spec(0, 0, options={"mentor": {"expert": "x", "gama": 2.0}})))
    with pytest.raises(ConfigError, match="'on_policy' must be >= 2: 1"):
        plugin.pre_action(turn(spec(0, 0, options={"mentor": {"expert": "x", "on_policy": 1}})))
    assert plugin.pre_action(turn(spec(1, 5, training=False))) is None
    # A group of 6 trials (group_size 6 with on_policy + mixed = 8) is caught when its advantages are computed.
    for k in range(6):
        plugin.trial_end(record(spec(1, k, group="small"), (1.0,)))
    with pytest.raises(ConfigError, match="has 6 trials but on_policy \\+ mixed = 8"):
        plugin.compute_advantages([sample("small-1", 1.0, False, 0.0)], OPTS)


def test_state_dict_round_trip_keeps_gamma() -> None:
    plugin = Mentor()
    for k in range(4):
        plugin.trial_end(record(spec(2, k), (0.5, 2.5, 3.5)))
    state = plugin.state_dict()
    import json

    restored = Mentor()
    restored.load_state_dict(json.loads(json.dumps(state)))
    opts = mentor.settings(OPTS)
    assert (
        restored.gamma("agent", 3, opts)
        == plugin.gamma("agent", 3, opts)
        == pytest.approx(gamma_from([0.5, 2.5, 3.5] * 4))
    )
    with pytest.raises(ValueError, match="version"):
        restored.load_state_dict({"version": 99})


# --------------------------------------------------------------------------------------------------------------
# Advantages
# --------------------------------------------------------------------------------------------------------------


def sample(group: str, ret: float, mixed: bool | None, alpha: float) -> Sample:
    plans = {} if mixed is None else {"mentor": {"mixed": mixed, "alpha": alpha}}
    return Sample(
        "agent",
        "t",
        0,
        0,
        "player_0",
        "action",
        (1,),
        (2,),
        (0.0,),
        (1.0,),
        group_id=group,
        ret=ret,
        meta={"plans": plans},
    )


def test_advantages_by_hand() -> None:
    plugin = Mentor()
    on = [1.0, 0.0, 0.0, 1.0]  # mean 0.5, sample std sqrt(1/3)
    off = [1.0, 0.0, 2.0, -1.0]
    samples = [sample("g", r, False, 0.5) for r in on] + [sample("g", r, True, 0.5) for r in off]
    adv = plugin.compute_advantages(samples, OPTS)
    std = math.sqrt(1 / 3) + 1e-6
    assert adv[:4] == pytest.approx([0.5 / std, -0.5 / std, -0.5 / std, 0.5 / std])
    assert adv[4:] == pytest.approx([0.5 * 0.5, 0.0, 0.5 * 1.5, 0.0])
    no_std = plugin.compute_advantages(samples, {"mentor": {"std_norm": False}})
    assert no_std[:4] == pytest.approx([0.5, -0.5, -0.5, 0.5])
    # A reflection sample (no plan) is on-policy: it joins the baseline and gets the z-score.
    with_reflection = [*samples, sample("g", 0.5, None, 0.0)]
    adv = plugin.compute_advantages(with_reflection, OPTS)
    values = [*on, 0.5]
    mean = sum(values) / 5
    scale = math.sqrt(sum((v - mean) ** 2 for v in values) / 4) + 1e-6
    assert adv[8] == pytest.approx(0.0) and adv[0] == pytest.approx((1.0 - mean) / scale)
    # expert_cap: mixed gains (before α) above the cap are scaled to sum to it.
    capped = mentor_advantages([0.0, 0.0, 3.0, 1.0], ["g"] * 4, [False, False, True, True], [1.0] * 4, expert_cap=2.0)
    assert capped[2:] == pytest.approx([1.5, 0.5])


def test_mixed_advantage_never_negative_and_none_after_decay() -> None:
    rng = np.random.default_rng(0)
    plugin = Mentor()
    for trial in range(200):
        returns = rng.normal(size=8) * rng.choice([0.1, 1.0, 10.0])
        alpha = alpha_at(int(rng.integers(0, 4)), 1.0, 4)
        samples = [sample(f"g{trial % 3}", float(r), k >= 4, alpha) for k, r in enumerate(returns)]
        adv = plugin.compute_advantages(samples, OPTS)
        assert all(a >= 0.0 for a, s in zip(adv, samples, strict=True) if s.meta["plans"]["mentor"]["mixed"])
    # After the decay every sample is on-policy: the advantages are GRPO's over the whole group.
    returns = [float(r) for r in rng.normal(size=8)]
    samples = [sample("g", r, False, 0.0) for r in returns]
    assert plugin.compute_advantages(samples, OPTS) == pytest.approx(group_normalized(returns, ["g"] * 8))


# --------------------------------------------------------------------------------------------------------------
# Through the rollout engine: two iterations of one group on the hf backend (toy policy, toy expert)
# --------------------------------------------------------------------------------------------------------------


def test_two_iterations_through_the_engine(backend: HFBackend, expert_dir: Path) -> None:
    import attrs

    from arena.core.config.trial import PromptConfig, TrialConfig
    from arena.core.host.plugins import PluginSet
    from arena.core.learn.experience import trial_samples
    from arena.core.rollout.engine import RolloutEngine
    from arena.core.rollout.seats import BackendPool

    pool = BackendPool()
    pool.add("hf", "toy", backend)
    seat = "model:toy@hf"
    options = {"mentor": {"expert": str(expert_dir), "decay_iterations": 4}}
    plugin = Mentor()
    engine = RolloutEngine(
        PluginSet(["mentor"], extra={"mentor": plugin}),
        TrialConfig(prompt=PromptConfig(max_new_tokens=8)),
        backends=pool,
    )

    def iteration(k: int) -> list[Sample]:
        specs = [
            TrialSpec(
                trial_id=f"i{k}-t{g}",
                arena_id="kuhn_poker",
                seats=(seat, "random"),
                seed=3,
                group_id=f"g{k}",
                meta={"iteration": k, "group_index": g, "learner": "L", "learner_seat": 0},
                options=options,
            )
            for g in range(8)
        ]
        samples = [s for t in engine.run(specs) for s in trial_samples(t, "L", [seat])]
        return [attrs.evolve(s, ret=s.reward) for s in samples]

    first = iteration(0)
    assert all(not s.meta["plans"]["mentor"]["guided"] for s in first)
    gamma = plugin.gamma("L", 1, mentor.settings(options))
    assert gamma is not None and gamma >= 1.5
    second = iteration(1)
    guided = [s for s in second if s.meta["plans"]["mentor"]["guided"]]
    assert guided and all(s.meta["plans"]["mentor"]["gamma"] == gamma for s in guided)
    assert {s.meta["plans"]["mentor"]["mixed"] for s in guided} == {True}
    expert = backend.expert(str(expert_dir))
    for s in guided:
        c = Completion("", s.completion_ids, s.behaviour_logprobs, s.temperatures, prompt_token_ids=s.context_ids)
        policy_logp, expert_logp = step_distributions(backend, expert, c, 1.0)
        p_mix, _ = mixture_probs(policy_logp, expert_logp, torch.full((len(c.token_ids),), gamma))
        expected = p_mix.gather(-1, torch.tensor(c.token_ids).unsqueeze(-1)).squeeze(-1).log()
        assert torch.allclose(torch.tensor(s.behaviour_logprobs, dtype=torch.float64), expected, atol=1e-4)
    advantages = plugin.compute_advantages(second, options)
    assert all(a >= 0 for a, s in zip(advantages, second, strict=True) if s.meta["plans"]["mentor"]["mixed"])
    # Issue 22, defect 4: PPO's π_old of a guided turn is the policy's, recomputed before the update (the code),
    # not log π_mix: the first-step ratio π_θ/π_mix at an expert-chosen token is far below 1, which scaled its
    # gradient down and, with a negative advantage, clipped it.
    import copy

    from arena.core.learn.logprobs import policy_logprobs
    from arena.core.learn.trainer import LossConfig, OptimConfig, Trainer

    assert all(s.recompute_old for s in guided)
    assert not any(s.recompute_old for s in second if not s.meta["plans"]["mentor"]["guided"])
    model = copy.deepcopy(backend.model)
    trainer = Trainer(model, OptimConfig(lr=1e-3), LossConfig())  # loss.old_logprobs: behaviour (the default)
    gaps = []
    for s in trainer._with_old_logprobs(guided, model):
        own, _, _ = policy_logprobs(backend.model, [s.context_ids], [s.completion_ids], [s.temperatures])
        old = torch.tensor(s.meta["old_logprobs"])
        assert torch.allclose(old, own[0, : len(s.completion_ids)], atol=1e-4)
        gaps.append(float((old - torch.tensor(s.behaviour_logprobs)).abs().max()))
    assert max(gaps) > 0.05  # the mixture really differs from the policy at some token
    metrics = trainer.update([attrs.evolve(s, advantage=-1.0) for s in guided])
    assert metrics["train/clip_fraction"] == 0.0  # every ratio starts at 1: nothing clipped before the first step
    # The ablation (old_logprobs: mixture, the behaviour before the fix) trains against log π_mix: clipped at once.
    ablation = Trainer(copy.deepcopy(backend.model), OptimConfig(lr=1e-3), LossConfig())
    against_mixture = ablation.update([attrs.evolve(s, advantage=-1.0, recompute_old=False) for s in guided])
    assert against_mixture["train/clip_fraction"] > 0.0
    print(
        f"guided tokens, A = -1: clip fraction {metrics['train/clip_fraction']:.3f} against the recomputed π_old, "
        f"{against_mixture['train/clip_fraction']:.3f} against log π_mix; max |log π_old - log π_mix| {max(gaps):.3f}"
    )
