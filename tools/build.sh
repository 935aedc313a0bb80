#!/usr/bin/env bash
# Build the Go-based test tools (Kubernetes control plane, etcd, kwok, helm,
# kustomize) from pinned Go modules into the git-ignored .build/bin/.
#
# Usage: tools/build.sh [GROUP...]     GROUP: k8s etcd kwok helm kustomize promcrds argocd
#                                     kueue vcluster slinky bridge charts (default: all)
#
# Idempotent: each binary has a stamp file (.build/bin/.stamps/<name>) holding
# the pinned version and build recipe; a binary whose stamp matches is not
# rebuilt, so a warm machine pays nothing. Non-interactive; exits non-zero
# with a message naming the failed group.
#
# Environment:
#   GPUFLEET_BUILD_JOBS   go build -p value (default 2)
#   GPUFLEET_BUILD_FORCE  1 = ignore stamps and rebuild
#   GPUFLEET_BUILD_ROOT   output root instead of .build (bin/, share/, logs/)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/tools"
OUT="${GPUFLEET_BUILD_ROOT:-$ROOT/.build}"
BIN="$OUT/bin"
SHARE="$OUT/share"
LOGS="$OUT/logs"
STAMPS="$BIN/.stamps"

# ---- pinned versions -------------------------------------------------------
K8S_VERSION=1.36.3          # k8s.io/kubernetes; wrapper: tools/k8s/go.mod
ETCD_VERSION=3.6.10         # go.etcd.io/etcd/server/v3; wrapper: tools/etcd/go.mod
KWOK_VERSION=v0.8.0         # sigs.k8s.io/kwok
HELM_VERSION=v4.2.4         # helm.sh/helm/v4
KUSTOMIZE_VERSION=v5.8.1    # sigs.k8s.io/kustomize/kustomize/v5
PROM_OPERATOR_VERSION=v0.85.0  # github.com/prometheus-operator/prometheus-operator (CRD YAMLs only)
ARGOCD_VERSION=v3.5.1       # github.com/argoproj/argo-cd/v3; wrapper: tools/argocd/go.mod; = versions.py IMAGES["argocd"]
ARGOCD_COMMIT=109ca7ca71139e514114499d294a492e7910a965  # the tag's commit (../shared/upstream/SOURCES.md)
KUEUE_VERSION=v0.19.2       # sigs.k8s.io/kueue (= the pinned kueue chart 0.19.2, appVersion v0.19.2)
VCLUSTER_VERSION=0.36.1     # loft-sh/vcluster cmd/vcluster, from $UPSTREAM_SRC; = versions.py CHARTS["vcluster"]
SLINKY_VERSION=1.2.1        # SlinkyProject slurm-operator + slurm-client, from $UPSTREAM_SRC; = versions.py CHARTS["slurm_operator"]
BRIDGE_VERSION=1.2.1        # SlinkyProject slurm-bridge, from $UPSTREAM_SRC (slurm-client $SLINKY_VERSION by replace)
CERT_MANAGER_VERSION=v1.19.1  # github.com/cert-manager/cert-manager (its chart only); = versions.py CHARTS["cert_manager"]
RECIPE=1                    # bump when build flags change, forces a rebuild
# Upstream sources the proxy does not serve (../shared/upstream/SOURCES.md), unpacked into $OUT/src.
UPSTREAM_SRC="${GPUFLEET_UPSTREAM_SRC:-$ROOT/../shared/upstream/src}"

ALL_GROUPS=(k8s etcd kwok helm kustomize promcrds argocd kueue vcluster slinky bridge charts)

die() { echo "tools/build.sh: ERROR: $*" >&2; exit 1; }
log() { echo "tools/build.sh: $*" >&2; }

command -v go >/dev/null 2>&1 || die "'go' not found in PATH; Go >= 1.26.0 is required to build the test tools"
export GOTOOLCHAIN=local
GOV="$(go env GOVERSION)" || die "cannot run 'go env GOVERSION'"
case "$GOV" in
  go1.2[6-9]*|go1.[3-9][0-9]*) ;;
  *) die "Go >= 1.26.0 required (pinned modules have 'go 1.26.0' lines), found $GOV" ;;
esac
export CGO_ENABLED=0
export GOFLAGS="-p=${GPUFLEET_BUILD_JOBS:-2} -buildvcs=false -trimpath"
# Never prompt (e.g. for git credentials when a module falls back to direct).
export GIT_TERMINAL_PROMPT=0

mkdir -p "$BIN" "$SHARE" "$LOGS" "$STAMPS" "$OUT/src"

# Serialise concurrent invocations (setup and test command may race).
exec 9>"$BIN/.lock"
flock 9

stamp_of() { # name version -> expected stamp line
  echo "$1 $2 $GOV recipe=$RECIPE"
}
is_fresh() { # name version
  [[ "${GPUFLEET_BUILD_FORCE:-0}" != 1 ]] && [[ -x "$BIN/$1" ]] && [[ -f "$STAMPS/$1" ]] &&
    [[ "$(cat "$STAMPS/$1")" == "$(stamp_of "$1" "$2")" ]]
}
write_stamp() { stamp_of "$1" "$2" >"$STAMPS/$1"; }

k8s_ldflags() {
  local v="$K8S_VERSION" minor ldf="-s -w" p
  minor="$(cut -d. -f2 <<<"$v")"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldf+=" -X $p.gitVersion=v$v -X $p.gitMajor=1 -X $p.gitMinor=$minor"
    ldf+=" -X $p.gitTreeState=clean -X $p.gitCommit=0000000000000000000000000000000000000000"
    ldf+=" -X $p.buildDate=2000-01-01T00:00:00Z"
  done
  echo "$ldf"
}

# Build into a temp dir, then move into place, then stamp: an interrupted
# build never leaves a binary with a matching stamp.
TMPB="$(mktemp -d "$OUT/tmp.XXXXXX")"
trap 'rm -rf "$TMPB"' EXIT

install_bins() { # version name...
  local v="$1" n; shift
  for n in "$@"; do
    [[ -x "$TMPB/$n" ]] || die "expected binary '$n' was not produced"
    mv -f "$TMPB/$n" "$BIN/$n"
    write_stamp "$n" "$v"
  done
}

wrapper_version() { # dir module version -> version+hash of the wrapper's go.mod/go.sum
  grep -Eq "^[[:space:]]*(require[[:space:]]+)?$2 $3( |\$)" "$1/go.mod" ||
    die "$1/go.mod does not require $2 $3 (pinned in tools/build.sh); regenerate the wrapper"
  echo "$3+$(cat "$1/go.mod" "$1/go.sum" | sha256sum | cut -c1-12)"
}

build_k8s() {
  local names=(kube-apiserver kube-controller-manager kube-scheduler kubectl) n todo=0 v
  v="$(wrapper_version "$TOOLS/k8s" k8s.io/kubernetes "v$K8S_VERSION")"
  for n in "${names[@]}"; do is_fresh "$n" "$v" || todo=1; done
  ((todo)) || return 10
  (cd "$TOOLS/k8s" && go build -ldflags "$(k8s_ldflags)" -o "$TMPB/" \
    "${names[@]/#/k8s.io/kubernetes/cmd/}")
  install_bins "$v" "${names[@]}"
}

build_etcd() {
  local v
  v="$(wrapper_version "$TOOLS/etcd" go.etcd.io/etcd/server/v3 "v$ETCD_VERSION")"
  is_fresh etcd "$v" && return 10
  (cd "$TOOLS/etcd" && go build -ldflags "-s -w" -o "$TMPB/etcd" go.etcd.io/etcd/server/v3)
  install_bins "$v" etcd
}

build_kwok() {
  # kwok >= 0.8 has no built-in stages: ship the "fast" stages kwokctl uses.
  # The binary is cached per user, share/ is not: a fresh clone with a fresh binary only re-copies the stages.
  local bin_fresh=0
  is_fresh kwok "$KWOK_VERSION" && bin_fresh=1
  if ((bin_fresh)) && [[ -f "$SHARE/kwok/stages.yaml" ]] &&
     [[ "$(cat "$SHARE/kwok/.version" 2>/dev/null)" == "$KWOK_VERSION" ]]; then
    return 10
  fi
  ((bin_fresh)) || GOBIN="$TMPB" go install -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  local dir f
  dir="$(go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [[ -d "$dir/kustomize/stage" ]] || die "kwok stage directory not found in module cache ($dir)"
  mkdir -p "$SHARE/kwok"
  {
    for f in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
             pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
      echo "---"
      cat "$dir/kustomize/stage/$f.yaml"
    done
  } >"$SHARE/kwok/stages.yaml.tmp"
  mv -f "$SHARE/kwok/stages.yaml.tmp" "$SHARE/kwok/stages.yaml"
  echo "$KWOK_VERSION" >"$SHARE/kwok/.version"
  ((bin_fresh)) || install_bins "$KWOK_VERSION" kwok
}

build_helm() {
  is_fresh helm "$HELM_VERSION" && return 10
  local major="${HELM_VERSION%%.*}"
  GOBIN="$TMPB" go install \
    -ldflags "-s -w -X helm.sh/helm/$major/internal/version.version=$HELM_VERSION -X helm.sh/helm/$major/internal/version.gitTreeState=clean" \
    "helm.sh/helm/$major/cmd/helm@$HELM_VERSION"
  install_bins "$HELM_VERSION" helm
}

build_kustomize() {
  is_fresh kustomize "$KUSTOMIZE_VERSION" && return 10
  GOBIN="$TMPB" go install -ldflags "-s -w" "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
  install_bins "$KUSTOMIZE_VERSION" kustomize
}

build_promcrds() {
  # No binary: the upstream monitoring.coreos.com CRDs (PodMonitor, ServiceMonitor, PrometheusRule)
  # from the module zip, for the server-side dry-run of rendered monitors (.build/share/).
  local dest="$SHARE/prometheus-operator-crds" dir k
  if [[ "${GPUFLEET_BUILD_FORCE:-0}" != 1 ]] && [[ "$(cat "$dest/.version" 2>/dev/null)" == "$PROM_OPERATOR_VERSION" ]]; then
    return 10
  fi
  dir="$(go mod download -json "github.com/prometheus-operator/prometheus-operator@$PROM_OPERATOR_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [[ -d "$dir/example/prometheus-operator-crd" ]] || die "prometheus-operator CRDs not found in module cache ($dir)"
  rm -rf "$dest.tmp" && mkdir -p "$dest.tmp"
  for k in podmonitors servicemonitors prometheusrules; do
    cp "$dir/example/prometheus-operator-crd/monitoring.coreos.com_$k.yaml" "$dest.tmp/"
  done
  echo "$PROM_OPERATOR_VERSION" >"$dest.tmp/.version"
  rm -rf "$dest" && mv "$dest.tmp" "$dest"
}

build_argocd() {
  # One multi-call binary: argv[0] (or ARGOCD_BINARY_NAME) selects argocd,
  # argocd-repo-server, argocd-application-controller, ... Since 3.3 Argo CD
  # imports its nested gitops-engine module, which the proxy does not serve:
  # the wrapper replaces it with ./gitops-engine (as v3.5.1's own go.mod does),
  # so the build runs in a copy of the wrapper beside the unpacked source.
  local v p=github.com/argoproj/argo-cd/v3/common src="$OUT/src/argocd"
  local tgz="$UPSTREAM_SRC/argo-cd-gitops-engine-${ARGOCD_VERSION#v}-src.tar.gz"
  [[ -f "$tgz" ]] || die "gitops-engine source not found: $tgz (see ../shared/upstream/SOURCES.md)"
  v="$(wrapper_version "$TOOLS/argocd" github.com/argoproj/argo-cd/v3 "$ARGOCD_VERSION")"
  v+="+$(sha256sum "$tgz" | cut -c1-12)+${ARGOCD_COMMIT:0:12}"
  is_fresh argocd "$v" && is_fresh git-verify-wrapper.sh "$v" && return 10
  rm -rf "$src" && mkdir -p "$src"
  cp "$TOOLS/argocd/go.mod" "$TOOLS/argocd/go.sum" "$TOOLS/argocd/tools.go" "$src/"
  tar -xzf "$tgz" -C "$src"
  mv "$src/gitops-engine-${ARGOCD_VERSION#v}" "$src/gitops-engine"
  (cd "$src" && go build \
    -ldflags "-s -w -X $p.version=${ARGOCD_VERSION#v} -X $p.gitTag=$ARGOCD_VERSION -X $p.gitCommit=$ARGOCD_COMMIT -X $p.gitTreeState=clean -X $p.buildDate=2000-01-01T00:00:00Z" \
    -o "$TMPB/argocd" github.com/argoproj/argo-cd/v3/cmd)
  # the image's helper scripts (its Dockerfile copies them to /usr/local/bin): the repo-server runs
  # git-verify-wrapper.sh on every revision since 3.5, whether or not GPG is enabled
  local mod
  mod="$(cd "$src" && go mod download -json "github.com/argoproj/argo-cd/v3@$ARGOCD_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  for f in git-verify-wrapper.sh gpg-wrapper.sh; do
    [[ -f "$mod/hack/$f" ]] || die "$f not found in the argo-cd module ($mod)"
    install -m 0755 "$mod/hack/$f" "$TMPB/$f"
  done
  install_bins "$v" argocd git-verify-wrapper.sh gpg-wrapper.sh
}

build_vcluster() {
  # The vCluster binary (syncer + control-plane launcher: `vcluster start`), from the release's
  # source in $UPSTREAM_SRC; SyncerVersion stays "dev", which also keeps its telemetry off. The
  # release's chart (the tests template it with helm) is not in that archive: it comes from the
  # same release's module zip on the Go module proxy (chart/ has no go.mod, so the zip carries it;
  # its values.yaml is byte-identical to ../shared/upstream/charts/vcluster/values.yaml).
  local v src="$OUT/src/vcluster-$VCLUSTER_VERSION" chart="$SHARE/vcluster-chart" dir
  local tgz="$UPSTREAM_SRC/vcluster-$VCLUSTER_VERSION-src.tar.gz"
  [[ -f "$tgz" ]] || die "vCluster source not found: $tgz (see ../shared/upstream/SOURCES.md)"
  v="$VCLUSTER_VERSION+$(sha256sum "$tgz" | cut -c1-12)"
  if ! [[ -f "$chart/Chart.yaml" && "$(cat "$chart/.version" 2>/dev/null)" == "$VCLUSTER_VERSION" ]]; then
    dir="$(go mod download -json "github.com/loft-sh/vcluster@v$VCLUSTER_VERSION" |
      sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
    [[ -f "$dir/chart/Chart.yaml" ]] || die "vCluster chart not found in the module cache ($dir)"
    rm -rf "$chart.tmp" && cp -r "$dir/chart" "$chart.tmp" && chmod -R u+w "$chart.tmp"
    sed -i "s/^version: .*/version: $VCLUSTER_VERSION/" "$chart.tmp/Chart.yaml"
    echo "$VCLUSTER_VERSION" >"$chart.tmp/.version"
    rm -rf "$chart" && mv "$chart.tmp" "$chart"
  fi
  is_fresh vcluster "$v" && return 10
  rm -rf "$src" && tar -xzf "$tgz" -C "$OUT/src"
  [[ -f "$src/go.mod" ]] || die "$tgz did not unpack into $src"
  (cd "$src" && GOFLAGS="$GOFLAGS -mod=mod" go build -ldflags "-s -w" -o "$TMPB/vcluster" ./cmd/vcluster)
  install_bins "$v" vcluster
}

build_slinky() {
  # The Slinky operator's two binaries (slurm-operator, slurm-operator-webhook: cmd/manager and
  # cmd/webhook), from the release's source in $UPSTREAM_SRC; the operator module requires
  # slurm-client at the same release, which the proxy does not serve: one replace points it at the
  # unpacked slurm-client source (the CRDs the tests install are ../shared/upstream/crds/slinky).
  local v tgz_op="$UPSTREAM_SRC/slurm-operator-$SLINKY_VERSION-src.tar.gz" names=(slurm-operator slurm-operator-webhook)
  local tgz_cl="$UPSTREAM_SRC/slurm-client-$SLINKY_VERSION-src.tar.gz" src="$OUT/src/slinky-$SLINKY_VERSION" n todo=0
  [[ -f "$tgz_op" && -f "$tgz_cl" ]] || die "Slinky sources not found: $tgz_op, $tgz_cl (see ../shared/upstream/SOURCES.md)"
  v="$SLINKY_VERSION+$(cat "$tgz_op" "$tgz_cl" | sha256sum | cut -c1-12)"
  for n in "${names[@]}"; do is_fresh "$n" "$v" || todo=1; done
  ((todo)) || return 10
  rm -rf "$src" && mkdir -p "$src" && tar -xzf "$tgz_op" -C "$src" && tar -xzf "$tgz_cl" -C "$src"
  local op="$src/slurm-operator-$SLINKY_VERSION" cl="$src/slurm-client-$SLINKY_VERSION"
  [[ -f "$op/go.mod" && -f "$cl/go.mod" ]] || die "unexpected layout of the Slinky sources in $src"
  (cd "$op" && go mod edit -replace "github.com/SlinkyProject/slurm-client=$cl" &&
    GOFLAGS="$GOFLAGS -mod=mod" go build -ldflags "-s -w" -o "$TMPB/slurm-operator" ./cmd/manager &&
    GOFLAGS="$GOFLAGS -mod=mod" go build -ldflags "-s -w" -o "$TMPB/slurm-operator-webhook" ./cmd/webhook)
  install_bins "$v" "${names[@]}"
}

build_bridge() {
  # slurm-bridge's three binaries (cmd/scheduler: kube-scheduler with the slurm-bridge plugin;
  # cmd/controllers; cmd/admission: the webhook that sends managed namespaces' pods to it), from the
  # release's source in $UPSTREAM_SRC; like the operator, its module requires slurm-client, which the
  # proxy does not serve: one replace points it at the unpacked slurm-client source.
  local v tgz_br="$UPSTREAM_SRC/slurm-bridge-$BRIDGE_VERSION-src.tar.gz" n todo=0 c
  local tgz_cl="$UPSTREAM_SRC/slurm-client-$SLINKY_VERSION-src.tar.gz" src="$OUT/src/slurm-bridge-$BRIDGE_VERSION"
  local names=(slurm-bridge-scheduler slurm-bridge-controllers slurm-bridge-admission)
  [[ -f "$tgz_br" && -f "$tgz_cl" ]] || die "slurm-bridge sources not found: $tgz_br, $tgz_cl (see ../shared/upstream/SOURCES.md)"
  v="$BRIDGE_VERSION+$(cat "$tgz_br" "$tgz_cl" | sha256sum | cut -c1-12)"
  for n in "${names[@]}"; do is_fresh "$n" "$v" || todo=1; done
  ((todo)) || return 10
  rm -rf "$src" && mkdir -p "$src" && tar -xzf "$tgz_br" -C "$src" && tar -xzf "$tgz_cl" -C "$src"
  local br="$src/slurm-bridge-$BRIDGE_VERSION" cl="$src/slurm-client-$SLINKY_VERSION"
  [[ -f "$br/go.mod" && -f "$cl/go.mod" ]] || die "unexpected layout of the slurm-bridge sources in $src"
  (cd "$br" && go mod edit -replace "github.com/SlinkyProject/slurm-client=$cl")
  for c in scheduler controllers admission; do
    (cd "$br" && GOFLAGS="$GOFLAGS -mod=mod" go build -ldflags "-s -w" -o "$TMPB/slurm-bridge-$c" "./cmd/$c")
  done
  install_bins "$v" "${names[@]}"
}

build_kueue() {
  # The Kueue controller manager plus, from the same module zip, its CRDs (config/components/crd/bases)
  # and webhook configurations (config/components/webhook), for the controller run as a process.
  local dest="$SHARE/kueue" dir p=sigs.k8s.io/kueue/pkg/version bin_fresh=0
  is_fresh kueue "$KUEUE_VERSION" && bin_fresh=1
  if ((bin_fresh)) && [[ "$(cat "$dest/.version" 2>/dev/null)" == "$KUEUE_VERSION" ]]; then
    return 10
  fi
  ((bin_fresh)) || GOBIN="$TMPB" go install -ldflags "-s -w -X $p.GitVersion=$KUEUE_VERSION -X $p.BuildDate=2000-01-01" \
    "sigs.k8s.io/kueue/cmd/kueue@$KUEUE_VERSION"
  dir="$(go mod download -json "sigs.k8s.io/kueue@$KUEUE_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [[ -d "$dir/config/components/crd/bases" ]] || die "Kueue CRDs not found in module cache ($dir)"
  rm -rf "$dest.tmp" && mkdir -p "$dest.tmp/crds"
  cp "$dir"/config/components/crd/bases/*.yaml "$dest.tmp/crds/"
  cp "$dir/config/components/webhook/manifests.yaml" "$dest.tmp/webhooks.yaml"
  echo "$KUEUE_VERSION" >"$dest.tmp/.version"
  rm -rf "$dest" && mv "$dest.tmp" "$dest"
  ((bin_fresh)) || install_bins "$KUEUE_VERSION" kueue
}

build_charts() {
  # Charts of the pinned releases that ../shared/upstream does not carry, for the tests that template
  # them (image mirror): each from its release's module zip on the Go module proxy, with what the
  # release's packaging step changes (kueue: hack/helm-chart-package.sh points the images at
  # registry.k8s.io and the tag; cert-manager: Chart.template.yaml gets the version). Nothing runs them.
  # Also the Argo CD CRDs of the pinned release (below).
  local dest="$SHARE/charts" dir rc=10
  if [[ "$(cat "$dest/kueue/.version" 2>/dev/null)" != "$KUEUE_VERSION" ]]; then
    dir="$(go mod download -json "sigs.k8s.io/kueue@$KUEUE_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
    [[ -f "$dir/charts/kueue/Chart.yaml" ]] || die "Kueue chart not found in the module cache ($dir)"
    rm -rf "$dest/kueue.tmp" && mkdir -p "$dest" && cp -r "$dir/charts/kueue" "$dest/kueue.tmp" && chmod -R u+w "$dest/kueue.tmp"
    sed -i -e 's#us-central1-docker.pkg.dev/k8s-staging-images/kueue/#registry.k8s.io/kueue/#' \
      -e "s#^\\( *tag: \\)release-[0-9.]*\$#\\1$KUEUE_VERSION#" "$dest/kueue.tmp/values.yaml"
    echo "$KUEUE_VERSION" >"$dest/kueue.tmp/.version"
    rm -rf "$dest/kueue" && mv "$dest/kueue.tmp" "$dest/kueue" && rc=0
  fi
  if [[ "$(cat "$dest/cert-manager/.version" 2>/dev/null)" != "$CERT_MANAGER_VERSION" ]]; then
    dir="$(go mod download -json "github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION" |
      sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
    [[ -f "$dir/deploy/charts/cert-manager/Chart.template.yaml" ]] || die "cert-manager chart not found ($dir)"
    rm -rf "$dest/cert-manager.tmp" && mkdir -p "$dest" && cp -r "$dir/deploy/charts/cert-manager" "$dest/cert-manager.tmp"
    chmod -R u+w "$dest/cert-manager.tmp"
    sed -e "s/^\\(version\\|appVersion\\): v0.0.0$/\\1: $CERT_MANAGER_VERSION/" -e 's/{{IS_PRERELEASE}}/false/' \
      "$dest/cert-manager.tmp/Chart.template.yaml" >"$dest/cert-manager.tmp/Chart.yaml"
    echo "$CERT_MANAGER_VERSION" >"$dest/cert-manager.tmp/.version"
    rm -rf "$dest/cert-manager" && mv "$dest/cert-manager.tmp" "$dest/cert-manager" && rc=0
  fi
  # the Argo CD CRDs of the release the bed runs: manifests/crds of the argo-cd module at its tag (the
  # tag's tree), which the bed serves as the mirror of the argo-cd Git repository (versions.py GIT_SOURCES)
  if [[ "$(cat "$SHARE/argocd-crds/.version" 2>/dev/null)" != "$ARGOCD_VERSION" ]]; then
    dir="$(go mod download -json "github.com/argoproj/argo-cd/v3@$ARGOCD_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
    [[ -f "$dir/manifests/crds/kustomization.yaml" ]] || die "Argo CD CRDs not found in the module cache ($dir)"
    rm -rf "$SHARE/argocd-crds.tmp" && mkdir -p "$SHARE/argocd-crds.tmp"
    cp "$dir"/manifests/crds/*.yaml "$SHARE/argocd-crds.tmp/" && chmod -R u+w "$SHARE/argocd-crds.tmp"
    echo "$ARGOCD_VERSION" >"$SHARE/argocd-crds.tmp/.version"
    rm -rf "$SHARE/argocd-crds" && mv "$SHARE/argocd-crds.tmp" "$SHARE/argocd-crds" && rc=0
  fi
  return $rc  # 10: all current
}

# Everything runs from main so that editing this file during a build is safe.
main() {
  local groups=("$@") report=() g t0 rc dt cpu
  ((${#groups[@]})) || groups=("${ALL_GROUPS[@]}")
  for g in "${groups[@]}"; do
    [[ " ${ALL_GROUPS[*]} " == *" $g "* ]] || die "unknown group '$g' (known: ${ALL_GROUPS[*]})"
  done

  for g in "${groups[@]}"; do
    t0=$SECONDS
    set +e
    # inner subshell: the build (set -e); outer: records the children's CPU time
    ( ( set -e; "build_$g" ); r=$?; times >"$TMPB/cpu-$g"; exit $r ) \
      2> >(tee "$LOGS/build-$g.log" >&2)
    rc=$?
    set -e
    dt=$((SECONDS - t0))
    cpu="$(awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] } } END { printf "%d", t }' \
      "$TMPB/cpu-$g" 2>/dev/null || echo 0)"
    if ((rc == 10)); then
      report+=("$(printf '%-10s %-10s %6ss wall %6ss cpu' "$g" up-to-date "$dt" "$cpu")")
    elif ((rc == 0)); then
      log "built group '$g' in ${dt}s (cpu ${cpu}s)"
      report+=("$(printf '%-10s %-10s %6ss wall %6ss cpu' "$g" built "$dt" "$cpu")")
    else
      die "building group '$g' failed (exit $rc); see $LOGS/build-$g.log"
    fi
  done
  log "summary (binaries in $BIN):"
  printf '  %s\n' "${report[@]}" >&2
}

main "$@"
exit
