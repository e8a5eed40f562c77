"""MENTOR's oracle expert (issue 26): an ``oracle:`` guide whose expert is a scripted player, not a model.

The rollout engine asks the scripted player for its move and fills ``Guide.target`` with its answer; the hf
backend mixes a point mass on that answer's next token into the policy's distribution (``p_expert``), the end of
sequence after it, and the policy's own distribution once the text has left the answer.
"""

from __future__ import annotations

import math

import pytest
import torch
from transformers import PreTrainedTokenizerFast, Qwen2ForCausalLM

from arena.core import ActionPlan, Turn, hookimpl
from arena.core.api.backend import ChatMessage, GenerationRequest, Guide, Segment
from arena.core.api.errors import ArenaError
from arena.core.api.records import TrialSpec
from arena.core.backends.hf import HFBackend, entropy_of, sampling_logprobs
from arena.core.config.trial import PromptConfig, TrialConfig
from arena.core.eval.passk import evaluate_tasks, format_passk
from arena.core.host.plugins import PluginSet
from arena.core.rollout.engine import RolloutEngine
from arena.core.rollout.seats import BackendPool

from ..toy_model import build_model, build_tokenizer

TARGET = "<action>call</action>"


@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerFast:
    return build_tokenizer()


@pytest.fixture(scope="module")
def backend(tokenizer: PreTrainedTokenizerFast) -> HFBackend:
    model: Qwen2ForCausalLM = build_model(len(tokenizer), tokenizer.eos_token_id, tokenizer.pad_token_id, seed=0)
    return HFBackend(model, tokenizer)


def ask(gamma: float, target: str | None = TARGET, n: int = 1, seed: int = 1) -> GenerationRequest:
    guide = Guide("oracle:scripted-player", gamma, target=target)
    return GenerationRequest(
        messages=(ChatMessage("user", "legal moves: call fold"),),
        segments=(Segment(temperature=1.0, guide=guide),),
        max_new_tokens=12,
        n=n,
        seed=seed,
    )


def test_guide_names_its_oracle() -> None:
    assert Guide("oracle:text_maze-explorer", 1.0).oracle == "text_maze-explorer"
    assert Guide("model:tiny", 1.0).oracle is None


def test_a_full_weight_oracle_writes_its_answer_and_stops(backend: HFBackend) -> None:
    """γ far below any entropy: w = 1 at every position, so the answer is the oracle's, each token with p_mix 1."""
    for completion in backend.generate([ask(1e-9, n=4)])[0]:
        assert completion.text == TARGET
        assert completion.finish_reason == "stop"
        assert completion.logprobs == pytest.approx([0.0] * len(completion.token_ids), abs=1e-9)
        assert completion.token_ids[-1] in backend.eos_ids


def test_partial_weight_logprobs_are_the_mixture_on_the_line_and_the_policy_off_it(backend: HFBackend) -> None:
    gamma = 6.0  # w = H / 6 < 1 on the toy policy: the rows leave the line by chance
    target_ids = list(backend.tokenizer.encode(TARGET, add_special_tokens=False))
    eos = min(backend.eos_ids)
    left = followed = 0
    for completion in backend.generate([ask(gamma, n=40, seed=3)])[0]:
        ids = torch.tensor([list(completion.prompt_token_ids) + list(completion.token_ids)])
        start = len(completion.prompt_token_ids) - 1
        with torch.no_grad():
            logits = backend.model(input_ids=ids).logits[0, start : start + len(completion.token_ids)]
        policy_logp = sampling_logprobs(logits, torch.ones(len(logits)), torch.ones(len(logits)))
        weights = (entropy_of(policy_logp) / gamma).clamp(max=1.0)
        on_line = True
        for t, token in enumerate(completion.token_ids):
            p_policy = float(policy_logp[t, token].exp())
            if on_line:
                oracle_token = target_ids[t] if t < len(target_ids) else eos
                w = float(weights[t])
                expected = (1 - w) * p_policy + w * float(token == oracle_token)
                on_line = token == oracle_token
            else:
                expected = p_policy
            assert completion.logprobs[t] == pytest.approx(math.log(expected), abs=1e-4)
        left += not on_line
        followed += on_line
    assert left > 0 and followed > 0  # both branches of the rule were exercised


def test_an_oracle_guide_without_its_answer_is_an_error(backend: HFBackend) -> None:
    with pytest.raises(ArenaError, match="oracle: guide needs its answer"):
        backend.generate([ask(1.0, target=None)])


class _OracleGuided:
    """A plugin that guides every turn by a scripted text_maze player at full weight."""

    def __init__(self, oracle: str = "text_maze-explorer") -> None:
        self.oracle = oracle

    @hookimpl
    def pre_action(self, turn: Turn) -> ActionPlan:
        guide = Guide(f"oracle:{self.oracle}", 1e-9)
        return ActionPlan(segments=(Segment(temperature=1.0, guide=guide),), source="oracle")


def test_the_engine_fills_the_explorer_s_move_and_a_random_policy_solves_the_maze(backend: HFBackend) -> None:
    """Through the rollout engine on text_maze: the toy policy writes gibberish on its own (it never wins); guided
    by the oracle at full weight, every answer is the scripted explorer's move, so it solves every layout."""
    pool = BackendPool()
    pool.add("hf", "toy", backend)
    specs = [
        TrialSpec(trial_id=f"maze-{seed}", arena_id="text_maze", seats=("model:toy@hf",), seed=seed,
                  arena_kwargs={"size": "small"}, training=False)
        for seed in range(3)
    ]  # fmt: skip
    config = TrialConfig(prompt=PromptConfig(max_new_tokens=40))
    guided = RolloutEngine(PluginSet(["oracle"], extra={"oracle": _OracleGuided()}), config, backends=pool).run(specs)
    plain = RolloutEngine(PluginSet([]), config, backends=pool).run(specs)
    for trial in guided:
        (episode,) = trial.episodes
        assert all(f"<action>{s.move}</action>" == s.answer and not s.invalid for s in episode.steps)
        assert trial.final.outcomes["player_0"] == "win"
    assert not any(t.final.outcomes["player_0"] == "win" for t in plain)


def test_pass_at_k_reports_count_the_note_read_first(backend: HFBackend) -> None:
    """SAFARI's testbed measure through ``evaluate_tasks``: the toy policy driven by the explorer reads the note
    before every chest, driven by the hindsight demonstrator never; both always win (``note_before_chest``)."""
    pool = BackendPool()
    pool.add("hf", "toy", backend)
    config = TrialConfig(prompt=PromptConfig(max_new_tokens=40))
    reports = {
        oracle: evaluate_tasks(
            "model:toy@hf", "text_maze", {"size": "small"}, tasks=2, samples=2, trial_config=config,
            plugins=PluginSet(["oracle"], extra={"oracle": _OracleGuided(oracle)}), pool=pool, progress=False,
        )
        for oracle in ("text_maze-explorer", "text_maze-explorer:hindsight")
    }  # fmt: skip
    explorer = reports["text_maze-explorer"]["flags"]["note_before_chest"]
    hindsight = reports["text_maze-explorer:hindsight"]["flags"]["note_before_chest"]
    assert (explorer["rate"], explorer["of"], explorer["win_if_true"]) == (1.0, 4, 1.0)
    assert (hindsight["rate"], hindsight["of"], hindsight["win_if_false"]) == (0.0, 4, 1.0)
    assert all(r["success_rate"] == 1.0 for r in reports.values())
    assert "note_before_chest 1.000 (4 of 4; won 1.000 where true, nan where false)" in format_passk(
        reports["text_maze-explorer"]
    )
