# Attention, Step by Step: two commands set everything up on a fresh machine.
#   make book   create .venv if missing, install, build the HTML book strictly
#   make test   install what the tests need and run all of them
#   make lab    open the chapters in JupyterLab (live explorers)
#   make translations  update locales/zh_CN/*.po after editing English text
#   make bench  measure build, execution, slider and page costs, pages on a phone (about 15 min)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: book test lab bench clean help translations
help:
	@sed -n '2,6p' Makefile

# On Linux, torch's CPU build comes from PyTorch's CPU index (PyPI's default
# Linux wheel is the CUDA build, gigabytes the book does not use); if that
# index cannot be reached, the default index. `make book TORCH_INDEX=` takes
# the default index on purpose (CUDA). See tools/install.py.
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
export TORCH_INDEX

$(STAMP): requirements.txt pyproject.toml tools/jupyterlab-overrides.json tools/install.py
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else \
	  "Python 3.11 or newer is required (found %d.%d); set PYTHON=python3.11" % sys.version_info[:2])'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m tools.install
	@# JupyterLab: no news or update checks (the book is meant to work offline)
	@mkdir -p $(VENV)/share/jupyter/lab/settings
	@cp tools/jupyterlab-overrides.json $(VENV)/share/jupyter/lab/settings/overrides.json
	@touch $(STAMP)

book: $(STAMP)
	@$(BIN)/python -m tools.build

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadgroup -rP --durations=20

lab: $(STAMP)
	$(BIN)/jupyter lab --ServerApp.root_dir=chapters $(if $(filter 0,$(shell id -u)),--allow-root)

translations: $(STAMP)
	$(BIN)/python -m tools.build --translations

bench: $(STAMP)
	$(BIN)/python -m tools.bench

clean:
	rm -rf _build _vendor
