#!/usr/bin/env bash
# `make loadtest`: the k6 scenarios of loadtest/k6 against the `make run`
# stack (deploy/local/run.sh), started here twice:
#   phase load    read mix, spike, authenticated webhook subscriptions, with
#                 the rate-limit quota raised (loopback is a single client)
#   phase limits  the rate-limit scenario at the real quota (1000/60 s),
#                 under background load from 40 other clients whose
#                 addresses come through X-Forwarded-For, trusted from
#                 loopback in this phase only
# The stack runs on core 0 and k6 on core 1 (taskset) when there are two.
# Writes loadtest/out/{load,limits}.{json,txt}, summary.json and summary.txt.
set -euo pipefail
cd "$(dirname "$0")/.."

out=loadtest/out
mkdir -p "$out"
base=http://localhost:8080
export PATH="$PATH:$(go env GOPATH)/bin"
if ! command -v k6 >/dev/null; then
  echo "loadtest: installing k6 (go install go.k6.io/k6@v1.8.1)"
  go install go.k6.io/k6@v1.8.1
fi
go build -o bin/ ./loadtest/receiver

server_cpu=() client_cpu=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
  server_cpu=(taskset -c 0) client_cpu=(taskset -c 1)
fi

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT INT TERM

if curl -fsS -o /dev/null "$base/api/v1/" 2>/dev/null; then
  echo "loadtest: something already answers on $base; stop it (make run?) first" >&2
  exit 1
fi

bin/receiver -addr 127.0.0.1:8099 >"$out/receiver.log" 2>&1 &
pids+=($!)

stack=""
start_stack() { # phase, then env assignments
  local phase=$1; shift
  env "$@" "${server_cpu[@]}" deploy/local/run.sh >"$out/stack-$phase.log" 2>&1 &
  stack=$!
  pids+=("$stack")
  for _ in $(seq 300); do
    curl -fsS -o /dev/null "$base/api/v1/" 2>/dev/null && return 0
    kill -0 "$stack" 2>/dev/null || break
    sleep 0.1
  done
  echo "loadtest: the stack did not start; see $out/stack-$phase.log" >&2
  tail -n 20 "$out/stack-$phase.log" >&2
  exit 1
}
stop_stack() {
  kill -TERM "$stack" 2>/dev/null || true
  wait "$stack" 2>/dev/null || true
}

status=0
run_phase() {
  local phase=$1; shift
  echo "loadtest: phase $phase"
  start_stack "$phase" "$@"
  if ! PHASE="$phase" OUT_DIR="$out" BASE_URL="$base" "${client_cpu[@]}" k6 run --quiet \
      loadtest/k6/invoicewire.js 2>"$out/k6-$phase.log"; then
    status=1
    echo "loadtest: phase $phase failed (thresholds or checks; see $out/k6-$phase.log)" >&2
  fi
  stop_stack
}

run_phase load IW_RATELIMIT_QUOTA=100000000 IW_RATELIMIT_REGISTER_QUOTA=100000000 IW_EDGE_CONNS_PER_ADDRESS=100000 IW_TRUSTED_PROXIES=
run_phase limits IW_RATELIMIT_QUOTA=1000 IW_RATELIMIT_WINDOW=60 IW_RATELIMIT_REGISTER_QUOTA=100000000 IW_TRUSTED_PROXIES=127.0.0.1/32

{
  printf '{"load": '; cat "$out/load.json" 2>/dev/null || printf 'null'
  printf ', "limits": '; cat "$out/limits.json" 2>/dev/null || printf 'null'
  printf '}\n'
} >"$out/summary.json"
cat "$out/load.txt" "$out/limits.txt" >"$out/summary.txt" 2>/dev/null || true
echo
echo "loadtest: summary in $out/summary.txt and $out/summary.json"
cat "$out/summary.txt"
exit "$status"
