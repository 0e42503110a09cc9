# evalcore: `make run` starts the app on the sample data; `make test` runs every check.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup run test lint typecheck pytest browser postgres bench fuzz clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: setup
	$(BIN)/evalcore app

# The browser tests drive Debian's Chromium (Playwright cannot download a browser here).
browser:
	@command -v chromium >/dev/null 2>&1 || { echo "installing Debian's chromium for the browser tests"; \
		apt-get update -qq && apt-get install -y -qq chromium; }

# The store's tests run on PostgreSQL too: Debian's server, started by the tests themselves (tests/pgcluster.py).
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { echo "installing Debian's postgresql for the tests"; \
		apt-get update -qq && apt-get install -y -qq postgresql; }

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: setup
	$(BIN)/mypy

pytest: setup browser postgres
	$(BIN)/pytest

test: lint typecheck pytest

bench: setup
	$(BIN)/python tests/bench/bench_formats.py
	$(BIN)/python tests/bench/bench_store.py
	$(BIN)/python tests/bench/bench_metrics.py
	$(BIN)/python tests/bench/bench_app.py
	$(BIN)/python tests/bench/bench_scale.py
	$(BIN)/python tests/bench/bench_solver.py
	$(BIN)/python tests/bench/bench_bounded_reads.py

# The fuzz suite with a large budget (make test runs a small one): hostile versions of every sample
# file through validate, convert and import. EVALCORE_FUZZ_CASES / EVALCORE_FUZZ_SECONDS / EVALCORE_FUZZ_SEED
# change it; EVALCORE_FUZZ_MATCH=TEXT runs only the cases whose name holds TEXT.
fuzz: setup
	EVALCORE_FUZZ_CASES=$${EVALCORE_FUZZ_CASES:-20000} EVALCORE_FUZZ_SECONDS=$${EVALCORE_FUZZ_SECONDS:-3600} \
		$(BIN)/pytest -q tests/fuzz

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .bench
