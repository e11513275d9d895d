#!/usr/bin/env bash
# make cachetests: the public HTTP cache test suite (npm http-cache-tests
# 0.4.5, cache-tests.fyi) against the edge and, in the same run, nginx
# proxy_cache and Varnish in front of the same test origin, all on
# loopback. Scores each the way the suite's pages do (required / optimal /
# check; pass/fail/dependency-fail/setup-fail) and prints the table.
#
# The suite runs offline once installed: its origin and client use only
# Node built-ins and node-fetch. Results are kept in loadtest/cachetests/
# results/ (JSON per cache) for a closer look, e.g. with
#   npm_config_base=http://127.0.0.1:<edge port> npm_package_config_id=<test-id> \
#     node --no-warnings <suite>/cli.mjs
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
EDGE_LOADTEST=$ROOT/loadtest/edge
VERSION=0.4.5

for tool in node npm nginx varnishd redis-server curl; do
	command -v "$tool" >/dev/null || { echo "cachetests: $tool is missing (make cachetests installs it)" >&2; exit 1; }
done

WORK=$(mktemp -d)
. "$EDGE_LOADTEST/lib.sh"
trap 'stop_all; rm -rf "$WORK"' EXIT
for v in ORIGIN_PORT REDIS_PORT EDGE_PORT EDGE_ADMIN NGINX_PORT VARNISH_PORT; do
	free_port >"$WORK/port"
	printf -v "$v" '%s' "$(cat "$WORK/port")"
	USED_PORTS="${USED_PORTS:-} ${!v}"
done

npm install --silent --no-audit --no-fund --prefix "$WORK/suite" "http-cache-tests@$VERSION" >/dev/null
SUITE=$WORK/suite/node_modules/http-cache-tests

go build -o bin/ ./cmd/edge

(cd "$SUITE" && npm_package_config_protocol=http npm_package_config_port=$ORIGIN_PORT \
	npm_package_config_pidfile="$WORK/origin.pid" exec node server/server.mjs) >"$WORK/origin.log" 2>&1 &
PIDS+=($!)
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$WORK" >"$WORK/redis.log" 2>&1 &
PIDS+=($!)
wait_port 127.0.0.1:$ORIGIN_PORT
wait_port 127.0.0.1:$REDIS_PORT

# The edge exactly as `make run` configures it, in front of the suite's
# origin; the quota is raised so the suite's ~1000 requests are not refused.
IW_EDGE_PORT=$EDGE_PORT IW_EDGE_ADMIN_ADDR=127.0.0.1:$EDGE_ADMIN IW_ORIGIN_ADDR=127.0.0.1:$ORIGIN_PORT \
	IW_REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0 IW_PUBLIC_URL=http://127.0.0.1:$EDGE_PORT \
	IW_RATELIMIT_QUOTA=1000000 IW_EDGE_CONNS_PER_ADDRESS=1000000 bin/edge run --config caddyfile/Caddyfile --adapter caddyfile >"$WORK/edge.log" 2>&1 &
PIDS+=($!)
start_nginx $NGINX_PORT 127.0.0.1:$ORIGIN_PORT
start_varnish $VARNISH_PORT $ORIGIN_PORT
wait_port 127.0.0.1:$EDGE_PORT

mkdir -p loadtest/cachetests/results
args=()
for target in edge:$EDGE_PORT nginx:$NGINX_PORT varnish:$VARNISH_PORT; do
	name=${target%%:*} port=${target#*:}
	out=$ROOT/loadtest/cachetests/results/$name.json
	(cd "$SUITE" && npm_config_base=http://127.0.0.1:$port npm_package_config_base= npm_package_config_id= \
		node --no-warnings cli.mjs) >"$out" 2>"$WORK/cli-$name.log"
	args+=("$name=$out")
done

echo
echo "cachetests: http-cache-tests $VERSION, each cache in front of the suite's origin on loopback"
echo
node loadtest/cachetests/score.mjs "$SUITE" "${args[@]}"
