#!/usr/bin/env bash
# `make run`: the whole service on this machine, with its own Redis.
#
# Starts redis-server (append-only, fsync every second: at most one second of
# writes can be lost in a crash) on 127.0.0.1:6399 with its data in .run/,
# and a second, non-persistent one on 127.0.0.1:6398 for the edge's
# rate-limit counts, publishes content/ with iwctl (plus the demo retraction and newsletter),
# starts the origin on 127.0.0.1:8081, one webhook worker and the edge gateway
# on :8080 in front of the origin, prints the URLs, and stops everything it
# started on Ctrl-C or SIGTERM (then exits 130 or 143), or when any of its
# processes dies.
set -euo pipefail
cd "$(dirname "$0")/../.."

run_dir=.run
mkdir -p "$run_dir/redis"
export IW_EDGE_PORT="${IW_EDGE_PORT:-8080}"
export IW_PUBLIC_URL="${IW_PUBLIC_URL:-http://localhost:$IW_EDGE_PORT}"
export IW_REDIS_URL="${IW_REDIS_URL:-redis://127.0.0.1:6399/0}"
export IW_ORIGIN_ADDR="${IW_ORIGIN_ADDR:-127.0.0.1:8081}"
export IW_EDGE_ADMIN_ADDR="${IW_EDGE_ADMIN_ADDR:-127.0.0.1:2019}"
export IW_ORIGIN_METRICS_ADDR="${IW_ORIGIN_METRICS_ADDR:-127.0.0.1:8091}"
export IW_WORKER_METRICS_ADDR="${IW_WORKER_METRICS_ADDR:-127.0.0.1:8082}"
# Local receivers: allow 127.0.0.1 and ::1 (and plain http there) for
# webhooks, no more of loopback than a local receiver needs; the service's
# own ports stay refused there (docs/decisions.md).
export IW_WEBHOOK_ALLOW_CIDRS="${IW_WEBHOOK_ALLOW_CIDRS:-127.0.0.1/32,::1/128}"
# Local agents: their signatures directories may be served on loopback.
export IW_BOTAUTH_ALLOW_CIDRS="${IW_BOTAUTH_ALLOW_CIDRS:-127.0.0.0/8,::1/128}"
# Rate-limit counts churn and need no durability: a Redis of their own,
# without an append-only file (docs/decisions.md, "Rate-limit state").
export IW_RATELIMIT_REDIS_URL="${IW_RATELIMIT_REDIS_URL:-redis://127.0.0.1:6398/0}"
# The two Redis servers started below listen where those URLs point, so a
# second make run beside the first needs only other ports in the IW_* values.
url_port() {
  [[ $2 =~ ^redis://(127\.0\.0\.1|localhost):([0-9]+)(/[0-9]*)?$ ]] && echo "${BASH_REMATCH[2]}" && return
  echo "run: $1=$2: make run starts this Redis itself, so it must be redis://127.0.0.1:<port>/<db>" >&2
  return 1
}
redis_port=$(url_port IW_REDIS_URL "$IW_REDIS_URL")
counters_port=$(url_port IW_RATELIMIT_REDIS_URL "$IW_RATELIMIT_REDIS_URL")

pids=()
stopping=no
stop() {
  stopping=yes
  trap - INT TERM EXIT
  echo
  echo "run: stopping"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  echo "run: stopped"
}
# A signal stops everything and ends the script (carrying on would start
# the rest anyway); the EXIT trap covers an error or a process that died.
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM
trap stop EXIT

for port in "$redis_port" "$counters_port"; do
  if redis-cli -p "$port" ping >/dev/null 2>&1; then
    echo "run: something already answers on port $port; stop it first (is another make run going?)" >&2
    exit 1
  fi
done
redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$PWD/$run_dir/redis" \
  --appendonly yes --appendfsync everysec --save "" \
  --logfile "$PWD/$run_dir/redis.log" --protected-mode yes &
pids+=($!)
redis-server --port "$counters_port" --bind 127.0.0.1 --dir "$PWD/$run_dir" \
  --appendonly no --save "" --maxmemory 256mb --maxmemory-policy volatile-ttl \
  --logfile "$PWD/$run_dir/redis-counters.log" --protected-mode yes &
pids+=($!)
# A Redis answers LOADING while it reads a large append-only file back:
# wait for PONG itself, for up to a minute.
for port in "$redis_port" "$counters_port"; do
  for _ in $(seq 600); do
    [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && break
    sleep 0.1
  done
  [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] ||
    { echo "run: redis-server on port $port did not become ready; see $run_dir/redis*.log" >&2; exit 1; }
done

echo "run: publishing content/"
bin/iwctl sync content | tail -n 1
# The demo data shows every state: one article retracted, one newsletter sent.
bin/iwctl retract malaysia-rm1m-5m-phase-reportedly-delayed-2028 \
  --reason "The report rested on a single unverified secondary source; LHDN has not confirmed any deferral of the RM1m-5m phase to 2028."
bin/iwctl newsletter send --week 2026-w47

bin/origin &
pids+=($!)
bin/worker &
pids+=($!)
for _ in $(seq 100); do
  curl -fsS -o /dev/null "http://$IW_ORIGIN_ADDR/api/v1/" 2>/dev/null && break
  sleep 0.1
done
bin/edge run --config caddyfile/Caddyfile --adapter caddyfile &
pids+=($!)
for _ in $(seq 200); do
  curl -fsS -o /dev/null "http://127.0.0.1:$IW_EDGE_PORT/api/v1/" 2>/dev/null && break
  sleep 0.1
done

cat <<MSG

Invoicewire is running:
  API          $IW_PUBLIC_URL/api/v1/
  OpenAPI      $IW_PUBLIC_URL/openapi.json
  Site         $IW_PUBLIC_URL/  (developer portal: $IW_PUBLIC_URL/developers)
  Metrics      http://$IW_EDGE_ADMIN_ADDR/metrics (edge), http://$IW_ORIGIN_METRICS_ADDR/metrics (origin),
               http://$IW_WORKER_METRICS_ADDR/metrics (worker)
  Webhooks     receivers on 127.0.0.1 allowed, not on the ports above (IW_WEBHOOK_ALLOW_CIDRS=$IW_WEBHOOK_ALLOW_CIDRS)
  Redis        $IW_REDIS_URL (data in $run_dir/redis); rate-limit counts in $IW_RATELIMIT_REDIS_URL
Ctrl-C stops everything.
MSG

# Stop everything as soon as any process ends (the EXIT trap does it).
wait -n "${pids[@]}" || true
[ "$stopping" = yes ] || echo "run: a process exited; stopping the others" >&2
