#!/usr/bin/env bash
# `npm run test:citus [files...]`: the test suite (or the named files) against a local Citus
# cluster (scripts/citus-cluster.sh: coordinator 127.0.0.1:9700, workers 9701 and 9702), on the
# database CITUS_TEST_DATABASE (default spatial_test), created on every node first. The tests
# prepare it like the release does: migrate, then distribute the tenant tables (db/distribute.ts).
set -euo pipefail
cd "$(dirname "$0")/.."
db=${CITUS_TEST_DATABASE:-spatial_test}
bash scripts/citus-cluster.sh start
bash scripts/citus-cluster.sh createdb "$db"
export TEST_DATABASE_URL="postgres://postgres@127.0.0.1:9700/$db"
tsx test/support/prepare.ts
# Without arguments: every test file but the plan tests (sort-plans, query-plans), which assert the
# single-node planner's index choices (on Citus each shard is planned by its worker), and the
# PostgreSQL restart (database-restart), which runs on a private plain server of its own either way.
if [ $# -gt 0 ]; then files=("$@"); else mapfile -t files < <(ls test/*/*.test.ts | grep -v -e sort-plans -e query-plans -e database-restart); fi
exec node --import tsx --test --test-concurrency=2 "${files[@]}"
