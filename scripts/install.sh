#!/usr/bin/env bash
# Installs what the platform needs on a fresh Debian machine of this kind: PostgreSQL running,
# PostGIS, Redis if present, the command-line tools the tests drive (ogrinfo, chromium, jq, wrk,
# promtool), Node 24 (the npm package node@24) and the npm packages.
# Idempotent. Sourced by scripts/start.sh and .ci/run.
set -euo pipefail

echo "== services"
if ! pg_isready -h 127.0.0.1 -p 5432 -q; then
  pg_ctlcluster --skip-systemctl-redirect 15 main start || pg_ctlcluster 15 main start
  for _ in $(seq 1 30); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 1; done
fi
if command -v redis-server >/dev/null && ! redis-cli -h 127.0.0.1 ping >/dev/null 2>&1; then
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no || true
fi

# apt_need "<what it is for>" <debian packages...>: installs the packages not yet installed.
apt_need () {
  local why=$1 pkg missing=(); shift
  echo "== $why"
  for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

apt_need "PostGIS" postgresql-15-postgis-3
apt_need "GDAL (ogrinfo: the layer tests open our OGC API, GeoJSON, NDJSON and MVT with it)" gdal-bin
apt_need "Chromium (the /map test drives it headless through playwright-core)" chromium
apt_need "curl and jq (the README tour, run as written by test/tour/readme-shell.test.ts)" curl jq
apt_need "wrk (npm run bench measures warm tiles with it, a C load generator, beside its Node client)" wrk
apt_need "promtool (test/integration/metrics-promtool.test.ts checks /metrics, deploy/prometheus and deploy/grafana with it)" prometheus
apt_need "podman, buildah, runc and debootstrap (scripts/image-test.sh builds and runs the container image)" podman buildah runc debootstrap

echo "== Node 24 and packages"
npm ci --no-audit --no-fund --loglevel=error
export PATH="$PWD/node_modules/.bin:$PATH"
node --version
