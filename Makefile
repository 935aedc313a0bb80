# Two commands for a new user (README): `make render` and `make test`.
.PHONY: setup render check test bench clean

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

bench:
	scripts/setup.sh --python-only
	for b in bench/bench_*.py; do .venv/bin/python $$b || exit 1; done

clean:
	rm -rf .build tests/output .pytest_cache .ruff_cache
