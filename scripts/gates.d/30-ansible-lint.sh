#!/usr/bin/env bash
# Gate: ansible-lint, production profile (.ansible-lint at the repo root), offline: Galaxy is not
# reachable, kubernetes.core comes from the `ansible` package in .venv.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
export PATH="$ROOT/.venv/bin:$ROOT/.build/bin:$PATH"
export ANSIBLE_COLLECTIONS_PATH="${ANSIBLE_COLLECTIONS_PATH:-$ROOT/.build/collections}"
export ANSIBLE_HOME="${ANSIBLE_HOME:-$ROOT/.build/ansible-home}"
ansible-lint --offline --profile production --nocolor "$@"
