# Two entry points: `make test` and `make demo`. Both create .venv when missing
# and install the five distributions (editable) plus dev tools.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.inferx-installed
DISTS := -e '.[dev]' -e plugins/inferx_vllm -e plugins/inferx_sglang \
         -e plugins/inferx_trtllm -e plugins/inferx_rocm -e examples/inferx_example_plugin
PYPROJECTS := pyproject.toml $(wildcard plugins/*/pyproject.toml) \
              examples/inferx_example_plugin/pyproject.toml

.PHONY: install test lint demo clean

$(STAMP): $(PYPROJECTS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(DISTS)
	touch $@

install: $(STAMP)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: install lint
	$(BIN)/python -m pytest

demo: install
	$(BIN)/inferx doctor
	$(BIN)/inferx plugins

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
