#!/usr/bin/env bash
# Builds the container image (Dockerfile) with podman and runs its three processes against this
# machine's PostgreSQL, in a fresh database: release, then web and worker, then checks end to end
# with curl (a type, a rule whose webhook reaches a local receiver, an object, a vector tile).
# Prints the image's size and the web container's start-to-ready time. Run as root:
#   bash scripts/image-test.sh            (IMAGE_TEST_KEEP=1 keeps the database and containers)
# No registry is reachable here, so the base image is made locally: Debian bookworm (debootstrap)
# plus the Node binary of the npm package node@24 (../shared/STACK.md "Containers and CPU limits").
set -euo pipefail
cd "$(dirname "$0")/.."

BASE=localhost/spatial-node-base:24
IMAGE=${IMAGE:-localhost/spatial-platform:test}
PG=${IMAGE_TEST_PG:-postgres://postgres@127.0.0.1:5432}
DB=spatial_image_test
PORT=${IMAGE_TEST_PORT:-3481}
RECEIVER_PORT=$((PORT + 1))
SECRET=image-test-secret-0123456789abcdef0123456789

for tool in podman buildah runc debootstrap jq curl psql; do
  command -v "$tool" >/dev/null || { echo "$tool is missing: run scripts/install.sh (as root)"; exit 1; }
done
WORK=$(mktemp -d /tmp/image-test.XXXXXX)
# crun refuses this machine's hybrid cgroups and the default ulimits (STACK.md): runc, no ulimits.
printf '[containers]\ndefault_ulimits = []\n' > "$WORK/containers.conf"
export CONTAINERS_CONF="$WORK/containers.conf"
P=(podman --storage-driver=vfs --cgroup-manager=cgroupfs --runtime=runc)

containers=()
receiver=
cleanup () {
  local rc=$?
  if [ "$rc" != 0 ]; then
    for c in "${containers[@]}"; do echo "--- logs of $c"; "${P[@]}" logs --tail 30 "$c" 2>&1 || true; done
  fi
  if [ "${IMAGE_TEST_KEEP:-}" != 1 ]; then
    for c in "${containers[@]}"; do "${P[@]}" rm -f "$c" >/dev/null 2>&1 || true; done
    psql "$PG/postgres" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
  fi
  [ -n "$receiver" ] && kill "$receiver" 2>/dev/null
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT

echo "== base image $BASE"
if ! "${P[@]}" image exists "$BASE"; then
  [ -x node_modules/node/bin/node ] || npm ci --no-audit --no-fund --loglevel=error
  t0=$(date +%s)
  rootfs="$WORK/rootfs"
  debootstrap --variant=minbase bookworm "$rootfs" >"$WORK/debootstrap.log" 2>&1 || { tail -20 "$WORK/debootstrap.log"; exit 1; }
  install -m 0755 "$(readlink -f node_modules/node/bin/node)" "$rootfs/usr/local/bin/node"
  # npm itself, for the build stage's npm ci (pure JavaScript: the registry's tarball as it is).
  npm_version=$(npm --version)
  (cd "$WORK" && npm pack --silent "npm@$npm_version" >/dev/null)
  mkdir -p "$rootfs/usr/local/lib/node_modules/npm"
  tar -xzf "$WORK/npm-$npm_version.tgz" -C "$rootfs/usr/local/lib/node_modules/npm" --strip-components=1
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
  # The registry is reached through this machine's network, which may need the CAs the host trusts.
  mkdir -p "$rootfs/etc/ssl/certs" && cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/"
  # The user node (1000), as in the public Node images.
  echo 'node:x:1000:1000::/home/node:/bin/sh' >> "$rootfs/etc/passwd"
  echo 'node:x:1000:' >> "$rootfs/etc/group"
  install -d -o 1000 -g 1000 "$rootfs/home/node"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | "${P[@]}" import --quiet \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
    --change 'CMD ["node"]' - "$BASE" >/dev/null
  rm -rf "$rootfs"
  echo "base made in $(( $(date +%s) - t0 )) s"
fi

echo "== build $IMAGE"
# --layers=false: vfs copies the whole tree at every cached step (3x slower here), and no
# build-stage image is left behind; the image this replaces is removed.
previous=$("${P[@]}" image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)
t0=$(date +%s)
"${P[@]}" build --layers=false --isolation=chroot --build-arg NODE_IMAGE="$BASE" -t "$IMAGE" . >"$WORK/build.log" 2>&1 \
  || { tail -40 "$WORK/build.log"; exit 1; }
echo "built in $(( $(date +%s) - t0 )) s"
current=$("${P[@]}" image inspect --format '{{.Id}}' "$IMAGE")
[ -z "$previous" ] || [ "$previous" = "$current" ] || "${P[@]}" rmi "$previous" >/dev/null 2>&1 || true
size=$("${P[@]}" image inspect --format '{{.Size}}' "$IMAGE")
echo "image size: $(( size / 1000000 )) MB ($size bytes)"

echo "== release job (a fresh database $DB)"
PGOPTIONS="-c client_min_messages=warning" psql "$PG/postgres" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" >/dev/null
ENV=(-e DATABASE_URL="$PG/$DB" -e AUTH_JWT_SECRET="$SECRET" -e WEBHOOK_ALLOW_PRIVATE_NETWORKS=true -e LOG_LEVEL=warn)
OPTS=(--network=host --read-only --tmpfs /tmp "${ENV[@]}")
RUN=("${P[@]}" run "${OPTS[@]}")
"${RUN[@]}" --rm "$IMAGE" node dist/db/setup.js

echo "== webhook receiver on 127.0.0.1:$RECEIVER_PORT"
node -e "require('http').createServer((q, s) => { let b = ''; q.on('data', c => b += c)
  q.on('end', () => { require('fs').appendFileSync('$WORK/received', b + '\n'); s.end() }) }).listen($RECEIVER_PORT, '127.0.0.1')" &
receiver=$!

echo "== web and worker"
# Created first: with the vfs driver, creating copies the whole image, which is podman's cost here.
containers+=(spatial-image-web)
t0=$(date +%s%N)
"${P[@]}" create "${OPTS[@]}" --name spatial-image-web -e PORT="$PORT" "$IMAGE" >/dev/null
created=$(( ($(date +%s%N) - t0) / 1000000 ))
start=$(date +%s%N)
"${P[@]}" start spatial-image-web >/dev/null
until [ "$(curl -s -o /dev/null -w '%{http_code}' "localhost:$PORT/v1/health/ready")" = 200 ]; do
  [ $(( ($(date +%s%N) - start) / 1000000000 )) -lt 60 ] || { echo "web not ready after 60 s"; exit 1; }
  sleep 0.05
done
echo "web start-to-ready: $(( ($(date +%s%N) - start) / 1000000 )) ms (podman create before it: $created ms)"
containers+=(spatial-image-worker)
"${RUN[@]}" -d --name spatial-image-worker "$IMAGE" node dist/worker/main.js >/dev/null

echo "== end to end"
TOKEN=$("${RUN[@]}" --rm "$IMAGE" node --input-type=module -e "
  import { loadConfig } from './dist/lib/config.js'
  import { issueAccessToken } from './dist/lib/access/index.js'
  console.log(issueAccessToken(loadConfig(process.env).auth, { sub: 'image-test', tenant: 'image', roles: ['owner'] }, 3600))")
A=localhost:$PORT
H=(-H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json')
call () { curl -sf "$@" "${H[@]}" || { echo "failed: curl $*" >&2; exit 1; }; }
TYPE=$(call "$A/v1/object-types" -d '{"key": "pole", "name": "Pole",
  "attributeSchema": {"type": "object", "properties": {"height": {"type": "number"}}},
  "geometry": {"required": true, "types": ["Point"]}}' | jq -r .id)
call -X POST "$A/v1/object-types/$TYPE/publish" -d '{"to":"published"}' >/dev/null
RULE=$(call "$A/v1/automation/rules" -d "{\"name\": \"tell the receiver\",
  \"trigger\": {\"type\": \"object.event\", \"events\": [\"object.created\"], \"typeId\": \"$TYPE\"},
  \"effect\": {\"type\": \"webhook\", \"url\": \"http://127.0.0.1:$RECEIVER_PORT/poles\", \"body\": {\"pole\": \"{{object.id}}\"}}}" | jq -r .id)
call -X POST "$A/v1/automation/rules/$RULE/publish" -d '{"to":"active"}' >/dev/null
OBJ=$(call "$A/v1/objects" -d "{\"typeId\": \"$TYPE\", \"attributes\": {\"height\": 9},
  \"geometry\": {\"type\": \"Point\", \"coordinates\": [13.40, 52.52]}}" | jq -r .id)
for _ in $(seq 1 300); do grep -q "$OBJ" "$WORK/received" 2>/dev/null && break; sleep 0.1; done
grep -q "$OBJ" "$WORK/received" || { echo "the receiver got no webhook for object $OBJ"; exit 1; }
echo "webhook received: $(head -1 "$WORK/received")"
call "$A/v1/layers/definitions" -d "{\"name\": \"Poles\", \"slug\": \"poles\", \"definition\": {\"filters\": {\"typeId\": \"$TYPE\"}}}" >/dev/null
tile=$(call "$A/v1/layers/tiles/poles/10/550/335.mvt" -o "$WORK/tile.mvt" -w '%{http_code} %{content_type} %{size_download}')
read -r code type bytes <<<"$tile"
[ "$code" = 200 ] && [ "$bytes" -gt 0 ] && grep -q poles "$WORK/tile.mvt" || { echo "no vector tile: $tile"; exit 1; }
echo "vector tile: $bytes bytes ($type)"

echo "== readiness follows the release (docs/operations.md 'The release Job and the rollout')"
psql "$PG/$DB" -qc "UPDATE releases SET version = '0.0.0-previous'"
ready=$(curl -s -w ' %{http_code}' "$A/v1/health/ready")
[[ "$ready" == *'"release":"mismatch: database has 0.0.0-previous'*' 503' ]] || { echo "expected 503 with a release mismatch: $ready"; exit 1; }
"${RUN[@]}" --rm "$IMAGE" node dist/db/setup.js
[ "$(curl -s -o /dev/null -w '%{http_code}' "$A/v1/health/ready")" = 200 ] || { echo "not ready after the release job"; exit 1; }
echo "503 while the database holds another release, 200 once the release job ran"
echo "image test passed: image $(( size / 1000000 )) MB"
