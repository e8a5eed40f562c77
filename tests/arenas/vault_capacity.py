"""Can `tiny-vault` store the vault -> chest map in its weights at all, and in how many updates? (docs/results.md,
"EMPO² in the vault on tiny-vault".) Supervised, on the plain prompts of the recurring vaults 0..N-1 with the right
answer, every vault at every step (AdamW, full batch, the held circuit kept), at the RL configs' lr 3e-4 and at
1e-3; prints the exact success without memory (P(treasure) averaged over the vaults) after 0, 10, 30, 100, 300 steps.

    python tests/arenas/vault_capacity.py runs/vault_proof/grpo_s0 36      # a run with rollouts, for the prompt
    python tests/arenas/vault_capacity.py RUN 9 1e-3,3e-3 0,10,20,30,60    # vaults, learning rates, steps
"""

import re
import sys
import time
from pathlib import Path

import torch
from transformers import AutoTokenizer, LlamaForCausalLM

from arena.arenas.vault import treasure_chest
from arena.core.api.backend import ChatMessage
from arena.core.learn.metrics import read_rollouts
from arena.core.models.held import load_held
from arena.core.models.tiny.quality import prompt_ids
from arena.core.models.tiny.sft import TreeExample, answer_logprobs, collate
from arena.core.models.tiny.vault_reader import build_tiny_vault

torch.set_num_threads(2)
base = build_tiny_vault()
run = Path(sys.argv[1])
prompt = next(read_rollouts(run))[1]["context_text"]
VAULT = re.compile(r"Vault (\d+) has (\d+) chests")
vaults = int(sys.argv[2]) if len(sys.argv) > 2 else 36
rates = [float(x) for x in sys.argv[3].split(",")] if len(sys.argv) > 3 else [3e-4, 1e-3]
checkpoints = [int(x) for x in sys.argv[4].split(",")] if len(sys.argv) > 4 else [0, 10, 30, 100, 300]
tok = AutoTokenizer.from_pretrained(base)
eos = int(tok.eos_token_id)


def ex(v, k):
    ids = prompt_ids(tok, (ChatMessage("user", VAULT.sub(f"Vault {v} has 9 chests", prompt)),))
    return TreeExample(
        prefix=tuple(ids), branches=((*tok.encode(f"<action>{k}</action>", add_special_tokens=False), eos),)
    )


train = [ex(v, treasure_chest(v, 9)) for v in range(vaults)]
evals = [[ex(v, k) for k in range(1, 10)] for v in range(vaults)]
for lr in rates:
    model = LlamaForCausalLM.from_pretrained(base)
    held = load_held(base) or {}
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    out = []
    t0 = time.time()
    for step in range(max(checkpoints) + 1):
        if step in checkpoints:
            model.eval()
            with torch.no_grad():
                hit = []
                for v, exs in enumerate(evals):
                    b = collate(exs, eos)
                    totals = torch.zeros(9).index_add_(0, b.branch_of, answer_logprobs(model, b))
                    p = totals.exp()
                    hit.append(float(p[treasure_chest(v, 9) - 1]))
            out.append((step, round(sum(hit) / len(hit), 3)))
            print(lr, out[-1], round(time.time() - t0), flush=True)
            model.train()
        b = collate(train, eos)
        loss = -answer_logprobs(model, b).mean()
        opt.zero_grad()
        loss.backward()
        for name, p in model.named_parameters():
            if name in held and p.grad is not None:
                p.grad[held[name]] = 0
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    print("lr", lr, out, flush=True)
