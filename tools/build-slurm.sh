#!/usr/bin/env bash
# Build Slurm from the source archive in ../shared/upstream/src/ (SOURCES.md) into a per-user
# cache and link it into the checkout as .build/slurm: the daemons (slurmctld, slurmd, slurmdbd,
# slurmrestd), the commands, the plugins and contribs/pam_slurm_adopt.
#
# Usage: tools/build-slurm.sh
#
# The installed prefix is named by the version and a hash of the build recipe (source archive
# checksum, configure arguments, RECIPE) and carries a stamp with that recipe; a prefix whose
# stamp matches is not rebuilt, so a warm machine pays nothing. The build runs in a scratch
# directory and its result is moved into place in one rename: an interrupted build leaves no
# prefix behind. Slurm compiles its prefix into the binaries (plugin and library paths), so the
# cache stays where it was built and .build/slurm is a link to it.
#
# Environment:
#   GPUFLEET_CACHE        cache root (default ${XDG_CACHE_HOME:-~/.cache}/gpufleet)
#   GPUFLEET_BUILD_JOBS   make -j value (default 2)
#   GPUFLEET_BUILD_FORCE  1 = ignore the stamp and rebuild
#   GPUFLEET_BUILD_ROOT   output root instead of .build (slurm link and logs/)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${GPUFLEET_BUILD_ROOT:-$ROOT/.build}"
CACHE="${GPUFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpufleet}/slurm"

SLURM_VERSION=26.05.3
SLURM_SHA256=d41a71248d57816f873a990bcc085a79d746b69a9bbe6f2a0b64dc75536a5b51
SRC="$ROOT/../shared/upstream/src/slurm-$SLURM_VERSION.tar.gz"
RECIPE=1   # bump when the steps below change in a way the arguments do not show
# slurmrestd (default on) with JWT, accounting in MariaDB, PAM, hwloc, lz4, YAML and JSON
# serializers; several slurmd on one host (`slurmd -N <node>`, how the tests emulate nodes);
# nothing optional left to chance. Build time on 2 shared cores is what CI pays:
# no debug symbols (-g, and Slurm's own -ggdb3) and no static libraries (libtool would compile
# every source twice); the code and the plugins are the same.
CONFIGURE_ARGS=(
  --with-jwt --with-json --with-yaml --with-lz4 --with-hwloc --with-munge
  --with-mysql_config=/usr/bin --enable-pam --enable-multiple-slurmd
  --without-pmix --without-nvml --without-ucx --without-rdkafka --without-lua
  --disable-debug --disable-static --disable-x11 --disable-sview --disable-selinux
  CFLAGS=-O2
)
# Plugins that must exist after the build: configure quietly drops a feature whose library it
# cannot find, so the result is checked rather than trusted.
REQUIRED=(
  sbin/slurmctld sbin/slurmd sbin/slurmdbd sbin/slurmrestd
  bin/scontrol bin/sacctmgr bin/sbatch bin/srun bin/sinfo bin/squeue bin/sacct
  lib/slurm/auth_jwt.so lib/slurm/accounting_storage_mysql.so lib/slurm/serializer_yaml.so
  lib/slurm/serializer_json.so lib/slurm/topology_block.so lib/slurm/topology_tree.so
  lib/slurm/cgroup_v2.so lib/slurm/gpu_generic.so lib/security/pam_slurm_adopt.so
)

die() { echo "tools/build-slurm.sh: ERROR: $*" >&2; exit 1; }
log() { echo "tools/build-slurm.sh: $*" >&2; }

recipe_line() {
  echo "slurm $SLURM_VERSION sha256=$SLURM_SHA256 recipe=$RECIPE configure=${CONFIGURE_ARGS[*]}"
}
PREFIX="$CACHE/$SLURM_VERSION-$(recipe_line | sha256sum | cut -c1-12)"

link_prefix() {
  mkdir -p "$OUT"
  ln -sfn "$PREFIX" "$OUT/slurm.tmp" && mv -fT "$OUT/slurm.tmp" "$OUT/slurm"
}

is_fresh() {
  [[ "${GPUFLEET_BUILD_FORCE:-0}" != 1 ]] && [[ "$(cat "$PREFIX/.stamp" 2>/dev/null)" == "$(recipe_line)" ]]
}

build() { # scratch -> installs into $scratch/root$PREFIX
  local scratch="$1" jobs="${GPUFLEET_BUILD_JOBS:-2}" src
  [[ -f "$SRC" ]] || die "source archive not found: $SRC"
  [[ "$(sha256sum "$SRC" | cut -d' ' -f1)" == "$SLURM_SHA256" ]] || die "checksum mismatch: $SRC"
  tar -xzf "$SRC" -C "$scratch"
  src="$scratch/slurm-$SLURM_VERSION"
  [[ -x "$src/configure" ]] || die "no configure script in $SRC"
  (
    cd "$src"
    ./configure -q --prefix="$PREFIX" --sysconfdir="$PREFIX/etc" "${CONFIGURE_ARGS[@]}"
    nice -n 10 make -s -j"$jobs"
    # pam_slurm_adopt goes into the prefix, not the host's /lib/security (configure's --with-pam_dir
    # wants the directory to exist already): the same PAM_DIR for the link and the install
    nice -n 10 make -s -j"$jobs" -C contribs/pam_slurm_adopt PAM_DIR="$PREFIX/lib/security"
    make -s install DESTDIR="$scratch/root"
    make -s -C contribs/pam_slurm_adopt install DESTDIR="$scratch/root" PAM_DIR="$PREFIX/lib/security"
  )
  local f
  for f in "${REQUIRED[@]}"; do
    [[ -e "$scratch/root$PREFIX/$f" ]] || die "the build did not produce $f (see configure's output above)"
  done
  recipe_line >"$scratch/root$PREFIX/.stamp"
}

main() {
  mkdir -p "$CACHE" "$OUT/logs"
  exec 9>"$CACHE/.lock"
  flock 9
  if is_fresh; then
    link_prefix
    log "Slurm $SLURM_VERSION up to date in $PREFIX"
    return
  fi
  local scratch t0=$SECONDS
  scratch="$(mktemp -d "$CACHE/tmp.XXXXXX")"
  trap "rm -rf '$scratch'" EXIT
  log "building Slurm $SLURM_VERSION into $PREFIX (log: $OUT/logs/build-slurm.log)"
  # in the background and waited for: errexit stays on inside (it is off in a tested command)
  ( build "$scratch" ) >"$OUT/logs/build-slurm.log" 2>&1 &
  wait $! || { tail -n 40 "$OUT/logs/build-slurm.log" >&2; die "building Slurm failed; see $OUT/logs/build-slurm.log"; }
  rm -rf "$PREFIX"
  mv -T "$scratch/root$PREFIX" "$PREFIX"
  link_prefix
  times >"$scratch/times"
  log "built Slurm $SLURM_VERSION in $((SECONDS - t0))s wall; cpu (user sys of the build): $(sed -n 2p "$scratch/times")"
}

main "$@"
