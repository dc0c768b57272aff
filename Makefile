# tf-gpu-template: `make demo` and `make test` do all set-up on a fresh machine with Python 3.11 and make.
.DEFAULT_GOAL := help
SHELL := /bin/bash

PYTHON_BOOTSTRAP ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PYTHON := $(abspath $(VENV))/bin/python
BUILD ?= build
DEMO := $(BUILD)/demo/tf-gpu-project
STAMP := $(VENV)/.installed

$(STAMP): requirements.txt
	test -x $(PYTHON) || $(PYTHON_BOOTSTRAP) -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --upgrade pip
	$(PYTHON) -m pip install --quiet -r requirements.txt
	touch $@

.PHONY: help setup demo test test-fast lint clean
help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

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
	$(PYTHON) -m pytest tests

test-fast: setup ## the template's tests without installing and running the default bake
	$(PYTHON) -m pytest tests -m "not slow"

lint: setup ## ruff on the hooks and the template's tests
	$(PYTHON) -m ruff check hooks tests
	$(PYTHON) -m ruff format --check hooks tests

clean: ## remove build/ and caches (keeps .venv)
	rm -rf $(BUILD) .pytest_cache .ruff_cache
