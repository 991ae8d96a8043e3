# Two entry points that work on a fresh machine with python3 (>= 3.10):
#   make quickstart   list the bundled sample's cases, make its pinned environment (once,
#                     in $(SAMPLE_ENV)) and verify every case in it
#   make test         install everything the tests need, lint, build the docs, run the tests
# and for development: make lint (ruff, and mypy at the strictness pyproject.toml states),
# make docs (the documentation site, into site/).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The bundled sample's pinned environment (numpy 1.26.4, pandas 2.1.4, …; made by uv).
SAMPLE_ENV ?= .venv-sample

.PHONY: quickstart test lint docs install sandbox

# Notebooks run inside bubblewrap: install it where it is missing (root or sudo).
sandbox:
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq bubblewrap; \
	  elif command -v sudo >/dev/null 2>&1; then sudo apt-get update -qq && sudo apt-get install -y -qq bubblewrap; \
	  else echo "error: bubblewrap (bwrap) is missing and cannot be installed here: install the bubblewrap package" >&2; exit 1; fi; }

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test]"

quickstart: $(BIN)/python sandbox
	$(BIN)/python -m pip install --quiet -e ".[run]"
	$(BIN)/junobench ls --source sample
	$(BIN)/junobench env create $(SAMPLE_ENV) --source sample
	$(BIN)/junobench verify --source sample --env $(SAMPLE_ENV)

lint: install
	$(BIN)/ruff check .
	$(BIN)/mypy

# --strict: a broken link or anchor, or a docstring mkdocstrings cannot render, fails the build.
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

test: sandbox lint docs
	$(BIN)/python -m pytest
