#!/usr/bin/env bash
# The test gates: ruff, then two lanes side by side, because the integration tests spend most of
# their time waiting on real daemons while the unit tests and the gates are pure CPU:
#   lane 1: pytest tests/integration (real slurmctld, kube-apiserver, vCluster, Argo CD, ...) on two
#           pytest-xdist workers
#   lane 2: pytest tests/unit, then scripts/gates.d/* in order (the committed gitops/ tree is
#           current is a unit test; ansible-test sanity, ansible-lint (production), changelog
#           lint, molecule)
# Lane 2 writes to .build/test-lane2.log, printed after lane 1's output. Both lanes run to their
# end; the exit status is non-zero when any step of either failed. Each lane's pytest prints its
# slowest tests. Run through `make test`, which runs scripts/setup.sh first.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export PATH="$ROOT/.venv/bin:$ROOT/.build/bin:$PATH"
export ANSIBLE_COLLECTIONS_PATH="$ROOT/.build/collections"
export ANSIBLE_HOME="$ROOT/.build/ansible-home"
step() { printf '\n==== %s (%s)\n' "$*" "$(date -u +%H:%M:%S)"; }

run_pytest() { # dir [pytest args...] -> pytest's status; collecting no test is a failure
  local dir=$1 rc=0
  shift
  pytest -q -p no:cacheprovider --durations=25 --durations-min=5 "$@" "$dir" || rc=$?
  if [ $rc -eq 5 ]; then echo "pytest collected no tests in $dir: that is a failure" >&2; rc=1; fi
  return $rc
}

lane2() { # unit tests, then every gate; returns how many steps failed
  local failed=0 gate
  step "pytest tests/unit"
  run_pytest tests/unit || { echo "FAILED: pytest tests/unit"; failed=$((failed + 1)); }
  for gate in scripts/gates.d/*.sh; do
    [ -e "$gate" ] || continue
    step "$(basename "$gate" .sh)"
    bash "$gate" || { echo "FAILED: $(basename "$gate" .sh)"; failed=$((failed + 1)); }
  done
  return $failed
}

start=$SECONDS
step "ruff"
ruff check .

mkdir -p "$ROOT/.build"
LANE2_LOG="$ROOT/.build/test-lane2.log"
# Lane 2 in a process group of its own (job control on for the start), so an interrupt stops all of it.
set -m
lane2 >"$LANE2_LOG" 2>&1 </dev/null &
lane2_pid=$!
set +m
trap 'kill -TERM -- -$lane2_pid 2>/dev/null || true' EXIT

step "lane 1: pytest tests/integration on two workers (lane 2, unit tests and gates, runs beside it)"
lane1=0
# groups (tests/integration/conftest.py) keep what shares a component or this machine's files on one worker
run_pytest tests/integration -n 2 --dist loadscope || lane1=$?
lane1_secs=$((SECONDS - start))

lane2=0
wait "$lane2_pid" || lane2=$?
trap - EXIT
step "lane 2 output (unit tests and gates)"
cat "$LANE2_LOG"

printf '\n==== lanes: integration %s s, total %s s\n' "$lane1_secs" "$((SECONDS - start))"
if [ $lane1 -ne 0 ] || [ $lane2 -ne 0 ]; then
  echo "FAILED: integration tests rc=$lane1; unit tests and gates: $lane2 step(s) failed" >&2
  exit 1
fi
echo "all gates passed"
