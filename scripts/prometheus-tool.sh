#!/usr/bin/env bash
# Builds Prometheus (the server: scrape, TSDB, query API; no web UI assets) from the Go module pinned in
# test/prometheus/tools into .cache/prometheus/bin, once; later runs reuse it. Run by the suites that scrape with it
# (test/e2e/observability.test.ts, bench's stats-scrape scenario); `legate run --observability` uses it when present.
#   cold: ~10 min of CPU (523 s user + 73 s sys; 53 min wall on a 2-core machine shared with other builds; GOCACHE
#   empty), 3.2 GB peak RSS; a 105 MB binary
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/.cache/prometheus/bin"
version="v0.316.0"
mkdir -p "$out"

stamp="$out/.prometheus-$version-$(sha256sum <"$root/test/prometheus/tools/go.sum" | cut -c1-16)"
if [[ -f "$stamp" && -x "$out/prometheus" ]]; then
  exit 0
fi
echo "building prometheus $version into $out (first time only: several minutes)" >&2
(cd "$root/test/prometheus/tools" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/prometheus.tmp" \
  github.com/prometheus/prometheus/cmd/prometheus)
mv "$out/prometheus.tmp" "$out/prometheus"
rm -f "$out"/.prometheus-*
touch "$stamp"
