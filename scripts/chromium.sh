#!/usr/bin/env bash
# Prints the path of Debian's `chromium` (the browser the editor test drives through playwright-core with
# executablePath; never a browser download). Installs it with apt when missing (CI machines, fresh containers).
#
#   bash scripts/chromium.sh path     # only the path on stdout; progress on stderr; fails loudly when impossible
set -euo pipefail
log() { echo "[chromium.sh] $*" >&2; }

find_chromium() {
  if [ -n "${CHROMIUM_BIN:-}" ] && [ -x "$CHROMIUM_BIN" ]; then echo "$CHROMIUM_BIN"; return 0; fi
  for c in chromium chromium-browser; do
    p="$(command -v "$c" 2>/dev/null || true)"
    if [ -n "$p" ]; then echo "$p"; return 0; fi
  done
  return 1
}

if ! find_chromium >/dev/null; then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  command -v apt-get >/dev/null 2>&1 || { log "ERROR: chromium missing and apt-get unavailable; set CHROMIUM_BIN"; exit 1; }
  log "installing Debian's chromium with apt-get (a few minutes the first time)"
  # Serialise concurrent callers.
  exec 9>/tmp/secsvc-chromium-apt.lock
  if command -v flock >/dev/null 2>&1; then flock 9; fi
  if ! find_chromium >/dev/null; then
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update >&2
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y --no-install-recommends chromium fonts-liberation >&2
  fi
fi
p="$(find_chromium)" || { log "ERROR: chromium not found after apt-get install"; exit 1; }
"$p" --version >&2 || { log "ERROR: $p does not run"; exit 1; }
echo "$p"
