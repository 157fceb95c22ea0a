#!/usr/bin/env bash
# The API's instructions per request, counted by valgrind's callgrind: a measure that the noise of
# a shared machine does not move (a rate or a CPU time moves by tens of percent between runs here;
# this count by a few). Compares builds of the service request by request:
#
#   bash bench/instructions.sh <service dir> <requests> <tenant> <method> <path> [json body]
#
# e.g. bash bench/instructions.sh . 2000 bench-layers GET /v1/layers/tiles/warm/14/8802/5373.mvt
#      bash bench/instructions.sh .bench-ab/<sha> 2000 bench-layers GET ...   (a build bench:ab made)
#
# Starts <service dir>/dist/server/main.js under callgrind on BENCH_DATABASE_URL (the bench's
# database, as a bench run left it: the tenant names are the bench's), sends 2,000 requests
# untimed (V8 optimizes the path), zeroes the counters, sends <requests> requests (4 in flight;
# `{i}` in the path or body is the request's index), and prints the instructions per request of
# every thread of the process and of its main thread alone. Needs valgrind (apt-get install valgrind).
set -euo pipefail
dir=$(cd "$1" && pwd); n=$2; shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PATH="$root/node_modules/.bin:$PATH"
secret='bench-secret-that-is-at-least-32-characters'
port=${INSTRUCTIONS_PORT:-4880}
out=$(mktemp -d)
DATABASE_URL=${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/spatial_bench} AUTH_JWT_SECRET=$secret RATE_LIMIT_LIMIT=100000000 LOG_LEVEL=error PORT=$port \
  valgrind --tool=callgrind --smc-check=all --separate-threads=yes --callgrind-out-file="$out/cg.%p" "$(command -v node)" "$dir/dist/server/main.js" > "$out/log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$out"' EXIT
for _ in $(seq 1 600); do curl -s -o /dev/null -m 2 "http://127.0.0.1:$port/v1/health/live" && break; sleep 0.5; done
client () {
  node --input-type=module -e "
    import jwt from 'jsonwebtoken'
    const [base, n, tenant, method, path, body] = process.argv.slice(1)
    const token = jwt.sign({ sub: 'bench', tenant, roles: ['owner'] }, '$secret', { algorithm: 'HS256', expiresIn: '1h' })
    let i = 0, bad = 0
    const go = async () => { while (i < Number(n)) { const k = i++
      const r = await fetch(base + path.replaceAll('{i}', k), { method, headers: { Authorization: 'Bearer ' + token, 'Content-Type': 'application/json' }, body: body === undefined ? undefined : body.replaceAll('{i}', k) })
      if (r.status >= 400) bad++
      await r.arrayBuffer() } }
    await Promise.all([go(), go(), go(), go()])
    if (bad > 0) { console.error(bad + ' answers of 400 or more'); process.exit(1) }" "http://127.0.0.1:$port" "$@"
}
client 2000 "$@"
callgrind_control -z $pid > /dev/null
client "$n" "$@"
callgrind_control -d $pid > /dev/null
sleep 1
total=0; main=0
for f in "$out"/cg.$pid.1-*; do
  # A dump's last line `totals: <instructions>` (callgrind's output format; --separate-threads: a file per thread).
  t=$(awk '/^(totals|summary):/ {n = $2} END {print n + 0}' "$f")
  total=$((total + t))
  case "$f" in *.1-01) main=$t ;; esac
done
echo "$*: $((total / n)) instructions per request ($((main / n)) on the main thread), $n requests"
