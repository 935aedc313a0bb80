#!/usr/bin/env bash
# Installs everything the tests need on a fresh Debian 12 machine, and skips what is already there:
#   1. Debian packages listed in scripts/debian-packages.txt (munge, MariaDB, Slurm's build deps, ...)
#   1b. the system user slurm (SlurmUser of the JWT and operator tests)
#   2. the Python 3.12 virtualenv .venv from requirements-test.txt, and .build/py39 (Python 3.9, the
#      oldest managed-host Python) from requirements-target-py39.txt
#   3. the Go-built control-plane binaries (tools/build.sh -> .build/bin)
#   4. the collection link .build/collections/ansible_collections/gpufleet/core -> repo root
#   5. Slurm built from ../shared/upstream/src (tools/build-slurm.sh -> .build/slurm, cached per user)
# Usage: scripts/setup.sh [--python-only]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
python_only=false
[ "${1:-}" = "--python-only" ] && python_only=true

log() { printf '==> %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

# --- 1. Debian packages ------------------------------------------------------------------------
if ! $python_only; then
  mapfile -t pkgs < <(grep -v '^\s*#' scripts/debian-packages.txt | awk 'NF{print $1}' | sort -u)
  missing=()
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing Debian packages: ${missing[*]}"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO apt-get update -qq || die "apt-get update failed"
    # slapd: install without creating a database or starting it (the tests make their own, on loopback)
    echo "slapd slapd/no_configuration boolean true" | $SUDO debconf-set-selections
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" \
      || die "apt-get install ${missing[*]} failed"
    # Debian starts daemons on install; the tests run their own instances.
    for svc in slurmctld slurmd munge redis-server slurmdbd mariadb slapd sssd ssh; do
      $SUDO systemctl stop "$svc" >/dev/null 2>&1 || $SUDO service "$svc" stop >/dev/null 2>&1 || true
    done
  fi
fi

# --- 1b. users and groups the tests run daemons as ---------------------------------------------
# slurmctld runs as the Slinky chart's SlurmUser `slurm` in the JWT and operator tests; a machine
# that never had Debian's Slurm packages has no such user, so create it (system account, no login).
if ! $python_only && ! getent passwd slurm >/dev/null; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  log "creating the system user slurm"
  getent group slurm >/dev/null || $SUDO groupadd --system slurm || die "groupadd slurm failed"
  $SUDO useradd --system --gid slurm --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin slurm || die "useradd slurm failed"
fi

# --- 2. Python virtualenv ----------------------------------------------------------------------
find_python312() {
  local c
  for c in python3.12 "$(command -v pyenv >/dev/null 2>&1 && pyenv root)/versions/"3.12*/bin/python3.12; do
    if [ -n "$c" ] && "$c" -c 'import sys; assert sys.version_info[:2] == (3, 12)' >/dev/null 2>&1; then
      command -v "$c" || echo "$c"; return 0
    fi
  done
  if command -v pyenv >/dev/null 2>&1; then
    for v in $(pyenv versions --bare | grep '^3\.12'); do
      c="$(pyenv root)/versions/$v/bin/python3.12"; [ -x "$c" ] && { echo "$c"; return 0; }
    done
  fi
  return 1
}
stamp=.venv/.requirements.sha256
want=$(sha256sum requirements-test.txt | cut -d' ' -f1)
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  py=$(find_python312) || die "Python 3.12 not found (needed for ansible-core 2.21); install python3.12 or pyenv 3.12"
  log "creating .venv with $py"
  [ -x .venv/bin/python ] || "$py" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r requirements-test.txt || die "pip install -r requirements-test.txt failed"
  echo "$want" > "$stamp"
fi

# --- 2b. Python 3.9 for the managed-host modules' tests (skipped with a note when there is no 3.9) --
find_python39() {
  local c
  for c in python3.9 "$(command -v pyenv >/dev/null 2>&1 && pyenv root)/versions/"3.9*/bin/python3.9; do
    if [ -n "$c" ] && "$c" -c 'import sys; assert sys.version_info[:2] == (3, 9)' >/dev/null 2>&1; then
      command -v "$c" || echo "$c"; return 0
    fi
  done
  return 1
}
stamp39=.build/py39/.requirements.sha256
want39=$(sha256sum requirements-target-py39.txt | cut -d' ' -f1)
if [ "$(cat "$stamp39" 2>/dev/null)" != "$want39" ]; then
  if py39=$(find_python39); then
    log "creating .build/py39 with $py39"
    [ -x .build/py39/bin/python ] || "$py39" -m venv .build/py39
    .build/py39/bin/python -m pip install -q -r requirements-target-py39.txt \
      || die "pip install -r requirements-target-py39.txt failed"
    echo "$want39" > "$stamp39"
  else
    log "note: no Python 3.9 found; the managed-host Python tests will skip (fail in CI)"
  fi
fi

# --- 4. collection link (before 3: cheap) --------------------------------------------------------
link=.build/collections/ansible_collections/gpufleet/core
mkdir -p "$(dirname "$link")"
[ -e "$link" ] || ln -sfn "$ROOT" "$link"

# --- 3. Go-built control plane ------------------------------------------------------------------
# Binaries are cached per user outside the checkout (like Go's own build cache), so a fresh clone
# on a warm machine copies them instead of rebuilding; build.sh's stamps decide what is current.
if ! $python_only && [ -x tools/build.sh ]; then
  cache="${GPUFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpufleet}/bin"
  mkdir -p .build/bin "$cache"
  cp -a "$cache/." .build/bin/ 2>/dev/null || true
  log "building control-plane binaries (tools/build.sh; skipped when already built)"
  tools/build.sh || die "tools/build.sh failed"
  cp -a .build/bin/. "$cache/" 2>/dev/null || log "warning: could not update the binary cache $cache"
fi

# --- 5. Slurm ------------------------------------------------------------------------------------
# Built once per user into the same cache (its stamp names version and configure recipe); the
# checkout gets a link. The Slurm tests run this build, never a Slurm on PATH.
if ! $python_only && [ -x tools/build-slurm.sh ]; then
  tools/build-slurm.sh || die "tools/build-slurm.sh failed"
  # scontrol reads a slurm.conf even for --version (else it tries a configless DNS lookup): a minimal one
  vconf="$(mktemp -d)"; printf 'ClusterName=version\nSlurmctldHost=localhost\n' >"$vconf/slurm.conf"
  log "Slurm under test: $(SLURM_CONF="$vconf/slurm.conf" .build/slurm/bin/scontrol --version) ($(readlink .build/slurm))"
  rm -rf "$vconf"
fi
log "setup complete"
