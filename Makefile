# Entry points. `make run` starts the demo gateway; `make test` runs every
# test (its first step, scripts/test-deps.sh, installs redis-server, npm
# and gcc when missing, as root on Debian/Ubuntu, or names what to install).
GO      ?= go
BIN     ?= bin
GOFLAGS ?=

# The build's identity, stamped into every binary at link time (gateway
# --version, mcpgw_build_info, serverInfo.version). Override for a release:
#   make build VERSION=v1.2.0
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS  = -X main.version=$(VERSION) -X main.commit=$(COMMIT)

.PHONY: run test test-short build vet fmt clean conformance lint fuzz release release-check
.PHONY: chart-check lint-workflows image-check deploy-check

# run builds the gateway, then runs it as the terminal's foreground job: a
# terminal sends Ctrl-C's SIGINT to its foreground process group, and make
# answers SIGINT by dying of it (status 130, whatever its recipe did). With
# job control on (set -m) the gateway gets a process group of its own and
# `fg` hands it the terminal, so Ctrl-C reaches the gateway alone: it shuts
# down cleanly, and make exits 0. Without a terminal it simply runs.
run: ## demo gateway: in-memory store, two demo backends, no auth (Ctrl-C stops it)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/gateway ./cmd/gateway
	@if [ -t 0 ]; then set -m; $(BIN)/gateway --demo & fg >/dev/null; else exec $(BIN)/gateway --demo; fi

test: ## all tests, race detector on (first installs redis-server, npm and gcc if missing (root on Debian/Ubuntu) or names them, the npm MCP software the interop tests run, cached in .cache/interop, and builds Ory Hydra for the user_oauth tests, cached in .cache/hydra)
	./scripts/test-deps.sh
	./scripts/npm-fixtures.sh
	GO=$(GO) ./scripts/hydra.sh
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 20m ./...

# staticcheck's default checks, pinned; SA1019 is silenced only in the
# files that exercise deprecated protocol features (sampling, roots) on
# purpose, with a //lint:file-ignore saying so.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

# scripts/lintcheck: the house rules no stock linter has (no production
# function over 80 lines, no comment naming a .go file that is gone) and
# the budgets of issue 38: at most 40 methods on a type of router/ or
# handler/, at most 6 context.WithValue sites (identity,
# what libraries force), at most 25 places that compare a method to a name
# instead of reading the method tables (`-report` prints the counts).
lint: ## gofmt, go vet, staticcheck and the house rules (scripts/lintcheck)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	$(GO) run ./scripts/lintcheck -max 80 -max-methods 40 -max-withvalue 6 -max-method-compares 25 $$(git ls-files '*.go')

# Fuzz targets of the decoders that face attackers, FUZZTIME each (seed
# corpora in testdata/fuzz; go test alone runs the seeds). A count of
# executions, not a duration: Go 1.26's fuzz coordinator can report a
# spurious "context deadline exceeded" when a duration ends on a loaded
# machine (go.dev/issue/75804, fixed in Go 1.27); a count has no deadline.
FUZZTIME ?= 20000x
fuzz: ## each fuzz target for FUZZTIME (default 20000 executions, a few seconds)
	$(GO) test -run '^$$' -fuzz '^FuzzCursor$$' -fuzztime $(FUZZTIME) ./router/sealed/
	$(GO) test -run '^$$' -fuzz '^FuzzRequestState$$' -fuzztime $(FUZZTIME) ./router/sealed/
	$(GO) test -run '^$$' -fuzz '^FuzzParamHeaders$$' -fuzztime $(FUZZTIME) ./router/
	$(GO) test -run '^$$' -fuzz '^FuzzParseID$$' -fuzztime $(FUZZTIME) ./internal/wire/
	$(GO) test -run '^$$' -fuzz '^FuzzMembers$$' -fuzztime $(FUZZTIME) ./internal/wire/
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./internal/wire/
	$(GO) test -run '^$$' -fuzz '^FuzzTaskID$$' -fuzztime $(FUZZTIME) ./internal/taskid/
	$(GO) test -run '^$$' -fuzz '^FuzzEnvelope$$' -fuzztime $(FUZZTIME) ./router/envelope/
	$(GO) test -run '^$$' -fuzz '^FuzzSSEReader$$' -fuzztime $(FUZZTIME) ./router/upstream/

.PHONY: docs
docs: ## regenerate docs/reference/gateway.schema.json and config.md from internal/config (a test fails while they are stale)
	$(GO) run ./internal/config/gen

# The fast tier: unit tests alone, no process started (no redis-server,
# gateway binary, Node or stdio backend: their tests skip, see
# internal/testsupport/short.go). Under a minute on a warm build cache.
test-short: ## unit tests only, no processes
	$(GO) test -short -count=1 ./...

build: ## binaries into ./bin: the gateway, and the demo backend and round-robin proxy of the local topology (docs/guide/compose.md)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/gateway ./cmd/gateway
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/demo-backend ./localdev/cmd/demo-backend
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/rrproxy ./localdev/cmd/rrproxy

# ---- Releases (docs/guide/install.md) ---------------------------------------
# Archives for linux and darwin (amd64, arm64), the Lambda zip for arm64 and
# x86_64, a CycloneDX SBOM of each and SHA256SUMS, into DIST. Reproducible
# and offline once the modules are cached:
#   make release VERSION=v1.2.0
DIST ?= dist

release: ## release archives, Lambda zips, SBOMs and SHA256SUMS for VERSION into DIST (default dist/)
	GO=$(GO) VERSION=$(VERSION) COMMIT=$(COMMIT) DIST=$(DIST) ./scripts/release.sh

# What CI checks: the release built twice gives the same bytes, and
# verify finds every artifact whole (checksums, file headers, build
# settings, the SBOM against the modules each binary links; the binary
# of this machine's platform is run with --version).
release-check: ## make release twice (the same bytes?), then verify the result
	GO=$(GO) VERSION=$(VERSION) COMMIT=$(COMMIT) DIST=$(DIST)-again ./scripts/release.sh >/dev/null
	GO=$(GO) VERSION=$(VERSION) COMMIT=$(COMMIT) DIST=$(DIST) ./scripts/release.sh
	@cmp $(DIST)/SHA256SUMS $(DIST)-again/SHA256SUMS || { echo "release: two builds of $(VERSION) differ: not reproducible"; diff $(DIST)/SHA256SUMS $(DIST)-again/SHA256SUMS; exit 1; }
	@rm -rf $(DIST)-again
	@echo "release: rebuilt $(VERSION): the same bytes"
	$(GO) run ./scripts/release verify -version $(VERSION) -commit $(COMMIT) $(DIST)

# The Helm chart (charts/mcpgw): helm lint --strict and helm template of
# each values example, every object decoded strictly into its API type,
# the rendered config through gateway check, the rendered Deployment run.
# helm, actionlint and cyclonedx-gomod are pinned in tools/go.mod.
chart-check: ## Helm chart: lint --strict, template each values example, strict decoding into the Kubernetes API types
	cd tools && $(GO) vet ./... && $(GO) test -count=1 ./...

lint-workflows: ## actionlint on .github/workflows
	cd tools && $(GO) tool actionlint $(addprefix ../,$(wildcard .github/workflows/*.yml))

# Container images from the release in DIST (make release first): built
# with podman (installed as root on Debian when missing), inspected, and
# run where the machine can run containers (scripts/image-check.sh).
image-check: ## build the images (podman) from DIST's release, inspect and smoke-test them
	GO=$(GO) VERSION=$(VERSION) COMMIT=$(COMMIT) DIST=$(DIST) ./scripts/image-check.sh

# Everything about shipping it, as CI runs it.
deploy-check: release-check image-check chart-check lint-workflows ## release-check, image-check, chart-check, lint-workflows

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf $(BIN) $(DIST)

MCPGW_CACHE ?= .cache/conformance

conformance: ## MCP conformance suite vs 2 gateways on Redis behind a round-robin proxy: both protocol generations, each on a backend of its own generation and on one of the other (translation)
	MCPGW_CACHE=$(MCPGW_CACHE) GO=$(GO) REQUIREMENTS=2025-11-25 BACKEND_MODE=stateful ./scripts/conformance.sh
	MCPGW_CACHE=$(MCPGW_CACHE) GO=$(GO) REQUIREMENTS=2026-07-28 BACKEND_MODE=stateless ./scripts/conformance.sh
	$(MAKE) --no-print-directory conformance-translation

# The translation runs: each client generation on a backend that speaks only
# the other (docs/design/conformance.md). Both always run; the target fails if
# either does.
.PHONY: conformance-translation
conformance-translation: ## conformance suite with the gateway translating: 2026-07-28 client on a legacy-only backend, 2025-11-25 client on a modern-only one
	@rc=0; \
	MCPGW_CACHE=$(MCPGW_CACHE) GO=$(GO) REQUIREMENTS=2026-07-28 BACKEND_MODE=stateful ./scripts/conformance.sh || rc=1; \
	MCPGW_CACHE=$(MCPGW_CACHE) GO=$(GO) REQUIREMENTS=2025-11-25 BACKEND_MODE=modern-only ./scripts/conformance.sh || rc=1; \
	exit $$rc

# The Tasks extension (SEP-2663, issue 22): every tasks-* server scenario
# of the suite, run directly against tests/cmd/tasks-backend, the SEP-2663
# fixture the gateway's task pass-through is tested with. A baseline: it
# proves the fixture, so a failure through the gateway is the gateway's.
# The suite's SEP-2640 (Skills) server scenarios: the go-sdk skills fixture
# directly, through two gateway instances (a single-backend vhost passes it
# through), and two of them behind one vhost (skill://{key}/... URIs).
.PHONY: conformance-skills
conformance-skills: ## the suite's sep-2640-* (Skills) scenarios: the fixture directly, through two gateways, and two fixtures behind one vhost
	MCPGW_CACHE=$(MCPGW_CACHE) GO=$(GO) REQUIREMENTS=2026-07-28 BACKEND_MODE=skills DIRECT=1 SCENARIO='sep-2640-*' ./scripts/conformance.sh
	MCPGW_CACHE=$(MCPGW_CACHE) GO=$(GO) REQUIREMENTS=2026-07-28 BACKEND_MODE=skills SCENARIO='sep-2640-*' ./scripts/conformance.sh
	MCPGW_CACHE=$(MCPGW_CACHE) GO=$(GO) REQUIREMENTS=2026-07-28 BACKEND_MODE=skills-multi SCENARIO='sep-2640-*' ./scripts/conformance.sh

.PHONY: conformance-tasks
conformance-tasks: ## the suite's tasks-* scenarios: the SEP-2663 fixture directly and through two gateway instances, then gateway-run tasks on go-sdk backends (stateless, stateful)
	MCPGW_CACHE=$(MCPGW_CACHE) GO=$(GO) REQUIREMENTS=2026-07-28 BACKEND_MODE=tasks DIRECT=1 SCENARIO='tasks-*' ./scripts/conformance.sh
	MCPGW_CACHE=$(MCPGW_CACHE) GO=$(GO) REQUIREMENTS=2026-07-28 BACKEND_MODE=tasks SCENARIO='tasks-*' ./scripts/conformance.sh
	MCPGW_CACHE=$(MCPGW_CACHE) GO=$(GO) REQUIREMENTS=2026-07-28 BACKEND_MODE=tasks-tools SCENARIO='tasks-*' ./scripts/conformance.sh
	MCPGW_CACHE=$(MCPGW_CACHE) GO=$(GO) REQUIREMENTS=2026-07-28 BACKEND_MODE=tasks-tools-stateful SCENARIO='tasks-*' ./scripts/conformance.sh

.PHONY: bench

bench: ## standard benchmark: gateway vs direct backends, one table (BENCH_DURATION=5s per round; see BENCHMARKS.md)
	GO=$(GO) ./scripts/bench.sh

# ---- AWS Lambda (template.yaml, docs/guide/lambda.md) ----------------------
# `sam build` runs `make build-<FunctionLogicalId>` with ARTIFACTS_DIR set: the
# artifact is one static arm64 binary named bootstrap (provided.al2023), plus
# the config file when one is bundled. LAMBDA_CONFIG names it (a path inside
# the repository, copied to the same path in the bundle; default: MCPGW_CONFIG
# when that is a relative path, i.e. points into the bundle); LAMBDA_EXTRA_FILES
# adds files it refers to, e.g. a JWT public key:
#   LAMBDA_CONFIG=deploy/gateway.yaml LAMBDA_EXTRA_FILES=deploy/jwt.pem sam build
LAMBDA_GOENV       = GOOS=linux GOARCH=arm64 CGO_ENABLED=0
LAMBDA_GOFLAGS     = -tags lambda.norpc -trimpath -ldflags='-s -w $(LDFLAGS)'
LAMBDA_CONFIG      ?= $(if $(filter /%,$(MCPGW_CONFIG)),,$(MCPGW_CONFIG))
LAMBDA_EXTRA_FILES ?=

.PHONY: lambda build-GatewayFunction build-HttpApiFunction

build-GatewayFunction build-HttpApiFunction: ## what `sam build` runs for each function (needs ARTIFACTS_DIR)
	@test -n "$(ARTIFACTS_DIR)" || { echo "ARTIFACTS_DIR is not set (sam build sets it)" >&2; exit 1; }
	$(LAMBDA_GOENV) $(GO) build $(LAMBDA_GOFLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./cmd/lambda
	@for f in $(LAMBDA_CONFIG) $(LAMBDA_EXTRA_FILES); do \
	  case "$$f" in /*|../*|*/../*) echo "lambda: $$f: give a relative path inside the repository" >&2; exit 1;; esac; \
	  test -f "$$f" || { echo "lambda: $$f: no such file" >&2; exit 1; }; \
	  mkdir -p "$(ARTIFACTS_DIR)/$$(dirname "$$f")" && cp "$$f" "$(ARTIFACTS_DIR)/$$f" && echo "lambda: bundled $$f"; \
	done

lambda: ## Lambda bundle for arm64: bin/lambda/bootstrap, zipped into bin/lambda/gateway.zip
	rm -rf $(BIN)/lambda
	$(MAKE) --no-print-directory build-GatewayFunction ARTIFACTS_DIR=$(CURDIR)/$(BIN)/lambda
	$(GO) run ./cmd/lambda/zipbundle.go -o $(BIN)/lambda/gateway.zip $(BIN)/lambda
	@echo "lambda: $(BIN)/lambda/gateway.zip (aws lambda update-function-code --zip-file fileb://$(BIN)/lambda/gateway.zip ...)"
