#!/usr/bin/env bash
# The test gates, in order: ruff, pytest (unit + integration on real components), the committed
# gitops/ tree is current, ansible-test sanity, ansible-lint (production), changelog lint, molecule.
# Run through `make test`, which runs scripts/setup.sh first.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export PATH="$ROOT/.venv/bin:$ROOT/.build/bin:$PATH"
export ANSIBLE_COLLECTIONS_PATH="$ROOT/.build/collections"
export ANSIBLE_HOME="$ROOT/.build/ansible-home"
status=0
step() { printf '\n==== %s\n' "$*"; }

step "ruff"
ruff check .

step "pytest"
set +e
pytest -q -p no:cacheprovider --durations=25 --durations-min=5 tests
rc=$?
set -e
if [ $rc -eq 5 ]; then echo "pytest collected no tests: that is a failure" >&2; exit 1; fi
[ $rc -eq 0 ] || exit $rc

for gate in scripts/gates.d/*.sh; do
  [ -e "$gate" ] || continue
  step "$(basename "$gate" .sh)"
  bash "$gate"
done
echo "all gates passed"
