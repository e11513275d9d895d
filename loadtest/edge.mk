# Edge targets; the Makefile includes this file (`include loadtest/edge.mk`).
#   make bench-edge   the edge's cache-hit path beside bare Go, bare Caddy
#                     respond, nginx proxy_cache and Varnish (loadtest/edge)
#   make cachetests   http-cache-tests 0.4.5 against the edge, nginx and
#                     Varnish (loadtest/cachetests)
#   make bench-traffic  internet-shaped load on the real stack: a million
#                     fresh clients a minute over 30,000 URLs with Zipf
#                     popularity, beside one URL in the same run
#                     (loadtest/traffic; loadtest/out/traffic.md)
#   make bench-cluster  three edges, two origins, two workers on a Redis
#                     Cluster of three masters with a replica each: one
#                     client's quota over the edges, publish-to-edge delay,
#                     kill -9 of a Redis master, of an edge and an origin
#                     (loadtest/cluster; loadtest/out/cluster.md)
#   make bench-cluster-check  the same checks, shorter: pass/fail in
#                     about two minutes
# They are run by a person, never by `make test`.

.PHONY: bench-edge cachetests bench-traffic bench-cluster bench-cluster-check

bench-edge:
	@loadtest/edge/deps.sh
	@deploy/local/deps.sh run
	loadtest/edge/bench.sh
	$(GO) test -run '^$$' -bench . -benchmem ./caddymodules/edgecache/

cachetests:
	@loadtest/edge/deps.sh
	@deploy/local/deps.sh run
	loadtest/cachetests/cachetests.sh

# The edge has BENCH_EDGE_CPU (0) to itself; the origin and both Redis
# servers run on BENCH_ORIGIN_CPU (1), beside the load generator
# (BENCH_LOAD_CPU, 1), whose own CPU the report shows. TRAFFIC_DURATION,
# TRAFFIC_WARMUP, TRAFFIC_PROFILE... in loadtest/traffic/main.go.
bench-traffic: build
	@deploy/local/deps.sh run
	$(GO) build -o $(BIN)/ ./loadtest/traffic
	taskset -c $${BENCH_LOAD_CPU:-1} $(BIN)/traffic

# Exits 1 when a goal is missed.
bench-cluster: build
	@deploy/local/deps.sh run
	$(GO) build -o $(BIN)/ ./loadtest/receiver ./loadtest/cluster
	$(BIN)/cluster

bench-cluster-check: build
	@deploy/local/deps.sh run
	$(GO) build -o $(BIN)/ ./loadtest/receiver ./loadtest/cluster
	CLUSTER_QUICK=1 $(BIN)/cluster
