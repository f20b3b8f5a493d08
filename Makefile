# budgetlab: `make workshop` sets up a learner's checkout; `make test` runs the whole suite.

SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV := .venv
BIN := $(VENV)/bin
# The newest interpreter the workshop supports (src/budgetlab/advice.py says which: 3.11 to 3.14), or PYTHON=.
ADVICE := src/budgetlab/advice.py
PYTHON ?= $(shell for p in python3.14 python3.13 python3.12 python3.11 python3; do \
	$$p $(ADVICE) supported >/dev/null 2>&1 && { echo $$p; break; }; done)
# Says what is wrong with PYTHON (or that none was found), with the command that installs one, and stops.
define require_python
	@if [ -z "$(PYTHON)" ] || ! $(PYTHON) $(ADVICE) supported >/dev/null 2>&1; then \
		if [ -n "$(PYTHON)" ]; then echo "error: PYTHON=$(PYTHON) is not a Python the workshop runs on" >&2; fi; \
		{ python3 $(ADVICE) python 2>/dev/null || echo "error: no python3 found; install Python 3.11 to 3.14"; } >&2; exit 2; fi
endef
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-12)
# Celery 5.7.0 beside the pinned 5.6.3: lab 1 teaches both precedence orders (tests/celery_versions).
VENV57 := .venv-celery57
STAMP57 := $(VENV57)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-12)
# make test's pass on a second Python, with the machine's installed servers (budgetlab.commands.testrun):
# pyenv's 3.13.0, or python3.13 on PATH; with none, the pass says so and is skipped.
SECOND_PYTHON ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.13.0/bin/python3.13) \
	$(shell python3.13 -c 'import sys; print(sys.executable)' 2>/dev/null))
VENV_SECOND := .venv-second
STAMP_SECOND := $(VENV_SECOND)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-12)
PYTEST_ARGS ?=

.PHONY: help workshop test test-quick test-external venv venv-celery57 venv-second stack-up stack-down docs docs-build readme bench clean clean-venv

help: ## List the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

# uv (from PyPI, into .venv) installs the same packages as pip from the same index, in seconds rather
# than a minute; --compile-bytecode does now what the first imports would otherwise do, in every worker at once.
UV_PIN := uv>=0.9,<0.14
UV_INSTALL := $(BIN)/uv pip install --quiet --compile-bytecode

$(STAMP): pyproject.toml
	$(require_python)
	@test -x $(BIN)/python || { echo "creating $(VENV) with $$($(PYTHON) -c 'import sys; print("Python", sys.version.split()[0], "at", sys.executable)')"; \
		$(PYTHON) -m venv $(VENV) || { rm -rf $(VENV); echo "error: $(PYTHON) -m venv failed; on Debian/Ubuntu: sudo apt install python3-venv (or python3.X-venv for the version you use)" >&2; exit 2; }; }
	@echo "using $$($(BIN)/python -c 'import sys; print("Python", sys.version.split()[0])') in $(VENV)"
	$(BIN)/python -m pip install --quiet --disable-pip-version-check '$(UV_PIN)'
	$(UV_INSTALL) --python $(BIN)/python -e '.[workshop,test,docs,notebooks,pools]'
	@rm -f $(VENV)/.installed-*
	@touch $@

# The workshop's own code is installed editable, so uv compiles none of it: a machine or container that sets
# PYTHONDONTWRITEBYTECODE (this one does) compiled it again in every process, a tenth of a second of a check's
# grader and of each worker. compileall writes only what changed; a file edited since is read from source.
venv: $(STAMP) ## Create .venv and install the workshop (quick when nothing changed)
	@$(BIN)/python -m compileall -q -j0 src

# Built with .venv's uv, so it needs .venv first (an order, not a rebuild when .venv changes).
$(STAMP57): pyproject.toml | $(STAMP)
	$(require_python)
	@test -x $(VENV57)/bin/python || $(PYTHON) -m venv $(VENV57)
	$(UV_INSTALL) --python $(VENV57)/bin/python "celery[redis]==5.7.0" \
		"django>=5.2,<5.3" "psycopg[binary]>=3.2,<4" "typer>=0.12" "rich>=13" "watchfiles>=0.21" "pytest>=8"
	$(UV_INSTALL) --python $(VENV57)/bin/python --no-deps -e .
	@rm -f $(VENV57)/.installed-*
	@touch $@

venv-celery57: $(STAMP57) ## Celery 5.7.0 in .venv-celery57, for the tests that compare both versions

# What the second pass runs (the workshop, the suite, and the greenlet pools its lab-clock probes wait in),
# built with .venv's uv like .venv-celery57.
$(STAMP_SECOND): pyproject.toml | $(STAMP)
	@if [ -z "$(SECOND_PYTHON)" ]; then rm -rf $(VENV_SECOND); \
		echo "note: no Python 3.13 for make test's second pass (set SECOND_PYTHON=...); it will be skipped"; exit 0; fi; \
	test -x $(VENV_SECOND)/bin/python || $(BIN)/uv venv --quiet --python "$(SECOND_PYTHON)" $(VENV_SECOND); \
	$(UV_INSTALL) --python $(VENV_SECOND)/bin/python -e '.[workshop,test,pools]' && rm -f $(VENV_SECOND)/.installed-* && touch $@

venv-second: $(STAMP_SECOND) ## The workshop on a second Python (3.13) in .venv-second, for make test's second pass

workshop: venv ## Set up everything, start the stack, and show the labs
	$(BIN)/budgetlab stack up
	@$(BIN)/budgetlab list
	@echo
	@$(BIN)/python -m budgetlab.lab_pages

# The two other venvs side by side once .venv (whose uv builds them) is there: 16 s instead of 25 on two cores.
test: venv ## Set up everything and run the whole suite
	@$(MAKE) --no-print-directory -j2 venv-celery57 venv-second
	@$(BIN)/python -m budgetlab.commands.testrun $(PYTEST_ARGS)

# The quick loop: every test that needs no stack and no live worker (the `stack`, `slow`, `browser` and
# `external` ones wait for `make test`). Its servers answer nowhere, so a test that needs one and is not
# marked fails here at once instead of quietly using a stack that happens to run.
QUICK_MARKERS := not stack and not slow and not browser and not external
NOWHERE := DATABASE_URL=postgresql://quick@127.0.0.1:9/none REDIS_URL=redis://127.0.0.1:9/0
# Side by side, one process per core (tests/conftest.py keeps shared fixtures in one), as make test runs.
QUICK_WORKERS ?= $(shell nproc 2>/dev/null || echo 1)

test-quick: venv ## Run every test that needs no stack and no live worker (the quick loop)
	@$(NOWHERE) $(BIN)/python -m pytest -q -m "$(QUICK_MARKERS)" --durations=15 -n $(QUICK_WORKERS) --dist loadgroup $(PYTEST_ARGS)

test-external: ## make test, then the external tests again on this machine's PostgreSQL 15 and Redis 7 (what CI runs)
	@BUDGETLAB_EXTERNAL=1 $(MAKE) --no-print-directory test

stack-up: venv ## Start PostgreSQL and Redis (embedded unless DATABASE_URL/REDIS_URL are set)
	$(BIN)/budgetlab stack up

stack-down: venv ## Stop what the stack started
	$(BIN)/budgetlab stack down

docs: venv ## Serve the docs site on http://127.0.0.1:8000
	bash scripts/vendor_docs_assets.sh
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve -a 127.0.0.1:8000

readme: venv ## Write README.md's lab count, table and transcript from tests/labs.toml
	$(BIN)/python scripts/readme_labs.py

docs-build: venv ## Build the docs site strictly into .budgetlab/site (and check README.md's lab lists)
	$(BIN)/python scripts/readme_labs.py --check
	bash scripts/vendor_docs_assets.sh
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict -d .budgetlab/site

bench: venv ## Print the speed figures (stack start-up, lab clock precision, ...)
	@for script in benchmarks/*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

clean-venv: ## Remove .venv, .venv-celery57 and .venv-second
	rm -rf $(VENV) $(VENV57) $(VENV_SECOND)

clean: ## Stop the stack and remove .venv and .budgetlab
	-test -x $(BIN)/budgetlab && $(BIN)/budgetlab stack down --remove-copies
	rm -rf $(VENV) $(VENV57) $(VENV_SECOND) .budgetlab site

# The audit alone, for a team's CI and pre-commit (audit/pyproject.toml; docs/audit.md, "In CI and pre-commit").
.PHONY: audit-wheel
audit-wheel: venv ## Build dist/budgetlab_audit-*.whl: the audit without the workshop's dependencies
	$(BIN)/python -m pip wheel --quiet --disable-pip-version-check --no-deps --wheel-dir dist ./audit
