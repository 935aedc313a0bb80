#!/usr/bin/env bash
# Gate: ansible-test sanity (Python 3.12, the venv's ansible-core) on the collection as it ships: the
# tarball built from the work tree (tracked files plus untracked files that are not git-ignored). ansible-test needs the
# collection under a *physical* .../ansible_collections/<ns>/<name>/ path (a symlink fails), so the
# files are copied to .build/sanity/ansible_collections/gpufleet/core first. tests/output/ of the copy
# is kept between runs (it holds ansible-test's delegation venv); the sanity venvs themselves are
# cached by ansible-test in ~/.ansible/test/venv.
# Offline: ansible-test downloads get-pip-<ver>.py to bootstrap each venv, which fails without
# network access; a shim seeded into its cache runs ensurepip instead.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
export PATH="$ROOT/.venv/bin:$ROOT/.build/bin:$PATH"
DEST="$ROOT/.build/sanity/ansible_collections/gpufleet/core"

# One run at a time: a second run would wipe the copy under the first one.
mkdir -p "$ROOT/.build/sanity"
exec 9>"$ROOT/.build/sanity/.lock"
flock 9

# The computed import ignores (controller-only module_utils) must be current.
python3 "$ROOT/scripts/sanity_ignores.py" --check

cache="$HOME/.ansible/test/cache"
mkdir -p "$cache"
for v in 25_2 24_2; do
  cat > "$cache/get_pip_$v.py" <<'PY'
# gpufleet offline get-pip shim: bootstrap pip with ensurepip, then install what was asked for.
import os
import subprocess
import sys

subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade"])
os.environ.pop("PIP_CONFIG_FILE", None)
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install", "--upgrade", *args]))
PY
done

mkdir -p "$DEST"
# Fresh copy of the sources, keeping only tests/output (ansible-test's cache) of the previous one.
find "$DEST" -mindepth 1 -maxdepth 1 ! -name tests -exec rm -rf {} +
if [ -d "$DEST/tests" ]; then
  find "$DEST/tests" -mindepth 1 -maxdepth 1 ! -name output -exec rm -rf {} +
fi
# What is tested is what ships: the collection tarball `ansible-galaxy collection build` makes (galaxy.yml
# build_ignore decides; the work tree's tracked and untracked, not ignored files are built, so an edit is
# tested before it is committed), plus the unit tests and the sanity ignore files, which do not ship but
# belong to the collection's checks. Nothing else of the checkout (bench/, tools/, gitops/, the pytest
# integration suites) is collection content.
BUILD="$ROOT/.build/sanity/build"
rm -rf "$BUILD" && mkdir -p "$BUILD/src"
git ls-files -z --cached --others --exclude-standard -- . \
  | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
  | tar --null -T - -cf - | tar -xf - -C "$BUILD/src"
ansible-galaxy collection build --output-path "$BUILD" "$BUILD/src" >/dev/null
tar -xzf "$BUILD"/gpufleet-core-*.tar.gz -C "$DEST" --exclude MANIFEST.json --exclude FILES.json
cp "$BUILD/src/galaxy.yml" "$DEST/"
git ls-files -z --cached --others --exclude-standard -- tests/sanity tests/unit tests/lib tests/conftest.py \
  | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
  | tar --null -T - -cf - | tar -xf - -C "$DEST"
rm -rf "$BUILD"

cd "$DEST"
# ansible-test lists the collection's files with git when it finds a repository, and the nearest one
# would be this work tree, where .build/ is ignored ("All targets skipped"). A private index in the
# copy (no commit needed) makes it list exactly the copied files.
rm -rf .git
git init -q .
echo 'tests/output/' >> .git/info/exclude  # ansible-test's own output (its delegation venv), not content
git add -A .
ansible-test sanity --venv --python 3.12 --color no "$@"
