# Two commands do all the set-up on a fresh clone (only Python 3.11 and make needed):
#   make demo   -> creates .venv, installs, runs the quickstart and the CLI demo
#   make test   -> creates .venv, installs everything with test extras, runs every test
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
# torch first and pinned: 2.13.0 is a CPU wheel on local disk; a bare `torch` would pull
# a multi-GB CUDA build through sentence-transformers.
TORCH  := torch==2.13.0
PKGS   := -e ".[embeddings,postgres]" -e bridges/langchain -e bridges/llamaindex
TPKGS  := -e ".[embeddings,postgres,test,bench,docs]" -e "bridges/langchain[test]" -e "bridges/llamaindex[test]"
DEPS   := pyproject.toml bridges/langchain/pyproject.toml bridges/llamaindex/pyproject.toml

.PHONY: demo test bench lint docs clean

$(BIN)/python:
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is required"'
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(VENV)/.installed: $(BIN)/python $(DEPS)
	$(PIP) install --quiet $(TORCH)
	$(PIP) install --quiet $(PKGS)
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed $(DEPS)
	$(PIP) install --quiet $(TPKGS)
	touch $@

demo: $(VENV)/.installed
	$(BIN)/python examples/quickstart.py
	$(BIN)/agentkit-memory --store .agentkit/demo.db ingest docs README.md
	$(BIN)/agentkit-memory --store .agentkit/demo.db query "how does dedupe merge the same fact from two sources" -k 5 --explain
	$(BIN)/agentkit-memory --store .agentkit/demo.db query "keep tenants apart" -k 5 --explain
	$(BIN)/agentkit-memory --store .agentkit/demo.db query "use agentkit memory as a LangChain retriever" -k 5 --explain

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest

bench: $(VENV)/.installed-test
	$(BIN)/python bench/run_all.py

lint: $(VENV)/.installed-test
	$(BIN)/ruff check src bridges tests bench
	$(BIN)/mypy --strict src bridges/langchain/src bridges/llamaindex/src

# The documentation site (guides, API reference, notebooks) into site/; offline, nothing run.
docs: $(VENV)/.installed-test
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict -d site

clean:
	rm -rf $(VENV) .agentkit site .cache/mkdocs-jupyter
