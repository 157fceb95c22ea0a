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

echo "== PostGIS"
if ! dpkg -s postgresql-15-postgis-3 >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq postgresql-15-postgis-3 >/dev/null
fi

echo "== GDAL (ogrinfo: the layer tests open our OGC API, GeoJSON, NDJSON and MVT with it)"
if ! command -v ogrinfo >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends gdal-bin >/dev/null
fi

echo "== Chromium (the /map test drives it headless through playwright-core)"
if ! command -v chromium >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi

echo "== curl and jq (the README tour, run as written by test/tour/readme-shell.test.ts)"
if ! command -v jq >/dev/null || ! command -v curl >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends jq curl >/dev/null
fi

echo "== wrk (npm run bench measures warm tiles with it, a C load generator, beside its Node client)"
if ! command -v wrk >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends wrk >/dev/null
fi

echo "== promtool (test/integration/metrics-promtool.test.ts checks /metrics, deploy/prometheus and deploy/grafana with it)"
if ! command -v promtool >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi

echo "== podman, buildah, runc and debootstrap (scripts/image-test.sh builds and runs the container image)"
if ! command -v podman >/dev/null || ! command -v buildah >/dev/null || ! command -v runc >/dev/null || ! command -v debootstrap >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends podman buildah runc debootstrap >/dev/null
fi

echo "== Node 24 and packages"
npm ci --no-audit --no-fund --loglevel=error
export PATH="$PWD/node_modules/.bin:$PATH"
node --version
