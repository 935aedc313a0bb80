#!/usr/bin/env bash
# Gate: changelog fragments are well-formed (antsibull-changelog lint).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
export PATH="$ROOT/.venv/bin:$PATH"
antsibull-changelog lint
