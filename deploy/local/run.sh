#!/usr/bin/env bash
# `make run`: the whole service on this machine, with its own Redis.
#
# Starts redis-server (append-only, fsync every second: at most one second of
# writes can be lost in a crash) on 127.0.0.1:6399 with its data in
# .run/6399/redis,
# and a second, non-persistent one on 127.0.0.1:6398 for the edge's
# rate-limit counts, publishes content/ with iwctl (plus the demo retraction and newsletter),
# starts the origin on 127.0.0.1:8081, one webhook worker and the edge gateway
# on :8080 in front of the origin, prints the URLs, and stops everything it
# started on Ctrl-C or SIGTERM (then exits 130 or 143), or when any of its
# processes dies (then exits 1, naming it and showing its last log lines).
#
# Before starting anything it checks that none of the seven ports it will
# use is taken, since Caddy binds with SO_REUSEPORT and a second edge would
# share the first one's ports without an error. Each process's output goes
# to the terminal and to .run/<Redis port>/<name>.log.
set -euo pipefail
cd "$(dirname "$0")/../.."

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
# The two Redis servers started below listen where those URLs point, and a
# run's data and logs are kept under .run/<its Redis port> (below), so a
# second make run beside the first needs only other ports in the IW_* values.
url_port() {
  [[ $2 =~ ^redis://(127\.0\.0\.1|localhost):([0-9]+)(/[0-9]*)?$ ]] && echo "${BASH_REMATCH[2]}" && return
  echo "run: $1=$2: make run starts this Redis itself, so it must be redis://127.0.0.1:<port>/<db>" >&2
  return 1
}
redis_port=$(url_port IW_REDIS_URL "$IW_REDIS_URL")
counters_port=$(url_port IW_RATELIMIT_REDIS_URL "$IW_RATELIMIT_REDIS_URL")
# Each run keeps its state in a directory of its own, named by its Redis's
# port, which no two runs can share: the data stays with the Redis that
# wrote it (two Redis appending to one append-only file, or one rewriting
# it under the other, would mix or lose both), and a second run beside the
# first truncates none of the first one's logs.
run_dir=.run/$redis_port

# Ports: the value of each variable and the address make run checks.
host_port() { # VAR VALUE: prints "host port" of a host:port value
  [[ $2 =~ ^\[?([^]]*)\]?:([0-9]+)$ ]] || { echo "run: $1=$2 is not host:port" >&2; return 1; }
  local host=${BASH_REMATCH[1]}
  case $host in "" | 0.0.0.0 | "::") host=127.0.0.1 ;; esac
  echo "$host ${BASH_REMATCH[2]}"
}
[[ $IW_EDGE_PORT =~ ^[0-9]+$ ]] || { echo "run: IW_EDGE_PORT=$IW_EDGE_PORT is not a port number" >&2; exit 1; }
listeners=("IW_EDGE_PORT 127.0.0.1 $IW_EDGE_PORT")
for var in IW_EDGE_ADMIN_ADDR IW_ORIGIN_ADDR IW_ORIGIN_METRICS_ADDR IW_WORKER_METRICS_ADDR; do
  hp=$(host_port "$var" "${!var}")
  listeners+=("$var $hp")
done
listeners+=("IW_REDIS_URL 127.0.0.1 $redis_port" "IW_RATELIMIT_REDIS_URL 127.0.0.1 $counters_port")
# taken HOST PORT: something accepts connections there.
taken() { timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$1" "$2" 2>/dev/null; }
busy=no
declare -A port_var=()
for l in "${listeners[@]}"; do
  read -r var host port <<<"$l"
  if [ -n "${port_var[$port]:-}" ]; then
    echo "run: ${port_var[$port]} and $var both use port $port; give one of them another port" >&2
    busy=yes
  fi
  port_var[$port]=$var
  if taken "$host" "$port" || { [ "$var" = IW_EDGE_PORT ] && taken ::1 "$port"; }; then
    echo "run: port $port ($var=${!var}) is already in use (another make run?); stop that program, or set $var to a free port" >&2
    busy=yes
  fi
done
[ "$busy" = no ] || exit 1
# A checkout run before this layout kept its data in .run/redis whatever the
# port: the first run after it takes that data over, so nothing published
# is left behind (the port check above has made sure no run still uses it).
if [ -d .run/redis ] && [ ! -e "$run_dir/redis" ]; then
  mkdir -p "$run_dir"
  mv .run/redis "$run_dir/redis"
  echo "run: moved the data of an earlier make run from .run/redis to $run_dir/redis"
fi
mkdir -p "$run_dir/redis"
# Two runs started at the same moment on the same Redis port could both
# find it free: the first to lock the directory has it. The lock is held
# as long as a process of the run lives (they inherit it).
exec 9>"$run_dir/lock"
flock -n 9 || { echo "run: another make run is using $run_dir (IW_REDIS_URL=$IW_REDIS_URL); stop it, or set IW_REDIS_URL to another port" >&2; exit 1; }

# Every process started, with its name and log file; stop() ends them all.
pids=()
declare -A name_of=() log_of=()
stop() {
  trap - INT TERM EXIT
  [ ${#pids[@]} -gt 0 ] || return 0
  echo
  echo "run: stopping"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  echo "run: stopped"
}
# A signal stops everything and ends the script; the EXIT trap covers the
# rest (an error, a process that died).
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM
trap stop EXIT

# started NAME LOG: records the process just started in the background.
started() {
  pids+=($!)
  name_of[$!]=$1
  log_of[$!]=$2
}
# run_logged NAME COMMAND...: starts COMMAND in the background, its output
# on the terminal and in $run_dir/NAME.log. tee ignores Ctrl-C (-i), so the
# process can log its own shutdown.
run_logged() {
  local name=$1 log="$run_dir/$1.log"
  shift
  : >"$log"
  "$@" > >(tee -i -a "$log") 2>&1 &
  started "$name" "$log"
}
# exited PID STATUS WHAT: says which process exited, how and when, with
# the end of its log, and fails the run (the EXIT trap stops the others).
exited() {
  sleep 0.2 # the last lines through tee
  echo "run: ${name_of[$1]} exited $3 (status $2); stopping the others; the end of ${log_of[$1]}:" >&2
  tail -n 20 "${log_of[$1]}" 2>/dev/null | sed 's/^/  /' >&2
  exit 1
}
# alive: fails the start-up as soon as any process has exited, naming it.
alive() {
  local pid status
  for pid in "${pids[@]}"; do
    kill -0 "$pid" 2>/dev/null && continue
    status=0
    wait "$pid" || status=$?
    exited "$pid" "$status" "during start-up"
  done
}
# ready NAME SECONDS URL: waits for URL to answer 2xx, failing the start-up
# if a process dies meanwhile or NAME does not answer in time.
ready() {
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    alive
    curl -fsS --max-time 2 -o /dev/null "$3" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "run: $1 did not answer $3 within $2 s; see $run_dir/$1.log" >&2
  exit 1
}
# How long a Redis reading its append-only file back may go without
# progress before make run gives up on it (RUN_REDIS_STALL_SECONDS).
redis_stall=${RUN_REDIS_STALL_SECONDS:-60}
# now_us: the wall clock in microseconds.
now_us() { echo "${EPOCHREALTIME/./}"; }
# ready_redis NAME PORT: waits for PONG. Redis answers LOADING while it
# reads a large append-only file back: that is waited through for as long
# as INFO shows the loaded bytes growing; anything else gets 10 s.
ready_redis() {
  local name=$1 port=$2 reply loaded last="" since
  since=$(now_us)
  while :; do
    alive
    reply=$(redis-cli -p "$port" ping 2>&1) || true
    case $reply in
      PONG) return 0 ;;
      *LOADING*)
        loaded=$(redis-cli -p "$port" info persistence 2>/dev/null | tr -d '\r' | sed -n 's/^loading_loaded_bytes://p') || true
        if [ "$loaded" != "$last" ]; then
          last=$loaded since=$(now_us)
        elif (($(now_us) - since >= redis_stall * 1000000)); then
          echo "run: $name on port $port has loaded no more of its data for $redis_stall s (at $loaded bytes); see $run_dir/$name.log" >&2
          exit 1
        fi
        ;;
      *)
        [ -z "$last" ] || { last="" since=$(now_us); }
        if (($(now_us) - since >= 10000000)); then
          echo "run: $name on port $port did not answer PING within 10 s ($reply); see $run_dir/$name.log" >&2
          exit 1
        fi
        ;;
    esac
    sleep 0.1
  done
}

redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$PWD/$run_dir/redis" \
  --appendonly yes --appendfsync everysec --save "" \
  --logfile "$PWD/$run_dir/redis.log" --protected-mode yes &
started redis "$run_dir/redis.log"
redis-server --port "$counters_port" --bind 127.0.0.1 --dir "$PWD/$run_dir" \
  --appendonly no --save "" --maxmemory 256mb --maxmemory-policy volatile-ttl \
  --logfile "$PWD/$run_dir/redis-counters.log" --protected-mode yes &
started redis-counters "$run_dir/redis-counters.log"
ready_redis redis "$redis_port"
ready_redis redis-counters "$counters_port"

echo "run: publishing content/"
bin/iwctl sync content | tail -n 1
# The demo data shows every state: one article retracted, one newsletter sent.
bin/iwctl retract malaysia-rm1m-5m-phase-reportedly-delayed-2028 \
  --reason "The report rested on a single unverified secondary source; LHDN has not confirmed any deferral of the RM1m-5m phase to 2028."
bin/iwctl newsletter send --week 2026-w47

run_logged origin bin/origin
run_logged worker bin/worker
ready origin 60 "http://$IW_ORIGIN_ADDR/api/v1/"
run_logged edge bin/edge run --config caddyfile/Caddyfile --adapter caddyfile
ready edge 30 "http://127.0.0.1:$IW_EDGE_PORT/api/v1/"
alive

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

# Stop everything as soon as any process ends (the EXIT trap does it), and
# fail: make run's processes are meant to run until stopped.
status=0
wait -n -p died "${pids[@]}" || status=$?
exited "$died" "$status" "after start-up"
