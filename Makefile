# Two entry points that work on a fresh machine with python3 (>= 3.10):
#   make quickstart   list the bundled sample's cases and verify them (run every notebook)
#   make test         install everything the tests need, lint, build the docs, run the tests
# and for development: make lint (ruff, and mypy at the strictness pyproject.toml states),
# make docs (the documentation site, into site/).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: quickstart test lint docs install

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test]"

quickstart: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[run]"
	$(BIN)/junobench ls --source sample
	$(BIN)/junobench verify --source sample

lint: install
	$(BIN)/ruff check .
	$(BIN)/mypy

# --strict: a broken link or anchor, or a docstring mkdocstrings cannot render, fails the build.
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

test: lint docs
	$(BIN)/python -m pytest
