# Two entry points that work on a fresh machine with python3 (>= 3.10):
#   make quickstart   list the bundled sample's cases and verify them (run every notebook)
#   make test         install everything the tests need and run them
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

test: install
	$(BIN)/ruff check .
	$(BIN)/python -m pytest
