#!/usr/bin/env bash
# Installs what `make run` and `make test` need and a fresh Debian machine with
# Go lacks: redis-server (with redis-cli), curl and, for the tests, Node.js with npm,
# the npm packages of the OpenAPI client check, Chromium, python3 and
# systemd-analyze (package systemd). As root it installs with
# apt; otherwise it prints the command to run and fails.
#
#   deploy/local/deps.sh run     what `make run` needs
#   deploy/local/deps.sh test    what `make test` needs
set -euo pipefail
cd "$(dirname "$0")/../.."

need=()
command -v redis-server >/dev/null || need+=(redis-server)
command -v redis-cli >/dev/null || need+=(redis-tools)
command -v curl >/dev/null || need+=(curl)
if [ "${1:-run}" = test ]; then
  command -v npm >/dev/null || need+=(nodejs npm)
  # deploy/check: promtool checks and unit-tests the alert rules.
  command -v promtool >/dev/null || need+=(prometheus)
  # deploy/check/systemd rates each unit's exposure with systemd-analyze.
  command -v systemd-analyze >/dev/null || need+=(systemd)
  # The site's browser tests (origin/site) drive headless Chromium; the
  # developer portal's Python verification sample runs under python3.
  command -v chromium >/dev/null || need+=(chromium)
  command -v python3 >/dev/null || need+=(python3)
fi

if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "deps: missing ${need[*]}; install them with:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y ${need[*]}" >&2
    exit 1
  fi
  echo "deps: installing ${need[*]} with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  # A fresh VM often runs its own apt at boot (unattended-upgrades), and
  # `make run` may be installing beside `make test`: wait for the lock
  # rather than fail on it.
  lock=(-o DPkg::Lock::Timeout=600)
  apt-get "${lock[@]}" update -qq
  apt-get "${lock[@]}" install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

if [ "${1:-run}" = test ]; then
  # The OpenAPI lint and client-generator check (origin/openapi) run the
  # pinned npm packages of package-lock.json; npm ci installs exactly those.
  dir=origin/openapi/clientcheck
  if [ ! -d "$dir/node_modules" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules" ]; then
    echo "deps: installing the npm packages of $dir"
    npm ci --no-audit --no-fund --loglevel=error --prefix "$dir"
    touch "$dir/node_modules"
  fi
  # The Go client-generator check (origin/openapi) runs the oapi-codegen
  # pinned by origin/openapi/gocheck/go.mod, a module of its own; its
  # modules are fetched here so that the test runs offline.
  (cd origin/openapi/gocheck && "${GO:-go}" mod download)
  # The independent verifiers the worker's tests run on real deliveries
  # (RFC 9421, Standard Webhooks), and the independent Web Bot Auth signer
  # the edge's bot_auth tests run (Cloudflare's web-bot-auth).
  for dir in worker/testdata/verify caddymodules/botauth/testdata/npmsigner; do
    if [ ! -d "$dir/node_modules" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules" ]; then
      echo "deps: installing the npm packages of $dir"
      npm ci --no-audit --no-fund --loglevel=error --prefix "$dir"
      touch "$dir/node_modules"
    fi
  done
fi
