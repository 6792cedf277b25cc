# Both targets set everything up on a fresh machine (only Python 3.11+ needed).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install test demo clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest tests -q

demo: $(STAMP)
	$(BIN)/python -m pytest examples -q --agent-mode=replay

clean:
	rm -rf $(VENV) .pytest_cache
