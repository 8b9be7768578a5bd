# Two commands do all set-up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?=
PORT ?=
SERVE_FLAGS := $(if $(HOST),--host $(HOST)) $(if $(PORT),--port $(PORT))

.PHONY: run test test-fast test-sqlite lint install install-test migrate bench bench-compare clean catalogues

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip setuptools wheel

$(VENV)/.installed: $(BIN)/python setup.cfg pyproject.toml
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

migrate: install
	$(BIN)/orbchain migrate

## make run: install, migrate ./var/orbchain.db and serve on http://127.0.0.1:8080 with devnet.
run: install
	$(BIN)/orbchain migrate
	$(BIN)/orbchain serve $(SERVE_FLAGS)

## make catalogues: the payer pages' messages (babel.cfg) extracted into web/locale/orbchain.pot, merged into
## every language's .po, and the .mo files compiled. The .mo files are committed, so a clean clone's `make install`
## ships them with no build step; tests/test_i18n_catalogues.py fails when a .po is incomplete or a .mo is stale.
## docs/decisions.md "Payer pages in eight languages" says how to add a language.
CATALOGUE_LANGS := es pt ru zh de fr tr
catalogues: install
	$(BIN)/pybabel extract -F babel.cfg --no-location --sort-output --project=Orbchain \
		--copyright-holder="Orbchain contributors" -o web/locale/orbchain.pot .
	for l in $(CATALOGUE_LANGS); do \
		case $$l in zh) locale=zh_Hans_CN;; *) locale=$$l;; esac; \
		if [ -f web/locale/$$l.po ]; then \
			$(BIN)/pybabel update --no-fuzzy-matching -i web/locale/orbchain.pot -o web/locale/$$l.po -l $$locale || exit 1; \
		else \
			$(BIN)/pybabel init -i web/locale/orbchain.pot -o web/locale/$$l.po -l $$locale || exit 1; \
		fi; \
		$(BIN)/pybabel compile -i web/locale/$$l.po -o web/locale/$$l.mo -l $$locale --statistics || exit 1; \
	done

## make lint: ruff, mypy, then import-linter; rules in pyproject.toml, reasons in docs/decisions.md "Lint and types"
## and "One public plugin API, kept by import-linter".
# mypy must see the module names the code is installed under (setup.cfg package_dir maps core/ to
# orbchain.core, web/ to orbchain.web ...; the relative imports need them). It cannot follow the
# editable install (an import hook) and checked as `mypy core web` it stops at the first `from ..web`.
# scripts/typecheck.py lays build/typecheck/orbchain/* symlinks from package_dir, runs mypy there
# (pyproject sets mypy_path and packages, so it checks `-p orbchain`) and reports source paths.
# scripts/lint_imports.py checks the import contracts (plugins and chains reach orbchain only through orbchain.api,
# the core never imports web, plugins or chains) on the same tree, where the modules have their installed names.
# All three always run, so one pass shows every finding; any failing fails the target.
lint: install-test
	$(BIN)/python -m ruff check .; ruff=$$?; \
	$(BIN)/python scripts/typecheck.py; mypy=$$?; \
	$(BIN)/python scripts/lint_imports.py && [ $$ruff -eq 0 ] && [ $$mypy -eq 0 ]

## make test: lint, install test deps (Python packages, Chromium, litecoind, monero, anvil and solc,
## systemd-analyze, nginx, pgbouncer), find or start PostgreSQL, run the whole suite on both databases.
test: install-test lint
	scripts/ensure_chromium.sh
	scripts/ensure_litecoind.sh
	scripts/ensure_monero.sh
	scripts/ensure_node_tools.sh
	scripts/ensure_systemd_analyze.sh
	scripts/ensure_nginx.sh
	scripts/ensure_jq.sh
	scripts/ensure_pgbouncer.sh
	$(BIN)/python scripts/run_tests.py $(PYTEST_ARGS)

## make test-sqlite: PYTEST_ARGS (default: the whole suite) on SQLite alone, asked for by name.
# A run without ORBCHAIN_TEST_PG_DSN fails unless ORBCHAIN_TEST_SQLITE_ONLY=1 says SQLite alone is meant
# (orbchain/testing/databases.py); tests marked postgresql_only are then reported skipped. A faster tier
# reuses $(SQLITE_ONLY_PYTEST) with its own arguments.
SQLITE_ONLY_PYTEST := ORBCHAIN_TEST_SQLITE_ONLY=1 $(BIN)/python -m pytest
test-sqlite: install-test
	$(SQLITE_ONLY_PYTEST) $(PYTEST_ARGS)

## make test-fast: the inner loop, tests/unit on SQLite in under a minute: no lint, no node, no browser, no PostgreSQL.
# tests/unit/conftest.py fails a test there that starts a process, opens a network socket, builds an app or is
# postgresql_only; `make test` still runs tests/unit (on both databases) with everything else. The schemathesis
# and anyio pytest plugins are left unloaded: no unit test uses them and they cost seconds of start-up.
test-fast: install-test
	$(SQLITE_ONLY_PYTEST) tests/unit -q -p no:cacheprovider -p no:schemathesis -p no:anyio $(PYTEST_ARGS)

bench: install-test
	@for f in bench/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done
	$(BIN)/python bench/compare.py

## make bench-compare: the hot routes' CPU per request against bench/baseline_hotpath.json (issue 47); prints
## every route more than 10 % worse, never fails (a bench figure, not a test).
bench-compare: install-test
	$(BIN)/python bench/compare.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
