#!/usr/bin/env bash
# A production-shaped Temporal cluster on this machine: Temporal Server (pinned) on a private PostgreSQL, the
# services as separate processes, mutual TLS on the frontend (gRPC and HTTP API) and between the services, and
# Temporal's JWT authorization (default claim mapper and authorizer): every call carries an access token of the
# cluster's OpenID Connect provider (worker/src/identity/localProvider.mts, its own process) whose `permissions`
# claim names the caller's role per namespace. The system worker reaches the frontend through an internal-frontend
# (internode mutual TLS, no tokens), so no public client certificate is ever trusted as the system.
#
#   bash scripts/temporal-cluster.sh path                  build (or find) temporal-server and temporal-sql-tool,
#                                                          install PostgreSQL when missing; prints the bin folder
#                                                          (only that, on stdout)
#   bash scripts/temporal-cluster.sh start [--base-port N] [--dir DIR] [--namespace NS]
#                                                          provision and start whatever is not running; prints the
#                                                          client env (`export K=V` lines) on stdout
#   bash scripts/temporal-cluster.sh env   [--base-port N] [--dir DIR]   the client env of a running cluster
#   bash scripts/temporal-cluster.sh stop  [--base-port N] [--dir DIR]   stop the services and PostgreSQL (by PID)
#   bash scripts/temporal-cluster.sh status [--base-port N] [--dir DIR]  one line per process: name pid up|down
#   bash scripts/temporal-cluster.sh kill NAME [--base-port N] [--dir DIR] crash one process for chaos drills: a
#                                                          service gets SIGKILL (its PID file), postgres an
#                                                          immediate shutdown (crash recovery on the next start)
#
# Binaries are cached in ${XDG_CACHE_HOME:-$HOME/.cache}/secsvc/temporal-cluster/bin (go install of the pinned
# module). A cluster's state (PostgreSQL data, certificates, config, logs, pid files) lives in DIR, default
# ${TMPDIR:-/tmp}/secsvc-cluster-<base port> (PostgreSQL runs as the postgres user when we are root, so it must
# not sit under /root). `start` is idempotent: run it again after killing a service or PostgreSQL and it starts
# only what is down. Ports: base+0 frontend gRPC, +1 frontend HTTP API, +2 history, +3 matching, +4 worker,
# +5..+8 their membership ports, +9 PostgreSQL, +10 internal-frontend gRPC, +11 its membership port, +12 the identity
# provider (http, loopback), +13 internal-frontend HTTP — all on 127.0.0.1. Progress goes to stderr.
#
# Roles (the provider's service clients, their secrets in DIR/idp/<client>.secret; docs/worker/authorization.md):
#   temporal-worker, temporal-cli, temporal-n8n  NS:write   workers, the CLI and n8n's Temporal API credential
#   temporal-reader                             NS:read    dashboards, auditors: describe, list, query; no writes
#   temporal-admin                              temporal-system:admin  operators (namespaces, search attributes)
set -euo pipefail

TEMPORAL_SERVER_VERSION="${TEMPORAL_SERVER_VERSION:-v1.29.1}"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/secsvc/temporal-cluster"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
SERVICES=(history matching frontend internal-frontend worker)
IDP_CLIENTS=(temporal-admin temporal-worker temporal-cli temporal-n8n temporal-reader)

log() { echo "temporal-cluster.sh: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# ---- binaries -------------------------------------------------------------------------------------------------
works() { [ -x "$1" ] && "$1" --help >/dev/null 2>&1; }

build_binaries() {
  local bin="$CACHE/bin"
  if works "$bin/temporal-server" && works "$bin/temporal-sql-tool"; then return 0; fi
  [ -x "$GO" ] || die "Go not found (set GO or put go on PATH): needed for go install go.temporal.io/server@$TEMPORAL_SERVER_VERSION"
  mkdir -p "$bin"
  local tmp
  tmp="$(mktemp -d "$CACHE/gobin.XXXXXX")"
  log "building go.temporal.io/server/cmd/server and cmd/tools/sql @$TEMPORAL_SERVER_VERSION (several minutes the first time)"
  if ! GOBIN="$tmp" "$GO" install "go.temporal.io/server/cmd/server@$TEMPORAL_SERVER_VERSION" \
      "go.temporal.io/server/cmd/tools/sql@$TEMPORAL_SERVER_VERSION" >&2; then
    rm -rf "$tmp"; die "go install of Temporal Server $TEMPORAL_SERVER_VERSION failed (see above)"
  fi
  mv -f "$tmp/server" "$bin/temporal-server"
  mv -f "$tmp/sql" "$bin/temporal-sql-tool"
  rm -rf "$tmp"
  works "$bin/temporal-server" || die "$bin/temporal-server does not run"
}

# The server module's source (schemas) sits in the Go module cache after go install.
schema_root() {
  local mod
  mod="$("$GO" env GOMODCACHE)/go.temporal.io/server@$TEMPORAL_SERVER_VERSION/schema/postgresql/v12"
  if [ ! -d "$mod" ]; then
    log "module source not in the Go module cache; downloading go.temporal.io/server@$TEMPORAL_SERVER_VERSION"
    (cd /tmp && "$GO" mod download "go.temporal.io/server@$TEMPORAL_SERVER_VERSION" >&2) || die "go mod download failed"
  fi
  [ -d "$mod" ] || die "no PostgreSQL schema at $mod"
  echo "$mod"
}

# ---- PostgreSQL -----------------------------------------------------------------------------------------------
pg_bindir() {
  local d
  d="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1 || true)"
  if [ -z "$d" ] && command -v pg_config >/dev/null 2>&1; then d="$(pg_config --bindir)"; fi
  [ -n "$d" ] && [ -x "$d/initdb" ] && echo "$d"
}

ensure_postgres_installed() {
  if pg_bindir >/dev/null; then return 0; fi
  local SUDO=""
  if [ "$(id -u)" != 0 ]; then
    sudo -n true 2>/dev/null || die "PostgreSQL is not installed and we are neither root nor a passwordless sudoer: apt-get install postgresql"
    SUDO="sudo"
  fi
  log "installing PostgreSQL with apt-get (the package's own cluster is left alone; ours is private)"
  # Another provisioning step (scripts/chromium.sh) may hold apt's lock at the same moment: wait and retry.
  local try
  for try in 1 2 3 4 5; do
    if $SUDO apt-get -o DPkg::Lock::Timeout=120 update >&2 \
      && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y --no-install-recommends postgresql >&2; then
      break
    fi
    [ "$try" = 5 ] && die "apt-get install postgresql failed"
    log "apt-get failed (attempt $try; another apt may hold the lock); retrying in 20 s"; sleep 20
  done
  pg_bindir >/dev/null || die "PostgreSQL installed but no initdb found under /usr/lib/postgresql"
}

# Run a PostgreSQL tool as the owner of our data dir (postgres refuses to run as root).
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

pg_pid() { [ -f "$PGDATA/postmaster.pid" ] && head -n1 "$PGDATA/postmaster.pid" || true; }
pg_up() { local p; p="$(pg_pid)"; [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }

start_postgres() {
  local bindir
  bindir="$(pg_bindir)"
  if [ ! -f "$PGDATA/PG_VERSION" ]; then
    log "initdb $PGDATA (port $PGPORT, password auth on 127.0.0.1 only)"
    mkdir -p "$PGDATA"
    [ -f "$DIR/pg.password" ] || (umask 077; openssl rand -hex 16 >"$DIR/pg.password")
    local pw="$PGDATA.pw"
    cp "$DIR/pg.password" "$pw"
    if [ "$(id -u)" = 0 ]; then chown postgres: "$PGDATA" "$pw"; fi
    chmod 700 "$PGDATA"
    as_pg "$bindir/initdb" -D "$PGDATA" -U temporal --pwfile="$pw" --auth-host=scram-sha-256 --auth-local=trust \
      -E UTF8 --locale=C.UTF-8 >"$DIR/log/initdb.log" 2>&1 || { cat "$DIR/log/initdb.log" >&2; die "initdb failed"; }
    rm -f "$pw"
    cat >>"$PGDATA/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $PGPORT
unix_socket_directories = '$PGDATA'
max_connections = 200
EOF
  fi
  if pg_up; then return 0; fi
  log "starting PostgreSQL on 127.0.0.1:$PGPORT"
  if [ "$(id -u)" = 0 ]; then touch "$DIR/log/postgres.log"; chown postgres: "$DIR/log/postgres.log"; fi
  as_pg "$bindir/pg_ctl" -D "$PGDATA" -l "$DIR/log/postgres.log" -w -t 60 start >&2 \
    || { tail -n 20 "$DIR/log/postgres.log" >&2; die "PostgreSQL did not start (log: $DIR/log/postgres.log)"; }
}

create_schemas() {
  [ -f "$DIR/schema.done" ] && return 0
  local schemas sql pw db
  schemas="$(schema_root)"
  sql="$CACHE/bin/temporal-sql-tool"
  pw="$(cat "$DIR/pg.password")"
  for db in temporal temporal_visibility; do
    local dir=temporal
    [ "$db" = temporal_visibility ] && dir=visibility
    log "creating database $db and its schema ($schemas/$dir/versioned)"
    local common=(--plugin postgres12 --ep 127.0.0.1 -p "$PGPORT" -u temporal --pw "$pw" --db "$db")
    "$sql" "${common[@]}" create-database >"$DIR/log/schema-$db.log" 2>&1 || { cat "$DIR/log/schema-$db.log" >&2; die "create-database $db failed"; }
    "$sql" "${common[@]}" setup-schema -v 0.0 >>"$DIR/log/schema-$db.log" 2>&1 || { cat "$DIR/log/schema-$db.log" >&2; die "setup-schema $db failed"; }
    "$sql" "${common[@]}" update-schema -d "$schemas/$dir/versioned" >>"$DIR/log/schema-$db.log" 2>&1 \
      || { cat "$DIR/log/schema-$db.log" >&2; die "update-schema $db failed"; }
  done
  touch "$DIR/schema.done"
}

# ---- certificates ---------------------------------------------------------------------------------------------
# Two private CAs: `ca` signs the frontend's certificate and every client certificate (users, our worker, the
# system worker); `internode-ca` signs the certificate the services use between themselves, so a client
# certificate cannot talk to history or matching directly.
issue() { # name ca cn eku sans
  local name="$1" ca="$2" cn="$3" eku="$4" sans="$5" c="$DIR/certs"
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$c/$name.key" 2>/dev/null
  openssl req -new -key "$c/$name.key" -subj "/O=secsvc test cluster/CN=$cn" -out "$c/$name.csr" 2>/dev/null
  printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=%s\n%s' \
    "$eku" "${sans:+subjectAltName=$sans}" >"$c/$name.ext"
  openssl x509 -req -in "$c/$name.csr" -CA "$c/$ca.pem" -CAkey "$c/$ca.key" -CAcreateserial -days 825 -sha256 \
    -extfile "$c/$name.ext" -out "$c/$name.pem" 2>/dev/null || die "openssl could not issue $name"
  rm -f "$c/$name.csr" "$c/$name.ext"
  chmod 600 "$c/$name.key"
}

make_certs() {
  local c="$DIR/certs"
  [ -f "$c/client.pem" ] && return 0
  log "generating a private CA, server and client certificates in $c"
  mkdir -p "$c"; chmod 700 "$c"
  for ca in ca internode-ca; do
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 825 -sha256 \
      -subj "/O=secsvc test cluster/CN=secsvc $ca" -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,keyCertSign,cRLSign" -keyout "$c/$ca.key" -out "$c/$ca.pem" 2>/dev/null \
      || die "openssl could not create $ca"
    chmod 600 "$c/$ca.key"
  done
  issue frontend ca "$FRONTEND_NAME" serverAuth "DNS:$FRONTEND_NAME,DNS:localhost,IP:127.0.0.1"
  issue internode internode-ca "$INTERNODE_NAME" serverAuth,clientAuth "DNS:$INTERNODE_NAME"
  issue system-worker ca temporal-system-worker clientAuth ""
  issue client ca secsvc-worker clientAuth ""
  # Readable by the test user when different from the owner (the cluster dir itself is private enough).
  chmod 644 "$c"/*.pem
}

# ---- server configuration -------------------------------------------------------------------------------------
write_config() {
  mkdir -p "$DIR/config"
  local c="$DIR/certs" pw
  pw="$(cat "$DIR/pg.password")"
  cat >"$DIR/config/secsvc.yaml" <<EOF
# Generated by scripts/temporal-cluster.sh — one file for all four services; each process starts one of them.
log:
  stdout: true
  level: warn
persistence:
  defaultStore: pg-default
  visibilityStore: pg-visibility
  numHistoryShards: 4
  datastores:
    pg-default:
      sql: &sql
        pluginName: postgres12
        databaseName: temporal
        connectAddr: "127.0.0.1:$PGPORT"
        connectProtocol: tcp
        user: temporal
        password: "$pw"
        maxConns: 20
        maxIdleConns: 20
        maxConnLifetime: 1h
    pg-visibility:
      sql:
        <<: *sql
        databaseName: temporal_visibility
        maxConns: 5
        maxIdleConns: 5
global:
  authorization:
    jwtKeyProvider:
      keySourceURIs: ["http://127.0.0.1:$IDP_PORT/jwks"]
      refreshInterval: 1m
    permissionsClaimName: permissions
    authorizer: default
    claimMapper: default
    audience: "$TOKEN_AUDIENCE"
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1
  tls:
    refreshInterval: 0s
    internode:
      server:
        certFile: $c/internode.pem
        keyFile: $c/internode.key
        requireClientAuth: true
        clientCaFiles: [$c/internode-ca.pem]
      client:
        serverName: $INTERNODE_NAME
        rootCaFiles: [$c/internode-ca.pem]
    frontend:
      server:
        certFile: $c/frontend.pem
        keyFile: $c/frontend.key
        requireClientAuth: true
        clientCaFiles: [$c/ca.pem]
      client:
        serverName: $FRONTEND_NAME
        rootCaFiles: [$c/ca.pem]
    systemWorker:
      certFile: $c/system-worker.pem
      keyFile: $c/system-worker.key
      client:
        serverName: $FRONTEND_NAME
        rootCaFiles: [$c/ca.pem]
services:
  frontend:
    rpc: { grpcPort: $((BASE)), httpPort: $((BASE + 1)), membershipPort: $((BASE + 5)), bindOnIP: 127.0.0.1 }
  history:
    rpc: { grpcPort: $((BASE + 2)), membershipPort: $((BASE + 6)), bindOnIP: 127.0.0.1 }
  matching:
    rpc: { grpcPort: $((BASE + 3)), membershipPort: $((BASE + 7)), bindOnIP: 127.0.0.1 }
  internal-frontend:
    rpc: { grpcPort: $((BASE + 10)), httpPort: $((BASE + 13)), membershipPort: $((BASE + 11)), bindOnIP: 127.0.0.1 }
  worker:
    rpc: { grpcPort: $((BASE + 4)), membershipPort: $((BASE + 8)), bindOnIP: 127.0.0.1 }
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: "127.0.0.1:$BASE"
      httpAddress: "127.0.0.1:$((BASE + 1))"
dcRedirectionPolicy:
  policy: noop
dynamicConfigClient:
  filepath: $DIR/config/dynamic.yaml
  pollInterval: 10s
EOF
  # The dynamic configuration (docs: scripts/README.md "temporal-cluster.sh"). Several of these are already the
  # 1.29 defaults; they are set so the cluster does not depend on a default that another version changes.
  cat >"$DIR/config/dynamic.yaml" <<'EOF'
# Worker Deployment Versioning (the worker registers a deployment version and pins runbooks to it)
system.enableDeploymentVersions:
  - value: true
frontend.workerVersioningWorkflowAPIs:
  - value: true
# Updates (the runbooks' decide/hold/extend calls are Workflow Updates) and update-with-start
frontend.enableUpdateWorkflowExecution:
  - value: true
frontend.enableUpdateWorkflowExecutionAsyncAccepted:
  - value: true
frontend.enableExecuteMultiOperation:
  - value: true
# Eager activity dispatch, as the dev server runs it (scripts/temporal.sh): the worker asks for it
system.enableActivityEagerExecution:
  - value: true
# Search attributes the worker registers at start are usable by its first workflow start and `secsvc list`
# (otherwise the frontend's cache would refuse them for up to a minute)
system.forceSearchAttributesCacheRefreshOnRead:
  - value: true
# The HTTP API (n8n's Temporal credential): only requests addressed to this frontend by name (Host header;
# the default allows any host)
frontend.httpAllowedHosts:
  - value: ["127.0.0.1:*", "localhost:*", "frontend.secsvc.internal:*"]
# Drained versions are seen as drained after seconds, not minutes (a rollout retires the old build sooner)
matching.wv.VersionDrainageStatusVisibilityGracePeriod:
  - value: 10s
matching.wv.VersionDrainageStatusRefreshInterval:
  - value: 5s
EOF
}

# ---- identity provider ----------------------------------------------------------------------------------------
idp_pid() { [ -f "$DIR/pid/idp" ] && cat "$DIR/pid/idp" || true; }
idp_up() { local p; p="$(idp_pid)"; [ -n "$p" ] && kill -0 "$p" 2>/dev/null && grep -q identity-provider "/proc/$p/cmdline" 2>/dev/null; }

# The provider's clients and their roles; secrets are drawn once per cluster and kept in DIR/idp (0600).
write_idp_config() {
  local d="$DIR/idp" c
  mkdir -p "$d"; chmod 700 "$d"
  for c in "${IDP_CLIENTS[@]}"; do
    [ -f "$d/$c.secret" ] || (umask 077; openssl rand -hex 24 >"$d/$c.secret")
  done
  local ns="$NAMESPACE"
  role() { case "$1" in temporal-admin) echo "temporal-system:admin" ;; temporal-reader) echo "$ns:read" ;; *) echo "$ns:write" ;; esac; }
  {
    echo '{ "serviceAudience": "'"$TOKEN_AUDIENCE"'", "serviceTokenSeconds": 600,'
    echo '  "people": { "oncall-alice": { "email": "oncall-alice@example.com", "groups": ["soc-oncall"] },'
    echo '              "bob": { "email": "bob@example.com", "groups": ["soc-oncall"] } },'
    echo '  "clients": ["secsvc", "secsvc-n8n"], "services": ['
    local first=1
    for c in "${IDP_CLIENTS[@]}"; do
      [ $first = 1 ] || echo ','
      first=0
      printf '    { "id": "%s", "secret": "%s", "permissions": ["%s"] }' "$c" "$(cat "$d/$c.secret")" "$(role "$c")"
    done
    echo; echo '] }'
  } >"$d/config.json"
  chmod 600 "$d/config.json"
}

start_idp() {
  idp_up && return 0
  write_idp_config
  log "starting the identity provider on http://127.0.0.1:$IDP_PORT"
  mkdir -p "$DIR/pid" "$DIR/log"
  cd "$ROOT" # node resolves tsx from here; every other path in this script is absolute
  setsid "${NODE:-node}" --import tsx scripts/identity-provider.mts --port "$IDP_PORT" \
    --config "$DIR/idp/config.json" --key-file "$DIR/idp/signing-key.json" >>"$DIR/log/idp.log" 2>&1 </dev/null &
  echo $! >"$DIR/pid/idp"
  local i
  for i in $(seq 1 60); do
    curl -fsS "http://127.0.0.1:$IDP_PORT/jwks" >/dev/null 2>&1 && return 0
    idp_up || { tail -n 20 "$DIR/log/idp.log" >&2; die "the identity provider exited (log: $DIR/log/idp.log)"; }
    sleep 0.5
  done
  die "the identity provider did not answer on 127.0.0.1:$IDP_PORT within 30 s"
}

# An access token of CLIENT (client credentials grant), for the script's own operator calls.
declare -A TOKENS=()
token_for() {
  local c="$1"
  if [ -z "${TOKENS[$c]:-}" ]; then
    TOKENS[$c]="$(curl -fsS "http://127.0.0.1:$IDP_PORT/token" -d grant_type=client_credentials -d "client_id=$c" \
      --data-urlencode "client_secret=$(cat "$DIR/idp/$c.secret")" --data-urlencode "resource=$TOKEN_AUDIENCE" \
      | sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p')" || die "no access token for $c from the identity provider"
  fi
  echo "${TOKENS[$c]}"
}

# ---- services -------------------------------------------------------------------------------------------------
svc_pid() { [ -f "$DIR/pid/$1" ] && cat "$DIR/pid/$1" || true; }
svc_up() {
  local p; p="$(svc_pid "$1")"
  [ -n "$p" ] && kill -0 "$p" 2>/dev/null && grep -q temporal-server "/proc/$p/cmdline" 2>/dev/null
}

start_service() {
  local s="$1"
  svc_up "$s" && return 0
  log "starting $s"
  mkdir -p "$DIR/pid" "$DIR/log"
  # setsid: the service outlives the shell that started it (a test's or a terminal's process group)
  setsid "$CACHE/bin/temporal-server" --root "$DIR" --config config --env secsvc start --service "$s" \
    >>"$DIR/log/$s.log" 2>&1 </dev/null &
  echo $! >"$DIR/pid/$s"
}

# On a fresh database every service writes the cluster's metadata row when it starts; started together they race on
# its primary key and the loser exits (SaveClusterMetadata: duplicate key). So history starts first, and the others
# once the row exists (at most 60 s; a database that already has it starts them at once).
metadata_written() {
  PGPASSWORD="$(cat "$DIR/pg.password")" "$(pg_bindir)/psql" -h 127.0.0.1 -p "$PGPORT" -U temporal -d temporal -tAc \
    'select count(*) from cluster_metadata_info' 2>/dev/null | grep -q '^[1-9]'
}
start_services() {
  start_service history
  local i
  for i in $(seq 1 60); do
    metadata_written && break
    svc_up history || { tail -n 30 "$DIR/log/history.log" >&2; die "the history service exited (log: $DIR/log/history.log)"; }
    sleep 1
  done
  for s in "${SERVICES[@]}"; do start_service "$s"; done
}

cli() { "$TEMPORAL_CLI" "$@" --address "127.0.0.1:$BASE" --tls-ca-path "$DIR/certs/ca.pem" \
  --tls-cert-path "$DIR/certs/client.pem" --tls-key-path "$DIR/certs/client.key" --api-key "$(token_for temporal-admin)"; }

wait_ready() {
  local i
  for i in $(seq 1 120); do
    if cli operator cluster health >/dev/null 2>&1; then return 0; fi
    for s in "${SERVICES[@]}"; do
      svc_up "$s" || { tail -n 30 "$DIR/log/$s.log" >&2; die "the $s service exited (log: $DIR/log/$s.log)"; }
    done
    sleep 1
  done
  die "the frontend did not answer on 127.0.0.1:$BASE within 120 s (logs: $DIR/log/)"
}

ensure_namespace() {
  # Right after a restart (PostgreSQL's above all) describe can fail for a moment: create only when it is missing,
  # and take "already exists" as done.
  local i out
  for i in $(seq 1 30); do
    cli operator namespace describe -n "$NAMESPACE" >/dev/null 2>&1 && break
    if out="$(cli operator namespace create -n "$NAMESPACE" --retention 72h 2>&1)"; then
      log "registered namespace $NAMESPACE (retention 3 days)"; break
    fi
    grep -q 'already exists' <<<"$out" && break
    [ "$i" = 30 ] && { echo "$out" >&2; die "could not create namespace $NAMESPACE"; }
    sleep 1
  done
  # The frontend's namespace cache refreshes every few seconds: wait until the namespace serves requests.
  local i
  for i in $(seq 1 60); do
    cli workflow count -n "$NAMESPACE" >/dev/null 2>&1 && return 0
    sleep 1
  done
  die "namespace $NAMESPACE not usable after 60 s"
}

print_env() {
  local c="$DIR/certs"
  printf 'export %s=%q\n' \
    TEMPORAL_ADDRESS "127.0.0.1:$BASE" \
    TEMPORAL_NAMESPACE "$NAMESPACE" \
    TEMPORAL_TLS_SERVER_CA_CERT_PATH "$c/ca.pem" \
    TEMPORAL_TLS_CLIENT_CERT_PATH "$c/client.pem" \
    TEMPORAL_TLS_CLIENT_KEY_PATH "$c/client.key" \
    SECSVC_TEMPORAL_HTTP_URL "https://127.0.0.1:$((BASE + 1))" \
    SECSVC_TEMPORAL_TOKEN_ISSUER "http://127.0.0.1:$IDP_PORT" \
    SECSVC_TEMPORAL_TOKEN_CLIENT_ID temporal-worker \
    SECSVC_TEMPORAL_TOKEN_CLIENT_SECRET_FILE "$DIR/idp/temporal-worker.secret" \
    SECSVC_TEMPORAL_TOKEN_AUDIENCE "$TOKEN_AUDIENCE" \
    SECSVC_CLUSTER_DIR "$DIR" \
    SECSVC_CLUSTER_BASE_PORT "$BASE"
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# ---- command line ---------------------------------------------------------------------------------------------
cmd="${1:-path}"; shift || true
target=""
if [ "$cmd" = kill ]; then target="${1:-}"; shift || true; fi
BASE="${SECSVC_CLUSTER_BASE_PORT:-17300}"; DIR=""; NAMESPACE="${SECSVC_CLUSTER_NAMESPACE:-secsvc}"
while [ $# -gt 0 ]; do
  case "$1" in
    --base-port) BASE="$2"; shift ;;
    --dir) DIR="$2"; shift ;;
    --namespace) NAMESPACE="$2"; shift ;;
    *) die "unknown option $1" ;;
  esac
  shift
done
[[ "$BASE" =~ ^[0-9]+$ ]] && [ "$BASE" -ge 1024 ] && [ "$BASE" -le 65525 ] || die "--base-port must be 1024–65525 (got $BASE)"
[[ "$NAMESPACE" =~ ^[A-Za-z0-9._-]+$ ]] && [ "$NAMESPACE" != default ] || die "--namespace must be a namespace name other than default"
DIR="${DIR:-${TMPDIR:-/tmp}/secsvc-cluster-$BASE}"
PGDATA="$DIR/pg"; PGPORT=$((BASE + 9))
FRONTEND_NAME="frontend.secsvc.internal"; INTERNODE_NAME="internode.secsvc.internal"
IDP_PORT=$((BASE + 12)); TOKEN_AUDIENCE="https://temporal.secsvc.internal"

case "$cmd" in
  path)
    build_binaries
    ensure_postgres_installed
    echo "$CACHE/bin"
    ;;
  start)
    build_binaries
    TEMPORAL_CLI="$(bash "$ROOT/scripts/temporal.sh" path)"
    ensure_postgres_installed
    mkdir -p "$DIR/log" "$DIR/pid"; chmod 755 "$DIR"
    if ! pg_up && ! svc_up frontend; then
      # A fresh start: every port must be free (another engineer's server, or a cluster with another --dir).
      for off in 0 1 2 3 4 5 6 7 8 9 10 11 12 13; do
        port_busy $((BASE + off)) && die "port $((BASE + off)) on 127.0.0.1 is in use: choose another --base-port"
      done
    fi
    # A cluster an older copy of this script started (no authorization) must not get a frontend with it beside its
    # other services (a restart would mix the two): stop it first.
    if [ -f "$DIR/config/secsvc.yaml" ] && ! grep -q '^  authorization:' "$DIR/config/secsvc.yaml" \
      && { svc_up history || svc_up matching || svc_up frontend || svc_up worker; }; then
      die "a cluster without Temporal's authorization is running in $DIR (started by an older temporal-cluster.sh): stop it first (stop --base-port $BASE)"
    fi
    start_postgres
    create_schemas
    make_certs
    start_idp
    write_config
    start_services
    wait_ready
    ensure_namespace
    log "cluster up: frontend 127.0.0.1:$BASE (gRPC, mTLS + JWT), https://127.0.0.1:$((BASE + 1)) (HTTP API, mTLS + JWT), identity provider http://127.0.0.1:$IDP_PORT; state in $DIR"
    print_env
    ;;
  env)
    [ -f "$DIR/certs/client.pem" ] || die "no cluster in $DIR (run start first)"
    print_env
    ;;
  status)
    for s in "${SERVICES[@]}"; do
      if svc_up "$s"; then echo "$s $(svc_pid "$s") up"; else echo "$s - down"; fi
    done
    if pg_up; then echo "postgres $(pg_pid) up"; else echo "postgres - down"; fi
    if idp_up; then echo "idp $(idp_pid) up"; else echo "idp - down"; fi
    ;;
  kill)
    case "$target" in
      history|matching|frontend|internal-frontend|worker)
        svc_up "$target" || die "$target is not running"
        p="$(svc_pid "$target")"; log "SIGKILL $target (pid $p)"; kill -KILL "$p"
        for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        ;;
      postgres)
        pg_up || die "postgres is not running"
        log "immediate shutdown of PostgreSQL (pid $(pg_pid)): no checkpoint, crash recovery on the next start"
        as_pg "$(pg_bindir)/pg_ctl" -D "$PGDATA" -m immediate -w stop >&2
        ;;
      *) die "kill: name one of history, matching, frontend, internal-frontend, worker, postgres" ;;
    esac
    ;;
  stop)
    for s in frontend internal-frontend worker matching history; do
      if svc_up "$s"; then
        p="$(svc_pid "$s")"; log "stopping $s (pid $p)"; kill -TERM "$p"
        for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$p" 2>/dev/null && { log "$s did not stop in 10 s; SIGKILL pid $p"; kill -KILL "$p"; }
      fi
      rm -f "$DIR/pid/$s"
    done
    if pg_up; then log "stopping PostgreSQL (pid $(pg_pid))"; as_pg "$(pg_bindir)/pg_ctl" -D "$PGDATA" -m fast -w stop >&2; fi
    if idp_up; then p="$(idp_pid)"; log "stopping the identity provider (pid $p)"; kill -TERM "$p"; fi
    rm -f "$DIR/pid/idp"
    ;;
  *)
    echo "usage: bash scripts/temporal-cluster.sh path | start | env | status | stop | kill NAME [--base-port N] [--dir DIR] [--namespace NS]" >&2
    exit 2
    ;;
esac
