# tf-gpu-template: `make demo` and `make test` do all set-up on a fresh machine with Python 3.11 and make.
.DEFAULT_GOAL := help
SHELL := /bin/bash

PYTHON_BOOTSTRAP ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PYTHON := $(abspath $(VENV))/bin/python
BUILD ?= build
DEMO := $(BUILD)/demo/tf-gpu-project
STAMP := $(VENV)/.installed
# `make pair`: one Python x TensorFlow pair, baked into build/pairs/ and installed in its own venv
# there (the oldest TensorFlow offered, on a Python other than the default, unless told otherwise).
PAIR_PYTHON ?= 3.12
PAIR_TENSORFLOW ?= 2.18
PAIR_BASE ?= $(shell command -v python$(PAIR_PYTHON))
PAIR_DIR := $(BUILD)/pairs/py$(PAIR_PYTHON)-tf$(PAIR_TENSORFLOW)

$(STAMP): requirements.txt
	test -x $(PYTHON) || $(PYTHON_BOOTSTRAP) -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --upgrade pip
	$(PYTHON) -m pip install --quiet -r requirements.txt
	touch $@

.PHONY: help setup demo test test-fast test-full test-default test-pair pair probes lint clean
help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-13s %s\n", $$1, $$2}'

setup: $(STAMP) ## install the template's tools into .venv

demo: setup ## bake the default project into build/demo, install it, run its notebooks on the smoke profile
	rm -rf $(BUILD)/demo
	$(PYTHON) -m cookiecutter . --no-input --output-dir $(BUILD)/demo
	$(MAKE) -C $(DEMO) setup VENV=$(abspath $(VENV))
	$(MAKE) -C $(DEMO) run PROFILE=smoke VENV=$(abspath $(VENV)) ARGS="--run-dir $(abspath $(DEMO))/artifacts/demo"
	@echo
	@echo "Demo run folder:     $(abspath $(DEMO))/artifacts/demo"
	@echo "Executed notebooks:  $(abspath $(DEMO))/artifacts/demo/notebooks/"
	@echo "Metrics:             $(abspath $(DEMO))/artifacts/demo/metrics/"
	@echo "Run report:          $(abspath $(DEMO))/artifacts/demo/report.md"

test: setup ## the template's tests: bake matrix, must-fail answers, the default bake's own tests and smoke run
	$(PYTHON) -m pytest tests -m "not pair and not full"

test-full: setup ## the default bake's slow tests (chain reruns, kills, multi-worker, real SLURM) and nbval; CI runs it
	$(PYTHON) -m pytest tests -m full

test-pair: setup ## the extra pair (Python 3.12 x TensorFlow 2.18) installed in its own venv and smoke-run
	$(PYTHON) -m pytest tests/test_extra_pair.py

test-fast: setup ## the template's tests without installing and running the default bake
	$(PYTHON) -m pytest tests -m "not slow"

test-default: setup ## only the default bake installed here: all its own tests and smoke run
	$(PYTHON) -m pytest tests/test_default_project.py

pair: setup ## bake PAIR_PYTHON x PAIR_TENSORFLOW, install it in its own venv, run the smoke profile
	rm -rf $(PAIR_DIR)
	$(PYTHON) -m cookiecutter . --no-input --output-dir $(PAIR_DIR) \
		python_version=$(PAIR_PYTHON) tensorflow_version=$(PAIR_TENSORFLOW)
	$(MAKE) -C $(PAIR_DIR)/tf-gpu-project run VENV=.venv BASE_PYTHON="$(PAIR_BASE)" EXTRAS=onnx \
		PIP_FLAGS=--no-compile PROFILE=smoke ARGS="--run-dir artifacts/smoke"

probes: setup ## bake the default project, smoke-run it, rerun the fault probes (kills, full disks: run as root)
	rm -rf $(BUILD)/probes
	$(PYTHON) -m cookiecutter . --no-input --output-dir $(BUILD)/probes
	$(MAKE) -C $(BUILD)/probes/tf-gpu-project setup VENV=$(abspath $(VENV))
	$(PYTHON) tests/fault_probes.py $(BUILD)/probes/tf-gpu-project

lint: setup ## ruff on the hooks and the template's tests
	$(PYTHON) -m ruff check hooks tests
	$(PYTHON) -m ruff format --check hooks tests

clean: ## remove build/ and caches (keeps .venv)
	rm -rf $(BUILD) .pytest_cache .ruff_cache
