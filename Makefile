# Quick start: `make demo`, then `make test`.
PY      ?= python3
# .venv: the library as users of [all] get it (the newest scikit-learn it allows).
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
# .venv-baselines: the experiments (python -m experiments.*) with the DP-KMeans
# baseline, diffprivlib 0.6.6, which imports only with scikit-learn < 1.9. Made
# only by the targets that run the experiments, so that the pin never reaches .venv.
BVENV   := .venv-baselines
BBIN    := $(BVENV)/bin
BSTAMP  := $(BVENV)/.installed
# .venv-oldest: the oldest numpy, scipy, scikit-learn, pandas, pyarrow,
# matplotlib and dask that pyproject.toml admits (ci/oldest.txt).
OVENV   := .venv-oldest
OBIN    := $(OVENV)/bin
OSTAMP  := $(OVENV)/.installed
LINTED  := src tests experiments benchmarks
# The tests start the command line in fresh processes (docs, README, cold
# start): without bytecode caches each compiled the library's modules anew
# (`dpdbscan --help`: 0.70 s of CPU against 0.32 s), so an environment's
# PYTHONDONTWRITEBYTECODE does not reach the recipes (the caches go to
# __pycache__/, which git ignores).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo test lint test-experiments test-oldest test-slow test-browser audit bench reproduce reproduce-quick \
	accuracy clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# --upgrade-strategy eager: an existing .venv moves to the newest versions too
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q --upgrade --upgrade-strategy eager -e '.[all,dev]'
	touch $(STAMP)

$(BBIN)/python:
	$(PY) -m venv $(BVENV)
	$(BBIN)/python -m pip install -q --upgrade pip

$(BSTAMP): pyproject.toml | $(BBIN)/python
	$(BBIN)/python -m pip install -q -e '.[plot,experiments,baselines,dev]'
	touch $(BSTAMP)

$(OBIN)/python:
	$(PY) -m venv $(OVENV)
	$(OBIN)/python -m pip install -q --upgrade pip

$(OSTAMP): pyproject.toml ci/oldest.txt | $(OBIN)/python
	$(OBIN)/python -m pip install -q -c ci/oldest.txt -e '.[all,dev]'
	touch $(OSTAMP)

demo: $(STAMP)
	$(BIN)/python -m dpdbscan.demo --out demo_output

# the library's tests only (tests/); the experiments' are `make test-experiments`
test: lint
	$(BIN)/python -m pytest -q -n auto --durations=15

# ruff (lint and format) on the library, its tests, the experiments and the
# benchmarks, and mypy on all but the tests (pyproject); part of `make test`
lint: $(STAMP)
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/mypy

# The tests of experiments/ and benchmarks/, slow ones included, each in the
# environment its code runs in; then the library's diffprivlib-compatibility
# tests, which need diffprivlib and so skip in `make test`.
test-experiments: $(STAMP) $(BSTAMP)
	$(BIN)/python -m pytest -q -m 'not audit' benchmarks/tests
	DPDBSCAN_REQUIRE_BASELINES=1 $(BBIN)/python -m pytest -q -m 'not audit' experiments/tests
	$(BBIN)/python -m pytest -q tests/release/test_accountant.py -k diffprivlib

# The library's tests against the oldest supported dependencies (ci/oldest.txt).
test-oldest: $(OSTAMP)
	$(OBIN)/python -m pytest -q -n auto -p no:cacheprovider

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -n auto -m slow

# The map in headless Chromium; fails (instead of skipping) when Chromium is
# missing. Install it with: apt-get install -y chromium (docs/maps.md).
test-browser: $(STAMP)
	DPDBSCAN_REQUIRE_BROWSER=1 $(BIN)/python -m pytest -q -m browser

audit: $(STAMP)
	$(BIN)/python -m pytest -q -m audit

# the peer of the d = 2..8 section (the `dbscan` package) goes into .venv only here
bench: $(STAMP)
	$(BIN)/python -m pip install -q -e '.[bench]'
	$(BIN)/python -m benchmarks.run

accuracy: $(BSTAMP)
	$(BBIN)/python -m experiments.accuracy

reproduce: $(BSTAMP)
	$(BBIN)/python -m experiments.reproduce --out results

reproduce-quick: $(BSTAMP)
	$(BBIN)/python -m experiments.reproduce --quick --out results/quick

clean:
	rm -rf $(VENV) $(BVENV) $(OVENV) demo_output .pytest_cache
