# Invoicewire. A new user runs two commands (see README.md):
#   make run    the whole service with its own Redis
#   make test   every test, with the real dependencies the tests start
GO ?= go
BIN := bin
GOFLAGS_TEST ?=
# make test runs every package under the race detector, instead of (not as
# well as) a plain pass: one build of each test binary, and every goroutine
# the tests start is checked. RACE= (empty) runs the plain pass. go vet
# gets the same flag: it then type-checks against the race build's compiled
# dependencies instead of compiling all of them (Caddy's included) a second
# time, about five minutes on a fresh two-core machine.
RACE ?= -race
# How long make fuzz runs each fuzz target.
FUZZTIME ?= 30s

# The packages whose tests start Redis: their test binaries link
# internal/redistest. make test runs them a second time on Redis Cluster.
REDIS_PKGS = $(shell $(GO) list -test -f '{{if .ForTest}}{{.ForTest}} {{join .Deps " "}}{{end}}' ./... | awk '/ github.com\/invoicewire\/invoicewire\/internal\/redistest( |$$)/ {print $$1}' | sort -u)

# The tests of make test's first pass that started the suite's Redis
# (internal/redistest/record.go): the cluster pass runs only these.
REDIS_TESTS := $(CURDIR)/.test/redis-tests

# The Redis Cluster pass (deploy/local/cluster-pass.sh), as make test and
# make test-cluster both run it: the recorded tests, under the race
# detector, with the first pass's timeout.
CLUSTER_PASS = GO=$(GO) deploy/local/cluster-pass.sh $(REDIS_TESTS) $(RACE) -count=1 -timeout 20m $(GOFLAGS_TEST)

.PHONY: run test test-cluster fuzz build vet bench bench-webhooks eval-ask bench-ask bench-scale loadtest chaos clean

build:
	$(GO) build -o $(BIN)/ ./cmd/...

run: build
	@deploy/local/deps.sh run
	@deploy/local/run.sh

test:
	@deploy/local/deps.sh test
	$(GO) vet $(RACE) ./...
	@mkdir -p .test && rm -f $(REDIS_TESTS)
	IW_REDISTEST_RECORD=$(REDIS_TESTS) $(GO) test $(RACE) -count=1 -timeout 20m $(GOFLAGS_TEST) ./...
	# Then two passes side by side: the cluster pass alone leaves about half
	# of two cores idle while its tests wait on Redis.
	# - the tests that started the suite's Redis, again on a local
	#   three-master Redis Cluster (docs/architecture.md): in this pass
	#   redistest.New starts a cluster wherever it would start a server;
	# - deploy/ (Kubernetes, systemd, Prometheus, Grafana), its own module,
	#   whose output is printed when it ends.
	@out=$$(mktemp); \
	(cd deploy/check && $(GO) vet $(RACE) ./... && $(GO) test $(RACE) -count=1 -timeout 20m $(GOFLAGS_TEST) ./...) > $$out 2>&1 & check=$$!; \
	$(CLUSTER_PASS); cluster=$$?; \
	wait $$check; checked=$$?; \
	echo "deploy/check (vet and tests):"; cat $$out; rm -f $$out; \
	test $$cluster -eq 0 && test $$checked -eq 0

# Every fuzz target (func Fuzz* in any package) for FUZZTIME each
# (deploy/local/fuzz.sh). make test runs only their seeds. A crasher fails
# this target, which prints where go test wrote it (the package's
# testdata/fuzz/<target>/); committed with the fix it stays a seed.
# FUZZ_SAVE=N also copies up to N new-coverage inputs per target into the
# committed corpus.
fuzz:
	@deploy/local/deps.sh test
	FUZZTIME=$(FUZZTIME) GO=$(GO) deploy/local/fuzz.sh

# Only the Redis Cluster pass of make test, run the same way: the tests
# the last make test recorded as starting Redis, or, before any make test
# (no record), every test of the packages that start Redis.
test-cluster:
	@deploy/local/deps.sh test
	CLUSTER_PASS_PKGS="$(if $(wildcard $(REDIS_TESTS)),,$(REDIS_PKGS))" $(CLUSTER_PASS)

# go vet of both modules, with make test's RACE flag (see RACE above).
vet:
	$(GO) vet $(RACE) ./...
	cd deploy/check && $(GO) vet $(RACE) ./...

# Speed is reported as ratios against a reference measured in the same run:
# every side-by-side benchmark (origin, edge, webhooks, ask), then one table
# (loadtest/bench.sh; BENCH_ONLY="origin webhooks" runs a subset).
bench: build
	@deploy/local/deps.sh run
	@GO=$(GO) loadtest/bench.sh

# Webhook delivery (docs/architecture.md): a burst of 1,000 events x 10 subscribers, then
# 200 events/s to 10 subscribers for 30 s, against the real worker binary.
bench-webhooks:
	@deploy/local/deps.sh run
	$(GO) test -run '^$$' -bench 'Webhook' -benchtime 1x -timeout 20m ./worker/

# Archive scale: for each size in SCALE_N (default 10000 100000 1000000) an
# archive generated from content/ is published with bin/iwctl into a fresh
# Redis and served by bin/origin and bin/edge; publish, re-sync, memory,
# start-up, index build, cache-miss percentiles of every read and one edit's
# visibility, one table per size (loadtest/scale; loadtest/out/scale.md).
bench-scale: build
	@deploy/local/deps.sh run
	IW_CURSOR_WALK_ARTICLES=100000 $(GO) test -count=1 -timeout 30m -run TestCursorWalkUnderChurn ./internal/store \
		&& echo "cursor walk through 100,000 articles under churn: PASS" || (echo "cursor walk through 100,000 articles under churn: FAIL"; exit 1)
	$(GO) run ./loadtest/scale

# k6 against the make run stack (loadtest/run.sh): read mix, spike, rate
# limits, webhook subscriptions; summary in loadtest/out/.
loadtest: build
	@deploy/local/deps.sh run
	@loadtest/run.sh

# Redis SIGKILLed under read and write load, the worker SIGKILLed mid-fan-out,
# the origin restarted behind the edge; prints what clients saw and what was
# lost, and fails if anything acknowledged was lost (loadtest/chaos).
chaos: build
	@deploy/local/deps.sh run
	$(GO) build -o $(BIN)/ ./loadtest/receiver
	$(GO) run ./loadtest/chaos

# Ranking quality of POST /ask on the real corpus (origin/ask/testdata/eval*.json):
# nDCG@5, MRR and recall@10. IW_EVAL_VERBOSE=1 adds one line per question.
# A floor missed fails the target and prints the test's whole output.
eval-ask:
	@out=$$(mktemp); $(GO) test -count=1 -run '^TestEval$$' -v ./origin/ask/ > $$out 2>&1; st=$$?; \
	if [ $$st -eq 0 ]; then grep -E '^(ask eval|[a-z0-9-]+ +nDCG| +want)' $$out; else cat $$out; fi; \
	rm -f $$out; exit $$st

# Speed of POST /ask on a generated 10,000-article archive: query latency
# percentiles, index build time and memory, rebuild from Redis.
bench-ask:
	@deploy/local/deps.sh run
	$(GO) test -run '^$$' -bench 'Build$$|RebuildFromStore' -benchtime 5x ./origin/ask/
	$(GO) test -run '^$$' -bench 'Ask' -benchtime 3000x ./origin/ask/

clean:
	rm -rf $(BIN) .run .test

include loadtest/edge.mk
