# Two entry points: `make serve` (build and serve the site) and `make test` (every test).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
export NO_MKDOCS_2_WARNING := 1

.PHONY: serve test build bench chromium

$(VENV)/.site: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -r requirements.txt
	touch $@

$(VENV)/.test: $(VENV)/.site requirements-test.txt
	$(PY) -m pip install -q -r requirements-test.txt
	touch $@

serve: $(VENV)/.site
	$(PY) build.py serve

build: $(VENV)/.site
	$(PY) build.py --out site

# Debian's Chromium drives the browser tests (Playwright's own download is not used).
chromium:
	@command -v chromium >/dev/null || { apt-get update -qq && apt-get install -y -qq chromium; }

test: $(VENV)/.test chromium
	$(PY) -m pytest

bench: $(VENV)/.test chromium
	$(PY) bench/core_speed.py
	$(PY) bench/browser_budget.py
	$(PY) bench/training_speed.py
