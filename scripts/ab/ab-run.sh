#!/usr/bin/env bash
# A/B of the core bench: main's current bench code (branch `ab` in /work/wt/ab-new) against the code
# before the tenant-keyed schema (d03e356 + the same bench, adapted: branch `ab-old` in /work/wt/ab-old).
# Runs N alternations old, new, old, new, ... of BENCH_ONLY=core BENCH_MILLION=0, each on its own
# bench database, one log per run in /work/wt/ab-logs/<version>-<i>.log (earlier logs are moved to
# /work/wt/ab-logs/prev-<time>/), then prints the summary (/work/wt/ab-summary.mjs).
#
#   AB_N=3 BENCH_ROUNDS=3 /work/wt/ab-run.sh          # the real comparison
#   AB_N=1 BENCH_ROUNDS=1 /work/wt/ab-run.sh          # a smoke run
# One alternation at BENCH_ROUNDS=3 takes ~8-10 min on the shared 2-core machine.
set -u
N=${AB_N:-3}
ROUNDS=${BENCH_ROUNDS:-3}
LOGS=/work/wt/ab-logs
export PATH=/work/main/node_modules/.bin:$PATH   # Node 24
export BENCH_ONLY=core BENCH_MILLION=0 BENCH_ROUNDS=$ROUNDS

mkdir -p "$LOGS"
if compgen -G "$LOGS/*.log" > /dev/null; then
  prev="$LOGS/prev-$(date -u +%Y%m%dT%H%M%S)"
  mkdir -p "$prev" && mv "$LOGS"/*.log "$prev"/
fi

run_one () { # version index
  local v=$1 i=$2 dir=/work/wt/ab-$1 log=$LOGS/$1-$2.log
  {
    echo "AB-RUN version=$v index=$i rounds=$ROUNDS commit=$(git -C "$dir" rev-parse --short HEAD) base=$(git -C "$dir" rev-parse --short "$(git -C "$dir" merge-base HEAD main)")"
    echo "AB-START $(date -u +%FT%TZ)"
    echo "AB-LOAD-BEFORE $(cut -d' ' -f1-3 /proc/loadavg)"
  } > "$log"
  local t0=$SECONDS
  (cd "$dir" && BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/spatial_bench_ab_$v node --import tsx bench/run.ts) >> "$log" 2>&1 &
  local bench=$!
  # Watch the version's own bench database: log any statement active for over 20 s (AB-LONG), and
  # once the figures are printed, give the process 60 s to exit, then cancel what still runs there
  # (AB-CANCEL: the bench's fold chore was once seen running one statement for minutes, keeping
  # run.ts from exiting since db.destroy() waits for it).
  local done_at=
  while kill -0 "$bench" 2>/dev/null; do
    sleep 10
    psql -h 127.0.0.1 -U postgres -d postgres -AtF' | ' -c "SELECT 'AB-LONG ' || now()::time(0), pid, round(extract(epoch FROM now() - query_start))::int || ' s', regexp_replace(left(query, 120), '\s+', ' ', 'g')
      FROM pg_stat_activity WHERE datname = 'spatial_bench_ab_$v' AND state = 'active' AND now() - query_start > interval '20 s'" >> "$log" 2>/dev/null
    if [ -z "$done_at" ] && grep -q '^AB-FIGURES ' "$log"; then done_at=$SECONDS; fi
    if [ -n "$done_at" ] && [ $((SECONDS - done_at)) -gt 60 ]; then
      psql -h 127.0.0.1 -U postgres -d postgres -AtF' | ' -c "SELECT 'AB-CANCEL', pid, pg_cancel_backend(pid), regexp_replace(left(query, 120), '\s+', ' ', 'g')
        FROM pg_stat_activity WHERE datname = 'spatial_bench_ab_$v' AND state = 'active' AND pid <> pg_backend_pid()" >> "$log" 2>/dev/null
      done_at=$SECONDS
    fi
  done
  wait "$bench"
  local rc=$?
  {
    echo "AB-LOAD-AFTER $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "AB-END $(date -u +%FT%TZ) rc=$rc seconds=$((SECONDS - t0))"
  } >> "$log"
  echo "$(date -u +%T) $v-$i: rc=$rc in $((SECONDS - t0)) s, load $(cut -d' ' -f1-3 /proc/loadavg)"
}

# AB_ABBA=1: old,new then new,old on even alternations (cancels a steady drift in the load).
for i in $(seq 1 "$N"); do
  if [ "${AB_ABBA:-0}" = 1 ] && [ $((i % 2)) = 0 ]; then run_one new "$i"; run_one old "$i"
  else run_one old "$i"; run_one new "$i"; fi
done
node /work/wt/ab-summary.mjs "$LOGS"
