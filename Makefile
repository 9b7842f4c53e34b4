# sparkprof build. `make` builds everything; `make test` is what CI runs.
GO       ?= go
BIN      := bin/sparkprof
TESTDATA ?= ../shared/testdata
# How long each fuzz target runs in `make test` (seconds of fuzzing per target).
FUZZTIME ?= 4s
STATICCHECK_VERSION := v0.6.1

.PHONY: all build agent test unit lint fuzz demo clean

all: build agent

build:
	$(GO) build -o $(BIN) ./cmd/sparkprof

# The whole test suite: lint, unit and integration tests on the real corpus,
# and a short run of every fuzz target.
test: agent lint unit fuzz

# The JVM agent jar, agent/build/sparkprof-agent.jar, built with javac and jar.
agent:
	./agent/build.sh

unit:
	$(GO) test -count=1 ./...

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

fuzz:
	FUZZTIME=$(FUZZTIME) ./scripts/fuzz.sh

# Run the offline tools on the real sample data (reports in out/), then the
# server preloaded with the sample profiles at http://127.0.0.1:4040.
ADDR ?= 127.0.0.1:4040
demo: build
	./scripts/demo.sh $(TESTDATA)
	@echo "demo: offline reports in out/index.html; starting the server at http://$(ADDR)/ (Ctrl-C stops it)"
	$(BIN) serve --addr $(ADDR) --data out/data --preload $(TESTDATA)

clean:
	rm -rf bin out
