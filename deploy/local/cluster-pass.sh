#!/usr/bin/env bash
# The Redis Cluster pass of make test: the tests the first pass recorded as
# starting the suite's Redis (redistest.New; internal/redistest/record.go),
# run again with IW_REDIS_URL=redis+cluster://, where New starts a local
# three-master cluster instead of one server. Only the URL's scheme counts;
# the tests start their own nodes.
#
#   deploy/local/cluster-pass.sh RECORD [go test flags...]
#
# With no record (make test-cluster before any make test), the packages in
# CLUSTER_PASS_PKGS run whole instead; make test sets none, so there an
# empty record is an error.
set -euo pipefail
cd "$(dirname "$0")/../.."
record=$1
shift
run=()
if [ -s "$record" ]; then
  pkgs=$(awk '{print $1}' "$record" | sort -u)
  names=$(awk '{print $2}' "$record" | sort -u | paste -sd '|')
  run=(-run "^($names)\$")
  echo "cluster-pass: $(awk '{print $2}' "$record" | sort -u | wc -l) tests in $(echo "$pkgs" | wc -l) packages"
elif [ -n "${CLUSTER_PASS_PKGS:-}" ]; then
  pkgs=$CLUSTER_PASS_PKGS
  echo "cluster-pass: no record ($record): every test of $(echo "$pkgs" | wc -w) packages"
else
  echo "cluster-pass: $record lists no test; the first pass of make test records them" >&2
  exit 1
fi
# Each test binary starts the next test's cluster while a test runs
# (internal/redistest, spareDir); the spares keep their data here.
spares=$(mktemp -d "${TMPDIR:-/tmp}/iw-redistest-spares.XXXXXX")
trap 'rm -rf "$spares"' EXIT
# shellcheck disable=SC2086 # one word per package directory
IW_REDIS_URL=redis+cluster:// IW_REDISTEST_SPARE_DIR=$spares "${GO:-go}" test "$@" ${run[@]+"${run[@]}"} $pkgs
