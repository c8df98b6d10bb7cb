# idemlab: see README.md. Every target works on a fresh machine with Go and gcc.
GO ?= go
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
	$(GO) test -run '^$$' -bench . -benchtime 2s -count 1 ./...

clean:
	rm -f idemlab
