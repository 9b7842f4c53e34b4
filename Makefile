# sparkprof build. `make` builds everything; `make test` is what CI runs.
GO       ?= go
BIN      := bin/sparkprof
TESTDATA ?= ../shared/testdata
# How many inputs each fuzz target runs in `make test` (a count, not a
# duration: see scripts/fuzz.sh).
FUZZEXECS ?= 10000
STATICCHECK_VERSION := v0.6.1

.PHONY: all build agent test unit lint fuzz demo clean ui ui-deps ui-check ui-test weed

all: build agent

build:
	$(GO) build -o $(BIN) ./cmd/sparkprof

# The whole test suite: lint, unit and integration tests on the real corpus,
# and a short run of every fuzz target.
test: agent lint unit ui-check ui-test fuzz

# The JVM agent jar, agent/build/sparkprof-agent.jar, built with javac and jar.
agent:
	./agent/build.sh

# The web UI's npm packages (exact versions from ui/package-lock.json).
ui-deps:
	@[ -d ui/node_modules ] || (cd ui && npm ci --no-audit --no-fund)

# Rebuild the UI bundle ui/dist (committed generated code, embedded in the
# binary) after changing ui/src.
ui: ui-deps
	cd ui && node build.mjs

# The committed bundle (the web UI's app.* and the offline report's
# report.*) must be what ui/src builds to, file for file.
ui-check: ui-deps
	@tmp=$$(mktemp -d) && (cd ui && OUTDIR=$$tmp node build.mjs) && \
	for f in $$(ls $$tmp ui/dist | grep -v ':$$' | sort -u); do cmp -s $$tmp/$$f ui/dist/$$f || { echo "ui/dist/$$f is stale: run make ui"; rm -rf $$tmp; exit 1; }; done; rm -rf $$tmp

# The UI in headless Chromium (Playwright) against a server preloaded with
# the sample data; screenshots in out/ui-e2e.
ui-test: build ui-deps
	cd ui && node e2e/e2e.mjs ../$(BIN) $(abspath $(TESTDATA))

# SeaweedFS's weed command, the S3-compatible object store the scale-out
# tests and bench/scaleout run against, built from the exact version
# tools/seaweedfs/go.mod requires. The first build takes minutes; it is
# built again only when that module changes.
WEED := build/tools/weed
weed: $(WEED)

$(WEED): tools/seaweedfs/go.mod tools/seaweedfs/go.sum
	@mkdir -p $(dir $@)
	cd tools/seaweedfs && GOFLAGS=-mod=mod $(GO) build -o $(abspath $@) github.com/seaweedfs/seaweedfs/weed

unit:
	$(GO) test -count=1 ./...

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

fuzz:
	FUZZEXECS=$(FUZZEXECS) ./scripts/fuzz.sh

# Run the offline tools on the real sample data (reports in out/), then the
# server preloaded with the sample profiles at http://127.0.0.1:4040.
ADDR ?= 127.0.0.1:4040
demo: build
	./scripts/demo.sh $(TESTDATA)
	@echo "demo: offline reports in out/index.html; starting the server at http://$(ADDR)/ (Ctrl-C stops it)"
	$(BIN) serve --addr $(ADDR) --data out/data --preload $(TESTDATA)

clean:
	rm -rf bin out
