# The two commands a fresh clone needs are `make demo` and `make test`.
# Each one installs what it needs first.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: test demo lint typecheck imports pytest prometheus alertmanager chromium kubectl install clean

$(STAMP): pyproject.toml requirements/constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -c requirements/constraints.txt -e '.[dev]'
	touch $@

install: $(STAMP)

prometheus:
	scripts/ensure-prometheus

alertmanager:
	scripts/ensure-alertmanager

chromium:
	scripts/ensure-chromium

kubectl: $(STAMP)
	VENV=$(VENV) PYTHON=$(PYTHON) scripts/ensure-kubectl

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy --strict guardian exporter guardian_common testbed

imports: $(STAMP)
	$(BIN)/lint-imports

pytest: $(STAMP) prometheus alertmanager chromium kubectl
	$(BIN)/pytest

# Everything CI checks: lint, format, types, layering, then the test suite.
test: lint typecheck imports pytest

demo: $(STAMP) prometheus
	$(BIN)/python -m testbed.demo

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
