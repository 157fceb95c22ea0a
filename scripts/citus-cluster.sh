#!/usr/bin/env bash
# A local Citus cluster for tests and the bench: a coordinator on 127.0.0.1:9700 and two workers
# on 9701 and 9702, each a PostgreSQL 15 cluster with citus preloaded (run as root).
#
#   scripts/citus-cluster.sh start            build/install Citus if missing, init and start the nodes
#   scripts/citus-cluster.sh createdb NAME    create NAME on every node with citus + postgis, and
#                                             register the coordinator and workers inside NAME
#   scripts/citus-cluster.sh stop | status
#
# Citus keeps its node list per database and does not create databases on the workers, so every
# database the service uses goes through `createdb`. The release (db/setup.ts) then distributes
# the tenant tables (db/distribute.ts). Data lives in CITUS_DATA (default /var/tmp/citus-cluster);
# it is a throwaway test cluster (fsync off).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
data=${CITUS_DATA:-/var/tmp/citus-cluster}
bin=$(pg_config --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)
[ -x "$bin/initdb" ] || bin=/usr/lib/postgresql/15/bin
ports=(9700 9701 9702)
as_pg () { if [ "$(id -un)" = postgres ]; then "$@"; else runuser -u postgres -- "$@"; fi; }
psql_at () { local port=$1 db=$2; shift 2; psql -h 127.0.0.1 -p "$port" -U postgres -d "$db" -v ON_ERROR_STOP=1 -qtA "$@"; }

# The Citus source ships beside the project (../shared/vendor from the repository root), or at
# CITUS_VENDOR.
vendor_dir () {
  for d in "${CITUS_VENDOR:-}" "$root/../shared/vendor" "$root/../../shared/vendor" /work/shared/vendor; do
    [ -n "$d" ] && [ -f "$d/citus-build.sh" ] && { echo "$d"; return; }
  done
  echo "citus-cluster: no Citus source found (set CITUS_VENDOR to the folder holding citus-build.sh)" >&2
  exit 1
}

install_citus () {
  [ -f "$(pg_config --pkglibdir)/citus.so" ] && return
  bash "$(vendor_dir)/citus-build.sh"
}

init_node () {
  local port=$1 dir=$data/$1
  [ -f "$dir/PG_VERSION" ] && return
  mkdir -p "$data" && chown postgres: "$data"
  as_pg "$bin/initdb" -D "$dir" -U postgres --auth=trust -E UTF8 > "$data/initdb-$port.log"
  cat >> "$dir/postgresql.conf" <<EOF
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$data'
shared_preload_libraries = 'citus'
max_connections = 600
max_prepared_transactions = 600
shared_buffers = 128MB
fsync = off
synchronous_commit = off
full_page_writes = off
citus.shard_count = 16
EOF
}

start () {
  install_citus
  for port in "${ports[@]}"; do
    init_node "$port"
    if ! as_pg "$bin/pg_ctl" -D "$data/$port" status > /dev/null 2>&1; then
      as_pg "$bin/pg_ctl" -D "$data/$port" -l "$data/$port.log" -w -t 60 start > /dev/null
    fi
  done
  echo "citus cluster up: coordinator 127.0.0.1:${ports[0]}, workers ${ports[1]} and ${ports[2]}"
}

createdb () {
  local name=$1
  for port in "${ports[@]}"; do
    if [ -z "$(psql_at "$port" postgres -c "SELECT 1 FROM pg_database WHERE datname = '$name'")" ]; then
      psql_at "$port" postgres -c "CREATE DATABASE \"$name\""
    fi
    # Once a worker holds Citus metadata it refuses DDL, even a no-op: create only what is missing.
    for ext in citus postgis; do
      [ -n "$(psql_at "$port" "$name" -c "SELECT 1 FROM pg_extension WHERE extname = '$ext'")" ] || psql_at "$port" "$name" -c "CREATE EXTENSION $ext"
    done
  done
  if [ -z "$(psql_at "${ports[0]}" "$name" -c 'SELECT 1 FROM pg_dist_node LIMIT 1')" ]; then
    psql_at "${ports[0]}" "$name" \
      -c "SELECT citus_set_coordinator_host('127.0.0.1', ${ports[0]})" \
      -c "SELECT citus_add_node('127.0.0.1', ${ports[1]})" \
      -c "SELECT citus_add_node('127.0.0.1', ${ports[2]})" > /dev/null
  fi
  echo "database $name ready on the citus cluster ($(psql_at "${ports[0]}" "$name" -c 'SELECT count(*) FROM pg_dist_node') nodes)"
}

stop () {
  for port in "${ports[@]}"; do
    [ -f "$data/$port/postmaster.pid" ] && as_pg "$bin/pg_ctl" -D "$data/$port" -w stop -m fast > /dev/null
  done
  echo "citus cluster stopped"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) for port in "${ports[@]}"; do pg_isready -h 127.0.0.1 -p "$port"; done ;;
  createdb) [ -n "${2:-}" ] || { echo "usage: $0 createdb NAME" >&2; exit 2; }; createdb "$2" ;;
  *) echo "usage: $0 start | stop | status | createdb NAME" >&2; exit 2 ;;
esac
