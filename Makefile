# sparkprof build. `make` builds everything; `make test` is what CI runs.
GO       ?= go
BIN      := bin/sparkprof
TESTDATA ?= $(or $(SPARKPROF_TESTDATA),../shared/testdata)
# How many inputs each fuzz target runs in `make test` (a count, not a
# duration: see scripts/fuzz.sh).
FUZZEXECS ?= 10000
STATICCHECK_VERSION := v0.6.1

.PHONY: all build agent agent-dist agent-check test unit lint fuzz demo clean ui ui-deps ui-check ui-test weed

all: build agent

# The commit sparkprof version names when go build records none itself
# (in a git worktree, or with GOFLAGS=-buildvcs=false), "+modified" when
# the tree has changes.
COMMIT = $(shell c=$$(git rev-parse HEAD 2>/dev/null) && { git diff --quiet HEAD -- || c=$$c+modified; echo $$c; })

build:
	@echo "build: $(BIN) (the first build downloads the Go modules and compiles them: a few minutes)"
	$(GO) build -ldflags "-X main.commit=$(COMMIT)" -o $(BIN) ./cmd/sparkprof

# The whole test suite: lint, unit and integration tests on the real corpus,
# and a short run of every fuzz target. Every step runs, even after one
# fails; the failed ones are named at the end.
TESTSTEPS := agent-check lint unit ui-check ui-test fuzz
test:
	@failed=; for step in $(TESTSTEPS); do \
		echo "== make $$step"; \
		$(MAKE) --no-print-directory $$step || failed="$$failed $$step"; \
	done; \
	if [ -n "$$failed" ]; then echo "make test: failed:$$failed"; exit 1; fi; \
	echo "make test: all passed ($(TESTSTEPS))"

# The JVM agent jar, agent/build/sparkprof-agent.jar, built with javac and
# jar (entries in order, their times fixed: the same sources build the
# same bytes with the same JDK), and its unit tests.
agent:
	./agent/build.sh

# The agent jar the binary embeds and serves at /agent.jar,
# agent/dist/sparkprof-agent.jar (committed built output, as ui/dist):
# build it again after changing the agent.
agent-dist: agent
	cp agent/build/sparkprof-agent.jar agent/dist/sparkprof-agent.jar

# The committed agent jar must be what the agent's sources build to, byte
# for byte. Its manifest names the JDK that built it (CI's OpenJDK 17).
agent-check: agent
	@cmp -s agent/build/sparkprof-agent.jar agent/dist/sparkprof-agent.jar || { echo "agent/dist/sparkprof-agent.jar is stale: run make agent-dist (with OpenJDK 17, as CI)"; exit 1; }

# The web UI's npm packages (exact versions from ui/package-lock.json).
# ui-deps installs the UI's npm packages again whenever its lock file
# changes (npm ci writes node_modules/.package-lock.json).
ui-deps: ui/node_modules/.package-lock.json

ui/node_modules/.package-lock.json: ui/package-lock.json
	cd ui && npm ci --no-audit --no-fund
	@touch $@

# Rebuild the UI bundle ui/dist (committed generated code, embedded in the
# binary) after changing ui/src.
ui: ui-deps
	cd ui && node build.mjs

# The committed bundle (the web UI's app.* and the offline report's
# report.*) must be what ui/src builds to, file for file.
ui-check: ui-deps
	@tmp=$$(mktemp -d) && (cd ui && OUTDIR=$$tmp node build.mjs) && \
	for f in $$(ls $$tmp ui/dist | grep -v ':$$' | sort -u); do cmp -s $$tmp/$$f ui/dist/$$f || { echo "ui/dist/$$f is stale: run make ui"; rm -rf $$tmp; exit 1; }; done; rm -rf $$tmp

# The unit tests of the UI's pure modules (node --test), then the UI in
# headless Chromium (Playwright) against a server preloaded with the
# sample data; screenshots in out/ui-e2e.
ui-test: build ui-deps
	cd ui && node --test test/
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

# internal/laketest is a module of its own (DuckDB, cgo, checks that the
# blocks' Parquet files are a table a lake reads): built and run apart.
# No test waits for a time: each waits for its own signal, bounded only by
# go test's -timeout, which a busy machine must not reach (its default is
# 10 minutes per package; the scale-out tests alone take minutes).
unit:
	$(GO) test -count=1 -timeout 60m ./...
	cd internal/laketest && $(GO) test -count=1 -timeout 60m ./...

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	cd internal/laketest && $(GO) vet ./...
	@echo "lint: staticcheck $(STATICCHECK_VERSION) (its first run downloads and builds it: a few minutes)"
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

fuzz:
	FUZZEXECS=$(FUZZEXECS) ./scripts/fuzz.sh

# Run the offline tools on the real sample data (reports in out/), then the
# server preloaded with the sample data scripts/demo-preload.txt lists at
# http://127.0.0.1:4040, serving the agent at /agent.jar.
ADDR ?= 127.0.0.1:4040
demo: build
	./scripts/demo.sh $(TESTDATA)
	@echo "demo: offline reports in out/index.html; starting the server at http://$(ADDR)/ (Ctrl-C stops it)"
	$(BIN) serve --addr $(ADDR) --data out/data $$(./scripts/demo-preload.sh $(TESTDATA))

clean:
	rm -rf bin out
