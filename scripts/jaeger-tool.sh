#!/usr/bin/env bash
# Builds Jaeger (all-in-one v2: OTLP and Zipkin receivers, in-memory storage, query API) from the Go module
# pinned in test/tracing/tools/jaeger into .cache/tracing/bin, once; later runs reuse it. Test
# infrastructure only, run by the suites that export spans to it (test/e2e/tracing.test.ts, bench's
# tracing scenario), not by `make run`.
#   cold: ~5.5 min of CPU (13 min wall on a 2-core machine shared with other builds; GOCACHE empty), plus ~20 s
#   to download its ~320 modules; an 85 MB binary
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/.cache/tracing/bin"
version="v1.76.0"
mkdir -p "$out"

stamp="$out/.jaeger-$version-$(sha256sum <"$root/test/tracing/tools/jaeger/go.sum" | cut -c1-16)"
if [[ -f "$stamp" && -x "$out/jaeger" ]]; then
  exit 0
fi
echo "building jaeger $version into $out (first time only: a few minutes)" >&2
(cd "$root/test/tracing/tools/jaeger" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/jaeger" github.com/jaegertracing/jaeger/cmd/jaeger)
rm -f "$out"/.jaeger-*
touch "$stamp"
