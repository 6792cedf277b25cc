# Both targets set everything up on a fresh machine (only Python 3.11+ needed).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install lint test test-clis demo docs docs-serve mutate mutate-sample clean record-examples

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

# The walls between layers (docs/explanation/architecture.md), lint, format and types of src/: `make test` runs these first.
lint: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/ruff check src
	$(BIN)/ruff format --check src
	$(BIN)/mypy

# Three workers on two cores, each taking work from the others when it runs dry: the suite's agents wait on their
# CLIs' start-up often enough that a third keeps both cores busy (660 s against 711 s at -n 2, 2026-12-03).
# examples/offered_routes runs here, not in the demo: 423 variants through seven guards, 40 % of the examples' time;
# the demo's budget is 150 s on two cores (160-187 s with it, 2026-12-04, on a machine whose speed varies by ~20 %).
test: lint
	$(BIN)/python -m pytest tests examples/offered_routes -q -n 3 --dist worksteal

# The tests whose expectations are facts of the Claude Code CLI release they run (marked `cli_dependent`; the facts are
# kept by release in src/pytest_controlplane/cli_facts.py), played on the newest release and on 2.1.300, two months
# older; `make test` plays them on the pinned one (2.1.332).  Each release is installed once into the user cache
# (`controlplane cli install`: ~5 s and 270-430 MB a release); $CONTROLPLANE_CLI makes every suite of the run, its
# pytester ones too, drive it.  CLI_RELEASES=... plays others; every release is played even when one fails.
CLI_RELEASES ?= latest 2.1.300
test-clis: $(STAMP)
	@failed=""; for release in $(CLI_RELEASES); do \
	  $(BIN)/controlplane cli install $$release || exit 1; \
	  echo "== the CLI-dependent tests on Claude Code $$release"; \
	  CONTROLPLANE_CLI=$$release $(BIN)/python -m pytest tests -m cli_dependent -q -n 2 || failed="$$failed $$release"; \
	done; \
	if [ -n "$$failed" ]; then echo "failed on:$$failed"; exit 1; fi

# Each test class on one worker (loadscope): its warm CLI starts once (182 s against 193 s with the default
# distribution and 210 s with worksteal, 2026-12-04).
demo: $(STAMP)
	$(BIN)/python -m pytest examples -q -n 2 --dist loadscope --agent-mode=replay --ignore=examples/offered_routes

# The documentation site into site/ (the Reference pages are generated from the code); `make test` builds it too.
docs: $(STAMP)
	$(BIN)/python -m mkdocs build --strict

docs-serve: $(STAMP)
	$(BIN)/python -m mkdocs serve

# Mutation testing of the oracles (slow: run by hand, not in CI); see docs/explanation/development.md.
mutate: $(STAMP)
	$(BIN)/python -m pip install --quiet mutmut==3.8.1
	$(BIN)/mutmut run --max-children 2 $(MUTANTS)
	$(BIN)/mutmut results

# A seeded random sample of the oracles' mutants (SIZE, SEED): the kill rate with its 95 % interval in ~20 minutes.
mutate-sample: $(STAMP)
	$(BIN)/python -m pip install --quiet mutmut==3.8.1
	$(BIN)/python tools/mutation_sample.py --size $(or $(SIZE),500) --seed $(or $(SEED),2)

clean:
	rm -rf $(VENV) .pytest_cache mutants site

# Re-record the example cassettes from their scripted models, served as a stand-in API (not Claude).
record-examples: $(STAMP)
	@set -e; for dir in examples/*/; do \
	  [ -f $${dir}model_script.py ] || continue; \
	  $(BIN)/python -m pytest $$dir -q --agent-mode=record --agent-script $${dir}model_script.py:MODEL; \
	done
