# Two entry points: `make serve` (build and serve the site) and `make test` (every test).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PORT   ?= 8000
export NO_MKDOCS_2_WARNING := 1
# pip installs without compiling what it unpacks (most of PyTorch's modules are never imported here): Python
# compiles a module when it is first imported and keeps it under .venv/pycache, not beside the sources, even
# where the environment asks it to write no bytecode.
export PYTHONPYCACHEPREFIX := $(abspath $(VENV))/pycache
export PYTHONDONTWRITEBYTECODE :=
# One OpenBLAS thread for NumPy, in the build and the tests: their matrices are small, and a second thread spins
# more than it computes, the more so beside the tests' three workers on two cores.
export OPENBLAS_NUM_THREADS := 1
PIP_INSTALL = $(PY) -m pip install -q --no-compile

.PHONY: serve test test-core build fetch bench browsers chromium engines java

# A new venv's pip is the one its Python shipped (23.2 with Python 3.11), whose resolver takes about twice as long
# over the test requirements.
PIP_VERSION := 26.3

$(PY):
	$(PYTHON) -m venv $(VENV) && $(PY) -m pip install -q pip==$(PIP_VERSION)

$(VENV)/.site: requirements.txt | $(PY)
	$(PIP_INSTALL) -r requirements.txt
	touch $@

$(VENV)/.test: $(VENV)/.site requirements-test.txt
	$(PIP_INSTALL) -r requirements-test.txt
	touch $@

serve: $(VENV)/.site
	$(PY) build.py serve --port $(PORT)

build: $(VENV)/.site
	$(PY) build.py --out site

# Fetching needs the venv's Python and pip, not the requirements: make test runs it while pip installs them.
fetch: | $(PY)
	$(PY) build.py fetch

# The browser tests drive Chromium's headless shell, the benchmarks the whole Chromium (Playwright's own if
# installed, else the system's); when one is missing, root installs Debian's with apt-get, anyone else is told.
chromium: $(VENV)/.test
	@$(PY) -m sitevisit.chromium >/dev/null 2>&1 || \
		{ [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && apt-get update -qq && \
		  apt-get install -y -qq chromium chromium-headless-shell; } || \
		$(PY) -m sitevisit.chromium >/dev/null

# Firefox (driven by puppeteer-core, from npm) and WebKitGTK (by Selenium, under Xvfb) for tests/engines/:
# root installs Debian's with apt-get, anyone else is told what to install.
ENGINES_JS := sitevisit/engines
$(ENGINES_JS)/node_modules/.package-lock.json: $(ENGINES_JS)/package-lock.json
	npm ci --prefix $(ENGINES_JS) --no-audit --no-fund --loglevel=error

engines: $(VENV)/.test $(ENGINES_JS)/node_modules/.package-lock.json
	@$(PY) -m sitevisit.engines >/dev/null 2>&1 || \
		{ [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && apt-get update -qq && \
		  apt-get install -y -qq firefox-esr webkit2gtk-driver xvfb; } || \
		$(PY) -m sitevisit.engines >/dev/null

# The test requirements and the engines' npm packages, then the engines the tests drive and Java, one after another:
# apt-get holds a lock, and under `make -j` (as make test calls this) a single sub-make would run the three at once.
browsers: $(VENV)/.test $(ENGINES_JS)/node_modules/.package-lock.json
	@$(MAKE) --no-print-directory chromium && $(MAKE) --no-print-directory engines && \
		$(MAKE) --no-print-directory java

# Java runs the Nu Html Checker (tests/site/test_markup.py): root installs Debian's with apt-get, anyone else is told.
java:
	@command -v java >/dev/null || \
		{ [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && apt-get update -qq && \
		  apt-get install -y -qq default-jre-headless; } || \
		{ echo "the tests need Java 17 or later (Debian: default-jre-headless)" >&2; exit 1; }

# Three workers on a 2-core machine: the browser tests wait on Python's starts, throttled links and timers as
# much as they compute, so a third keeps both cores busy. Each file runs in one worker, handed out in the order
# tests/conftest.py gives them (not reordered by their number of tests).
# Before them the site is built (make build) beside the test requirements' install, which keeps one core busy:
# on a fresh clone that first build computes into .cache/ for some 20 s, which the tests' own builds then reuse.
# What it fetches (make fetch: the build then finds it all in .cache/), and the engines' npm packages, come while
# pip installs the site's requirements.
TEST_WORKERS ?= 3
test:
	@$(MAKE) --no-print-directory -j2 fetch build browsers
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The quick loop: mha_core's and mha_page's tests but for the comparisons with transformers' model and tokenizer
# (marked transformers: slow to load), the build's quick checks (one site built beside them, for the figures) and the
# widgets' pure modules under node --test (tests/site/test_widget_scripts.py); under a minute, in one process.
CORE_TESTS := tests/core tests/page $(addprefix tests/site/test_,bench.py figures.py sources.py training_facts.py \
	widget_modules.py widget_scripts.py pyodide_internals.py material_internals.py)
test-core: $(VENV)/.test
	$(PY) -m pytest -p no:xdist -q -m "not transformers" $(CORE_TESTS) $(PYTEST_ARGS)

# Lighthouse for bench/lighthouse.py, pinned by bench/npm/package-lock.json.
BENCH_JS := bench/npm
$(BENCH_JS)/node_modules/.package-lock.json: $(BENCH_JS)/package-lock.json
	npm ci --prefix $(BENCH_JS) --no-audit --no-fund --loglevel=error

# Every benchmark runs (each keeps its figures in bench/figures.json), then README's table is written from
# them; fails if any target was missed.
BENCHES := core_speed browser_budget browser_tiling network training_speed kept_memory real_model lighthouse suite_speed
bench: $(VENV)/.test chromium $(BENCH_JS)/node_modules/.package-lock.json
	@missed=; for b in $(BENCHES); do $(PY) bench/$$b.py || missed="$$missed $$b"; done; \
	$(PY) bench/figures.py $(BENCHES); \
	if [ -n "$$missed" ]; then echo "targets missed by:$$missed"; exit 1; fi
