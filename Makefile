# The two commands a fresh clone needs are `make demo` and `make test`.
# Each one installs what it needs first.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: test demo lint typecheck imports pytest prometheus alertmanager chromium kubectl image image-for-tests install clean

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

# The image, built with podman from Debian's packages, no registry needed (docs/deploy.md).
image: $(STAMP)
	VENV=$(VENV) scripts/build-image

# make test: the same build, but where podman cannot be installed the image tests skip
# (saying why) instead of the whole run failing; in CI they fail.
image-for-tests: $(STAMP)
	VENV=$(VENV) scripts/build-image --if-possible

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy --strict guardian exporter guardian_common testbed

imports: $(STAMP)
	$(BIN)/lint-imports

pytest: $(STAMP) prometheus alertmanager chromium kubectl image-for-tests
	$(BIN)/pytest

# Everything CI checks: lint, format, types, layering, then the test suite.
test: lint typecheck imports pytest

demo: $(STAMP) prometheus
	$(BIN)/python -m testbed.demo

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
