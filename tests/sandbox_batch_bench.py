"""Wall time of one coding rollout batch under the legacy launcher and under bubblewrap, interleaved.

    ARENA_UNSAFE_SANDBOX=1 .venv/bin/python tests/sandbox_batch_bench.py [MODEL] [TRIALS]

(the opt-in lets the coding arena start under the legacy launcher). Not a test: a benchmark, run by hand on an
idle machine; docs/arena_coding.md has its figures.
"""

import sys
import time

import arena.arenas.coding as coding
import arena.arenas.sandbox as sandbox
from arena.core.api.records import TrialSpec
from arena.core.config.trial import PromptConfig, TrialConfig
from arena.core.host.plugins import PluginSet
from arena.core.rollout.engine import RolloutEngine
from arena.core.rollout.seats import BackendPool

model = sys.argv[1] if len(sys.argv) > 1 else "smollm2-135m-instruct"
n = int(sys.argv[2]) if len(sys.argv) > 2 else 32
original = sandbox.launch_mode
pool = BackendPool()
specs = [
    TrialSpec(trial_id=f"t{i}", arena_id="coding", seats=(f"model:{model}",), seed=i, arena_kwargs={"split": "train"})
    for i in range(n)
]
config = TrialConfig(prompt=PromptConfig(max_new_tokens=256, temperature=0.7))
times = {"legacy": [], "bwrap": []}
RolloutEngine(PluginSet([]), config, backends=pool).run(specs[:2])  # load the model and warm up
for launcher in ["legacy", "bwrap"] * 2:

    def pick(which=None, _l=launcher):
        return original(which or _l)

    sandbox.launch_mode = pick
    coding.launch_mode = pick
    t = time.perf_counter()
    records = RolloutEngine(PluginSet([]), config, backends=pool).run(specs)
    times[launcher].append(time.perf_counter() - t)
    ran = sum(1 for r in records for e in r.episodes if e.details.get("player_0", {}).get("score") is not None)
    print(launcher, round(times[launcher][-1], 2), "s", "episodes scored:", ran, flush=True)
for k, v in times.items():
    print(k, "mean", round(sum(v) / len(v), 2))
print("slowdown", round(sum(times["bwrap"]) / sum(times["legacy"]) - 1, 3))
