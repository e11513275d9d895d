# Edge targets; the Makefile includes this file (`include loadtest/edge.mk`).
#   make bench-edge   the edge's cache-hit path beside bare Go, bare Caddy
#                     respond, nginx proxy_cache and Varnish (loadtest/edge)
#   make cachetests   http-cache-tests 0.4.5 against the edge, nginx and
#                     Varnish (loadtest/cachetests)
# Both are run by a person, never by `make test` (DESIGN §8).

.PHONY: bench-edge cachetests

bench-edge:
	@loadtest/edge/deps.sh
	@deploy/local/deps.sh run
	loadtest/edge/bench.sh
	$(GO) test -run '^$$' -bench . -benchmem ./caddymodules/edgecache/

cachetests:
	@loadtest/edge/deps.sh
	@deploy/local/deps.sh run
	loadtest/cachetests/cachetests.sh
