# Two entry points that work on a fresh machine with python3 (>= 3.10):
#   make quickstart   list the bundled sample's cases and verify them (run every notebook)
#   make lint         ruff and mypy (the type check's strictness is in pyproject.toml)
#   make test         install everything the tests need, lint, and run the tests
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: quickstart test lint install

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

test: lint
	$(BIN)/python -m pytest
