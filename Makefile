# logpond build. `make run` and `make test` are the two commands in the
# README's quick start; .ci/run calls `make test`.

GO      ?= go
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
CONFIG  ?= conf/logpond.example.toml
FUZZTIME ?= 30s

.PHONY: build test bench run fuzz clean

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/logpond ./cmd/logpond

# gofmt and vet first: they are fast and catch what review would.
test:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The example configuration keeps its data under ./data.
run: build
	mkdir -p data
	./bin/logpond -config $(CONFIG)

# Fuzz every parser of untrusted bytes; seeds live in each package's testdata/.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./record
	$(GO) test -run '^$$' -fuzz '^FuzzExamineTail$$' -fuzztime $(FUZZTIME) ./journal
	$(GO) test -run '^$$' -fuzz '^FuzzSegmentScan$$' -fuzztime $(FUZZTIME) ./ledger
	$(GO) test -run '^$$' -fuzz '^FuzzReadBatch$$' -fuzztime $(FUZZTIME) ./input/lumberjack

clean:
	rm -rf bin
