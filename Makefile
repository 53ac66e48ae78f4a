# Entry points. `make run` starts the demo gateway; `make test` runs every
# test (needs redis-server on PATH: tests start their own instances).
GO      ?= go
BIN     ?= bin
GOFLAGS ?=

.PHONY: run test build vet fmt clean conformance

run: ## demo gateway: in-memory store, two demo backends, no auth
	$(GO) run ./cmd/gateway --demo

test: ## all tests, race detector on
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 20m ./...

build: ## binaries into ./bin
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/gateway ./cmd/gateway
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/demo-backend ./localdev/cmd/demo-backend

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf $(BIN)

MCPGW_CACHE ?= .cache/conformance

conformance: ## MCP conformance suite vs 2 gateways on Redis behind a round-robin proxy (SCENARIO=name for one)
	MCPGW_CACHE=$(MCPGW_CACHE) GO=$(GO) ./scripts/conformance.sh

.PHONY: bench

bench: ## standard benchmark: gateway vs direct backends, one table (BENCH_DURATION=5s per round; see BENCHMARKS.md)
	GO=$(GO) ./scripts/bench.sh
