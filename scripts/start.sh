#!/usr/bin/env bash
# Runs the platform on this machine: installs, builds, migrates and seeds (the release job),
# then starts the worker in the background and the API in the foreground. Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/install.sh

export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/spatial}"
if [ -z "${AUTH_JWT_SECRET:-}" ]; then
  echo "AUTH_JWT_SECRET is not set: export a secret of at least 32 characters first" >&2
  exit 1
fi
db_name="${DATABASE_URL##*/}"; db_name="${db_name%%\?*}"
psql "${DATABASE_URL%/*}/postgres" -tAc "SELECT 1 FROM pg_database WHERE datname = '$db_name'" | grep -q 1 \
  || psql "${DATABASE_URL%/*}/postgres" -c "CREATE DATABASE \"$db_name\""

npm run build
npm run setup
npm run worker &
worker=$!
trap 'kill -TERM $worker 2>/dev/null; wait $worker' EXIT
node dist/server/main.js
