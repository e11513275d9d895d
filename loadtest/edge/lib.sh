# Helpers shared by bench.sh and ../cachetests/cachetests.sh: start the
# reference caches on loopback with the configs in this folder, and stop
# everything that was started when the script exits. Source it; set WORK to
# a scratch folder first.

PIDS=()

stop_all() {
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
}

# free_port prints a loopback port nothing listens on (another benchmark may
# be running on this machine, so fixed ports are not used).
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 20000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			case " ${USED_PORTS:-} " in *" $p "*) continue ;; esac
			USED_PORTS="${USED_PORTS:-} $p"
			echo "$p"
			return
		fi
	done
}

# wait_port HOST:PORT waits until something accepts connections there.
wait_port() {
	local hp=$1 i
	for i in $(seq 1 100); do
		if (exec 3<>"/dev/tcp/${hp%:*}/${hp#*:}") 2>/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	echo "nothing listens on $hp" >&2
	return 1
}

# start_nginx PORT ORIGIN_HOSTPORT [CPU]
start_nginx() {
	local port=$1 origin=$2 cpu=${3:-}
	local dir="$WORK/nginx-$port"
	mkdir -p "$dir"
	sed -e "s|@PORT@|$port|g" -e "s|@ORIGIN@|$origin|g" -e "s|@DIR@|$dir|g" \
		"$EDGE_LOADTEST/nginx.conf.tmpl" >"$dir/nginx.conf"
	${cpu:+taskset -c "$cpu"} nginx -c "$dir/nginx.conf" -p "$dir" >"$dir/out.log" 2>&1 &
	PIDS+=($!)
	wait_port "127.0.0.1:$port"
}

# start_varnish PORT ORIGIN_PORT [CPU]
start_varnish() {
	local port=$1 oport=$2 cpu=${3:-}
	local dir="$WORK/varnish-$port"
	mkdir -p "$dir"
	chmod 755 "$WORK" "$dir"
	sed -e "s|@ORIGIN_PORT@|$oport|g" "$EDGE_LOADTEST/default.vcl.tmpl" >"$dir/default.vcl"
	chmod 644 "$dir/default.vcl"
	${cpu:+taskset -c "$cpu"} varnishd -F -a "127.0.0.1:$port" -f "$dir/default.vcl" \
		-n "$dir/n" -s malloc,256m >"$dir/out.log" 2>&1 &
	PIDS+=($!)
	wait_port "127.0.0.1:$port"
}

# peak_rss_kb PID: the peak resident memory of PID and its descendants.
peak_rss_kb() {
	local pid=$1 total=0 kb child
	kb=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
	total=$((total + ${kb:-0}))
	for child in $(pgrep -P "$pid" 2>/dev/null); do
		total=$((total + $(peak_rss_kb "$child")))
	done
	echo "$total"
}
