#!/usr/bin/env bash
# `make bench`: every side-by-side benchmark of the project, then one table of
# ratios (docs/architecture.md: speed is a ratio against a reference measured in the
# same run on the same machine, never a timed assertion).
#
#   origin    go test -bench CacheHit ./origin/        ristretto hit ÷ bare net/http
#   edge      loadtest/edge/bench.sh (make bench-edge)  edge hit ÷ bare Go, ÷ Caddy respond,
#                                                      ÷ nginx proxy_cache, ÷ Varnish
#   webhooks  go test -bench Webhook ./worker/          burst deliveries/s ÷ 2,000 goal,
#                                                      steady p99 ÷ 1 s goal
#   ask       go test -bench Ask ./origin/ask/         p95 on 10,000 articles ÷ 10 ms goal
#
# BENCH_ONLY="origin edge" runs a subset; each part's full output is kept in
# loadtest/out/bench-<part>.txt. Parts that fail are reported, not hidden:
# the table is still printed, then the script exits 1 naming them.
set -uo pipefail
cd "$(dirname "$0")/.."
out=loadtest/out
mkdir -p "$out"
only=" ${BENCH_ONLY:-origin edge webhooks ask} "
rows=()   # area|measurement|value|reference|ratio|goal|met
row() { rows+=("$1|$2|$3|$4|$5|$6|$7"); }
failed=()  # parts whose command failed
fail() { echo "bench: $1 failed; see $out/bench-$1.txt"; failed+=("$1"); }
go() { command "${GO:-go}" "$@"; }  # make bench passes its GO
meets() { awk -v r="$1" -v g="$2" 'BEGIN { if (r == "" || r == "-") print "-"; else if (r + 0 >= g + 0) print "yes"; else print "NO" }'; }

if [[ $only == *" origin "* ]]; then
  echo "bench: origin (go test -bench CacheHit -count 5 ./origin/)"
  go test -run '^$' -bench CacheHit -benchmem -count 5 ./origin/ >"$out/bench-origin.txt" 2>&1 || fail origin
  for p in list article; do
    r=$(awk -v p="$p" '$1 ~ "^BenchmarkCacheHit/"p"/ratio" { for (i = 2; i < NF; i++) if ($(i+1) == "origin-rate/bare-rate") v = $i } END { print v }' "$out/bench-origin.txt")
    row origin "ristretto hit, $p (loopback HTTP)" "${r:--}" "bare net/http, same bytes" "${r:--}" ">= 0.9" "$(meets "$r" 0.9)"
  done
fi

if [[ $only == *" edge "* ]]; then
  echo "bench: edge (loadtest/edge/bench.sh, wrk against edge, bare Go, Caddy respond, nginx, Varnish)"
  { loadtest/edge/deps.sh && deploy/local/deps.sh run && loadtest/edge/bench.sh; } >"$out/bench-edge.txt" 2>&1 || fail edge
  rps() { awk -F'|' -v n="$1" '{ gsub(/ /, "", $2) } $2 == n { gsub(/ /, "", $3); print $3 }' "$out/bench-edge.txt" | tail -1; }
  edge=$(rps edge)
  for ref in bare-go caddy-respond nginx varnish; do
    r=$(rps "$ref")
    ratio=$(awk -v a="$edge" -v b="$r" 'BEGIN { if (a == "" || b == "" || b == 0) print "-"; else printf "%.2f", a / b }')
    goal="-"; met="-"
    [ "$ref" = bare-go ] && goal=">= 0.6" && met=$(meets "$ratio" 0.6)
    [ "$ref" = caddy-respond ] && goal=">= 1.5" && met=$(meets "$ratio" 1.5)
    row edge "cache hit, every module on (${edge:-?} req/s)" "${edge:--}" "$ref (${r:-?} req/s)" "$ratio" "$goal" "$met"
  done
fi

if [[ $only == *" webhooks "* ]]; then
  echo "bench: webhooks (go test -bench Webhook ./worker/)"
  go test -run '^$' -bench Webhook -benchtime 1x -timeout 20m ./worker/ >"$out/bench-webhooks.txt" 2>&1 || fail webhooks
  metric() { awk -v b="$1" -v u="$2" '$1 ~ "^"b { for (i = 2; i < NF; i++) if ($(i+1) == u) v = $i } END { print v }' "$out/bench-webhooks.txt"; }
  dps=$(metric BenchmarkWebhookBurst deliveries/s)
  p99=$(metric BenchmarkWebhookSteady p99-ms)
  r1=$(awk -v a="$dps" 'BEGIN { if (a == "") print "-"; else printf "%.2f", a / 2000 }')
  r2=$(awk -v a="$p99" 'BEGIN { if (a == "" || a == 0) print "-"; else printf "%.2f", 1000 / a }')
  row webhooks "burst, signed deliveries/s" "${dps:--}" "goal 2,000/s" "$r1" ">= 1" "$(meets "$r1" 1)"
  row webhooks "200 events/s × 10 subs, p99 ms" "${p99:--}" "goal 1,000 ms (ratio goal / p99)" "$r2" ">= 1" "$(meets "$r2" 1)"
fi

if [[ $only == *" ask "* ]]; then
  if grep -qs '^func BenchmarkAsk' origin/ask/*_test.go; then
    echo "bench: ask (go test -bench Ask -benchtime 3000x ./origin/ask/, as make bench-ask)"
    go test -run '^$' -bench 'Ask' -benchtime 3000x ./origin/ask/ >"$out/bench-ask.txt" 2>&1 || fail ask
    for b in Ask AskHTTP; do
      p95=$(awk -v b="BenchmarkAsk" -v n="$b" '$1 ~ "^Benchmark"n"(-[0-9]+)?$" { for (i = 2; i < NF; i++) if ($(i+1) == "p95-ms") v = $i } END { print v }' "$out/bench-ask.txt")
      r=$(awk -v a="$p95" 'BEGIN { if (a == "" || a == 0) print "-"; else printf "%.2f", 10 / a }')
      row ask "$b p95 ms, 10,000-article corpus" "${p95:--}" "goal 10 ms (ratio goal / p95)" "$r" ">= 1" "$(meets "$r" 1)"
    done
  else
    row ask "/ask p95, 10,000 articles" "-" "no benchmark in origin/ask yet" "-" ">= 1" "-"
  fi
fi

{
  echo
  echo "make bench: $(date -u +%FT%TZ), $(nproc) cores, $(go version | awk '{print $3}')"
  printf '| %-8s | %-46s | %10s | %-36s | %6s | %6s | %3s |\n' area measurement value reference ratio goal met
  printf '|%s|%s|%s|%s|%s|%s|%s|\n' ---------- ------------------------------------------------ ------------ -------------------------------------- -------- -------- -----
  for r in "${rows[@]}"; do
    IFS='|' read -r a m v ref ratio goal met <<<"$r"
    printf '| %-8s | %-46s | %10s | %-36s | %6s | %6s | %3s |\n' "$a" "$m" "$v" "$ref" "$ratio" "$goal" "$met"
  done
  echo
  echo "Full outputs: $out/bench-*.txt"
} | tee "$out/bench.txt"
if ((${#failed[@]})); then
  echo "make bench: failed: ${failed[*]}" >&2
  exit 1
fi
