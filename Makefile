# Two commands for a new user (README): `make render` and `make test`.
.PHONY: setup render check test unit bench clean

setup:
	scripts/setup.sh

# The main job on the sample fleet, offline: render inventories/sample into gitops/.
render:
	scripts/setup.sh --python-only
	ANSIBLE_COLLECTIONS_PATH=$(CURDIR)/.build/collections .venv/bin/ansible-playbook -i inventories/sample site.yml

# Fails when the committed gitops/ is stale (what CI checks).
check:
	scripts/setup.sh --python-only
	.venv/bin/python scripts/gpufleet.py render --inventory inventories/sample --check

test: setup
	scripts/test.sh

# The quick loop while coding: ruff and the unit tests (pure Python, no daemons, no Go binaries).
unit:
	scripts/setup.sh --python-only
	.venv/bin/ruff check .
	.venv/bin/pytest -q -p no:cacheprovider --durations=10 tests/unit

# make bench: every benchmark as tables. make bench BASE=<rev> [BIG=1] [RUNS=n]: this checkout against
# <rev>, pair by pair, ratios and peak memory; REGRESSION (exit 1) above 1.2 on a headline figure.
bench:
	scripts/setup.sh --python-only
ifdef BASE
	.venv/bin/python bench/compare.py --base '$(BASE)' $(if $(BIG),--big) $(if $(RUNS),--runs $(RUNS))
else
	for b in bench/bench_*.py; do .venv/bin/python $$b || exit 1; done
endif

clean:
	rm -rf .build tests/output .pytest_cache .ruff_cache
