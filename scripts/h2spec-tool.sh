#!/usr/bin/env bash
# Builds h2spec (the HTTP/2 conformance client) from the Go module pinned in test/h2spec/tools into
# .cache/h2spec/bin, once; later runs reuse it. Test infrastructure only, run by test/e2e/h2spec.test.ts
# against the extensions' HTTP/2 server.
#   cold: a few seconds of CPU and ~10 small modules; a 6 MB binary
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/.cache/h2spec/bin"
version="v2.2.1"
mkdir -p "$out"

stamp="$out/.h2spec-$version-$(sha256sum <"$root/test/h2spec/tools/go.sum" | cut -c1-16)"
if [[ -f "$stamp" && -x "$out/h2spec" ]]; then
  exit 0
fi
echo "building h2spec $version into $out" >&2
(cd "$root/test/h2spec/tools" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/h2spec" github.com/summerwind/h2spec/cmd/h2spec)
rm -f "$out"/.h2spec-*
touch "$stamp"
