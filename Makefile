# blobstore: the two set-up commands are `make run` and `make test` (see README.md).
SHELL := /bin/bash
NODE ?= node
NPM ?= npm
# Installed dependencies are refreshed when the lockfile changes.
DEPS_STAMP := node_modules/.deps-stamp

.PHONY: all install build native run test test-native bench clean

all: build

install: $(DEPS_STAMP)

$(DEPS_STAMP): package.json package-lock.json
	@command -v $(NODE) >/dev/null || { echo "Node.js 20 is required (Debian 12's nodejs package is 18: take 20 from nodejs.org or NodeSource)" >&2; exit 1; }
	@$(NODE) -e 'process.exit(process.versions.node.split(".")[0] === "20" ? 0 : 1)' || { echo "Node.js 20 is required, found $$($(NODE) --version) (uWebSockets.js ships binaries for 16, 18 and 20; the project is built and tested on 20)" >&2; exit 1; }
	$(NPM) ci --no-audit --no-fund
	@touch $@

native: install
	@if [ -f native/Makefile ]; then $(MAKE) -C native; fi

build: install native
	$(NPM) run --silent build

# Starts one node on 127.0.0.1:8080 with the default data dir ($XDG_DATA_HOME/blobstore/data).
run: build
	$(NODE) dist/src/main.js serve $(ARGS)

# Unit, integration and crash tests; the last line is `N passed, N failed`.
test: build
	@rm -f .vitest-report.json
	@status=0; \
	if [ -f native/Makefile ]; then $(MAKE) -C native test || status=1; fi; \
	npx tsc -p test/tsconfig.json || status=1; \
	npx vitest run --config test/vitest.config.ts --reporter=default --reporter=json --outputFile.json=.vitest-report.json || status=1; \
	$(NODE) test/report.mjs .vitest-report.json || status=1; \
	exit $$status

bench: build
	@bash bench/run.sh

clean:
	rm -rf dist native/build .vitest-report.json
