# Quick start: `make demo`, then `make test`.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

.PHONY: demo test lint test-slow test-browser audit bench reproduce reproduce-quick accuracy clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[all,experiments,dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m dpdbscan.demo --out demo_output

test: lint
	$(BIN)/python -m pytest -q

# ruff (lint and format) and mypy on the library; part of `make test`
lint: $(STAMP)
	$(BIN)/ruff check src
	$(BIN)/ruff format --check src
	$(BIN)/mypy

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow

# The map in headless Chromium; fails (instead of skipping) when Chromium is
# missing. Install it with: apt-get install -y chromium (docs/maps.md).
test-browser: $(STAMP)
	DPDBSCAN_REQUIRE_BROWSER=1 $(BIN)/python -m pytest -q -m browser

audit: $(STAMP)
	$(BIN)/python -m pytest -q -m audit

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

accuracy: $(STAMP)
	$(BIN)/python experiments/accuracy.py

reproduce: $(STAMP)
	$(BIN)/python experiments/reproduce.py --out results

reproduce-quick: $(STAMP)
	$(BIN)/python experiments/reproduce.py --quick --out results/quick

clean:
	rm -rf $(VENV) demo_output .pytest_cache
