#!/usr/bin/env bash
# The origin installed as a deployer installs it, and run as its systemd unit runs it: the tracked files
# copied to a fresh directory, `npm ci --omit=dev` (runtime dependencies only: no TypeScript tooling, no
# wrangler), the unit's ExecStart with an environment file like scripts/origin-service/origin.env.example,
# one request answered, SIGTERM, exit 0. Fails if the origin needs anything from devDependencies at run time.
# CI runs it (.ci/run). Node >= 22.13 must be the host's `node` (node:sqlite without a flag; type stripping
# needs --experimental-strip-types before 22.18, which the unit passes); here the project's own Node 22 (the
# `node` devDependency of the checkout this runs from) stands in for it, or NODE_BIN=/path/to/node.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
NODE="${NODE_BIN:-$ROOT/node_modules/node/bin/node}"
"$NODE" -e 'const [a, b] = process.versions.node.split(".").map(Number); if (a < 22 || (a === 22 && b < 13)) { console.error(`node ${process.version}: the origin needs Node >= 22.13 (node:sqlite)`); process.exit(1); }'

work="$(mktemp -d)"
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill -KILL "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/app" "$work/var"
(cd "$ROOT" && git ls-files -z | xargs -0 tar -cf -) | tar -xf - -C "$work/app"
(cd "$work/app" && npm ci --omit=dev --no-audit --no-fund --ignore-scripts --loglevel=error)
for dev in typescript wrangler vitest tsx node; do
  if [ -e "$work/app/node_modules/$dev" ]; then echo "check-origin-install: $dev was installed by npm ci --omit=dev" >&2; exit 1; fi
done

port="$("$NODE" -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')"
cat > "$work/origin.env" <<EOF
HOST=127.0.0.1
PORT=$port
METRICS_PORT=off
ORIGIN_TOKEN=check-origin-install-0123456789abcdef
DATABASE_URL=$work/var/items.sqlite
SEED_SAMPLE_ITEMS=3
EOF

# What the unit does: EnvironmentFile, WorkingDirectory, ExecStart.
(cd "$work/app" && set -a && . "$work/origin.env" && set +a && exec "$NODE" --experimental-strip-types src/origin/main.ts) > "$work/out.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
  grep -q "listening on" "$work/out.log" && break
  if ! kill -0 "$pid" 2>/dev/null; then cat "$work/out.log" >&2; exit 1; fi
  "$NODE" -e 'setTimeout(() => {}, 100)'
done
"$NODE" -e '
  fetch(process.argv[1], { headers: { "x-origin-token": "check-origin-install-0123456789abcdef" } }).then(async (r) => {
    const body = await r.text();
    if (r.status !== 200 || !body.startsWith("{\"id\":\"1\"")) { console.error(`GET /items/1: ${r.status} ${body}`); process.exit(1); }
  });' "http://127.0.0.1:$port/items/1"
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=""
if [ "$status" -ne 0 ]; then cat "$work/out.log" >&2; echo "check-origin-install: exit $status after SIGTERM" >&2; exit 1; fi

if command -v systemd-analyze > /dev/null; then
  systemd-analyze verify "$ROOT/scripts/origin-service/slim-edge-origin.service"
fi
echo "check-origin-install: npm ci --omit=dev, started as the unit starts it, answered, stopped cleanly"
