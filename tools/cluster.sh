#!/usr/bin/env bash
# A local Kubernetes control plane for tests: etcd + kube-apiserver +
# kube-scheduler + kube-controller-manager + kwok, all on 127.0.0.1, built by
# tools/build.sh into .build/bin/. Several clusters can run at once, each in
# its own state directory with its own ports and PKI.
#
# Usage:
#   tools/cluster.sh up   [STATE_DIR] [--owner-pid PID] [--timeout SECS]
#   tools/cluster.sh down [STATE_DIR]
#   tools/cluster.sh env  [STATE_DIR]      prints: export KUBECONFIG=...
#   tools/cluster.sh status [STATE_DIR]    exit 0 when running and /readyz ok
#   tools/cluster.sh restart STATE_DIR COMPONENT   e.g. kube-apiserver
#
# STATE_DIR defaults to .build/cluster/default. `up` prints the admin
# kubeconfig path on stdout once /readyz answers "ok". `down` kills the whole
# process group, waits for every recorded pid to be gone and removes STATE_DIR.
# With --owner-pid, the cluster tears itself down when that process dies (so a
# killed test run leaves nothing behind). `restart` kills one component
# (SIGKILL) and the runner starts it again with the same flags (the
# apiserver on the same port and etcd); it returns once /readyz answers.
#
# Environment: GPUFLEET_BIN (default .build/bin), GPUFLEET_KWOK_STAGES
# (default .build/share/kwok/stages.yaml), GPUFLEET_APISERVER_SANS (extra DNS
# names for the apiserver certificate, comma-separated: a stand-in for a
# tenant vCluster API is reached as <name>.<namespace>).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${GPUFLEET_BIN:-$ROOT/.build/bin}"
STAGES="${GPUFLEET_KWOK_STAGES:-$ROOT/.build/share/kwok/stages.yaml}"
GPUFLEET_APISERVER_SANS="${GPUFLEET_APISERVER_SANS:-}"
[[ "$GPUFLEET_APISERVER_SANS" =~ ^[a-z0-9.,-]*$ ]] || { echo "tools/cluster.sh: ERROR: bad GPUFLEET_APISERVER_SANS" >&2; exit 1; }

die() { echo "tools/cluster.sh: ERROR: $*" >&2; exit 1; }
log() { echo "tools/cluster.sh: $*" >&2; }

usage() { sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }

cmd="${1:-}"; [[ -n "$cmd" ]] || usage; shift
STATE=""
COMPONENT=""
OWNER_PID=""
TIMEOUT=120
while (($#)); do
  case "$1" in
    --owner-pid) OWNER_PID="$2"; shift 2 ;;
    --timeout) TIMEOUT="$2"; shift 2 ;;
    -h|--help) usage ;;
    -*) die "unknown option $1" ;;
    *) if [[ -z "$STATE" ]]; then STATE="$1"
       elif [[ "$cmd" == restart && -z "$COMPONENT" ]]; then COMPONENT="$1"
       else die "only one STATE_DIR allowed"; fi
       shift ;;
  esac
done
STATE="${STATE:-$ROOT/.build/cluster/default}"
mkdir -p "$(dirname "$STATE")"
STATE="$(cd "$(dirname "$STATE")" && pwd)/$(basename "$STATE")"
KCFG="$STATE/admin.kubeconfig"

# ---------------------------------------------------------------------------
free_ports() { # N -> N free TCP ports on 127.0.0.1, one per line
  python3 - "$1" <<'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
for s in socks:
    print(s.getsockname()[1])
    s.close()
EOF
}

make_pki() {
  local p="$STATE/pki"
  mkdir -p "$p"
  local o=(-days 3650 -sha256)
  openssl req -x509 -newkey rsa:2048 -nodes "${o[@]}" -subj /CN=gpufleet-local-ca \
    -keyout "$p/ca.key" -out "$p/ca.crt" 2>/dev/null
  sign() { # name subject extensions
    openssl req -newkey rsa:2048 -nodes -subj "$2" -keyout "$p/$1.key" -out "$p/$1.csr" 2>/dev/null
    printf '%b\n' "$3" >"$p/$1.ext"
    openssl x509 -req -in "$p/$1.csr" -CA "$p/ca.crt" -CAkey "$p/ca.key" -CAcreateserial \
      "${o[@]}" -out "$p/$1.crt" -extfile "$p/$1.ext" 2>/dev/null
  }
  local extra="" n
  for n in ${GPUFLEET_APISERVER_SANS//,/ }; do extra+=",DNS:$n"; done
  sign apiserver /CN=kube-apiserver \
    "subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local$extra\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment"
  sign admin '/O=system:masters/CN=gpufleet-admin' \
    'extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature,keyEncipherment'
  # kube-controller-manager under its own name, as kubeadm runs it (admission that tells its requests
  # apart, e.g. the host fence of render/tenants/host_fence.py, sees what production sees); in
  # system:masters because it runs without per-controller service-account credentials here
  sign controller-manager '/O=system:masters/CN=system:kube-controller-manager' \
    'extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature,keyEncipherment'
  openssl genrsa -out "$p/sa.key" 2048 2>/dev/null
  openssl rsa -in "$p/sa.key" -pubout -out "$p/sa.pub" 2>/dev/null
}

b64() { base64 -w0 <"$1"; }

write_kubeconfig() { # apiserver port [kubeconfig user]
  local out=${2:-$KCFG} user=${3:-admin}
  cat >"$out.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: gpufleet-local
  cluster:
    server: https://127.0.0.1:$1
    certificate-authority-data: $(b64 "$STATE/pki/ca.crt")
users:
- name: gpufleet-admin
  user:
    client-certificate-data: $(b64 "$STATE/pki/$user.crt")
    client-key-data: $(b64 "$STATE/pki/$user.key")
contexts:
- name: gpufleet-local
  context:
    cluster: gpufleet-local
    user: gpufleet-admin
current-context: gpufleet-local
EOF
  chmod 600 "$out.tmp"
  mv -f "$out.tmp" "$out"
}

# The runner is the process-group leader (started with setsid); every
# component is its child, in the same process group, so `down` can kill them
# all with one signal. Written as a file so it can be inspected.
write_runner() {
  cat >"$STATE/run.sh" <<'EOF'
#!/usr/bin/env bash
# generated by tools/cluster.sh; sourced variables come from cluster.env
set -u
cd "$STATE"
. "$STATE/cluster.env"
P="$STATE/pki"; K="$STATE/admin.kubeconfig"
echo $$ >"$STATE/pids/runner"
start() { # name cmd...
  local n="$1"; shift
  "$@" >>"$STATE/logs/$n.log" 2>&1 &
  echo $! >"$STATE/pids/$n"
}
# fork-free liveness (the shutdown path must stay fast on a loaded machine):
# the pid from pids/NAME exists and is not a zombie
alive() {
  local pid st
  read -r pid 2>/dev/null <"$STATE/pids/$1" || return 1
  read -r st 2>/dev/null <"/proc/$pid/stat" || return 1
  st="${st##*) }"
  [[ "${st:0:1}" != Z ]]
}
# TERM the whole group, give the components 2s, then SIGKILL the group (a
# kube-apiserver whose etcd is gone can hang in graceful shutdown).
shutdown() {
  trap '' TERM INT HUP
  kill -TERM 0 2>/dev/null
  local n any deadline=$((SECONDS + 2))
  while ((SECONDS < deadline)); do
    any=0
    for n in etcd kube-apiserver kube-controller-manager kube-scheduler kwok; do
      alive "$n" && any=1
    done
    ((any)) || break
    sleep 0.2
  done
  kill -KILL 0 2>/dev/null
  exit 0
}
trap shutdown TERM INT HUP

if [[ -n "${OWNER_PID:-}" ]]; then
  ( while read -r s 2>/dev/null <"/proc/$OWNER_PID/stat" && s="${s##*) }" && [[ "${s:0:1}" != Z ]]; do sleep 1; done
    # the state dir may be gone already: the log line must not stop the teardown (set -e)
    { echo "owner $OWNER_PID gone, tearing down" >>"$STATE/logs/runner.log"; } 2>/dev/null || true
    kill -TERM 0 ) &
  echo $! >"$STATE/pids/owner-watch"
fi

# each component is a function that execs its process (pids/NAME is that process)
c_etcd() {
  exec "$BIN/etcd" --name=n0 --data-dir="$STATE/etcd" \
  --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster="n0=http://127.0.0.1:$ETCD_PEER_PORT" --initial-cluster-state=new \
  --unsafe-no-fsync --max-request-bytes=33554432 --quota-backend-bytes=8589934592 \
  --log-level=warn
}
start etcd c_etcd

for _ in $(seq 1 300); do
  curl -fsS "http://127.0.0.1:$ETCD_PORT/health" >/dev/null 2>&1 && break
  alive etcd || { echo "etcd exited" >>"$STATE/logs/runner.log"; shutdown; }
  sleep 0.1
done

c_kube-apiserver() {
  exec "$BIN/kube-apiserver" \
  --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
  --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$APISERVER_PORT" \
  --cert-dir="$STATE/apiserver-certs" \
  --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" --client-ca-file="$P/ca.crt" \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
  --service-cluster-ip-range=10.96.0.0/16 --authorization-mode=Node,RBAC \
  --allow-privileged=true --endpoint-reconciler-type=none \
  --max-requests-inflight=800 --max-mutating-requests-inflight=400
}
start kube-apiserver c_kube-apiserver

for _ in $(seq 1 600); do
  curl -fsS --cacert "$P/ca.crt" --cert "$P/admin.crt" --key "$P/admin.key" \
    "https://127.0.0.1:$APISERVER_PORT/healthz" >/dev/null 2>&1 && break
  alive kube-apiserver || { echo "kube-apiserver exited" >>"$STATE/logs/runner.log"; shutdown; }
  sleep 0.1
done

A=(--kubeconfig="$K" --authentication-kubeconfig="$K" --authorization-kubeconfig="$K"
   --bind-address=127.0.0.1 --secure-port=0 --leader-elect=false)
c_kube-controller-manager() {
  local kc="$STATE/controller-manager.kubeconfig"
  exec "$BIN/kube-controller-manager" "${A[@]}" --kubeconfig="$kc" --authentication-kubeconfig="$kc" \
    --authorization-kubeconfig="$kc" \
    --service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" \
    --cluster-signing-cert-file="$P/ca.crt" --cluster-signing-key-file="$P/ca.key" \
    --use-service-account-credentials=false
}
c_kube-scheduler() { exec "$BIN/kube-scheduler" "${A[@]}"; }
c_kwok() {
  exec "$BIN/kwok" --kubeconfig="$K" --config="$STATE/kwok-stages.yaml" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --manage-nodes-with-label-selector= --manage-single-node= \
    --node-lease-duration-seconds=40 --cidr=10.64.0.0/12 --node-ip=10.0.0.1
}
for c in kube-controller-manager kube-scheduler kwok; do start "$c" "c_$c"; done
EOF
  cat "$ROOT/tools/supervise.sh" >>"$STATE/run.sh"
  chmod +x "$STATE/run.sh"
}

kubectl_ok() { "$BIN/kubectl" --kubeconfig="$KCFG" --request-timeout=5s "$@" >/dev/null 2>&1; }

runner_alive() {
  local pid st
  pid="$(cat "$STATE/pids/runner" 2>/dev/null)" || return 1
  st="$(ps -o stat= -p "$pid" 2>/dev/null)" || return 1
  [[ -n "$st" && "$st" != Z* ]]
}

all_pids() { # every recorded pid, one per line
  [[ -d "$STATE/pids" ]] || return 0
  cat "$STATE/pids"/* 2>/dev/null || true
}

# Live (non-zombie) processes of this cluster: members of the runner's process
# group or recorded pids, and only if their command line names STATE (guards
# against pid reuse). Zombies count as gone: they hold no ports or files.
state_procs() {
  [[ -d "$STATE/pids" ]] || return 0
  local pg pids
  pg="$(cat "$STATE/pids/runner" 2>/dev/null || echo -1)"
  pids=" $(all_pids | tr '\n' ' ') "
  ps -e -ww -o pid=,pgid=,stat=,args= | awk -v pg="$pg" -v st="$STATE" -v pids="$pids" -v me="$$" '
    $3 ~ /^Z/ { next }
    $1 == me { next }
    ($2 == pg || index(pids, " " $1 " ")) && index($0, st) { print $1 }'
}

do_down() {
  [[ -d "$STATE" ]] || return 0
  local procs pid killed=0 t0=$SECONDS
  procs="$(state_procs)"
  for pid in $procs; do kill -TERM "$pid" 2>/dev/null || true; done
  # 2s grace, then SIGKILL (nothing here needs a graceful stop: the state is
  # deleted, and kube-apiserver can hang in shutdown once etcd is gone)
  while [[ -n "$procs" ]] && ((SECONDS - t0 < 15)); do
    sleep 0.2
    procs="$(state_procs)"
    if [[ -n "$procs" ]] && ((!killed && SECONDS - t0 >= 2)); then
      log "escalating to SIGKILL: $(tr '\n' ' ' <<<"$procs")"
      for pid in $procs; do kill -KILL "$pid" 2>/dev/null || true; done
      killed=1
    fi
  done
  [[ -z "$procs" ]] || die "processes still alive after SIGKILL in $STATE: $(tr '\n' ' ' <<<"$procs")"
  rm -rf "$STATE"
}

do_restart() {
  [[ "$COMPONENT" =~ ^(etcd|kube-apiserver|kube-controller-manager|kube-scheduler|kwok)$ ]] ||
    die "restart: unknown component '$COMPONENT'"
  local old pid t0=$SECONDS deadline=$((SECONDS + TIMEOUT))
  old="$(cat "$STATE/pids/$COMPONENT" 2>/dev/null)" || die "no cluster running in $STATE"
  runner_alive || die "no cluster running in $STATE"
  : >"$STATE/restart/$COMPONENT"
  kill -KILL "$old"
  while ((SECONDS < deadline)); do
    pid="$(cat "$STATE/pids/$COMPONENT" 2>/dev/null || echo "$old")"
    if [[ "$pid" != "$old" ]] &&
       [[ "$("$BIN/kubectl" --kubeconfig="$KCFG" --request-timeout=5s get --raw /readyz 2>/dev/null)" == ok ]]; then
      log "$COMPONENT restarted (pid $old -> $pid) in $((SECONDS - t0))s"
      return 0
    fi
    runner_alive || die "the runner exited (see $STATE/logs/runner.log)"
    sleep 0.2
  done
  die "$COMPONENT did not come back within ${TIMEOUT}s"
}

do_up() {
  local b
  for b in etcd kube-apiserver kube-controller-manager kube-scheduler kwok kubectl; do
    [[ -x "$BIN/$b" ]] || die "$BIN/$b missing; run tools/build.sh first"
  done
  [[ -f "$STAGES" ]] || die "$STAGES missing; run tools/build.sh kwok first"
  command -v openssl >/dev/null || die "openssl not found"
  command -v curl >/dev/null || die "curl not found"
  command -v python3 >/dev/null || die "python3 not found (used to pick free ports)"
  if [[ -d "$STATE" ]]; then
    if runner_alive; then die "a cluster is already running in $STATE (use 'down' first)"; fi
    do_down  # leftovers of a crashed cluster
  fi

  local attempt t0=$SECONDS
  for attempt in 1 2 3; do
    mkdir -p "$STATE/pids" "$STATE/logs"
    make_pki
    cp "$STAGES" "$STATE/kwok-stages.yaml"
    local ports; mapfile -t ports < <(free_ports 3)
    cat >"$STATE/cluster.env" <<EOF
STATE='$STATE'
BIN='$BIN'
ETCD_PORT=${ports[0]}
ETCD_PEER_PORT=${ports[1]}
APISERVER_PORT=${ports[2]}
OWNER_PID='$OWNER_PID'
EOF
    write_kubeconfig "${ports[2]}"
    write_kubeconfig "${ports[2]}" "$STATE/controller-manager.kubeconfig" controller-manager
    write_runner
    STATE="$STATE" setsid "$STATE/run.sh" </dev/null >>"$STATE/logs/runner.log" 2>&1 &
    # wait for the runner to record itself (it is the process-group leader)
    local i
    for i in $(seq 1 50); do [[ -s "$STATE/pids/runner" ]] && break; sleep 0.1; done

    local deadline=$((SECONDS + TIMEOUT)) ready=0
    while ((SECONDS < deadline)); do
      if [[ "$("$BIN/kubectl" --kubeconfig="$KCFG" --request-timeout=5s get --raw /readyz 2>/dev/null)" == ok ]]; then
        ready=1; break
      fi
      runner_alive || break
      sleep 0.2
    done
    if ((ready)); then
      # the default ServiceAccount is created by the controller-manager; pods
      # created before it exists are rejected, so wait for it too.
      while ((SECONDS < deadline)); do
        kubectl_ok get serviceaccount default -n default && break
        runner_alive || { ready=0; break; }
        sleep 0.2
      done
    fi
    if ((ready)) && runner_alive; then
      log "cluster up in $((SECONDS - t0))s (state: $STATE, apiserver https://127.0.0.1:${ports[2]})"
      echo "$KCFG"
      return 0
    fi
    local retry=0
    grep -qs 'address already in use' "$STATE"/logs/*.log && retry=1
    log "start attempt $attempt failed; logs:"
    local f
    for f in "$STATE"/logs/*.log; do echo "==> $f" >&2; tail -n 15 "$f" >&2; done
    do_down
    ((retry)) || die "cluster did not become ready within ${TIMEOUT}s"
    log "port clash, retrying with new ports"
  done
  die "cluster did not start after 3 attempts"
}

case "$cmd" in
  up) do_up ;;
  down) do_down ;;
  env) [[ -f "$KCFG" ]] || die "no cluster in $STATE"; echo "export KUBECONFIG='$KCFG'" ;;
  restart) [[ -d "$STATE" ]] || die "no cluster in $STATE"; do_restart ;;
  status) runner_alive && [[ "$("$BIN/kubectl" --kubeconfig="$KCFG" --request-timeout=5s get --raw /readyz 2>/dev/null)" == ok ]] ;;
  *) usage ;;
esac
