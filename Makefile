# idemlab: see README.md. Every target works on a fresh machine with Go and gcc.
GO ?= go
PYTHON ?= python3
OUT ?= results-local

.PHONY: build test vet experiment bench clean

build:
	$(GO) build -o idemlab .

vet:
	$(GO) vet ./...

# The test command of the README and of .ci/run.
test: vet
	$(GO) test -race -count=1 ./...

experiment:
	$(GO) run . experiment --out $(OUT)

# Benchmarks are figures, not pass/fail checks; see BENCHMARKS.md.
bench:
	@log=$$(mktemp) && trap 'rm -f "$$log" "$$log.rc"' EXIT && \
	{ $(GO) test -run '^$$' -bench . -benchtime 2s -count 1 ./... 2>&1; echo $$? >"$$log.rc"; } | tee "$$log" && \
	test "$$(cat "$$log.rc")" = 0 && \
	if command -v $(PYTHON) >/dev/null 2>&1; then \
		$(PYTHON) testdata/peer/bench_peer.py --go-bench "$$log"; \
	else echo "bench: $(PYTHON) not found; the batch peer benchmark is skipped"; fi

clean:
	rm -f idemlab
