#!/usr/bin/env bash
# make bench-edge: the edge's cache-hit path against references, in one run
# on this machine (docs/architecture.md). Each server runs pinned to one core and wrk
# to another, with keep-alive connections, on the same 15-20 KB JSON body:
#
#   (a) edge    the edge (caddyfile/Caddyfile, every module on, the rate
#               limiter counting with its quota raised) answering
#               GET /api/v1/articles?limit=N from its cache
#   (b) bare-go a bare net/http handler writing the same bytes
#   (c) caddy   bare Caddy `respond` of the same bytes
#   (d) nginx   nginx proxy_cache in front of the same origin
#   (e) varnish Varnish in front of the same origin
#
# Prints requests/s, p50/p99 latency, peak RSS and each one's ratio to (a).
# Then the edge's hits for Web Bot Auth agents (loadtest/edge/agentload, a
# raw-socket client that prepares its requests before the clock starts):
# unsigned, freshly signed on every request, and one signature repeated,
# each as a ratio to the unsigned hits of the same rounds.
# Environment: BENCH_DURATION (10s), BENCH_ROUNDS (3), BENCH_CONNECTIONS (32),
# BENCH_SERVER_CPU (0), BENCH_LOAD_CPU (1).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
EDGE_LOADTEST=$ROOT/loadtest/edge
DURATION=${BENCH_DURATION:-10s}
ROUNDS=${BENCH_ROUNDS:-3}
CONNS=${BENCH_CONNECTIONS:-32}
SCPU=${BENCH_SERVER_CPU:-0}
LCPU=${BENCH_LOAD_CPU:-1}
WORK=$(mktemp -d)
. "$EDGE_LOADTEST/lib.sh"
trap 'stop_all; rm -rf "$WORK"' EXIT
# $(free_port) runs in a subshell, so the list of ports handed out is kept
# by calling it in this shell through a variable.
for v in REDIS_PORT ORIGIN_PORT ORIGIN_METRICS EDGE_PORT EDGE_ADMIN BARE_PORT CADDY_PORT CADDY_ADMIN NGINX_PORT VARNISH_PORT; do
	free_port >"$WORK/port"
	printf -v "$v" '%s' "$(cat "$WORK/port")"
	USED_PORTS="${USED_PORTS:-} ${!v}"
done

for tool in wrk nginx varnishd redis-server taskset curl; do
	command -v "$tool" >/dev/null || { echo "bench-edge: $tool is missing (make bench-edge installs it)" >&2; exit 1; }
done

go build -o bin/ ./cmd/edge ./cmd/origin ./cmd/iwctl ./loadtest/edge/barego ./loadtest/edge/agentload

export IW_REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0
export IW_PUBLIC_URL=http://127.0.0.1:$EDGE_PORT
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$WORK" >"$WORK/redis.log" 2>&1 &
PIDS+=($!)
wait_port 127.0.0.1:$REDIS_PORT
bin/iwctl sync content >"$WORK/sync.log"

IW_ORIGIN_ADDR=127.0.0.1:$ORIGIN_PORT IW_ORIGIN_METRICS_ADDR=127.0.0.1:$ORIGIN_METRICS \
	taskset -c "$SCPU" bin/origin 2>"$WORK/origin.log" &
PIDS+=($!)
wait_port 127.0.0.1:$ORIGIN_PORT

# The page size whose body is 15-20 KB.
PATH_Q=""
for n in $(seq 10 60); do
	size=$(curl -fsS "http://127.0.0.1:$ORIGIN_PORT/api/v1/articles?limit=$n" | wc -c)
	if [ "$size" -ge 15000 ] && [ "$size" -le 20000 ]; then
		PATH_Q="/api/v1/articles?limit=$n"
		break
	fi
done
[ -n "$PATH_Q" ] || { echo "bench-edge: no page of 15-20 KB in the corpus" >&2; exit 1; }
curl -fsS "http://127.0.0.1:$ORIGIN_PORT$PATH_Q" >"$WORK/body.json"
BYTES=$(wc -c <"$WORK/body.json")

# (a) the edge
IW_EDGE_PORT=$EDGE_PORT IW_EDGE_ADMIN_ADDR=127.0.0.1:$EDGE_ADMIN IW_ORIGIN_ADDR=127.0.0.1:$ORIGIN_PORT \
	IW_RATELIMIT_QUOTA=1000000000 IW_EDGE_CONNS_PER_ADDRESS=1000000 IW_RATELIMIT_AGENT_QUOTA=1000000000 IW_BOTAUTH_ALLOW_CIDRS=127.0.0.0/8 taskset -c "$SCPU" bin/edge run --config caddyfile/Caddyfile --adapter caddyfile \
	>"$WORK/edge.log" 2>&1 &
EDGE_PID=$!
PIDS+=($EDGE_PID)
# (b) bare Go
taskset -c "$SCPU" bin/barego -addr 127.0.0.1:$BARE_PORT -body "$WORK/body.json" 2>"$WORK/barego.log" &
BARE_PID=$!
PIDS+=($BARE_PID)
# (c) bare Caddy respond; the body is a backquoted token (with the origin's
# final newline, which $(...) drops).
cat >"$WORK/Caddyfile.respond" <<CADDY
{
	admin 127.0.0.1:$CADDY_ADMIN
}
:$CADDY_PORT {
	header Content-Type application/json
	respond \`$(cat "$WORK/body.json")
\` 200
}
CADDY
taskset -c "$SCPU" bin/edge run --config "$WORK/Caddyfile.respond" --adapter caddyfile >"$WORK/caddy.log" 2>&1 &
CADDY_PID=$!
PIDS+=($CADDY_PID)
# (d) nginx, (e) Varnish
start_nginx $NGINX_PORT 127.0.0.1:$ORIGIN_PORT "$SCPU"
NGINX_PID=${PIDS[-1]}
start_varnish $VARNISH_PORT $ORIGIN_PORT "$SCPU"
VARNISH_PID=${PIDS[-1]}
for p in $EDGE_PORT $BARE_PORT $CADDY_PORT; do wait_port 127.0.0.1:$p; done

names=(edge bare-go caddy-respond nginx varnish)
ports=($EDGE_PORT $BARE_PORT $CADDY_PORT $NGINX_PORT $VARNISH_PORT)
pids=($EDGE_PID $BARE_PID $CADDY_PID $NGINX_PID $VARNISH_PID)

# Warm the caches and check every server answers the same bytes.
for i in "${!names[@]}"; do
	for _ in 1 2 3; do
		got=$(curl -fsS "http://127.0.0.1:${ports[$i]}$PATH_Q" | wc -c)
	done
	if [ "$got" != "$BYTES" ]; then
		echo "bench-edge: ${names[$i]} answered $got bytes, not $BYTES" >&2
		exit 1
	fi
done
curl -fsS -D - -o /dev/null "http://127.0.0.1:$EDGE_PORT$PATH_Q" | grep -qi '^cache-status: Invoicewire; hit' ||
	{ echo "bench-edge: the edge does not answer from its cache" >&2; exit 1; }

# Rounds interleave the servers, so that a change in the machine's
# background load hits all of them alike; each server's median round (by
# requests/s) is reported.
declare -A RPS P50 P99 RSS
for round in $(seq 1 "$ROUNDS"); do
	for i in "${!names[@]}"; do
		out=$(taskset -c "$LCPU" wrk -t1 -c"$CONNS" -d"$DURATION" --latency "http://127.0.0.1:${ports[$i]}$PATH_Q")
		non2xx=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
		[ -z "$non2xx" ] || { echo "bench-edge: ${names[$i]} answered $non2xx non-2xx responses" >&2; exit 1; }
		echo "$(awk '/^Requests\/sec/ {print $2}' <<<"$out") $(awk '$1 == "50%" {print $2}' <<<"$out") $(awk '$1 == "99%" {print $2}' <<<"$out")" \
			>>"$WORK/rounds-${names[$i]}"
		echo "round $round ${names[$i]}: $(tail -1 "$WORK/rounds-${names[$i]}")" >&2
	done
done
for i in "${!names[@]}"; do
	read -r RPS[${names[$i]}] P50[${names[$i]}] P99[${names[$i]}] < <(sort -n "$WORK/rounds-${names[$i]}" | awk -v n="$ROUNDS" 'NR == int((n + 1) / 2)')
	RSS[${names[$i]}]=$(($(peak_rss_kb "${pids[$i]}") / 1024))
done

echo
echo "bench-edge: GET $PATH_Q ($BYTES bytes), wrk -t1 -c$CONNS -d$DURATION, median of $ROUNDS interleaved rounds, server on CPU $SCPU, wrk on CPU $LCPU"
echo
printf '| %-14s | %10s | %9s | %9s | %13s | %10s |\n' server "req/s" p50 p99 "peak RSS MiB" "edge ÷ it"
printf '|%s|%s|%s|%s|%s|%s|\n' "----------------" "------------" "-----------" "-----------" "---------------" "------------"
for n in "${names[@]}"; do
	ratio=$(awk -v a="${RPS[edge]}" -v b="${RPS[$n]}" 'BEGIN { printf "%.2f", a / b }')
	printf '| %-14s | %10s | %9s | %9s | %13s | %10s |\n' "$n" "${RPS[$n]}" "${P50[$n]}" "${P99[$n]}" "${RSS[$n]}" "$ratio"
done
echo
echo "Goals: edge ≥ 0.6 × bare-go and ≥ 1.5 × caddy-respond (docs/edge-gateway.md)."

# Verified agents on the same edge: interleaved rounds of each mode, the
# median round of each reported.
declare -A ARPS
for round in $(seq 1 "$ROUNDS"); do
	taskset -c "$LCPU" bin/agentload -addr "127.0.0.1:$EDGE_PORT" -path "$PATH_Q" -c "$CONNS" -d "$DURATION" \
		>>"$WORK/agent-rounds" 2>>"$WORK/agentload.log" || { cat "$WORK/agentload.log" >&2; exit 1; }
	echo "round $round agents: $(tail -3 "$WORK/agent-rounds" | tr '\n' ' ')" >&2
done
for mode in unsigned fresh repeated; do
	ARPS[$mode]=$(awk -v m="$mode" '$1 == m {print $2}' "$WORK/agent-rounds" | sort -n | awk -v n="$ROUNDS" 'NR == int((n + 1) / 2)')
done
echo
echo "bench-edge agents: the same GET through the same edge, agentload -c$CONNS -d$DURATION on CPU $LCPU, median of $ROUNDS rounds"
echo
printf '| %-28s | %10s | %12s |\n' requests "req/s" "÷ unsigned"
printf '|%s|%s|%s|\n' "------------------------------" "------------" "--------------"
for mode in unsigned fresh repeated; do
	printf '| %-28s | %10s | %12s |\n' "$mode" "${ARPS[$mode]}" "$(awk -v a="${ARPS[$mode]}" -v b="${ARPS[unsigned]}" 'BEGIN { printf "%.2f", a / b }')"
done
echo
echo "Goals: fresh ≥ 0.4 × unsigned, repeated ≥ 0.9 × unsigned."
