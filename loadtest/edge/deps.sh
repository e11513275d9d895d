#!/usr/bin/env bash
# Installs what `make bench-edge` and `make cachetests` need beyond `make
# run`: wrk, nginx (proxy_cache is in nginx-light), Varnish, Node.js with
# npm, and taskset (util-linux). As root it installs with apt; otherwise it
# prints the command to run and fails. Like deploy/local/deps.sh.
set -euo pipefail

need=()
command -v wrk >/dev/null || need+=(wrk)
command -v nginx >/dev/null || need+=(nginx-light)
command -v varnishd >/dev/null || need+=(varnish)
command -v npm >/dev/null || need+=(nodejs npm)
command -v taskset >/dev/null || need+=(util-linux)
command -v redis-server >/dev/null || need+=(redis-server)
command -v curl >/dev/null || need+=(curl)

if [ ${#need[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "deps: missing ${need[*]}; install them with:" >&2
		echo "  sudo apt-get update && sudo apt-get install -y ${need[*]}" >&2
		exit 1
	fi
	echo "deps: installing ${need[*]} with apt-get"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
