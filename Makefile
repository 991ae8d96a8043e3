# Two entry points that work on a fresh machine with python3 (>= 3.10):
#   make quickstart   list the bundled sample's cases, make its pinned environment (once,
#                     in $(SAMPLE_ENV)) and verify every case in it
#   make test         install everything the tests need (bubblewrap and chromium too), lint,
#                     build the docs and run the tests (the three side by side; `make suite`
#                     runs the tests alone)
#   make test-fast    the edit loop: lint and the tests that start no kernel and are not slow
#   make test-support the smoke subset at the lowest declared versions on the lowest declared
#                     Python, and on the newest Python (what pyproject.toml promises)
# and for development: make lint (ruff, and mypy at the strictness pyproject.toml states),
# make docs (the documentation site, into site/).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The bundled sample's pinned environment (numpy 1.26.4, pandas 2.1.4, …; made by uv).
SAMPLE_ENV ?= .venv-sample

# The supported range (pyproject.toml): the smoke subset runs at both ends of it.
# An interpreter on PATH, or pyenv's (whose shims answer only for the selected version).
LOWEST_PYTHON ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.10*/bin/python3.10) python3.10)
NEWEST_PYTHON ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.13*/bin/python3.13) python3.13)
SMOKE_TESTS := tests/test_records.py tests/test_builder.py tests/test_notebook.py tests/test_snapshot.py \
	tests/test_stats.py tests/test_export.py tests/test_push.py tests/test_evaluate_scoring.py \
	tests/test_evaluate_uncertainty.py tests/test_evaluate_layouts.py tests/test_origin_filter.py \
	tests/test_bad_input.py tests/test_cli_conventions.py tests/test_safety.py tests/test_checkout.py \
	tests/test_construct_library_cause.py tests/test_sample.py

.PHONY: quickstart test suite test-fast lint docs install test-support sandbox browser

# Notebooks run inside bubblewrap: install it where it is missing (root or sudo).
sandbox:
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq bubblewrap; \
	  elif command -v sudo >/dev/null 2>&1; then sudo apt-get update -qq && sudo apt-get install -y -qq bubblewrap; \
	  else echo "error: bubblewrap (bwrap) is missing and cannot be installed here: install the bubblewrap package" >&2; exit 1; fi; }

# The site's browser tests drive the distribution's Chromium (Playwright, no browser download):
# install it where it is missing (root or sudo).
browser:
	@command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium; \
	  elif command -v sudo >/dev/null 2>&1; then sudo apt-get update -qq && sudo apt-get install -y -qq chromium; \
	  else echo "error: chromium is missing and cannot be installed here: install the chromium package" >&2; exit 1; fi; }

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Installed again only when pyproject.toml changes (the stamp file is newer otherwise).
$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $@

install: $(VENV)/.installed-test

quickstart: $(BIN)/python sandbox
	@echo "== installing junobench with the run extra into $(VENV) (a minute or two the first time)"
	$(BIN)/python -m pip install --progress-bar on -e ".[run]"
	$(BIN)/junobench ls --source sample
	@echo "== making the sample's pinned environment in $(SAMPLE_ENV) (about a minute, once)"
	$(BIN)/junobench env create $(SAMPLE_ENV) --source sample
	$(BIN)/junobench verify --source sample --env $(SAMPLE_ENV)

lint: install
	$(BIN)/ruff check .
	$(BIN)/mypy

# --strict: a broken link or anchor, or a docstring mkdocstrings cannot render, fails the build.
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# Three workers (pytest-xdist) on two cores, as most tests wait on kernels, Ray and
# subprocesses: a module runs whole on one of them, the Ray modules one after the other on
# the same one (tests/conftest.py); TEST_WORKERS=0 runs the suite in this process alone.
TEST_WORKERS ?= 3

# Lint and the docs run beside the tests, not before them: a cold mypy keeps one core busy
# for ~30 s while the other would wait. Any of the three failing
# fails `make test` (their lines may come between the tests' progress lines).
test: sandbox browser install
	@$(MAKE) --no-print-directory -j 3 lint docs suite

# The test suite alone (what `make test` runs beside lint and the docs; the 25 slowest
# tests are listed at the end, for keeping it within its time). A test past its
# time limit ends its worker (pytest-timeout's thread method); xdist then runs that test's
# module again on a new worker, so one restart at most: a test that hangs twice ends the
# run, failed, instead of costing the limit again on each of a dozen workers.
suite: install
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --max-worker-restart 1 --durations 25

# The edit loop: lint and the tests that start no kernel, no Ray and nothing slow, on two
# workers, stopping at the first failure (about 1.5 minutes on two cores; `make test` is
# the whole suite).
test-fast: install
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -x -n 2 --dist loadfile -m "not slow and not kernel" tests

# uv makes each venv (finding the interpreter on PATH; pyenv's shims count) and installs
# junobench with the smoke extra: at the lowest version of every direct dependency on the
# lowest Python, then the newest versions on the newest Python.
test-support: install
	$(BIN)/uv venv --quiet --clear --no-python-downloads --python $(LOWEST_PYTHON) .venv-lowest
	$(BIN)/uv pip install --quiet --python .venv-lowest/bin/python --resolution lowest-direct -e ".[smoke]"
	.venv-lowest/bin/python -m pytest -p no:cacheprovider -q -m "not kernel and not slow" $(SMOKE_TESTS)
	$(BIN)/uv venv --quiet --clear --no-python-downloads --python $(NEWEST_PYTHON) .venv-newest
	$(BIN)/uv pip install --quiet --python .venv-newest/bin/python -e ".[smoke]"
	.venv-newest/bin/python -m pytest -p no:cacheprovider -q -m "not kernel and not slow" $(SMOKE_TESTS)
