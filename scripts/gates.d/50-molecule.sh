#!/usr/bin/env bash
# Gate: the molecule scenarios under extensions/molecule/ (collection-level layout of molecule 26),
# default driver with managed: false: the instance is this machine, nothing is created in Docker.
#   render  - offline: site render of the sample fleet into the ephemeral dir, idempotence, verify
#   slurm   - rendered slurm.conf + topology on real slurmctld/slurmd (the Slurm build); jobs place by topology
#   cluster - real kube-apiserver/etcd/KWOK (tools/cluster.sh): pools, bootstrap, dry-run, tenants
# Scenarios whose real component is missing skip with a reason outside CI and fail with CI=true,
# like require_tool in tests/conftest.py. Pick scenarios with MOLECULE_SCENARIOS="render slurm".
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
# .build/slurm: the Slurm build (tools/build-slurm.sh); the slurm scenario runs its daemons by path
export PATH="$ROOT/.venv/bin:$ROOT/.build/bin:$ROOT/.build/slurm/sbin:$ROOT/.build/slurm/bin:$PATH"
export ANSIBLE_COLLECTIONS_PATH="${ANSIBLE_COLLECTIONS_PATH:-$ROOT/.build/collections}"
export ANSIBLE_HOME="${ANSIBLE_HOME:-$ROOT/.build/ansible-home}"
export MOLECULE_GLOB="extensions/molecule/*/molecule.yml"
# One run at a time: molecule keys its ephemeral directory on the scenario, so two concurrent runs
# of a scenario would share (and clean up) each other's state.
mkdir -p "$ROOT/.build"
exec 9>"$ROOT/.build/molecule.lock"
flock 9
ci=false
case "${CI:-}" in 1|true|TRUE|yes) ci=true ;; esac

need() { # scenario tool... -> 0 when every tool is there
  local s=$1 t; shift
  for t in "$@"; do
    if ! command -v "$t" >/dev/null 2>&1; then
      if $ci; then echo "molecule $s: required tool '$t' not found (CI=true: failing)" >&2; return 2; fi
      echo "molecule $s: SKIPPED, required tool '$t' not found; run \`make setup\`" >&2
      return 1
    fi
  done
}

scenarios="${MOLECULE_SCENARIOS:-render slurm cluster}"
failed=()
for s in $scenarios; do
  [ -f "extensions/molecule/$s/molecule.yml" ] || { echo "molecule: no scenario $s" >&2; failed+=("$s"); continue; }
  rc=0
  case "$s" in
    slurm) need "$s" slurmctld slurmd munged || rc=$? ;;
    cluster) need "$s" etcd kube-apiserver kwok kubectl || rc=$? ;;
  esac
  if [ $rc -eq 1 ]; then continue; fi
  if [ $rc -ne 0 ]; then failed+=("$s"); continue; fi
  start=$(date +%s)
  # managed: false skips destroy, so molecule never resets its state ("instances already
  # prepared" would skip prepare next time): start every run from a clean ephemeral directory.
  molecule reset -s "$s" >/dev/null 2>&1 || true
  if molecule test -s "$s"; then
    echo "molecule $s: passed in $(( $(date +%s) - start )) s"
  else
    failed+=("$s")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "molecule: failed scenarios: ${failed[*]}" >&2
  exit 1
fi
