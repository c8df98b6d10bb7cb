# idemlab: see README.md. Every target works on a fresh machine with Go and gcc.
GO ?= go
PYTHON ?= python3
OUT ?= results-local

.PHONY: build test vet experiment bench docs clean

# idemlab, and beside it the broker binary that --broker nats starts
# (nats-server's packages stay out of idemlab's workers; README, "A real
# broker").
build:
	$(GO) build -o idemlab .
	$(GO) build -o idemlab-nats ./cmd/idemlab-nats

vet:
	$(GO) vet ./...

# The test command of the README and of .ci/run. The PostgreSQL tests
# start throwaway clusters; without the server's binaries they skip (t.Skip
# says why under -v), and this says so once. Under -race the cmd package's
# real runs take longer than go test's default 10 minutes on a busy 2-core
# machine.
test: vet
	@command -v pg_ctl >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || \
		echo "make test: PostgreSQL's server binaries (pg_ctl) are not installed, so the PostgreSQL tests skip; install the package postgresql to run them"
	$(GO) test -race -count=1 -timeout 30m ./...

experiment:
	$(GO) run . experiment --out $(OUT)

# The manual's pages, made on demand from the code and never committed:
# Markdown of every command and help topic (start at
# $(DOCS)/markdown/idemlab.md) and their man pages.
DOCS ?= manual
docs:
	$(GO) run . docs --markdown $(DOCS)/markdown --man $(DOCS)/man

# Benchmarks are figures, not pass/fail checks; see BENCHMARKS.md. One
# sitting: the Go benchmarks (start-up, delivery, journal steps, the power
# loss VFS and filesystem), the peer's per-step figures, then the speed table, which runs
# the default experiment and the claim scenario with the built binary.
bench: build
	@log=$$(mktemp) && trap 'rm -f "$$log" "$$log.rc"' EXIT && \
	{ $(GO) test -run '^$$' -bench . -benchtime 2s -count 1 ./experiments/... ./worker/batch/ ./worker/faultvfs/ ./worker/powerfs/ 2>&1; a=$$?; \
	  $(GO) test -run '^$$' -bench 'Interleaved' -benchtime 100x -count 1 ./worker/ 2>&1; echo $$(( a | $$? )) >"$$log.rc"; } | tee "$$log" && \
	test "$$(cat "$$log.rc")" = 0 && \
	if command -v $(PYTHON) >/dev/null 2>&1; then \
		$(PYTHON) testdata/peer/bench_peer.py --go-bench "$$log" && \
		$(PYTHON) testdata/bench/figures.py --exe ./idemlab --go-bench "$$log"; \
	else echo "bench: $(PYTHON) not found; the peer figures and the speed table are skipped"; fi

clean:
	rm -f idemlab
	rm -rf $(DOCS)
